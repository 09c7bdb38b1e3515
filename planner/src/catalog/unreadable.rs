//! Tables the catalog could not read, set aside: the session's schema
//! answers a query naming one with why, and the catalog's other tables
//! as before.

use std::sync::Arc;

use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

/// Tables the catalog could not read: each stays out of the session, and a
/// query naming one fails with why (the table, its location, the file),
/// while the catalog's other tables answer. A catalog is often many
/// tables written by many jobs; one bad file must not take them all down.
/// Folders that hold no Parquet file (`not_tables`) are not tables, and
/// not worth a warning, but a query naming one is told why.
pub(super) fn set_aside(
    ctx: &SessionContext,
    unreadable: Vec<(String, String)>,
    not_tables: Vec<(String, String)>,
) -> Result<()> {
    if unreadable.is_empty() && not_tables.is_empty() {
        return Ok(());
    }
    for (table, why) in &unreadable {
        tracing::warn!(table, %why, "a table of the catalog cannot be read; queries naming it fail");
    }
    for (folder, why) in &not_tables {
        tracing::debug!(folder, %why, "a folder of the catalog is not a table");
    }
    let unreadable = unreadable.into_iter().chain(not_tables);
    let options = ctx.state().config_options().catalog.clone();
    let catalog = ctx
        .catalog(&options.default_catalog)
        .ok_or_else(|| DataFusionError::Internal("no default catalog".into()))?;
    let inner = catalog
        .schema(&options.default_schema)
        .ok_or_else(|| DataFusionError::Internal("no default schema".into()))?;
    catalog.register_schema(
        &options.default_schema,
        Arc::new(WithUnreadable {
            inner,
            unreadable: unreadable.into_iter().collect(),
        }),
    )?;
    Ok(())
}

/// The session's schema, and the catalog's tables that could not be read.
#[derive(Debug)]
struct WithUnreadable {
    inner: Arc<dyn SchemaProvider>,
    /// Table name to the error reading it.
    unreadable: std::collections::HashMap<String, String>,
}

#[async_trait::async_trait]
impl SchemaProvider for WithUnreadable {
    fn owner_name(&self) -> Option<&str> {
        self.inner.owner_name()
    }

    fn table_names(&self) -> Vec<String> {
        self.inner.table_names()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(why) = self.unreadable.get(name)
            && !self.inner.table_exist(name)
        {
            return Err(DataFusionError::Plan(why.clone()));
        }
        self.inner.table(name).await
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        self.inner.register_table(name, table)
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        self.inner.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.inner.table_exist(name)
    }
}
