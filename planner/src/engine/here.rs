//! Statements this process answers itself, without workers: DDL, `SET`,
//! `COPY`, `INSERT` (DataFusion runs them), queries of the catalog's own
//! description (information_schema), and `SHOW CATALOGS` / `SHOW SCHEMAS`
//! as such queries.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::catalog::MemorySchemaProvider;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{CreateCatalogSchema, DdlStatement, LogicalPlan};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::parser::{DFParser, Statement};
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::ObjectName;

use super::prepare::on_cpu;
use super::{Engine, Outcome};
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
            // A table made from a query (CTAS) has nullable columns, as in
            // Trino, whatever its source's: a later INSERT of a NULL failed.
            let made_from_query = match &plan {
                LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(c))
                    if !matches!(c.input.as_ref(), LogicalPlan::EmptyRelation(_)) =>
                {
                    Some(c.name.clone())
                }
                _ => None,
            };
            let (schema, batches) = answer_here(self.ctx.clone(), plan, cancel).await?;
            if let Some(name) = made_from_query {
                nullable_columns(&self.ctx, name).await?;
            }
            if let Some((table, locations)) = partitioned {
                for location in &locations {
                    record_partitions(&self.ctx, &table, location, &self.partitions).await?;
                }
            }
            Ok(Outcome::Finished(StreamedResult::memory(schema, batches)))
        }
    }
}

impl Engine {
    /// A query answered here (constants, the catalog's tables) in the
    /// statement's `state`: its session's settings as the client set them
    /// (`SHOW SESSION` and `information_schema.df_settings` showed the
    /// engine's own).
    pub(super) async fn run_read_here(
        &self,
        state: datafusion::execution::SessionState,
        plan: LogicalPlan,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Outcome> {
        let ctx = SessionContext::new_with_state(state);
        let (schema, batches) = answer_here(ctx, plan, cancel).await?;
        Ok(Outcome::Finished(StreamedResult::memory(schema, batches)))
    }

    /// `CREATE SCHEMA [IF NOT EXISTS] [catalog.]name`: a schema of its own,
    /// holding the tables and views created in it (dbt creates one per
    /// target). DataFusion's own would find every name existing: squall
    /// reads any schema name it does not have as its default schema
    /// ([`crate::any_name`]).
    pub(super) fn create_schema(&self, create: &CreateCatalogSchema) -> Result<Outcome> {
        let parts: Vec<&str> = create.schema_name.split('.').collect();
        let schema = match parts.as_slice() {
            [schema] | [_, schema] => *schema,
            _ => {
                return Err(DataFusionError::Plan(format!(
                    "CREATE SCHEMA {}: a schema is named as schema or catalog.schema",
                    create.schema_name
                )));
            }
        };
        let default = self
            .ctx
            .state()
            .config_options()
            .catalog
            .default_catalog
            .clone();
        let catalog = self
            .ctx
            .catalog(&default)
            .ok_or_else(|| PlannerError::Internal("no default catalog".into()))?;
        if catalog.schema_names().iter().any(|name| name == schema) {
            if !create.if_not_exists {
                return Err(DataFusionError::Plan(format!(
                    "schema '{schema}' already exists"
                )));
            }
        } else {
            catalog.register_schema(schema, Arc::new(MemorySchemaProvider::new()))?;
        }
        Ok(empty_result())
    }
}

/// `plan` run in `ctx` on the CPU pool, its rows collected.
async fn answer_here(
    ctx: SessionContext,
    plan: LogicalPlan,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    on_cpu(cancel, async move {
        let df = ctx.execute_logical_plan(plan).await?;
        collect_paced(df).await
    })
    .await
}

/// A DataFrame's rows, its joins and unnests paced as a worker paces them
/// (`squall_core::exec::pace_plan`), so that a cancelled statement stops
/// at its next batch even if its operators never wait for input (an
/// unnest of a long literal array, a cross join of such rows).
/// The rows of `df` and their schema: the schema of the plan that made them,
/// as analysis typed it (a union of `1` and `2.5` is DOUBLE; before the
/// analysis its first branch's BIGINT, and the rows' bytes were read as
/// that type).
pub(super) async fn collect_paced(df: DataFrame) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let task = Arc::new(df.task_ctx());
    let depth = squall_core::config::SquallConfig::from_session(task.session_config())
        .query
        .max_recursion_depth;
    let logical = df.logical_plan().clone();
    let plan = df
        .create_physical_plan()
        .await
        .map_err(|e| super::prepare::undecorrelated(e, &logical))?;
    let plan = squall_core::exec::pace_plan(plan)?;
    let plan = squall_core::exec::limit_recursion(plan, depth)?;
    let schema = plan.schema();
    Ok((
        schema,
        datafusion::physical_plan::collect(plan, task).await?,
    ))
}

