//! `DESCRIBE OUTPUT` and `DESCRIBE INPUT` of a prepared statement, as Trino
//! answers them: JDBC's `PreparedStatement.getMetaData()` /
//! `getParameterMetaData()` and the Python client's `cursor.describe(sql)`
//! ask them. A Trino client keeps its prepared statements itself and sends
//! them with every request (`X-Trino-Prepared-Statement`); squall's HTTP
//! API writes the statement a name stands for in place of the name, its
//! `?` parameters as `$1`, `$2`, ..., so the engine receives `DESCRIBE
//! OUTPUT '<sql>'`. That is answered here as a `VALUES` query of Trino's
//! columns: for each column of the statement's result, its name, the
//! catalog, schema and table it is read from when it is a table's column
//! (empty otherwise), its Trino type, the type's fixed size in bytes (0
//! for variable-width types) and whether the select list named it with
//! `AS`; for each parameter, its position from 0 and its type (`unknown`
//! where the statement does not tell it). A statement that is not a query
//! has no output rows.

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Distinct, Expr, JoinType, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{SelectItem, SetExpr, Statement as Sql};

use crate::trino_functions::SessionIdentity;

/// Which side of a prepared statement is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Describe {
    Output,
    Input,
}

/// `DESCRIBE OUTPUT '<sql>'` / `DESCRIBE INPUT '<sql>'` (one statement,
/// an optional `;`): what is described and the statement's text.
pub fn parse(sql: &str) -> Option<(Describe, String)> {
    let mut words = sql.trim_start().splitn(3, char::is_whitespace);
    if !words.next()?.eq_ignore_ascii_case("describe") {
        return None;
    }
    let kind = match words.next()? {
        w if w.eq_ignore_ascii_case("output") => Describe::Output,
        w if w.eq_ignore_ascii_case("input") => Describe::Input,
        _ => return None,
    };
    let rest = words.next()?.trim();
    let rest = rest.strip_suffix(';').unwrap_or(rest).trim_end();
    let quoted = rest.strip_prefix('\'')?.strip_suffix('\'')?;
    // A quote inside is doubled; a lone one would end the literal.
    let mut text = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        if c == '\'' && chars.next() != Some('\'') {
            return None;
        }
        text.push(c);
    }
    Some((kind, text))
}

/// The query that answers `sql` when it is a DESCRIBE of a prepared
/// statement, planned under `options`' settings and identity.
pub async fn answering(
    ctx: &SessionContext,
    sql: &str,
    options: &crate::RunOptions,
) -> Result<Option<String>> {
    let Some((kind, described)) = parse(sql) else {
        return Ok(None);
    };
    let mut state = ctx.state();
    crate::limits::apply_session_settings(state.config_mut(), &options.settings)?;
    as_query(ctx, &state, kind, &described, &options.identity)
        .await
        .map(Some)
}

/// The query that answers `kind` of the statement `sql`.
pub async fn as_query(
    ctx: &SessionContext,
    state: &SessionState,
    kind: Describe,
    sql: &str,
    identity: &SessionIdentity,
) -> Result<String> {
    let mut statements = crate::trino_sql::parse(sql)?;
    let (Some(statement), true) = (statements.pop_front(), statements.is_empty()) else {
        return Err(DataFusionError::Plan(format!(
            "DESCRIBE {}: a prepared statement is one statement",
            name(kind)
        )));
    };
    let aliased = aliased_items(&statement);
    let plan = crate::replan::plan_as_trino(ctx, state, statement, identity).await?;
    match kind {
        Describe::Output => Ok(output(state, &plan, aliased)),
        Describe::Input => input(&plan),
    }
}

fn name(kind: Describe) -> &'static str {
    match kind {
        Describe::Output => "OUTPUT",
        Describe::Input => "INPUT",
    }
}

const OUTPUT_COLUMNS: [(&str, &str); 7] = [
    ("Column Name", "VARCHAR"),
    ("Catalog", "VARCHAR"),
    ("Schema", "VARCHAR"),
    ("Table", "VARCHAR"),
    ("Type", "VARCHAR"),
    ("Type Size", "BIGINT"),
    ("Aliased", "BOOLEAN"),
];

const INPUT_COLUMNS: [(&str, &str); 2] = [("Position", "BIGINT"), ("Type", "VARCHAR")];

fn output(state: &SessionState, plan: &LogicalPlan, aliased: Option<Vec<bool>>) -> String {
    let is_query = !matches!(
        plan,
        LogicalPlan::Ddl(_)
            | LogicalPlan::Dml(_)
            | LogicalPlan::Copy(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::DescribeTable(_)
    );
    if !is_query {
        return values(&OUTPUT_COLUMNS, Vec::new());
    }
    let catalog = &state.config_options().catalog;
    let rows = plan
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let (catalog, schema, table) = match origin(plan, i) {
                Some(table) => (
                    table
                        .catalog()
                        .unwrap_or(&catalog.default_catalog)
                        .to_string(),
                    table
                        .schema()
                        .unwrap_or(&catalog.default_schema)
                        .to_string(),
                    table.table().to_string(),
                ),
                None => Default::default(),
            };
            let trino = crate::trino_types::trino_type(field.data_type()).display_name();
            let aliased = aliased.as_ref().is_some_and(|a| a[i]);
            vec![
                text(field.name()),
                text(&catalog),
                text(&schema),
                text(&table),
                text(&trino),
                fixed_size(&trino).to_string(),
                aliased.to_string(),
            ]
        })
        .collect();
    values(&OUTPUT_COLUMNS, rows)
}

