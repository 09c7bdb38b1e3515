//! Statements whose whole effect lives in the engine's memory: tables,
//! views and schemas created, dropped or renamed, rows of a table created
//! in the process changed. Where an engine lives for one request only (the
//! aws backend builds one per request, in a coordinator of its own), such a
//! statement as a request's last would change nothing any later request
//! sees, and reporting it done would be a lie: it is refused, naming what
//! works instead. Earlier in a request it is what the request's later
//! statements read (`CREATE TABLE t AS ...; SELECT ... FROM t`), and runs.
//! And transactions, which no backend has, are refused by name everywhere.

use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::{Statement as Sql, TableObject};

/// The refusal of `statement` as the last of a request to an engine that
/// lives for that request only; `None` when its effect outlives the engine
/// (a query, `COPY ... TO`, `INSERT` into a table of the catalog, which
/// writes a file into its folder).
pub(super) async fn lost_with_the_request(
    ctx: &SessionContext,
    statement: &Statement,
) -> Option<DataFusionError> {
    let kind = match statement {
        Statement::CreateExternalTable(_) => "CREATE EXTERNAL TABLE",
        Statement::Statement(sql) => match sql.as_ref() {
            Sql::CreateTable(_) => "CREATE TABLE",
            Sql::CreateView(_) => "CREATE VIEW",
            Sql::CreateSchema { .. } | Sql::CreateDatabase { .. } => "CREATE SCHEMA",
            Sql::Drop { .. } => "DROP",
            Sql::AlterTable(_) => "ALTER TABLE",
            Sql::Delete(_) => "DELETE",
            Sql::Update(_) => "UPDATE",
            Sql::Truncate(_) => "TRUNCATE",
            Sql::Insert(insert) => {
                let TableObject::TableName(name) = &insert.table else {
                    return None;
                };
                let table = object_name_to_table_reference(name.clone(), true).ok()?;
                let provider = ctx.table_provider(table).await.ok()?;
                provider.downcast_ref::<MemTable>()?;
                "INSERT"
            }
            _ => return None,
        },
        _ => return None,
    };
    Some(DataFusionError::NotImplemented(format!(
        "{kind} as a request's last statement on the aws backend: every request runs in a \
         coordinator of its own, and the tables, views and schemas a statement creates (and \
         the rows of a table created so) live in its memory until the request ends, so no \
         later request would see this one's effect. Use what it makes in the same request \
         (CREATE TABLE t AS SELECT ...; SELECT ... FROM t), or write the rows into the \
         catalog, whose next query reads them as a table: COPY (SELECT ...) TO \
         's3://bucket/catalog/t/' STORED AS PARQUET"
    )))
}

/// `START TRANSACTION`, `BEGIN`, `COMMIT`, `ROLLBACK`: refused by name.
/// Every statement commits on its own, so a transaction's ROLLBACK could
/// not undo what it wrote; clients run in autocommit mode (the Trino
/// clients' default).
pub(super) fn transaction(statement: &Statement) -> Option<DataFusionError> {
    let Statement::Statement(sql) = statement else {
        return None;
    };
    let what = match sql.as_ref() {
        Sql::StartTransaction { .. } => "START TRANSACTION",
        Sql::Commit { .. } => "COMMIT",
        Sql::Rollback { .. } => "ROLLBACK",
        _ => return None,
    };
    Some(DataFusionError::NotImplemented(format!(
        "{what}: squall has no transactions; every statement commits on its own, so a \
         ROLLBACK could not undo what a statement wrote. Run the client in autocommit mode \
         (the Trino clients' default)"
    )))
}
