//! `date_trunc(unit, d)` of a DATE is a DATE in Trino (the first day of
//! `d`'s month, ...); DataFusion truncates a timestamp made of it and
//! answered `2020-05-01T00:00:00`, which clients read as a timestamp and
//! which compares unequal to Trino's `2020-05-01` as text. This rule casts
//! such a call's value back to DATE.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

#[derive(Debug, Default)]
pub struct DateTruncOfDates;

impl AnalyzerRule for DateTruncOfDates {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !mentions_date_trunc(&plan)? {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| {
            let inputs = node.inputs();
            let [input] = inputs.as_slice() else {
                return Ok(Transformed::no(node));
            };
            let schema = Arc::clone(input.schema());
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|e| {
                let name = names.save(&e);
                let out = e.transform_up(|e| match e {
                    Expr::ScalarFunction(f)
                        if f.func.name() == "date_trunc"
                            && matches!(f.args.get(1), Some(Expr::Cast(Cast { expr, .. }))
                                if matches!(expr.get_type(&schema), Ok(DataType::Date32 | DataType::Date64))) =>
                    {
                        Ok(Transformed::yes(Expr::Cast(Cast::new(
                            Box::new(Expr::ScalarFunction(f)),
                            DataType::Date32,
                        ))))
                    }
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(out.update_data(|e| name.restore(e)))
            })?;
            // A node above a changed one reads the changed type: every
            // node's schema is made again (plans with such a call only).
            rewritten.data.recompute_schema().map(Transformed::yes)
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_date_trunc_of_dates"
    }
}

/// Whether any expression of `plan` (or its subqueries) calls `date_trunc`.
fn mentions_date_trunc(plan: &LogicalPlan) -> Result<bool> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut found = false;
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            found |= e.exists(|e| {
                Ok(matches!(e, Expr::ScalarFunction(f) if f.func.name() == "date_trunc"))
            })?;
            Ok(TreeNodeRecursion::Continue)
        })?;
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    Ok(found)
}
