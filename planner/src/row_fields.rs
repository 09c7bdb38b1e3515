//! A row's field by position, as Trino reads it: `r[1]` of a ROW is its
//! first field (a constant index from 1), where DataFusion reads any `[i]`
//! as an array's element and refused a row (`array_element does not
//! support type Struct`). An expression planner ahead of DataFusion's:
//! `r[i]` of a struct becomes `get_field(r, name of field i)`; every other
//! subscript is left to DataFusion's.
//!
//! A field read from a value that has none (`d.f` or `d['f']` of a DATE)
//! DataFusion planned and then failed in type coercion with an internal
//! error ("Cannot access field at argument 1"); [`FieldsOfRows`], an
//! analyzer rule ahead of DataFusion's, refuses it naming the expression
//! and its type, as Trino does.

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::expr::Expr;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{ExprSchemable, GetFieldAccess, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

#[derive(Debug, Default)]
pub struct RowFieldByPosition;

impl ExprPlanner for RowFieldByPosition {
    fn plan_field_access(
        &self,
        access: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        let key = match &access.field_access {
            GetFieldAccess::ListIndex { key } => key,
            GetFieldAccess::NamedStructField { name } => {
                if let Ok(of) = access.expr.get_type(schema) {
                    check_has_fields(&access.expr, &of, name)?;
                }
                return Ok(PlannerResult::Original(access));
            }
            _ => return Ok(PlannerResult::Original(access)),
        };
        let Ok(DataType::Struct(fields)) = access.expr.get_type(schema) else {
            return Ok(PlannerResult::Original(access));
        };
        let position = match key.as_ref() {
            Expr::Literal(value, _) => value.cast_to(&DataType::Int64).ok(),
            _ => None,
        };
        let Some(ScalarValue::Int64(Some(position))) = position else {
            return Err(DataFusionError::Plan(format!(
                "a row's field is read by a constant position, not by {key}"
            )));
        };
        let field = usize::try_from(position)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .and_then(|i| fields.get(i))
            .ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "a row of {} fields has no field {position} (positions count from 1)",
                    fields.len()
                ))
            })?;
        Ok(PlannerResult::Planned(get_field(
            access.expr,
            field.name().as_str(),
        )))
    }
}

/// Refuses a field read (`get_field`) of a value that is not a row, a map
/// or NULL. Runs before DataFusion's type coercion, which would fail on it
/// with an internal error; changes nothing.
#[derive(Debug, Default)]
pub struct FieldsOfRows;

impl AnalyzerRule for FieldsOfRows {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::expr_rules::check_exprs(&plan, |e, schema| match e {
            Expr::ScalarFunction(f) if f.func.name() == "get_field" => match &f.args[..] {
                [value, name, ..] => match value.get_type(schema) {
                    Ok(of) => check_has_fields(value, &of, name),
                    Err(_) => Ok(()),
                },
                _ => Ok(()),
            },
            _ => Ok(()),
        })?;
        Ok(plan)
    }

    fn name(&self) -> &str {
        "squall_fields_of_rows"
    }
}

/// Refuses reading field `name` of `value` (of type `of`) unless it is a
/// row, a map or NULL.
fn check_has_fields(value: &Expr, of: &DataType, name: impl std::fmt::Display) -> Result<()> {
    if matches!(of, DataType::Struct(_) | DataType::Map(..) | DataType::Null) {
        return Ok(());
    }
    Err(DataFusionError::Plan(format!(
        "cannot read field {name} of {value}: it is a {}, and only a row or a map has fields",
        crate::trino_types::trino_type(of).display_name()
    )))
}
