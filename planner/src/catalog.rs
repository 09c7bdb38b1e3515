//! Catalogs: a location (a local folder, `file://` URL, `s3://bucket/prefix`)
//! whose sub-folders are tables of Parquet files (or CSV or JSON lines,
//! `text_tables`), flat or partitioned
//! Hive-style (`key=value` folders, see [`crate::partitions`]). Each table
//! is a DataFusion listing table, registered when a statement first names
//! it ([`named`]); its schema comes from the files' footers, read through
//! the process's footer cache ([`schemas`]), and its partition columns from
//! its folders. A table that cannot be read
//! (a file that is not Parquet, files whose schemas conflict) is set aside:
//! queries naming it fail saying why, the others answer.

mod avro;
mod csv_records;
mod deletes;
mod delta_log;
mod delta_stats;
mod footer_format;
mod iceberg;
mod iceberg_deletes;
mod listings;
mod log_types;
mod logged_registration;
mod logged_table;
mod named;
mod names;
mod schemas;
mod text_formats;
mod text_tables;

pub(crate) use deletes::DeletedPositions;
pub use listings::RecentListings;
pub use logged_registration::{LoggedTableFactory, register_delta, register_iceberg};
pub use named::DeferredTable;
pub use names::{bare, sql_names};
pub(crate) use schemas::inferred_schema;

use crate::error::PlannerError;
use crate::partitions::{
    self, DataFiles, HiveFolderValues, Listing, PartitionRegistry, inspect, list_table,
};
use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;

use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::options::ReadOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

/// Register every table of the catalog at `location` with `ctx`.
/// Returns the table names, sorted.
pub async fn register_catalog(ctx: &SessionContext, location: &str) -> Result<Vec<String>> {
    register_catalog_with(ctx, location, &Arc::default()).await
}

/// [`register_catalog`], remembering each partitioned table's partitions in
/// `registry`. The catalog's location is listed now; each table is
/// registered (its files listed, their schemas read) when a statement
/// first names it, reading through `ctx`'s runtime ([`named`]). Returns the
/// names of the catalog's tables, sorted (a folder that turns out to be no
/// table, or unreadable, among them).
pub async fn register_catalog_with(
    ctx: &SessionContext,
    location: &str,
    registry: &Arc<PartitionRegistry>,
) -> Result<Vec<String>> {
    let found = match location.strip_prefix("s3://") {
        Some(rest) => object_store_tables(ctx, rest).await?,
        None => local_tables(location)?,
    };
    let mut names: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    install(ctx, found, registry)?;
    Ok(names)
}

/// The session's default schema, with `found` registered when named.
fn install(
    ctx: &SessionContext,
    found: Vec<(String, named::Source)>,
    registry: &Arc<PartitionRegistry>,
) -> Result<()> {
    let options = ctx.state().config_options().catalog.clone();
    let catalog = ctx
        .catalog(&options.default_catalog)
        .ok_or_else(|| DataFusionError::Internal("no default catalog".into()))?;
    let inner = catalog
        .schema(&options.default_schema)
        .ok_or_else(|| DataFusionError::Internal("no default schema".into()))?;
    let registrar = named::Registrar {
        config: ctx.copied_config(),
        runtime: ctx.runtime_env(),
        registry: Arc::clone(registry),
    };
    catalog.register_schema(
        &options.default_schema,
        Arc::new(named::CatalogTables::new(inner, found, registrar)),
    )?;
    Ok(())
}

/// Registers `tables`, each when a statement first names it
/// ([`DeferredTable`]), reading through `ctx`'s runtime and recording
/// partitions in `registry`.
pub fn register_deferred(
    ctx: &SessionContext,
    tables: Vec<(String, Arc<dyn DeferredTable>)>,
    registry: &Arc<PartitionRegistry>,
) -> Result<()> {
    let found = tables
        .into_iter()
        .map(|(name, table)| (name, named::Source::Deferred(table)))
        .collect();
    install(ctx, found, registry)
}