/// `ALTER TABLE a RENAME TO b` (dbt swaps a rebuilt table in so) of a
/// table or view created in this process (`CREATE TABLE`, `CREATE
/// VIEW`); `None` for any other statement. A table of the catalog is
/// its folder: it is renamed by renaming the folder.
pub(super) async fn rename_table(
    ctx: &SessionContext,
    statement: &Statement,
) -> Option<Result<Outcome>> {
    use datafusion::sql::sqlparser::ast::{
        AlterTableOperation, RenameTableNameKind, Statement as Sql,
    };
    let Statement::Statement(sql) = statement else {
        return None;
    };
    let Sql::AlterTable(alter) = sql.as_ref() else {
        return None;
    };
    let [
        AlterTableOperation::RenameTable {
            table_name: RenameTableNameKind::To(to) | RenameTableNameKind::As(to),
        },
    ] = alter.operations.as_slice()
    else {
        return None;
    };
    Some(rename(ctx, &alter.name, to, alter.if_exists).await)
}

async fn rename(
    ctx: &SessionContext,
    from: &ObjectName,
    to: &ObjectName,
    if_exists: bool,
) -> Result<Outcome> {
    let (from_ref, to_ref) = (
        object_name_to_table_reference(from.clone(), true)?,
        object_name_to_table_reference(to.clone(), true)?,
    );
    if !ctx.table_exist(from_ref.clone())? {
        return if if_exists {
            Ok(empty_result())
        } else {
            Err(DataFusionError::Plan(format!(
                "ALTER TABLE {from} RENAME TO {to}: table '{from_ref}' not found"
            )))
        };
    }
    let table = ctx.table_provider(from_ref.clone()).await?;
    let created_here = (table.as_ref() as &dyn std::any::Any).is::<MemTable>()
        || table.table_type() == datafusion::datasource::TableType::View;
    if !created_here {
        return Err(DataFusionError::Plan(format!(
            "ALTER TABLE {from} RENAME TO {to}: '{from_ref}' is a table of the catalog \
             (a folder of files, named by its folder): rename the folder; squall renames \
             the tables and views created with CREATE TABLE or CREATE VIEW"
        )));
    }
    if ctx.table_exist(to_ref.clone())? {
        return Err(DataFusionError::Plan(format!(
            "ALTER TABLE {from} RENAME TO {to}: table '{to_ref}' already exists"
        )));
    }
    ctx.register_table(to_ref, Arc::clone(&table))?;
    ctx.deregister_table(from_ref)?;
    Ok(empty_result())
}

/// The answer of a statement that returns no rows.
fn empty_result() -> Outcome {
    Outcome::Finished(StreamedResult::memory(
        Arc::new(arrow::datatypes::Schema::empty()),
        Vec::new(),
    ))
}