fn input(plan: &LogicalPlan) -> Result<String> {
    let types = plan.get_parameter_types()?;
    let position = |name: &str| name.strip_prefix('$')?.parse::<usize>().ok();
    let count = types.keys().filter_map(|k| position(k)).max().unwrap_or(0);
    let rows = (1..=count)
        .map(|n| {
            let trino = match types.get(&format!("${n}")) {
                Some(Some(t)) => crate::trino_types::trino_type(t).display_name(),
                _ => "unknown".to_string(),
            };
            vec![(n - 1).to_string(), text(&trino)]
        })
        .collect();
    Ok(values(&INPUT_COLUMNS, rows))
}

/// `SELECT * FROM (VALUES ...) AS "Statement Output"(<columns>)`, typed by
/// `columns` (a row of typed NULLs and `LIMIT 0` when there is no row).
fn values(columns: &[(&str, &str)], rows: Vec<Vec<String>>) -> String {
    let names: Vec<String> = columns.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let typed: Vec<String> = columns
        .iter()
        .map(|(n, t)| format!("CAST(\"{n}\" AS {t}) AS \"{n}\""))
        .collect();
    let (rows, limit) = match rows.is_empty() {
        true => (vec![vec!["NULL".to_string(); columns.len()]], " LIMIT 0"),
        false => (rows, ""),
    };
    let rows: Vec<String> = rows.iter().map(|r| format!("({})", r.join(", "))).collect();
    format!(
        "SELECT {} FROM (VALUES {}) AS \"Statement Output\"({}){limit}",
        typed.join(", "),
        rows.join(", "),
        names.join(", ")
    )
}

fn text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Bytes of a Trino type's fixed-width value; 0 for a variable-width one.
fn fixed_size(trino: &str) -> u32 {
    let digits = |s: &str| {
        s.split(|c: char| !c.is_ascii_digit())
            .find(|d| !d.is_empty())
            .and_then(|d| d.parse::<u32>().ok())
            .unwrap_or(0)
    };
    match trino {
        "bigint" | "double" | "interval day to second" => 8,
        "integer" | "real" | "date" | "interval year to month" => 4,
        "smallint" => 2,
        "tinyint" | "boolean" => 1,
        "uuid" => 16,
        t if t.starts_with("decimal") => match digits(t) {
            0..=18 => 8,
            _ => 16,
        },
        t if t.starts_with("timestamp") && t.ends_with("with time zone") => match digits(t) {
            0..=3 => 8,
            _ => 12,
        },
        t if t.starts_with("timestamp") => match digits(t) {
            0..=6 => 8,
            _ => 12,
        },
        t if t.starts_with("time") => 8,
        _ => 0,
    }
}

/// The table column `i` of `plan`'s output reads unchanged, through
/// projections, aliases, filters, joins and groups.
fn origin(plan: &LogicalPlan, i: usize) -> Option<datafusion::common::TableReference> {
    let column = |input: &LogicalPlan, e: &Expr| -> Option<usize> {
        let mut e = e;
        while let Expr::Alias(a) = e {
            e = &a.expr;
        }
        match e {
            Expr::Column(c) => input.schema().index_of_column(c).ok(),
            _ => None,
        }
    };
    match plan {
        LogicalPlan::TableScan(scan) => Some(scan.table_name.clone()),
        LogicalPlan::Projection(p) => origin(&p.input, column(&p.input, p.expr.get(i)?)?),
        LogicalPlan::Aggregate(a) => {
            let group = a.group_expr.get(i)?;
            origin(&a.input, column(&a.input, group)?)
        }
        LogicalPlan::Join(j) => {
            let left = j.left.schema().fields().len();
            match j.join_type {
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => origin(&j.left, i),
                JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
                    origin(&j.right, i)
                }
                _ if i < left => origin(&j.left, i),
                _ => origin(&j.right, i - left),
            }
        }
        LogicalPlan::Window(w) if i < w.input.schema().fields().len() => origin(&w.input, i),
        LogicalPlan::Filter(_)
        | LogicalPlan::Sort(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Repartition(_)
        | LogicalPlan::Distinct(Distinct::All(_)) => origin(plan.inputs()[0], i),
        _ => None,
    }
}

/// Whether each item of the statement's select list is named with `AS`;
/// `None` where the items are not the result's columns one for one (a
/// `*`, or not a plain select).
fn aliased_items(statement: &Statement) -> Option<Vec<bool>> {
    let Statement::Statement(s) = statement else {
        return None;
    };
    let Sql::Query(query) = s.as_ref() else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { .. } => Some(true),
            SelectItem::UnnamedExpr(_) => Some(false),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_described_statement_is_read_from_its_literal() {
        assert_eq!(
            parse("describe output 'select ''a'' from t where x = $1';"),
            Some((
                Describe::Output,
                "select 'a' from t where x = $1".to_string()
            ))
        );
        assert_eq!(
            parse("DESCRIBE INPUT 'select 1'"),
            Some((Describe::Input, "select 1".to_string()))
        );
        for other in [
            "describe nation",
            "describe output p1",
            "describe output 'a' 'b'",
            "describe output 'it's'",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn fixed_sizes_are_trino_s() {
        for (t, size) in [
            ("bigint", 8),
            ("varchar", 0),
            ("decimal(15,2)", 8),
            ("decimal(38,0)", 16),
            ("timestamp(3)", 8),
            ("timestamp(9)", 12),
            ("timestamp(6) with time zone", 12),
            ("date", 4),
            ("array(bigint)", 0),
        ] {
            assert_eq!(fixed_size(t), size, "{t}");
        }
    }
}