/// The tables of the local folder `location`: its sub-folders and its
/// `*.parquet` files, with the names SQL gives them.
fn local_tables(location: &str) -> Result<Vec<(String, named::Source)>> {
    let local = ObjectStoreUrl::local_filesystem();
    let dir = local_dir(location)?;
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        DataFusionError::from(PlannerError::Catalog {
            location: dir.display().to_string(),
            message: format!("cannot list: {e}"),
        })
    })?;
    // Table folders and single Parquet files, with the names SQL gives them.
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| catalog_error(&dir.display().to_string(), e))?;
        let path = entry.path();
        let file = entry.file_name().to_string_lossy().to_string();
        if file.starts_with('.') || file.starts_with('_') {
            continue;
        }
        let table = match file.strip_suffix(".parquet") {
            _ if path.is_dir() => file,
            Some(stem) => stem.to_string(),
            None => continue,
        };
        found.push((path, table));
    }
    found.sort();
    let names = sql_names(&found.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>());
    let mut tables = Vec::with_capacity(found.len());
    for ((path, _), name) in found.into_iter().zip(names) {
        let source = if path.is_dir() {
            let url = format!("{}/", path.display());
            let root = object_store::path::Path::from_filesystem_path(&path)
                .map_err(|e| table_error(&name, &url, e))?;
            named::Source::Folder {
                url,
                store_url: local.clone(),
                root,
            }
        } else {
            named::Source::File {
                location: path.display().to_string(),
            }
        };
        tables.push((name, source));
    }
    Ok(tables)
}

/// An error's message without DataFusion's prefix (it is raised again as
/// a planning error).
pub(super) fn message(e: &DataFusionError) -> String {
    match e {
        DataFusionError::Plan(m) => m.clone(),
        other => other.to_string(),
    }
}

