//! Integer arithmetic that fails on overflow, as Trino's and DuckDB's does.
//!
//! DataFusion's `+`, `-` and `*` of integers wrap around:
//! `9223372036854775807 + 1` answered -9223372036854775808, and the product of two INTEGER
//! columns past 2^31 a wrong number, silently. Once the plan is typed (after
//! DataFusion's type coercion), every such operation of two integers of one
//! type is written as squall's checked function of the operator
//! (`squall_core::trino_udfs::checked`), which fails the query with
//! `NUMERIC_VALUE_OUT_OF_RANGE` naming the values; its column keeps the
//! operator's name (`a + b`). Decimals, floats, dates and intervals are left
//! as they are. A constant operation folds while planning as before, or,
//! when it overflows, fails when the query runs.

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;
use squall_core::trino_udfs::checked::{is_checked_type, name_of};

/// Add the rule to `ctx`'s analyzer, after its type coercion.
pub fn register(ctx: &datafusion::prelude::SessionContext) -> Result<()> {
    ctx.add_analyzer_rule(Arc::new(CheckedArithmetic::new(ctx)?));
    Ok(())
}

/// The analyzer rule; `functions` are the session's checked functions,
/// found by name.
#[derive(Debug)]
pub struct CheckedArithmetic {
    functions: Vec<Arc<ScalarUDF>>,
}

impl CheckedArithmetic {
    /// The rule over the checked functions registered with `ctx`.
    pub fn new(ctx: &datafusion::prelude::SessionContext) -> Result<Self> {
        let state = ctx.state();
        let functions = [
            datafusion::logical_expr::Operator::Plus,
            datafusion::logical_expr::Operator::Minus,
            datafusion::logical_expr::Operator::Multiply,
        ]
        .iter()
        .filter_map(|op| name_of(*op))
        .map(|name| {
            state.scalar_functions().get(name).cloned().ok_or_else(|| {
                datafusion::error::DataFusionError::Internal(format!("{name} is not registered"))
            })
        })
        .collect::<Result<_>>()?;
        Ok(Self { functions })
    }

    fn function(&self, op: datafusion::logical_expr::Operator) -> Option<&Arc<ScalarUDF>> {
        let name = name_of(op)?;
        self.functions.iter().find(|f| f.name() == name)
    }
}

impl AnalyzerRule for CheckedArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            // The columns the node's expressions read: its inputs' (a join's
            // two sides together).
            let inputs = node.inputs();
            let mut schema = DFSchema::empty();
            for input in &inputs {
                schema.merge(input.schema());
            }
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|e| {
                let name = names.save(&e);
                let out = e.transform_up(|e| match e {
                    Expr::BinaryExpr(BinaryExpr { left, op, right })
                        if integers(&left, &right, &schema) =>
                    {
                        Ok(match self.function(op) {
                            Some(func) => Transformed::yes(Expr::ScalarFunction(
                                ScalarFunction::new_udf(Arc::clone(func), vec![*left, *right]),
                            )),
                            None => {
                                Transformed::no(Expr::BinaryExpr(BinaryExpr::new(left, op, right)))
                            }
                        })
                    }
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(out.update_data(|e| name.restore(e)))
            })?;
            if rewritten.transformed {
                rewritten.data.recompute_schema().map(Transformed::yes)
            } else {
                Ok(rewritten)
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_checked_arithmetic"
    }
}

/// Whether both operands are integers of one type (type coercion made them
/// one where they were two).
fn integers(left: &Expr, right: &Expr, schema: &DFSchema) -> bool {
    match (left.get_type(schema), right.get_type(schema)) {
        (Ok(a), Ok(b)) => a == b && is_checked_type(&a),
        _ => false,
    }
}
