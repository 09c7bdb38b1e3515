//! The catalog's `information_schema`, as Trino clients read it.
//!
//! DataFusion's `information_schema.columns` names Arrow types (`Int64`,
//! `Utf8`, `Decimal128(15, 2)`) and lacks Trino's `comment` and
//! `extra_info` columns, so a Trino client that browses the catalog (the
//! SQLAlchemy dialect behind pandas and Superset reads `column_name,
//! data_type, column_default, is_nullable, comment`) failed on its first
//! question. squall registers its own `information_schema` schema: its
//! `columns` table has Trino's columns and type names (`bigint`,
//! `varchar`, `decimal(15,2)`, [`crate::trino_types`]), with
//! `ordinal_position` from 1; `views` lists the views alone (DataFusion's
//! lists every table); its other tables (`tables`, `schemata`,
//! `df_settings`, ...) are DataFusion's. As in Trino, it
//! describes its own catalog only. `SHOW TABLES` and
//! `SHOW COLUMNS` read them as before.
//!
//! Trino clients also read Trino's `system` catalog: the SQLAlchemy
//! dialect asks `system.metadata.table_comments` for a table's comment
//! when it reflects a table and `system.jdbc.catalogs` for the catalogs.
//! squall has a `system` catalog with `metadata.table_comments` (no table
//! has a comment), `metadata.materialized_views` (none; dbt-trino lists
//! them), `jdbc.catalogs`, `jdbc.schemas`, `jdbc.tables`,
//! `jdbc.table_types` and `jdbc.columns` ([`crate::jdbc_columns`]), in
//! Trino's columns. Like information_schema, they describe this process's
//! catalog, and a query reading only them runs in the coordinator.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Builder, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::information_schema::{INFORMATION_SCHEMA, InformationSchemaProvider};
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemorySchemaProvider,
    SchemaProvider, Session, TableProvider,
};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::trino_types::trino_type;

/// Trino's catalog of the engine's own tables.
pub const SYSTEM_CATALOG: &str = "system";

/// Registers the schema in the session's default catalog (the session's
/// own `information_schema` must be off, or it would shadow this one), and
/// the `system` catalog.
pub fn register(ctx: &SessionContext) -> Result<()> {
    let state = ctx.state();
    let options = state.config_options().catalog.clone();
    let list = Arc::clone(state.catalog_list());
    let catalog = list
        .catalog(&options.default_catalog)
        .ok_or_else(|| datafusion::error::DataFusionError::Internal("no default catalog".into()))?;
    // As in Trino, a catalog's information_schema describes that catalog.
    let own: Arc<dyn CatalogProviderList> = Arc::new(OneCatalog {
        list: Arc::clone(&list),
        name: options.default_catalog.clone(),
    });
    let inner = InformationSchemaProvider::new(Arc::clone(&own))
        .with_table_functions(state.table_functions().clone());
    catalog.register_schema(
        INFORMATION_SCHEMA,
        Arc::new(TrinoInformationSchema {
            inner: Arc::new(inner),
            list: own,
        }),
    )?;
    let system = MemoryCatalogProvider::new();
    for (schema, tables) in [
        (
            "metadata",
            &[Kind::TableComments, Kind::MaterializedViews][..],
        ),
        (
            "jdbc",
            &[
                Kind::Catalogs,
                Kind::Schemas,
                Kind::Tables,
                Kind::JdbcColumns,
                Kind::TableTypes,
            ][..],
        ),
    ] {
        let provider = MemorySchemaProvider::new();
        for kind in tables {
            provider.register_table(
                kind.name().to_string(),
                Arc::new(Described {
                    kind: *kind,
                    list: Arc::clone(&list),
                }),
            )?;
        }
        system.register_schema(schema, Arc::new(provider))?;
    }
    system.register_schema("runtime", runtime_schema()?)?;
    list.register_catalog(SYSTEM_CATALOG.to_string(), Arc::new(system));
    Ok(())
}

/// `system.runtime`: its `nodes` table, as Trino's, which clients and
/// health checks read (`select * from system.runtime.nodes`): the one
/// coordinator answering, active.
fn runtime_schema() -> Result<Arc<MemorySchemaProvider>> {
    use arrow::array::{BooleanArray, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("node_id", DataType::Utf8, false),
        Field::new("http_uri", DataType::Utf8, true),
        Field::new("node_version", DataType::Utf8, false),
        Field::new("coordinator", DataType::Boolean, false),
        Field::new("state", DataType::Utf8, false),
    ]));
    let row = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(vec!["squall"])),
            Arc::new(StringArray::from(vec![None::<&str>])),
            Arc::new(StringArray::from(vec![env!("CARGO_PKG_VERSION")])),
            Arc::new(BooleanArray::from(vec![true])),
            Arc::new(StringArray::from(vec!["active"])),
        ],
    )?;
    let nodes = datafusion::datasource::MemTable::try_new(schema, vec![vec![row]])?;
    let runtime = MemorySchemaProvider::new();
    runtime.register_table("nodes".to_string(), Arc::new(nodes))?;
    Ok(Arc::new(runtime))
}

