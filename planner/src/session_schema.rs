//! The catalog's one schema described under the name a client's session
//! gives it.
//!
//! squall's tables are in one schema (`public`), and a table named with a
//! schema the catalog does not have (`default.nation`, or `nation` in a
//! Trino client's session of schema `default`) is looked up there
//! ([`crate::any_name`]). But the catalog's description said `public`: a
//! client connected with schema `default` that asked for its tables
//! (`information_schema.tables WHERE table_schema = 'default'`: SQLAlchemy's
//! `get_table_names`, so pandas and Superset) found none, and reflecting a
//! table failed with "no such table". Where the session's schema is not one
//! the catalog has, a statement reading the catalog's tables, columns and
//! views (information_schema's, `system.jdbc.tables`,
//! `system.metadata.table_comments`) finds the default schema's rows under
//! both names, as both names find its tables. The lists of schemas
//! (`SHOW SCHEMAS`, `information_schema.schemata`) do not list the
//! session's: a tool that creates its schema when it is not listed (dbt)
//! still creates it, and its tables then go there.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{TableFactor, VisitorMut};

/// `statement` with the catalog's description of `default` read as
/// `session`'s too (`None`: nothing to do).
pub fn rewrite(statement: Statement, default: &str, session: Option<&str>) -> Result<Statement> {
    let Some(session) = session else {
        return Ok(statement);
    };
    crate::trino_sql::rewritten(
        statement,
        &mut Renamed {
            default: default.to_string(),
            session: session.to_string(),
        },
    )
}

/// Whether a session's schema needs its name given to the default schema:
/// a schema the catalog does not have (`existing`), and not one of the
/// catalog's descriptions.
pub fn renamed<'a>(session: Option<&'a str>, existing: &[String]) -> Option<&'a str> {
    session.filter(|s| {
        !s.eq_ignore_ascii_case("information_schema")
            && !existing.iter().any(|e| e.eq_ignore_ascii_case(s))
    })
}

struct Renamed {
    default: String,
    session: String,
}

/// The column naming the schema in a table of the catalog's description
/// (its last two names: schema and table).
fn schema_column(schema: &str, table: &str) -> Option<&'static str> {
    match (schema, table) {
        ("information_schema", "tables" | "columns" | "views") => Some("table_schema"),
        ("jdbc", "tables") => Some("table_schem"),
        ("metadata", "table_comments" | "materialized_views") => Some("schema_name"),
        _ => None,
    }
}

impl VisitorMut for Renamed {
    type Break = DataFusionError;

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<Self::Break> {
        let TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
            .collect();
        let [.., schema, table] = parts.as_slice() else {
            return ControlFlow::Continue(());
        };
        let Some(column) = schema_column(schema, table) else {
            return ControlFlow::Continue(());
        };
        let outer = match alias {
            Some(a) => a.to_string(),
            None => table.clone(),
        };
        let quoted = |v: &str| format!("'{}'", v.replace('\'', "''"));
        let sql = format!(
            "SELECT * FROM (SELECT * FROM {name} UNION ALL \
             SELECT * REPLACE ({session} AS {column}) FROM {name} WHERE {column} = {default}) \
             AS {outer}",
            default = quoted(&self.default),
            session = quoted(&self.session),
        );
        match crate::table_sample::factor_of(&sql) {
            Some(renamed) => {
                *factor = renamed;
                ControlFlow::Continue(())
            }
            None => ControlFlow::Break(DataFusionError::Internal(format!(
                "describing the session's schema: cannot read {sql}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_name_the_session_schema() {
        let rewrite = |s| rewrite(s, "public", Some("default"));
        assert_eq!(
            crate::trino_sql::rewritten_text(
                "select table_name from information_schema.tables t where t.table_schema = 'default'",
                rewrite
            ),
            "SELECT table_name FROM (SELECT * FROM information_schema.tables UNION ALL \
             SELECT * REPLACE ('default' AS table_schema) FROM information_schema.tables \
             WHERE table_schema = 'public') AS t WHERE t.table_schema = 'default'"
        );
        assert_eq!(
            crate::trino_sql::rewritten_text("select * from nation", rewrite),
            "SELECT * FROM nation"
        );
        let existing = ["public".to_string(), "information_schema".to_string()];
        assert_eq!(renamed(Some("default"), &existing), Some("default"));
        assert_eq!(renamed(Some("PUBLIC"), &existing), None);
        assert_eq!(renamed(Some("information_schema"), &existing), None);
        assert_eq!(renamed(None, &existing), None);
    }
}
