//! A row's field by position, as Trino reads it: `r[1]` of a ROW is its
//! first field (a constant index from 1), where DataFusion reads any `[i]`
//! as an array's element and refused a row (`array_element does not
//! support type Struct`). An expression planner ahead of DataFusion's:
//! `r[i]` of a struct becomes `get_field(r, name of field i)`; every other
//! subscript is left to DataFusion's.

use arrow::datatypes::DataType;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::expr::Expr;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{ExprSchemable, GetFieldAccess};

#[derive(Debug, Default)]
pub struct RowFieldByPosition;

impl ExprPlanner for RowFieldByPosition {
    fn plan_field_access(
        &self,
        access: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        let GetFieldAccess::ListIndex { key } = &access.field_access else {
            return Ok(PlannerResult::Original(access));
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
