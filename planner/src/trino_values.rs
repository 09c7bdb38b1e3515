//! Values Trino computes otherwise than DataFusion, found by their types
//! once the plan is typed:
//!
//! - `date_trunc(unit, d)` of a DATE is a DATE in Trino (the first day of
//!   `d`'s month, ...); DataFusion truncates a timestamp made of it and
//!   answered `2020-05-01T00:00:00`, which clients read as a timestamp and
//!   which compares unequal to Trino's `2020-05-01` as text. Its value is
//!   cast back to DATE.
//! - A cast of a DOUBLE, REAL or DECIMAL to an integer rounds to the nearest
//!   (halves away from zero) in Trino: `CAST(2.7 AS INTEGER)` is 3 and
//!   `CAST(-2.5 AS INTEGER)` -3. DataFusion truncated (2, -2), silently. The
//!   value is rounded before the cast.
//! - A TIMESTAMP cast to VARCHAR is `2020-01-01 10:00:00.000` in Trino (a
//!   space, and as many decimals as its precision: 3, 6 or 9), one with a
//!   zone the time in that zone and the zone's name (`... 10:00:00.000
//!   America/New_York`); DataFusion wrote `2020-01-01T10:00:00` (and
//!   `...T15:00:00Z`), which compares unequal as text.
//! - `round(x, d)` of a DECIMAL(p, s) is a DECIMAL(min(38, p + 1), s) in
//!   Trino (`round(755.04, 1)` is `755.00`). DataFusion typed it so while `d`
//!   was a cast (`CAST(1 AS INT)`, as type coercion leaves it) and as
//!   DECIMAL(p, d) once the simplifier folded that cast into a literal, so
//!   a comparison typed before (`round(x, 1) >= 1.25`) met a value of
//!   another scale and failed at execution ("Invalid comparison operation:
//!   Decimal128(12, 1) >= Decimal128(13, 2)"). The value is cast to Trino's
//!   type, which no folding changes.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use crate::expr_rules::{named_as_before, saved_name};

#[derive(Debug, Default)]
pub struct TrinoValues;

impl AnalyzerRule for TrinoValues {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !mentions(&plan)? {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| {
            let inputs = node.inputs();
            let [input] = inputs.as_slice() else {
                return Ok(Transformed::no(node));
            };
            let schema = Arc::clone(input.schema());
            let before = Arc::clone(node.schema());
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|e| {
                let name = saved_name(&names, &e);
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
                    Expr::ScalarFunction(f) if trino_type(&f, &schema).is_some() => {
                        let to = trino_type(&f, &schema).unwrap_or(DataType::Null);
                        Ok(Transformed::yes(Expr::Cast(Cast::new(
                            Box::new(Expr::ScalarFunction(f)),
                            to,
                        ))))
                    }
                    Expr::Cast(Cast { expr, field })
                        if timestamp_text(&expr, field.data_type(), &schema).is_some() =>
                    {
                        let format = timestamp_text(&expr, field.data_type(), &schema)
                            .unwrap_or_default();
                        let text = datafusion::functions::datetime::expr_fn::to_char(
                            *expr,
                            datafusion::prelude::lit(format),
                        );
                        Ok(Transformed::yes(Expr::Cast(Cast::new_from_field(
                            Box::new(text),
                            field,
                        ))))
                    }
                    Expr::Cast(Cast { expr, field }) if rounds(&expr, field.data_type(), &schema) => {
                        Ok(Transformed::yes(Expr::Cast(Cast::new_from_field(
                            Box::new(round(*expr)),
                            field,
                        ))))
                    }
                    Expr::TryCast(TryCast { expr, field })
                        if rounds(&expr, field.data_type(), &schema) =>
                    {
                        Ok(Transformed::yes(Expr::TryCast(TryCast::new_from_field(
                            Box::new(round(*expr)),
                            field,
                        ))))
                    }
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(out.update_data(|e| name.restore(e)))
            })?;
            // A node above a changed one reads the changed type: every
            // node's schema is made again (plans with such a call only).
            named_as_before(&before, rewritten.data.recompute_schema()?).map(Transformed::yes)
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_trino_values"
    }
}

/// The type Trino gives the call `f` where DataFusion's differs:
/// `round(x, d)` of a DECIMAL(p, s) is a DECIMAL(min(38, p + 1), s).
fn trino_type(f: &ScalarFunction, schema: &datafusion::common::DFSchema) -> Option<DataType> {
    if f.func.name() != "round" || f.args.len() != 2 {
        return None;
    }
    match f.args[0].get_type(schema).ok()? {
        DataType::Decimal128(p, s) => Some(DataType::Decimal128((p + 1).min(38), s)),
        _ => None,
    }
}

/// Whether a cast of `expr` to `to` rounds first: a floating or decimal
/// number to an integer.
fn rounds(expr: &Expr, to: &DataType, schema: &datafusion::common::DFSchema) -> bool {
    to.is_integer()
        && matches!(
            expr.get_type(schema),
            Ok(DataType::Float16
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Decimal256(..))
        )
}

/// The `to_char` format of Trino's text of a timestamp without a time zone
/// cast to text, when `expr` is one and `to` is text.
fn timestamp_text(
    expr: &Expr,
    to: &DataType,
    schema: &datafusion::common::DFSchema,
) -> Option<String> {
    use arrow::datatypes::TimeUnit;
    if !matches!(
        to,
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
    ) {
        return None;
    }
    let DataType::Timestamp(unit, zone) = expr.get_type(schema).ok()? else {
        return None;
    };
    let time = match unit {
        TimeUnit::Second => "%Y-%m-%d %H:%M:%S",
        TimeUnit::Millisecond => "%Y-%m-%d %H:%M:%S%.3f",
        TimeUnit::Microsecond => "%Y-%m-%d %H:%M:%S%.6f",
        TimeUnit::Nanosecond => "%Y-%m-%d %H:%M:%S%.9f",
    };
    // With a zone: the time in that zone, then the zone's name
    // (`2020-01-01 10:00:00.000 America/New_York`), as Trino writes it.
    Some(match zone {
        None => time.to_string(),
        Some(zone) if !zone.contains('%') => format!("{time} {zone}"),
        Some(_) => return None,
    })
}

/// `round(expr)`: halves away from zero, for floats and decimals alike.
fn round(expr: Expr) -> Expr {
    datafusion::functions::math::expr_fn::round(vec![expr])
}

/// Whether any expression of `plan` (or its subqueries) calls `date_trunc`
/// or `round`, or casts to an integer or text.
fn mentions(plan: &LogicalPlan) -> Result<bool> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut found = false;
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            found |= e.exists(|e| {
                Ok(match e {
                    Expr::ScalarFunction(f) => matches!(f.func.name(), "date_trunc" | "round"),
                    Expr::Cast(Cast { field, .. }) | Expr::TryCast(TryCast { field, .. }) => {
                        field.data_type().is_integer()
                            || matches!(
                                field.data_type(),
                                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                            )
                    }
                    _ => false,
                })
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
