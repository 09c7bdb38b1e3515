//! `agg(x) FILTER (WHERE p) OVER (...)`: DataFusion plans the window and
//! drops the FILTER, so the aggregate counted every row of the frame
//! (`sum(n) FILTER (WHERE n > 10) OVER (PARTITION BY r)` summed them all).
//! For an aggregate that leaves NULLs out (`count`, `sum`, `avg`, `min`,
//! `max`, the statistics), the filter moves into its arguments: `sum(CASE
//! WHEN p THEN x END) OVER (...)`, `count(*)` counting `CASE WHEN p THEN 1
//! END`. A window function whose answer NULLs would change (`array_agg`,
//! a ranking) with a FILTER is refused, naming it, rather than answered
//! unfiltered.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart, VisitorMut,
};

/// Aggregates (squall's and Trino's names) that leave NULL arguments out.
const NULL_BLIND: &[&str] = &[
    "count",
    "count_if",
    "sum",
    "avg",
    "min",
    "max",
    "bool_and",
    "bool_or",
    "every",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
    "corr",
    "covar_samp",
    "covar_pop",
    "approx_distinct",
    "geometric_mean",
    "bit_and",
    "bit_or",
    "bit_xor",
    "bitwise_and_agg",
    "bitwise_or_agg",
    "bitwise_xor_agg",
    "kurtosis",
    "skewness",
    "regr_slope",
    "regr_intercept",
    "regr_count",
    "regr_r2",
    "regr_avgx",
    "regr_avgy",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
];

/// `statement` with its filtered window aggregates filtering their arguments.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut FilteredWindows)
}

struct FilteredWindows;

impl VisitorMut for FilteredWindows {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        let Expr::Function(f) = expr else {
            return ControlFlow::Continue(());
        };
        if f.over.is_none() {
            return ControlFlow::Continue(());
        }
        let Some(filter) = f.filter.take() else {
            return ControlFlow::Continue(());
        };
        let name = match f.name.0.as_slice() {
            [ObjectNamePart::Identifier(i)] => i.value.to_ascii_lowercase(),
            _ => f.name.to_string(),
        };
        let FunctionArguments::List(list) = &mut f.args else {
            return refuse(&name);
        };
        if !NULL_BLIND.contains(&name.as_str()) {
            return refuse(&name);
        }
        for arg in &mut list.args {
            let (FunctionArg::Unnamed(value) | FunctionArg::Named { arg: value, .. }) = arg else {
                return refuse(&name);
            };
            let inner = match value {
                FunctionArgExpr::Expr(e) => e.to_string(),
                FunctionArgExpr::Wildcard => "1".to_string(),
                _ => return refuse(&name),
            };
            let sql = format!("CASE WHEN {filter} THEN {inner} END");
            match crate::trino_sql::expression(&sql, "a filtered window aggregate") {
                Ok(e) => *value = FunctionArgExpr::Expr(e),
                Err(e) => return ControlFlow::Break(e),
            }
        }
        ControlFlow::Continue(())
    }
}

fn refuse(name: &str) -> ControlFlow<DataFusionError> {
    ControlFlow::Break(DataFusionError::NotImplemented(format!(
        "FILTER (WHERE ...) on the window function {name}: squall filters the window \
         aggregates that leave NULLs out (count, sum, avg, min, max, ...); write the \
         condition into the arguments or a subquery"
    )))
}
