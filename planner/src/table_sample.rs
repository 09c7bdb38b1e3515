//! `TABLESAMPLE BERNOULLI (p)` and `TABLESAMPLE SYSTEM (p)`, which
//! DataFusion's SQL planner parses and then ignores (a 10% sample read the
//! whole table, unsaid). Each sampled table or subquery is read as
//! `(SELECT * FROM t WHERE random() * 100 < p) AS t`: every row kept with
//! probability p%, as Trino's BERNOULLI keeps it; SYSTEM, which Trino
//! leaves to the connector (whole splits or none), samples rows the same
//! way. A percentage outside 0 to 100, a number of rows, a seed or a
//! bucket is refused, naming it.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, SetExpr, TableFactor, TableSample, TableSampleKind, TableSampleMethod, TableSampleUnit,
    Value, ValueWithSpan, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// `statement` with its sampled tables read through a filter.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Sampled)
}

struct Sampled;

fn refused(why: String) -> DataFusionError {
    DataFusionError::Plan(format!("TABLESAMPLE: {why}"))
}

/// The percentage of rows `sample` keeps, as SQL.
fn percentage(sample: &TableSample) -> Result<String> {
    if sample.seed.is_some() || sample.bucket.is_some() || sample.offset.is_some() {
        return Err(refused(format!(
            "{sample}: only BERNOULLI (p) and SYSTEM (p) of a percentage are supported"
        )));
    }
    if let Some(method) = &sample.name
        && !matches!(
            method,
            TableSampleMethod::Bernoulli | TableSampleMethod::System
        )
    {
        return Err(refused(format!(
            "method {method} is not supported: use BERNOULLI or SYSTEM"
        )));
    }
    let Some(quantity) = &sample.quantity else {
        return Err(refused(format!("{sample} gives no percentage")));
    };
    if matches!(quantity.unit, Some(TableSampleUnit::Rows)) {
        return Err(refused(format!(
            "{sample}: a number of rows is not supported, give a percentage"
        )));
    }
    if let Expr::Value(ValueWithSpan {
        value: Value::Number(n, _),
        ..
    }) = &quantity.value
        && !n.parse::<f64>().is_ok_and(|p| (0.0..=100.0).contains(&p))
    {
        return Err(refused(format!(
            "the sample percentage must be between 0 and 100, not {n}"
        )));
    }
    Ok(quantity.value.to_string())
}

impl VisitorMut for Sampled {
    type Break = DataFusionError;

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Self::Break> {
        let (sample, outer) = match factor {
            TableFactor::Table {
                name,
                alias,
                sample,
                args: None,
                ..
            } => {
                let outer = match alias {
                    Some(a) => Some(a.name.to_string()),
                    None => name.0.last().map(|part| part.to_string()),
                };
                (sample.take(), outer)
            }
            TableFactor::Derived { alias, sample, .. } => {
                (sample.take(), alias.as_ref().map(|a| a.name.to_string()))
            }
            _ => return ControlFlow::Continue(()),
        };
        let Some(
            TableSampleKind::BeforeTableAlias(sample) | TableSampleKind::AfterTableAlias(sample),
        ) = sample
        else {
            return ControlFlow::Continue(());
        };
        let p = match percentage(&sample) {
            Ok(p) => p,
            Err(e) => return ControlFlow::Break(e),
        };
        let alias = outer.map(|n| format!(" AS {n}")).unwrap_or_default();
        let sql =
            format!("SELECT * FROM (SELECT * FROM {factor} WHERE random() * 100 < ({p})){alias}");
        match factor_of(&sql) {
            Some(sampled) => {
                *factor = sampled;
                ControlFlow::Continue(())
            }
            None => ControlFlow::Break(refused(format!("cannot read {sql}"))),
        }
    }
}

/// The one table factor of the query `sql` (squall's own text, in the
/// generic dialect: `SELECT * REPLACE (...)` too); `None` if it does not
/// parse as one.
pub(crate) fn factor_of(sql: &str) -> Option<TableFactor> {
    let statements = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    if let Some(datafusion::sql::sqlparser::ast::Statement::Query(query)) = statements.first()
        && let SetExpr::Select(select) = query.body.as_ref()
        && let Some(from) = select.from.first()
    {
        return Some(from.relation.clone());
    }
    None
}