/// The one catalog `name` of `list`.
#[derive(Debug)]
struct OneCatalog {
    list: Arc<dyn CatalogProviderList>,
    name: String,
}

impl CatalogProviderList for OneCatalog {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.list.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        vec![self.name.clone()]
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        (name == self.name)
            .then(|| self.list.catalog(name))
            .flatten()
    }
}

/// A table describing the catalogs: information_schema's `columns`, or
/// one of `system`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Columns,
    TableComments,
    MaterializedViews,
    Catalogs,
    Schemas,
    Tables,
    JdbcColumns,
    TableTypes,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Columns => "columns",
            Kind::TableComments => "table_comments",
            Kind::MaterializedViews => "materialized_views",
            Kind::Catalogs => "catalogs",
            Kind::Schemas => "schemas",
            Kind::Tables => "tables",
            Kind::JdbcColumns => "columns",
            Kind::TableTypes => "table_types",
        }
    }

    /// Trino's columns of a `system` table (all text; NULL where squall
    /// has nothing to say).
    fn columns(self) -> &'static [&'static str] {
        match self {
            Kind::Columns | Kind::JdbcColumns => &[],
            Kind::TableTypes => &["table_type"],
            Kind::TableComments => &["catalog_name", "schema_name", "table_name", "comment"],
            Kind::MaterializedViews => &[
                "catalog_name",
                "schema_name",
                "name",
                "storage_catalog",
                "storage_schema",
                "storage_table",
                "freshness",
                "last_fresh_time",
                "comment",
                "definition",
            ],
            Kind::Catalogs => &["table_cat"],
            Kind::Schemas => &["table_schem", "table_catalog"],
            Kind::Tables => &[
                "table_cat",
                "table_schem",
                "table_name",
                "table_type",
                "remarks",
                "type_cat",
                "type_schem",
                "type_name",
                "self_referencing_col_name",
                "ref_generation",
            ],
        }
    }

    fn schema(self) -> SchemaRef {
        match self {
            Kind::Columns => return columns_schema(),
            Kind::JdbcColumns => return crate::jdbc_columns::schema(),
            _ => {}
        }
        let nullable = |c: &str| {
            matches!(c, "comment" | "remarks")
                || c.starts_with("type_")
                || c.starts_with("self_")
                || c.starts_with("ref_")
        };
        Arc::new(Schema::new(
            self.columns()
                .iter()
                .map(|c| Field::new(*c, DataType::Utf8, nullable(c)))
                .collect::<Vec<_>>(),
        ))
    }
}

/// A table of `system`, computed from the catalogs when read.
#[derive(Debug)]
struct Described {
    kind: Kind,
    list: Arc<dyn CatalogProviderList>,
}