/// `SHOW CATALOGS`, `SHOW SCHEMAS`, `SHOW TABLES` and `SHOW COLUMNS FROM
/// t` / `DESCRIBE t` as the queries of `system.jdbc` and information_schema
/// that answer them, in Trino's shape (columns `Catalog`, `Schema`,
/// `Table`; `Column`, `Type`, `Extra`, `Comment`, Trino's type names), which
/// Trino clients read; any other statement as it is. A schema squall does
/// not have is its default schema, as in table names ([`crate::any_name`]).
pub(crate) async fn show_as_query(ctx: &SessionContext, statement: Statement) -> Result<Statement> {
    use datafusion::sql::sqlparser::ast::{
        DescribeAlias, ShowCreateObject, ShowStatementFilter, Statement as Sql,
    };
    let query = match &statement {
        Statement::Statement(s) => match s.as_ref() {
            Sql::ShowCatalogs { .. } => {
                "select table_cat as \"Catalog\" from system.jdbc.catalogs order by 1".to_string()
            }
            Sql::ShowSchemas { show_options, .. } => {
                // Trino's `SHOW SCHEMAS [FROM catalog] [LIKE 'p']`: the
                // session's catalog (any other name is it too, as in a
                // table's name), or `system`'s.
                let Some(like) = like_condition(&show_options.filter_position, "table_schem")
                else {
                    return Ok(statement);
                };
                let named = shown_in(show_options);
                let catalog = match named.as_deref() {
                    Some(crate::information_schema::SYSTEM_CATALOG) => {
                        crate::information_schema::SYSTEM_CATALOG.to_string()
                    }
                    _ => ctx.state().config_options().catalog.default_catalog.clone(),
                };
                format!(
                    "select distinct table_schem as \"Schema\" from system.jdbc.schemas \
                     where table_catalog = {}{like} order by 1",
                    quoted(&catalog)
                )
            }
            Sql::ShowTables { show_options, .. } => {
                // Other filters: DataFusion's SHOW TABLES.
                let Some(like) = like_condition(&show_options.filter_position, "table_name") else {
                    return Ok(statement);
                };
                let parent = shown_in(show_options);
                format!(
                    "select table_name as \"Table\" from information_schema.tables \
                     where table_schema = {}{like} order by 1",
                    quoted(&schema_or_default(ctx, parent.as_deref()))
                )
            }
            Sql::ShowColumns { show_options, .. } => {
                // Trino's `SHOW COLUMNS FROM t LIKE 'p'`; other filters are
                // DataFusion's to refuse.
                let Some(like) = like_condition(&show_options.filter_position, "column_name")
                else {
                    return Ok(statement);
                };
                match show_options
                    .show_in
                    .as_ref()
                    .and_then(|i| i.parent_name.as_ref())
                {
                    Some(name) => columns_query(ctx, name, &like).await?,
                    None => return Ok(statement),
                }
            }
            Sql::ExplainTable {
                describe_alias: DescribeAlias::Describe | DescribeAlias::Desc,
                hive_format: None,
                table_name,
                ..
            } => columns_query(ctx, table_name, "").await?,
            Sql::ShowCreate {
                obj_type: ShowCreateObject::Table,
                obj_name,
            } => create_table_query(ctx, obj_name).await?,
            Sql::ShowCreate {
                obj_type: ShowCreateObject::View,
                obj_name,
            } => create_view_query(ctx, obj_name).await?,
            Sql::ShowFunctions { filter } => {
                let like = match filter {
                    None => String::new(),
                    Some(ShowStatementFilter::Like(p)) => format!(" where f like {}", quoted(p)),
                    Some(_) => return Ok(statement),
                };
                functions_query(ctx, &like)
            }
            Sql::ShowVariable { variable }
                if variable
                    .first()
                    .is_some_and(|v| v.value.eq_ignore_ascii_case("stats")) =>
            {
                let name = match variable.as_slice() {
                    [_, for_, name @ ..]
                        if for_.value.eq_ignore_ascii_case("for")
                            && !name.is_empty()
                            && !name.iter().any(|n| {
                                n.value.contains('(') || n.value.eq_ignore_ascii_case("select")
                            }) =>
                    {
                        ObjectName::from(name.to_vec())
                    }
                    _ => {
                        return Err(DataFusionError::NotImplemented(
                            "SHOW STATS: squall shows a table's statistics, SHOW STATS FOR t \
                             (not those of a query)"
                                .into(),
                        ));
                    }
                };
                let reference = object_name_to_table_reference(name, true)?;
                crate::show_stats::stats_query(ctx, reference).await?
            }
            _ => return Ok(statement),
        },
        _ => return Ok(statement),
    };
    let mut parsed = DFParser::parse_sql(&query)?;
    parsed
        .pop_front()
        .ok_or_else(|| PlannerError::Internal("an empty SHOW query".into()).into())
}

