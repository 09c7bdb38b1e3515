//! A DECIMAL divided by a DECIMAL rounds its last digit, as Trino,
//! PostgreSQL and DuckDB round it: DataFusion truncated, so `2.0 / 3` was
//! `0.66666` and `sum(x) * 1.0 / count(*)` lost a unit in its last place
//! about half the time. The dividend is given more decimals (so the
//! division yields at least one digit past the type DataFusion gives the
//! quotient), and the quotient is cast back to that type, which rounds half
//! away from zero. The quotient keeps DataFusion's type (Trino's has fewer
//! decimals: `max(s1, s2)`).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, cast};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

use crate::expr_rules::transform_exprs;

pub fn register(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(DecimalDivision));
}

#[derive(Debug, Default)]
struct DecimalDivision;

impl AnalyzerRule for DecimalDivision {
    fn name(&self) -> &str {
        "squall_decimal_division"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        transform_exprs(plan, |e, schema| {
            let Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Divide,
                right,
            }) = &e
            else {
                return Ok(Transformed::no(e));
            };
            let (Ok(DataType::Decimal128(p1, s1)), Ok(DataType::Decimal128(..)), Ok(quotient)) = (
                left.get_type(schema),
                right.get_type(schema),
                e.get_type(schema),
            ) else {
                return Ok(Transformed::no(e));
            };
            let DataType::Decimal128(_, scale) = quotient else {
                return Ok(Transformed::no(e));
            };
            // The fewest more decimals of the dividend that give the
            // quotient a digit past `scale` (none within 38 digits: as it is).
            for more in 1..=38u8.saturating_sub(p1) {
                let Ok(s) = i8::try_from(i16::from(s1) + i16::from(more)) else {
                    break;
                };
                let wider = Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(cast((**left).clone(), DataType::Decimal128(p1 + more, s))),
                    Operator::Divide,
                    right.clone(),
                ));
                if let Ok(DataType::Decimal128(_, finer)) = wider.get_type(schema)
                    && finer > scale
                {
                    return Ok(Transformed::yes(cast(wider, quotient)));
                }
            }
            Ok(Transformed::no(e))
        })
    }
}