impl Described {
    async fn rows(&self) -> Result<RecordBatch> {
        match self.kind {
            Kind::Columns => return columns_rows(self.list.as_ref()).await,
            Kind::JdbcColumns => return crate::jdbc_columns::rows(self.list.as_ref()).await,
            Kind::TableTypes => {
                let types = arrow::array::StringArray::from(vec!["TABLE", "VIEW"]);
                return Ok(RecordBatch::try_new(
                    self.kind.schema(),
                    vec![Arc::new(types)],
                )?);
            }
            _ => {}
        }
        let schema = self.kind.schema();
        let mut builders: Vec<StringBuilder> = schema
            .fields()
            .iter()
            .map(|_| StringBuilder::new())
            .collect();
        let mut row = |values: &[Option<&str>]| {
            for (b, v) in builders.iter_mut().zip(values) {
                b.append_option(*v);
            }
        };
        for catalog_name in self.list.catalog_names() {
            let Some(catalog) = self.list.catalog(&catalog_name) else {
                continue;
            };
            // squall has no materialized views (dbt-trino lists them).
            if self.kind == Kind::MaterializedViews {
                break;
            }
            if self.kind == Kind::Catalogs {
                row(&[Some(&catalog_name)]);
                continue;
            }
            for schema_name in catalog.schema_names() {
                if self.kind == Kind::Schemas {
                    row(&[Some(&schema_name), Some(&catalog_name)]);
                    continue;
                }
                let Some(schema) = catalog.schema(&schema_name) else {
                    continue;
                };
                for table_name in schema.table_names() {
                    let table_type = match schema.table_type(&table_name).await {
                        Ok(Some(TableType::View)) => "VIEW",
                        Ok(Some(_)) => "TABLE",
                        _ => continue,
                    };
                    let (c, s, t) = (
                        Some(catalog_name.as_str()),
                        Some(schema_name.as_str()),
                        Some(table_name.as_str()),
                    );
                    match self.kind {
                        Kind::TableComments => row(&[c, s, t, None]),
                        _ => row(&[
                            c,
                            s,
                            t,
                            Some(table_type),
                            None,
                            None,
                            None,
                            None,
                            None,
                            None,
                        ]),
                    }
                }
            }
        }
        let arrays: Vec<ArrayRef> = builders
            .into_iter()
            .map(|mut b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        Ok(RecordBatch::try_new(schema, arrays)?)
    }
}

#[async_trait]
impl TableProvider for Described {
    fn schema(&self) -> SchemaRef {
        self.kind.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let batch = self.rows().await?;
        MemTable::try_new(self.kind.schema(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}

/// `information_schema.views` as Trino's: the views alone, their query as
/// `view_definition`. DataFusion's lists every table (a table's definition
/// NULL), so a client listing views (SQLAlchemy's `get_view_names`, which
/// Superset asks) took every table for one.
fn only_views(views: Arc<dyn TableProvider>) -> Result<Arc<dyn TableProvider>> {
    use datafusion::logical_expr::{LogicalPlanBuilder, col};
    // Named as the schema's table, so a query reading it runs where
    // information_schema's queries run (in the coordinator).
    let plan = LogicalPlanBuilder::scan(
        datafusion::common::TableReference::partial(INFORMATION_SCHEMA, "views"),
        datafusion::datasource::provider_as_source(views),
        None,
    )?
    .filter(col("definition").is_not_null())?
    .project([
        col("table_catalog"),
        col("table_schema"),
        col("table_name"),
        // The query alone, as Trino's (DataFusion keeps the statement).
        datafusion::functions::expr_fn::regexp_replace(
            col("definition"),
            datafusion::prelude::lit(
                r#"(?is)^\s*create\s+(?:or\s+replace\s+)?view\s+(?:if\s+not\s+exists\s+)?(?:"[^"]*"|[^\s(])+(?:\s*\([^)]*\))?\s+as\s+"#,
            ),
            datafusion::prelude::lit(""),
            None,
        )
        .alias("view_definition"),
    ])?
    .build()?;
    Ok(Arc::new(datafusion::catalog::view::ViewTable::new(
        plan, None,
    )))
}

/// DataFusion's information_schema with Trino's `columns`.
#[derive(Debug)]
struct TrinoInformationSchema {
    inner: Arc<dyn SchemaProvider>,
    list: Arc<dyn CatalogProviderList>,
}

#[async_trait]
impl SchemaProvider for TrinoInformationSchema {
    fn table_names(&self) -> Vec<String> {
        self.inner.table_names()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if name.eq_ignore_ascii_case("columns") {
            return Ok(Some(Arc::new(Described {
                kind: Kind::Columns,
                list: Arc::clone(&self.list),
            })));
        }
        let table = self.inner.table(name).await?;
        match (name.eq_ignore_ascii_case("views"), table) {
            (true, Some(views)) => Ok(Some(only_views(views)?)),
            (_, table) => Ok(table),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner.table_exist(name)
    }
}

fn columns_schema() -> SchemaRef {
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        text("table_catalog", false),
        text("table_schema", false),
        text("table_name", false),
        text("column_name", false),
        Field::new("ordinal_position", DataType::Int64, false),
        text("column_default", true),
        text("is_nullable", false),
        text("data_type", false),
        text("comment", true),
        text("extra_info", true),
    ]))
}

/// Every table of `list`'s catalogs (catalog, schema, table) with its
/// columns; tables that cannot be read are left out, as they are from
/// `tables`.
pub(crate) async fn tables_of(
    list: &dyn CatalogProviderList,
) -> Vec<(String, String, String, arrow::datatypes::Fields)> {
    let mut tables = Vec::new();
    for catalog_name in list.catalog_names() {
        let Some(catalog) = list.catalog(&catalog_name) else {
            continue;
        };
        for schema_name in catalog.schema_names() {
            let Some(schema) = catalog.schema(&schema_name) else {
                continue;
            };
            for table_name in schema.table_names() {
                let Ok(Some(table)) = schema.table(&table_name).await else {
                    continue;
                };
                let fields = table.schema().fields().clone();
                tables.push((
                    catalog_name.clone(),
                    schema_name.clone(),
                    table_name,
                    fields,
                ));
            }
        }
    }
    tables
}

/// `information_schema.columns`, Trino's shape: one row per column of
/// every table the catalogs hold (tables that cannot be read are left out,
/// as they are from `tables`).
async fn columns_rows(list: &dyn CatalogProviderList) -> Result<RecordBatch> {
    let mut text: Vec<StringBuilder> = (0..9).map(|_| StringBuilder::new()).collect();
    let mut position = Int64Builder::new();
    for (catalog_name, schema_name, table_name, fields) in tables_of(list).await {
        for (i, field) in fields.iter().enumerate() {
            let values = [
                Some(catalog_name.as_str()),
                Some(schema_name.as_str()),
                Some(table_name.as_str()),
                Some(field.name().as_str()),
                None,
                Some(if field.is_nullable() { "YES" } else { "NO" }),
                Some(&trino_type(field.data_type()).display_name()),
                None,
                None,
            ];
            for (builder, value) in text.iter_mut().zip(values) {
                builder.append_option(value);
            }
            position.append_value(i as i64 + 1);
        }
    }
    let mut text = text
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let mut arrays: Vec<ArrayRef> = text.by_ref().take(4).collect();
    arrays.push(Arc::new(position.finish()));
    arrays.extend(text);
    Ok(RecordBatch::try_new(columns_schema(), arrays)?)
}
