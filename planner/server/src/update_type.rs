//! Trino's `updateType` of a statement that changes something
//! (`INSERT`, `CREATE TABLE`, `DROP TABLE`, ...), which clients read: the
//! Python client's `cursor.executemany` (behind pandas' `to_sql`) refuses
//! a statement without one ("Query must return update type").

use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{ObjectType, Statement as Sql};

/// The update type of `sql`'s (one) statement, as Trino names it; `None`
/// for a query, or for SQL that does not parse (its error comes later).
pub fn of(sql: &str) -> Option<&'static str> {
    let mut statements = squall_planner::trino_sql::parse(sql).ok()?;
    let statement = statements.pop_front()?;
    match statement {
        Statement::CreateExternalTable(_) => Some("CREATE TABLE"),
        Statement::Statement(s) => match *s {
            Sql::Insert(_) => Some("INSERT"),
            Sql::CreateTable(_) => Some("CREATE TABLE"),
            Sql::CreateView(_) => Some("CREATE VIEW"),
            Sql::CreateSchema { .. } => Some("CREATE SCHEMA"),
            Sql::Delete(_) => Some("DELETE"),
            Sql::Update { .. } => Some("UPDATE"),
            Sql::Drop { object_type, .. } => match object_type {
                ObjectType::Table => Some("DROP TABLE"),
                ObjectType::View => Some("DROP VIEW"),
                ObjectType::Schema => Some("DROP SCHEMA"),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The rows a statement changed, from its answer (see
/// [`squall_planner::query_record::update_count_of`]).
pub fn count_of(batches: &[arrow::array::RecordBatch]) -> Option<u64> {
    squall_planner::query_record::update_count_of(batches)
}

#[cfg(test)]
mod tests {
    #[test]
    fn statements_that_change_something_have_trino_s_update_type() {
        for (sql, want) in [
            ("insert into t values (1, 'x')", Some("INSERT")),
            ("create table t (a int)", Some("CREATE TABLE")),
            ("create table t as select 1", Some("CREATE TABLE")),
            (
                "create external table t stored as parquet location '/x/'",
                Some("CREATE TABLE"),
            ),
            ("drop table t", Some("DROP TABLE")),
            ("create view v as select 1", Some("CREATE VIEW")),
            ("select 1", None),
            ("show tables", None),
            ("selec 1", None),
        ] {
            assert_eq!(super::of(sql), want, "{sql}");
        }
    }
}
