//! `sum` and `avg` of a value that is NULL by its type (`sum(NULL)`,
//! `sum(CASE WHEN p THEN NULL END)`): NULL, as in Trino and DuckDB, where
//! DataFusion failed the query with an internal error ("SUM not supported
//! for Null"). An expression planner ahead of DataFusion's casts such an
//! argument to the type the aggregate sums (BIGINT for `sum`, DOUBLE for
//! `avg`), so it aggregates no value. What is NULL by its type is known
//! here without the query's columns: a NULL literal, or a CASE whose every
//! result is one.

use arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawAggregateExpr};
use datafusion::logical_expr::{ExprSchemable, cast};

#[derive(Debug, Default)]
pub struct NullAggregates;

impl ExprPlanner for NullAggregates {
    fn plan_aggregate(
        &self,
        mut expr: RawAggregateExpr,
    ) -> Result<PlannerResult<RawAggregateExpr>> {
        let to = match expr.func.name() {
            "sum" => DataType::Int64,
            "avg" | "mean" => DataType::Float64,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let [arg] = expr.args.as_slice() else {
            return Ok(PlannerResult::Original(expr));
        };
        if !matches!(arg.get_type(&DFSchema::empty()), Ok(DataType::Null)) {
            return Ok(PlannerResult::Original(expr));
        }
        let arg = expr.args.remove(0);
        expr.args.push(cast(arg, to));
        Ok(PlannerResult::Original(expr))
    }
}