/// Registers the table `name` of Parquet files under `root` of the store at
/// `store_url` (`url` is the same place as DataFusion names it), with the
/// partition columns its folders give; when it holds no Parquet file, it
/// is no table, and the answer says why. Its files are those named
/// `*.parquet`; a folder with none, whose other files are Parquet (Hive's
/// `000000_0`, Athena's CTAS output, named without an extension), is read
/// as Hive and Athena read it: every file but hidden and bookkeeping ones.
pub(super) async fn register_table(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    store_url: &ObjectStoreUrl,
    root: &object_store::path::Path,
    registry: &PartitionRegistry,
) -> Result<Option<String>> {
    let store = ctx.runtime_env().object_store(store_url)?;
    // One listing, read for `*.parquet` files first, then for all of them.
    let listing = match store_url.as_str().starts_with("s3://") {
        true => Listing::RangesAtOnce,
        false => Listing::Sequential,
    };
    let objects = list_table(store.as_ref(), root, name, url, listing).await?;
    let logged = match () {
        () if delta_log::is_delta(&objects, root) => Some(delta_log::LogFormat::Delta),
        () if iceberg::is_iceberg(&objects, root) => Some(delta_log::LogFormat::Iceberg),
        () => None,
    };
    if let Some(format) = logged {
        return logged_table::register_table(ctx, name, url, store_url, root, format)
            .await
            .map(|()| None);
    }
    if let Some(format) = logged_registration::unread_format(&objects, root) {
        return Err(table_error(
            name,
            url,
            format!(
                "the folder is {format}, whose files include those of deleted rows and \
                 older snapshots: squall reads it only as its metadata says, which it \
                 does not read (it reads Parquet, CSV, JSON, Delta Lake and Iceberg tables)"
            ),
        ));
    }
    let mut data = DataFiles::NamedParquet;
    let mut layout = partitions::layout(&objects, root, name, url, data)?;
    if layout.files == 0
        && let Some(example) = &layout.other_example
    {
        let path = object_store::path::Path::from_iter(
            root.parts()
                .chain(object_store::path::Path::from(example.as_str()).parts()),
        );
        let listed = objects.iter().find(|m| m.location == path);
        let why = match starts_as_parquet(store.as_ref(), listed).await {
            Ok(true) => {
                data = DataFiles::AllVisible;
                layout = partitions::layout(&objects, root, name, url, data)?;
                None
            }
            Ok(false) if let Some(files) = text_tables::format_of(example) => {
                return text_tables::register_table(
                    ctx, name, url, store_url, root, &objects, registry, files,
                )
                .await
                .map(|()| None);
            }
            Ok(false) => Some(format!(
                "the folder holds no Parquet file: its {} file(s), such as {example}, \
                 are neither named *.parquet nor Parquet (they do not begin with PAR1), \
                 nor {}",
                layout.other_files,
                text_tables::NAMES
            )),
            Err(e) => Some(format!("file {example}: {e}")),
        };
        if let Some(why) = why {
            return Ok(Some(message(&table_error(name, url, why))));
        }
    }
    if layout.files == 0 {
        let why = "the folder holds no Parquet file".to_string();
        return Ok(Some(message(&table_error(name, url, why))));
    }
    let listed = layout.listed_columns();
    let options = ParquetReadOptions::default().table_partition_cols(listed.clone());
    // The Parquet reader panics on some corrupt footers: a panic here is a
    // bad file like any other, named with the file that cannot be read.
    let registered = std::panic::AssertUnwindSafe(register_files(
        ctx,
        name,
        url,
        options,
        data,
        &layout.folders,
        Some(&objects),
    ))
    .catch_unwind()
    .await
    .unwrap_or_else(|panic| {
        Err(DataFusionError::Execution(format!(
            "the Parquet reader failed: {}",
            squall_core::error::panic_text(&panic)
        )))
    });
    if let Err(e) = registered {
        // Files whose types differ where a wider type holds them all
        // (schema_merge) register with that type; a file that cannot be
        // read, or a real conflict, is named.
        let failed = match file_schemas(ctx, Arc::clone(&store), store_url, root, data).await {
            Err(unreadable) => Some(unreadable),
            Ok(schemas) if schemas.is_empty() => Some(e.to_string()),
            Ok(schemas) => match crate::schema_merge::merge(&schemas::named_alike(schemas)) {
                Err(conflict) => Some(conflict),
                Ok(merged) => {
                    let options = ParquetReadOptions::default()
                        .table_partition_cols(listed.clone())
                        .schema(&merged);
                    let folders = &layout.folders;
                    match register_files(ctx, name, url, options, data, folders, None).await {
                        Ok(()) => {
                            tracing::info!(
                                table = name,
                                "the table's files differ in column types; read as the wider types"
                            );
                            None
                        }
                        Err(e) => Some(e.to_string()),
                    }
                }
            },
        };
        if let Some(message) = failed {
            return Err(table_error(name, url, message));
        }
    }
    drop_file_columns_named_like_partitions(ctx, name, url, &listed, data)
        .await
        .map_err(|e| table_error(name, url, message(&e)))?;
    present(ctx, name, store_url, root, registry, &layout)?;
    Ok(None)
}

/// The registered table `name` as users see it, whatever its files'
/// format: a partitioned one's folder values as columns (its partitions
/// recorded for the planner), its columns in lowercase.
pub(super) fn present(
    ctx: &SessionContext,
    name: &str,
    store_url: &ObjectStoreUrl,
    root: &object_store::path::Path,
    registry: &PartitionRegistry,
    layout: &partitions::TableLayout,
) -> Result<()> {
    if !layout.columns.is_empty() {
        registry.record(store_url.as_str(), root.as_ref(), layout.partitions);
        if let Some(listing) = ctx.deregister_table(bare(name))? {
            ctx.register_table(
                bare(name),
                Arc::new(
                    HiveFolderValues::new(listing, &layout.columns)
                        .with_spelled_otherwise(&layout.spelled_otherwise),
                ),
            )?;
        }
    }
    present_lowercase(ctx, name)
}

/// The table `name` with its columns presented in lowercase, if its files
/// name them in mixed case (see [`crate::any_case`]).
pub fn present_lowercase(ctx: &SessionContext, name: &str) -> Result<()> {
    let Some(table) = ctx.deregister_table(bare(name))? else {
        return Ok(());
    };
    match crate::any_case::LowercaseColumns::wrap(Arc::clone(&table)) {
        Some(lowercase) => ctx.register_table(bare(name), Arc::new(lowercase))?,
        None => ctx.register_table(bare(name), table)?,
    };
    Ok(())
}

