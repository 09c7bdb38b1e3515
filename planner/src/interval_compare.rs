//! Dates subtracted, and intervals compared with numbers, checked before
//! DataFusion's type coercion.
//!
//! [`DateDifferences`]: `d1 - d2` of two DATEs is the days between them, a
//! BIGINT, as in PostgreSQL and DuckDB (`l_receiptdate - l_shipdate >
//! 20`). DataFusion typed it a BIGINT while planning but computed a
//! duration, and the comparison failed in the task with an internal error
//! ("Only intervals with the same data type are comparable").
//!
//! [`IntervalComparisons`]: an interval compared with a number (`d1 - d2 >
//! interval '20' day`) is refused while the plan is made, saying what to
//! write instead.

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, cast};
use datafusion::optimizer::AnalyzerRule;

use crate::expr_rules::{check_exprs, transform_exprs};

#[derive(Debug, Default)]
pub struct IntervalComparisons;

fn is_interval(t: &DataType) -> bool {
    matches!(t, DataType::Interval(_) | DataType::Duration(_))
}

impl AnalyzerRule for IntervalComparisons {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        check_exprs(&plan, |e, schema| {
            if let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e
                && matches!(
                    op,
                    Operator::Eq
                        | Operator::NotEq
                        | Operator::Lt
                        | Operator::LtEq
                        | Operator::Gt
                        | Operator::GtEq
                )
                && let (Ok(l), Ok(r)) = (left.get_type(schema), right.get_type(schema))
                && is_interval(&l) != is_interval(&r)
                && (l.is_numeric() || r.is_numeric())
            {
                return Err(DataFusionError::Plan(format!(
                    "cannot compare {left} with {right}: one is an interval, the other \
                     a number; compare with an interval (interval '20' day) or count \
                     days with date_diff('day', a, b)"
                )));
            }
            Ok(())
        })?;
        Ok(plan)
    }

    fn name(&self) -> &str {
        "squall_interval_comparisons"
    }
}

/// `d1 - d2` of two DATEs as `CAST(d1 AS BIGINT) - CAST(d2 AS BIGINT)`:
/// the days between them.
#[derive(Debug, Default)]
pub struct DateDifferences;

impl AnalyzerRule for DateDifferences {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        transform_exprs(plan, |e, schema| match e {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Minus,
                right,
            }) if matches!(left.get_type(schema), Ok(DataType::Date32))
                && matches!(right.get_type(schema), Ok(DataType::Date32)) =>
            {
                Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(cast(*left, DataType::Int64)),
                    Operator::Minus,
                    Box::new(cast(*right, DataType::Int64)),
                ))))
            }
            e => Ok(Transformed::no(e)),
        })
    }

    fn name(&self) -> &str {
        "squall_date_differences"
    }
}
