//! Statements this process answers itself, without workers: DDL, `SET`,
//! `COPY`, `INSERT` (DataFusion runs them), queries of the catalog's own
//! description (information_schema), and `SHOW CATALOGS` / `SHOW SCHEMAS`
//! as such queries.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::logical_expr::{DdlStatement, LogicalPlan};
use datafusion::sql::parser::{DFParser, Statement};

use super::{Engine, Outcome, on_cpu};
use crate::catalog::record_partitions;
use crate::error::PlannerError;
use crate::result_stream::StreamedResult;

impl Engine {
    /// A statement DataFusion runs in this process: DDL, `SET`, `COPY`,
    /// `INSERT`, and queries of the catalog's own description
    /// (information_schema, whose tables no worker could read).
    pub(super) async fn run_here(
        &self,
        plan: LogicalPlan,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Outcome> {
        {
            let partitioned = match &plan {
                LogicalPlan::Ddl(DdlStatement::CreateExternalTable(t))
                    if !t.table_partition_cols.is_empty() =>
                {
                    Some((t.name.to_string(), t.locations.clone()))
                }
                _ => None,
            };
            let ctx = self.ctx.clone();
            let (schema, batches) = on_cpu(cancel, async move {
                let df = ctx.execute_logical_plan(plan).await?;
                let schema = Arc::new(df.schema().as_arrow().clone());
                Ok((schema, df.collect().await?))
            })
            .await?;
            if let Some((table, locations)) = partitioned {
                for location in &locations {
                    record_partitions(&self.ctx, &table, location, &self.partitions).await?;
                }
            }
            Ok(Outcome::Finished(StreamedResult::memory(schema, batches)))
        }
    }
}

/// `SHOW CATALOGS` and `SHOW SCHEMAS` (which clients browse with and
/// DataFusion's SQL does not have) as the queries of `system.jdbc` and
/// information_schema that answer them, with Trino's column names;
/// `DESCRIBE t` as `SHOW COLUMNS FROM t`; any other statement as it is.
pub(super) fn show_as_query(statement: Statement) -> Result<Statement> {
    use datafusion::sql::sqlparser::ast::{DescribeAlias, Statement as Sql};
    let query = match &statement {
        Statement::Statement(s) => match s.as_ref() {
            Sql::ShowCatalogs { .. } => {
                "select table_cat as \"Catalog\" from system.jdbc.catalogs order by 1".to_string()
            }
            Sql::ShowSchemas { .. } => {
                "select distinct schema_name as \"Schema\" from information_schema.schemata order by 1"
                    .to_string()
            }
            // A table's columns with the catalog's (Trino's) type names,
            // as SHOW COLUMNS gives them, not DataFusion's Arrow names.
            Sql::ExplainTable {
                describe_alias: DescribeAlias::Describe | DescribeAlias::Desc,
                hive_format: None,
                table_name,
                ..
            } => format!("SHOW COLUMNS FROM {table_name}"),
            _ => return Ok(statement),
        },
        _ => return Ok(statement),
    };
    let mut parsed = DFParser::parse_sql(&query)?;
    parsed
        .pop_front()
        .ok_or_else(|| PlannerError::Internal("an empty SHOW query".into()).into())
}

/// Whether `plan` reads tables and all of them are information_schema's
/// or the `system` catalog's (the catalog's own description, held by this
/// process).
pub(super) fn reads_only_information_schema(plan: &LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let (mut scans, mut information) = (0usize, 0usize);
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            scans += 1;
            if scan.table_name.schema() == Some("information_schema")
                || scan.table_name.catalog() == Some(crate::information_schema::SYSTEM_CATALOG)
            {
                information += 1;
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    scans > 0 && scans == information
}