/// A file column named like a partition column (`p=1/x.parquet` holding a
/// column `p` too) would make every query on the table fail on a duplicate
/// name. The folder's value is the table's, as Hive, Spark and Trino read
/// it: the table is registered again without the files' column.
async fn drop_file_columns_named_like_partitions(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    columns: &[(String, arrow::datatypes::DataType)],
    data: DataFiles,
) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    let schema = ctx.table_provider(bare(name)).await?.schema();
    let file_fields = schema.fields().len().saturating_sub(columns.len());
    let is_partition = |n: &str| columns.iter().any(|(c, _)| c == n);
    let fields: Vec<_> = schema.fields()[..file_fields]
        .iter()
        .filter(|f| !is_partition(f.name()))
        .cloned()
        .collect();
    if fields.len() == file_fields {
        return Ok(());
    }
    tracing::info!(
        table = name,
        "the files hold columns named like the table's partition folders; the folders' values are read"
    );
    let file_schema = arrow::datatypes::Schema::new(fields);
    ctx.deregister_table(bare(name))?;
    let options = ParquetReadOptions::default()
        .table_partition_cols(columns.to_vec())
        .schema(&file_schema);
    register_files(ctx, name, url, options, data, &[], None).await
}

/// `ctx.register_parquet(name, url, options)` reading `data`'s files of
/// the folder `url` (DataFusion's lists the files named as
/// `options.file_extension` says, and cannot leave out hidden ones when the
/// extension is empty). `listed`, the folder's listing if the caller made
/// one, is read instead of listing it again ([`listings`]).
pub async fn register_files(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    options: ParquetReadOptions<'_>,
    data: DataFiles,
    folders: &[String],
    listed: Option<&[object_store::ObjectMeta]>,
) -> Result<()> {
    let options = ParquetReadOptions {
        file_extension: data.extension(),
        ..options
    };
    let listing = options.to_listing_options(&ctx.copied_config(), ctx.copied_table_options());
    let paths: Vec<ListingTableUrl> = data
        .listing_urls(url, folders)?
        .into_iter()
        .map(|p| p.with_table_ref(bare(name)))
        .collect();
    if let Some(objects) = listed {
        listings::keep(ctx, &paths, objects);
    }
    let schema = match options.schema {
        Some(s) => Arc::new(s.clone()),
        None => inferred_schema(ctx, &listing, &paths).await?,
    };
    // Planning's statistics from the process's footer cache.
    let mut listing = listing;
    let format: &dyn std::any::Any = listing.format.as_ref();
    if let (Some(parquet), Some(path)) = (format.downcast_ref::<ParquetFormat>(), paths.first()) {
        let inner = ParquetFormat::default().with_options(parquet.options().clone());
        let format = footer_format::FooterFormat::new(inner, path.object_store().as_str());
        listing.format = Arc::new(format);
    }
    let config = ListingTableConfig::new_with_multi_paths(paths)
        .with_listing_options(listing)
        .with_schema(schema)
        .with_expr_adapter_factory(Arc::new(squall_core::case_blind::CaseBlindAdapterFactory));
    let table = ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache());
    ctx.register_table(bare(name), Arc::new(table))?;
    Ok(())
}

/// Whether the listed object `meta` begins with Parquet's magic bytes (one
/// ranged GET of 4 bytes; its size is the listing's).
async fn starts_as_parquet(
    store: &dyn object_store::ObjectStore,
    meta: Option<&object_store::ObjectMeta>,
) -> std::result::Result<bool, object_store::Error> {
    use object_store::ObjectStoreExt;
    let Some(meta) = meta.filter(|m| m.size >= 12) else {
        return Ok(false);
    };
    let head = store.get_range(&meta.location, 0..4).await?;
    Ok(head.as_ref() == b"PAR1")
}

