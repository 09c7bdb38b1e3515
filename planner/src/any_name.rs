//! One catalog under any name: a table named with a catalog or schema
//! qualifier this process does not have (`tpch.nation`,
//! `squall.tpch.nation`: the names a Trino client's session carries and
//! BI tools write before every table) is looked up in squall's one catalog
//! and schema. A name that is not a table still fails, naming it.

use std::sync::Arc;

use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider};
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// Make the session's default catalog answer for any catalog name, and its
/// default schema for any schema name it does not have.
pub fn register(ctx: &SessionContext) {
    let options = ctx.state().config_options().catalog.clone();
    let list = Arc::clone(ctx.state().catalog_list());
    if let Some(catalog) = list.catalog(&options.default_catalog) {
        list.register_catalog(
            options.default_catalog.clone(),
            Arc::new(AnySchema {
                inner: catalog,
                default: options.default_schema.clone(),
            }),
        );
    }
    ctx.register_catalog_list(Arc::new(AnyCatalog {
        inner: list,
        default: options.default_catalog,
    }));
}

#[derive(Debug)]
struct AnyCatalog {
    inner: Arc<dyn CatalogProviderList>,
    default: String,
}

impl CatalogProviderList for AnyCatalog {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        self.inner.catalog_names()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        self.inner
            .catalog(name)
            .or_else(|| self.inner.catalog(&self.default))
    }
}

#[derive(Debug)]
struct AnySchema {
    inner: Arc<dyn CatalogProvider>,
    default: String,
}

impl CatalogProvider for AnySchema {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        self.inner
            .schema(name)
            .or_else(|| self.inner.schema(&self.default))
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        self.inner.register_schema(name, schema)
    }

    fn deregister_schema(
        &self,
        name: &str,
        cascade: bool,
    ) -> Result<Option<Arc<dyn SchemaProvider>>> {
        self.inner.deregister_schema(name, cascade)
    }
}
