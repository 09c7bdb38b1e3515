//! How tables whose metadata names their files ([`super::logged_table`])
//! are found and registered: `CREATE EXTERNAL TABLE` ([`LoggedTableFactory`]),
//! Glue's tables ([`register_delta`], [`register_iceberg`]), and the
//! formats of that kind squall does not read ([`unread_format`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::Result;
use datafusion::logical_expr::CreateExternalTable;
use datafusion::prelude::SessionContext;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use super::delta_log::{self, LogFormat};
use super::logged_table::{self, LoggedTable};
use super::table_error;

/// Registers the Delta Lake table at `location` (a folder holding its
/// `_delta_log/`) as `name`, read as its log says (a Glue table whose
/// `table_type` is `DELTA`, as Athena registers one).
pub async fn register_delta(ctx: &SessionContext, name: &str, location: &str) -> Result<()> {
    register_logged(ctx, name, location, LogFormat::Delta).await
}

/// Registers the Iceberg table at `location` (a folder holding its
/// `metadata/`) as `name`, read as its latest metadata says (a Glue table
/// whose `table_type` is `ICEBERG`).
pub async fn register_iceberg(ctx: &SessionContext, name: &str, location: &str) -> Result<()> {
    register_logged(ctx, name, location, LogFormat::Iceberg).await
}

async fn register_logged(
    ctx: &SessionContext,
    name: &str,
    location: &str,
    format: LogFormat,
) -> Result<()> {
    let url = ListingTableUrl::parse(location)?;
    logged_table::register_table(
        ctx,
        name,
        location,
        &url.object_store(),
        url.prefix(),
        format,
    )
    .await
}

/// `CREATE EXTERNAL TABLE ... STORED AS DELTA` (or `ICEBERG`), and
/// `STORED AS PARQUET` of a folder holding a Delta log or Iceberg metadata
/// (read as DataFusion's listing table, its removed files would be read
/// too); any other `STORED AS PARQUET` is `inner`'s (DataFusion's listing
/// table).
#[derive(Debug)]
pub struct LoggedTableFactory {
    pub inner: Arc<dyn TableProviderFactory>,
}

#[async_trait]
impl TableProviderFactory for LoggedTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        let name = cmd.name.to_string();
        let declared = match cmd.file_type.to_ascii_lowercase().as_str() {
            "delta" => Some(LogFormat::Delta),
            "iceberg" => Some(LogFormat::Iceberg),
            _ => None,
        };
        let [location] = cmd.locations.as_slice() else {
            return match declared {
                Some(_) => Err(table_error(
                    &name,
                    &cmd.locations.join(", "),
                    "a Delta or Iceberg table has one location",
                )),
                None => self.inner.create(state, cmd).await,
            };
        };
        let url = ListingTableUrl::parse(location)?;
        let store = state.runtime_env().object_store(url.object_store())?;
        let format = match declared {
            Some(format) => Some(format),
            None => logged_format(store.as_ref(), url.prefix()).await,
        };
        let Some(format) = format else {
            return self.inner.create(state, cmd).await;
        };
        if !cmd.table_partition_cols.is_empty() {
            return Err(table_error(
                &name,
                location,
                "a Delta or Iceberg table's partition columns come from its metadata: declare none",
            ));
        }
        let table = LoggedTable::open(
            store.as_ref(),
            &name,
            location,
            &url.object_store(),
            url.prefix(),
            format,
        )
        .await?;
        let columns = table.schema();
        if let Some(declared) = cmd.schema.fields().iter().find(|f| {
            !columns
                .fields()
                .iter()
                .any(|c| c.name().eq_ignore_ascii_case(f.name()))
        }) {
            return Err(table_error(
                &name,
                location,
                format!(
                    "column {} is not in the table's schema ({}); its columns come from its metadata",
                    declared.name(),
                    columns
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(Arc::new(table))
    }
}

/// The format of the table under `root` whose metadata names its files,
/// if it is one: a `_delta_log/`, or Iceberg's `metadata/*.metadata.json`.
async fn logged_format(store: &dyn ObjectStore, root: &Path) -> Option<LogFormat> {
    use futures::StreamExt;
    let log = root.clone().join(delta_log::LOG);
    // A location that is a file lists nothing here (or fails: no folder).
    if matches!(store.list(Some(&log)).next().await, Some(Ok(_))) {
        return Some(LogFormat::Delta);
    }
    let metadata = root.clone().join("metadata");
    let listed: Vec<ObjectMeta> = store
        .list(Some(&metadata))
        .take(1000)
        .filter_map(|m| std::future::ready(m.ok()))
        .collect()
        .await;
    super::iceberg::is_iceberg(&listed, root).then_some(LogFormat::Iceberg)
}

/// The table format, other than Delta and Iceberg, whose metadata names
/// which of the folder's files hold the table (a Hudi table's `.hoodie/`),
/// if the listed `objects` below `root` are one.
pub(super) fn unread_format(
    objects: &[object_store::ObjectMeta],
    root: &object_store::path::Path,
) -> Option<&'static str> {
    let depth = root.parts().count();
    objects.iter().find_map(|m| {
        let below: Vec<_> = m.location.parts().skip(depth).collect();
        match below.as_slice() {
            [folder, ..] if folder.as_ref() == ".hoodie" => Some("a Hudi table (.hoodie/)"),
            _ => None,
        }
    })
}