/// The schema of each Parquet file under `root` (its name, its schema), or
/// the first file whose footer cannot be read, with why: asked only once a
/// table failed to register.
async fn file_schemas(
    ctx: &SessionContext,
    store: Arc<dyn object_store::ObjectStore>,
    store_url: &ObjectStoreUrl,
    root: &object_store::path::Path,
    data: DataFiles,
) -> std::result::Result<Vec<(String, arrow::datatypes::Schema)>, String> {
    use futures::TryStreamExt;
    let mut files: Vec<object_store::ObjectMeta> = store
        .list(Some(root))
        .try_collect()
        .await
        .map_err(|e| format!("cannot list: {e}"))?;
    let depth = root.parts().count();
    files.retain(|f| data.holds(&f.location, depth));
    files.sort_by(|a, b| a.location.cmp(&b.location));
    schemas::file_schemas(ctx, store_url, files).await
}

/// After `CREATE EXTERNAL TABLE name ... PARTITIONED BY (...) LOCATION 'location'`:
/// counts the table's partitions into `registry`.
pub async fn record_partitions(
    ctx: &SessionContext,
    name: &str,
    location: &str,
    registry: &PartitionRegistry,
) -> Result<()> {
    let url = ListingTableUrl::parse(location)?;
    let store = ctx.runtime_env().object_store(url.object_store())?;
    let layout = inspect(
        store.as_ref(),
        url.prefix(),
        name,
        location,
        DataFiles::NamedParquet,
    )
    .await?;
    registry.record(
        url.object_store().as_str(),
        url.prefix().as_ref(),
        layout.partitions,
    );
    Ok(())
}

/// The tables of a catalog in S3, `bucket/prefix`: its "sub-folders"
/// (common prefixes).
async fn object_store_tables(
    ctx: &SessionContext,
    rest: &str,
) -> Result<Vec<(String, named::Source)>> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = prefix.trim_matches('/');
    let url = datafusion::execution::object_store::ObjectStoreUrl::parse(format!("s3://{bucket}"))?;
    let store = ctx.runtime_env().object_store(&url)?;
    let prefix_path = object_store::path::Path::from(prefix);
    let listing = store
        .list_with_delimiter(if prefix.is_empty() {
            None
        } else {
            Some(&prefix_path)
        })
        .await
        .map_err(|e| catalog_error(&format!("s3://{rest}"), format!("cannot list: {e}")))?;
    let found: Vec<(object_store::path::Path, String)> = listing
        .common_prefixes
        .into_iter()
        .filter_map(|p| {
            let folder = p.filename()?.to_string();
            (!folder.starts_with('.') && !folder.starts_with('_')).then_some((p, folder))
        })
        .collect();
    if found.is_empty() {
        return Err(catalog_error(
            &format!("s3://{rest}"),
            "no tables (sub-folders of Parquet files) found",
        ));
    }
    let names = sql_names(&found.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>());
    Ok(found
        .into_iter()
        .zip(names)
        .map(|((root, _), name)| {
            let source = named::Source::Folder {
                url: format!("s3://{bucket}/{root}/"),
                store_url: url.clone(),
                root,
            };
            (name, source)
        })
        .collect())
}

/// The local folder of a catalog location.
pub fn local_dir(location: &str) -> Result<PathBuf> {
    let path = location.strip_prefix("file://").unwrap_or(location);
    if location.starts_with("glue://") {
        return Err(catalog_error(
            location,
            "a Glue Data Catalog is read by the aws backend (--backend aws), which has AWS credentials",
        ));
    }
    if location.contains("://") && !location.starts_with("file://") {
        return Err(catalog_error(
            location,
            "only local folders are supported by the embedded backend",
        ));
    }
    let path = PathBuf::from(path);
    let path = path
        .canonicalize()
        .map_err(|e| catalog_error(&path.display().to_string(), e))?;
    if !path.is_dir() {
        return Err(catalog_error(&path.display().to_string(), "not a folder"));
    }
    Ok(path)
}

fn catalog_error(location: &str, message: impl std::fmt::Display) -> DataFusionError {
    PlannerError::Catalog {
        location: location.to_string(),
        message: message.to_string(),
    }
    .into()
}

pub(super) fn table_error(
    table: &str,
    location: &str,
    message: impl std::fmt::Display,
) -> DataFusionError {
    PlannerError::Table {
        table: table.to_string(),
        location: location.to_string(),
        message: message.to_string(),
    }
    .into()
}