/// The last name of a SHOW statement's `FROM` / `IN` clause (a schema or a
/// catalog), as SQL names it.
fn shown_in(options: &datafusion::sql::sqlparser::ast::ShowStatementOptions) -> Option<String> {
    options
        .show_in
        .as_ref()
        .and_then(|i| i.parent_name.as_ref())
        .and_then(|n| n.0.last())
        .and_then(|p| p.as_ident())
        .map(normalized)
}

/// The condition a SHOW statement's `LIKE 'p'` puts on `column` (`""` for
/// no filter), or None for another filter.
fn like_condition(
    filter: &Option<datafusion::sql::sqlparser::ast::ShowStatementFilterPosition>,
    column: &str,
) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{ShowStatementFilter, ShowStatementFilterPosition};
    match filter {
        None => Some(String::new()),
        Some(
            ShowStatementFilterPosition::Infix(ShowStatementFilter::Like(p))
            | ShowStatementFilterPosition::Suffix(ShowStatementFilter::Like(p)),
        ) => Some(format!(" and {column} like {}", quoted(p))),
        Some(_) => None,
    }
}

/// Trino's `SHOW COLUMNS FROM t` (with `like`, a condition on the column's
/// name, or none): after checking `t` is a table (its error otherwise, such
/// as why a table of the catalog cannot be read).
async fn columns_query(ctx: &SessionContext, name: &ObjectName, like: &str) -> Result<String> {
    let reference = object_name_to_table_reference(name.clone(), true)?;
    ctx.table_provider(reference.clone()).await?;
    let schema = schema_or_default(ctx, reference.schema());
    Ok(format!(
        "select column_name as \"Column\", data_type as \"Type\", '' as \"Extra\", \
         coalesce(comment, '') as \"Comment\" from information_schema.columns \
         where table_schema = {} and table_name = {}{like} order by ordinal_position",
        quoted(&schema),
        quoted(reference.table())
    ))
}

/// Trino's `SHOW CREATE TABLE t`: one row, `Create Table`, the statement
/// that would make a table of its columns.
async fn create_table_query(ctx: &SessionContext, name: &ObjectName) -> Result<String> {
    let reference = object_name_to_table_reference(name.clone(), true)?;
    ctx.table_provider(reference.clone()).await?;
    let schema = schema_or_default(ctx, reference.schema());
    let catalog = ctx.state().config_options().catalog.default_catalog.clone();
    let head = format!("CREATE TABLE {catalog}.{schema}.{} (", reference.table());
    Ok(format!(
        "select concat({}, chr(10), string_agg(concat('   ', column_name, ' ', data_type), \
         concat(',', chr(10)) order by ordinal_position), chr(10), ')') as \"Create Table\" \
         from information_schema.columns where table_schema = {} and table_name = {}",
        quoted(&head),
        quoted(&schema),
        quoted(reference.table())
    ))
}

/// Trino's `SHOW CREATE VIEW v`: one row, `Create View`, the statement
/// that made the view (its query as written, the view named in full).
async fn create_view_query(ctx: &SessionContext, name: &ObjectName) -> Result<String> {
    let reference = object_name_to_table_reference(name.clone(), true)?;
    let table = ctx.table_provider(reference.clone()).await?;
    let not_a_view = || {
        DataFusionError::Plan(format!(
            "{} is a table, not a view (SHOW CREATE TABLE shows it)",
            reference.table()
        ))
    };
    let definition = table
        .downcast_ref::<datafusion::catalog::view::ViewTable>()
        .ok_or_else(not_a_view)?
        .definition()
        .cloned()
        .ok_or_else(not_a_view)?;
    let query = match crate::trino_sql::parse(&definition)?.pop_front() {
        Some(datafusion::sql::parser::Statement::Statement(statement)) => match *statement {
            datafusion::sql::sqlparser::ast::Statement::CreateView(create) => {
                create.query.to_string()
            }
            _ => definition,
        },
        _ => definition,
    };
    let schema = schema_or_default(ctx, reference.schema());
    let catalog = ctx.state().config_options().catalog.default_catalog.clone();
    let text = format!(
        "CREATE VIEW {catalog}.{schema}.{} AS\n{query}",
        reference.table()
    );
    Ok(format!("select {} as \"Create View\"", quoted(&text)))
}

