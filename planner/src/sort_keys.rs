//! ORDER BY keys kept unless written twice.
//!
//! DataFusion's `eliminate_duplicated_expr` also drops a sort key that the
//! keys before it determine (a functional dependency of the input's
//! schema), and its `Unnest` keeps its input's dependencies, which an
//! unnested list breaks (each input row becomes many): `SELECT s, p FROM
//! (SELECT s, array_agg(x) a FROM t GROUP BY s) CROSS JOIN UNNEST(a) AS
//! u(p) ORDER BY s, p` was sorted by `s` alone, as if `s` still determined
//! `p` (single-node DataFusion 55 answers it so too). This rule takes its
//! place: a sort's exact duplicates are dropped, every other key kept; an
//! aggregation's duplicated groupings go as DataFusion's rule drops them.
//! A sort by a key a prior one really determines costs a comparison that
//! never decides.

use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::{LogicalPlan, Sort};
use datafusion::optimizer::eliminate_duplicated_expr::EliminateDuplicatedExpr;
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// See the module docs.
#[derive(Debug, Default)]
pub struct DuplicatedExprs;

/// The name of DataFusion's rule this one replaces.
pub const REPLACES: &str = "eliminate_duplicated_expr";

impl OptimizerRule for DuplicatedExprs {
    fn name(&self) -> &str {
        "squall_eliminate_duplicated_expr"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Sort(sort) = plan else {
            return EliminateDuplicatedExpr::new().rewrite(plan, config);
        };
        let mut keys = Vec::with_capacity(sort.expr.len());
        for key in &sort.expr {
            if !keys
                .iter()
                .any(|k: &datafusion::logical_expr::SortExpr| k.expr == key.expr)
            {
                keys.push(key.clone());
            }
        }
        let changed = keys.len() != sort.expr.len();
        let sort = LogicalPlan::Sort(Sort {
            expr: keys,
            input: sort.input,
            fetch: sort.fetch,
        });
        Ok(if changed {
            Transformed::yes(sort)
        } else {
            Transformed::no(sort)
        })
    }
}