/// Trino's `SHOW FUNCTIONS [LIKE p]`: the session's functions, each with
/// its kind (clients complete names from it).
fn functions_query(ctx: &SessionContext, like: &str) -> String {
    let state = ctx.state();
    let mut rows: Vec<(String, &str)> = Vec::new();
    rows.extend(
        state
            .scalar_functions()
            .keys()
            .map(|n| (n.clone(), "scalar")),
    );
    rows.extend(
        state
            .aggregate_functions()
            .keys()
            .map(|n| (n.clone(), "aggregate")),
    );
    rows.extend(
        state
            .window_functions()
            .keys()
            .map(|n| (n.clone(), "window")),
    );
    // Functions taking lambdas (`reduce`, `array_transform`) are scalar.
    rows.extend(
        state
            .higher_order_functions()
            .keys()
            .map(|n| (n.clone(), "scalar")),
    );
    rows.retain(|(n, _)| !n.starts_with("squall_"));
    let values: Vec<String> = rows
        .iter()
        .map(|(n, kind)| format!("({}, '{kind}')", quoted(n)))
        .collect();
    format!(
        "select f as \"Function\", '' as \"Return Type\", '' as \"Argument Types\", \
         k as \"Function Type\", true as \"Deterministic\", '' as \"Description\" \
         from (values {}) as t(f, k){like} order by 1, 4",
        values.join(", ")
    )
}

/// `schema` when the catalog has it, else the default schema.
fn schema_or_default(ctx: &SessionContext, schema: Option<&str>) -> String {
    let options = ctx.state().config_options().catalog.clone();
    let has = |s: &str| {
        ctx.catalog(&options.default_catalog)
            .is_some_and(|c| c.schema_names().iter().any(|n| n == s))
    };
    match schema {
        Some(s) if has(s) => s.to_string(),
        _ => options.default_schema,
    }
}

/// An identifier as the SQL planner reads it (lower case unless quoted).
fn normalized(ident: &datafusion::sql::sqlparser::ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Whether `plan` reads no table at all (its rows are constants).
pub(super) fn reads_no_table(plan: &LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut scans = 0usize;
    let _ = plan.apply_with_subqueries(|node| {
        if matches!(node, LogicalPlan::TableScan(_)) {
            scans += 1;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    scans == 0
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

/// Table `name` (an in-memory table just made) with every column nullable.
async fn nullable_columns(
    ctx: &SessionContext,
    name: datafusion::common::TableReference,
) -> Result<()> {
    let table = ctx.table_provider(name.clone()).await?;
    let Some(mem) = table.downcast_ref::<MemTable>() else {
        return Ok(());
    };
    let schema = datafusion::catalog::TableProvider::schema(mem);
    if schema.fields().iter().all(|f| f.is_nullable()) {
        return Ok(());
    }
    let nullable = Arc::new(arrow::datatypes::Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ));
    let mut partitions = Vec::with_capacity(mem.batches.len());
    for partition in &mem.batches {
        let batches = partition.read().await;
        partitions.push(
            batches
                .iter()
                .map(|b| RecordBatch::try_new(Arc::clone(&nullable), b.columns().to_vec()))
                .collect::<std::result::Result<Vec<_>, _>>()?,
        );
    }
    let replaced = MemTable::try_new(nullable, partitions)?;
    ctx.deregister_table(name.clone())?;
    ctx.register_table(name, Arc::new(replaced))?;
    Ok(())
}
