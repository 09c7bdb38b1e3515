//! A table's schema from its files, read once per process.
//!
//! The aws backend builds an engine, and registers its catalog, for every
//! request. DataFusion's own inference read every Parquet file's footer
//! again each time, with a 512 KiB tail and, with a metadata cache, a
//! second GET for the page index: at SF1000 (thousands of files) that is
//! gigabytes and minutes before a query plans. Here a Parquet table's
//! footers are read through the process's footer cache, with the tails
//! planning uses ([`crate::split::footers_of`]): one GET of about the
//! footer's size per file once per process, and none for a query's
//! planning after it. A text table's inferred schema (up to 100,000 rows
//! read) is kept per process while its listed files stay the same (name,
//! size, modification time).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTableUrl};
use datafusion::datasource::physical_plan::parquet::{
    transform_binary_to_string, transform_schema_to_view,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;
use object_store::ObjectMeta;
use parquet::file::metadata::ParquetMetaData;

use crate::split::{FooterCache, footers_of};

/// The schema of the files of `paths` (a table's folders): each folder's,
/// merged (a column only some folders' files hold is the table's too; a
/// type conflict fails, and registration then looks at each file).
pub(crate) async fn inferred_schema(
    ctx: &SessionContext,
    listing: &ListingOptions,
    paths: &[ListingTableUrl],
) -> Result<SchemaRef> {
    let state = ctx.state();
    let mut schemas = Vec::with_capacity(paths.len());
    for path in paths {
        schemas.push(folder_schema(&state, listing, path).await?);
    }
    Ok(Arc::new(merged(schemas)?))
}

/// `schemas` merged: a column some of them lack is NULL in their rows,
/// whatever the others say of its nulls.
fn merged(mut schemas: Vec<Schema>) -> Result<Schema> {
    if schemas.len() == 1 {
        return Ok(schemas.remove(0));
    }
    let everywhere = |name: &str| schemas.iter().all(|s| s.field_with_name(name).is_ok());
    let merged = Schema::try_merge(schemas.clone())?;
    let fields: Vec<_> = merged
        .fields()
        .iter()
        .map(|f| match everywhere(f.name()) {
            true => Arc::clone(f),
            false => Arc::new(f.as_ref().clone().with_nullable(true)),
        })
        .collect();
    Ok(Schema::new_with_metadata(fields, merged.metadata().clone()))
}

/// The schema of the files of one folder, as DataFusion's
/// `ListingOptions::infer_schema` infers it (the files listed once, empty
/// ones left out, their schemas merged in the order of their names).
async fn folder_schema(
    state: &dyn Session,
    listing: &ListingOptions,
    path: &ListingTableUrl,
) -> Result<Schema> {
    let store = state.runtime_env().object_store(path)?;
    let mut files: Vec<ObjectMeta> = path
        .list_all_files(state, store.as_ref(), &listing.file_extension)
        .await?
        .try_filter(|m| std::future::ready(m.size > 0))
        .try_collect()
        .await?;
    if files.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "No files found at {path}. Cannot infer schema from an empty location; \
             either add data files or declare an explicit schema for the table."
        )));
    }
    files.sort_by(|a, b| a.location.cmp(&b.location));
    let format: &dyn std::any::Any = listing.format.as_ref();
    match format.downcast_ref::<ParquetFormat>() {
        Some(parquet) if parquet.coerce_int96().is_none() => {
            parquet_schema(state, parquet, path, &files).await
        }
        _ => text_schema(state, listing, path, &store, &files).await,
    }
}

/// How many of a folder's Parquet files its schema is read from: all of
/// them up to this many, else the first and last half of it by name.
/// Planning reads the footers of the files a query scans anyway; a
/// partitioned table of 100,000 files whose query reads one day's
/// partition must not read 100,000 footers to register (Spark reads one
/// file's schema unless asked to merge them all; Athena reads Glue's). A
/// column added over time is in the last files by name (partition
/// folders and writers' part numbers sort in time); a column only files
/// in the middle hold is not read.
pub(crate) const SCHEMA_FILES: usize = 256;

/// The files of `files` (sorted by name) a folder's schema is read from.
fn schema_sample(files: &[ObjectMeta]) -> Vec<ObjectMeta> {
    if files.len() <= SCHEMA_FILES {
        return files.to_vec();
    }
    let half = SCHEMA_FILES / 2;
    files[..half]
        .iter()
        .chain(&files[files.len() - half..])
        .cloned()
        .collect()
}

/// The merged schema of Parquet `files`, from their footers.
async fn parquet_schema(
    state: &dyn Session,
    format: &ParquetFormat,
    path: &ListingTableUrl,
    files: &[ObjectMeta],
) -> Result<Schema> {
    let runtime = state.runtime_env();
    let files = &schema_sample(files);
    let footers = footers_of(files, &path.object_store(), runtime, &FooterCache::shared()).await?;
    let schemas = footers
        .iter()
        .map(|footer| file_schema(format, footer))
        .collect::<Result<Vec<_>>>()?;
    let folded = case_folded(&schemas);
    let schemas = match folded.is_empty() {
        true => schemas,
        false => schemas
            .into_iter()
            .map(|schema| renamed(schema, &folded))
            .collect(),
    };
    merged(schemas)
}

/// Names files give one column in different cases, none two of them
/// (`UserId` in one, `userid` in another): each to the first name seen.
/// Such a column is one column of the table, each file's read by its own
/// name (`squall_core::case_blind`), as Trino, Hive and Spark read it.
fn case_folded(schemas: &[Schema]) -> HashMap<String, String> {
    let mut first: HashMap<String, String> = HashMap::new();
    let mut folded = HashMap::new();
    let mut in_one_file = std::collections::HashSet::new();
    for schema in schemas {
        let mut seen = std::collections::HashSet::new();
        for f in schema.fields() {
            let lower = f.name().to_lowercase();
            if !seen.insert(lower.clone()) {
                in_one_file.insert(lower.clone());
            }
            let name = first.entry(lower).or_insert_with(|| f.name().clone());
            if name != f.name() {
                folded.insert(f.name().clone(), name.clone());
            }
        }
    }
    folded.retain(|_, to: &mut String| !in_one_file.contains(&to.to_lowercase()));
    folded
}

/// Files' schemas (file name, schema) with the columns they name in
/// different cases named alike ([`case_folded`]), for `schema_merge`.
pub(super) fn named_alike(schemas: Vec<(String, Schema)>) -> Vec<(String, Schema)> {
    let plain: Vec<Schema> = schemas.iter().map(|(_, s)| s.clone()).collect();
    let folded = case_folded(&plain);
    match folded.is_empty() {
        true => schemas,
        false => schemas
            .into_iter()
            .map(|(file, schema)| (file, renamed(schema, &folded)))
            .collect(),
    }
}

/// `schema` with its columns named as `folded` says.
fn renamed(schema: Schema, folded: &HashMap<String, String>) -> Schema {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| match folded.get(f.name()) {
            Some(name) => Arc::new(f.as_ref().clone().with_name(name)),
            None => Arc::clone(f),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// The Arrow schema of one Parquet file's `footer`, as `format` reads it.
fn file_schema(format: &ParquetFormat, footer: &ParquetMetaData) -> Result<Schema> {
    let meta = footer.file_metadata();
    let schema =
        parquet::arrow::parquet_to_arrow_schema(meta.schema_descr(), meta.key_value_metadata())?;
    let mut schema = match format.options().global.skip_metadata {
        true => Schema::new(
            schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_metadata(HashMap::new()))
                .collect::<Vec<_>>(),
        ),
        false => schema,
    };
    if format.binary_as_string() {
        schema = transform_binary_to_string(&schema);
    }
    if format.force_view_types() {
        schema = transform_schema_to_view(&schema);
    }
    Ok(schema)
}

/// The schema DataFusion's format infers from `files` (text: up to its
/// rows limit), kept per process while the files stay the same.
async fn text_schema(
    state: &dyn Session,
    listing: &ListingOptions,
    path: &ListingTableUrl,
    store: &Arc<dyn object_store::ObjectStore>,
    files: &[ObjectMeta],
) -> Result<Schema> {
    // The files by a hash of their names, sizes and modification times
    // (a table of 100,000 files is not a key of megabytes).
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        f.location.as_ref().hash(&mut hasher);
        f.size.hash(&mut hasher);
        f.last_modified.timestamp_nanos_opt().hash(&mut hasher);
    }
    let key = format!(
        "{path}|{:?}|{}|{}|{:x}",
        listing.format,
        listing.file_extension,
        files.len(),
        hasher.finish()
    );
    if let Some(schema) = text_schemas().get(&key) {
        return Ok(schema.as_ref().clone());
    }
    let schema = listing.format.infer_schema(state, store, files).await?;
    text_schemas().put(key, Arc::clone(&schema));
    Ok(schema.as_ref().clone())
}

/// Inferred text schemas, by table folder, format and files.
fn text_schemas() -> &'static Remembered<SchemaRef> {
    static SCHEMAS: OnceLock<Remembered<SchemaRef>> = OnceLock::new();
    SCHEMAS.get_or_init(|| Remembered::new(1024))
}

/// Values kept per process by key, at most `limit` of them (the oldest go
/// first).
pub(crate) struct Remembered<V> {
    limit: usize,
    entries: Mutex<(HashMap<String, V>, VecDeque<String>)>,
}

impl<V: Clone> Remembered<V> {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            entries: Mutex::default(),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<V> {
        self.entries.lock().ok()?.0.get(key).cloned()
    }

    pub(crate) fn put(&self, key: String, value: V) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let (map, order) = &mut *entries;
        if map.insert(key.clone(), value).is_none() {
            order.push_back(key);
        }
        while map.len() > self.limit {
            let Some(oldest) = order.pop_front() else {
                break;
            };
            map.remove(&oldest);
        }
    }
}

/// The schema of each Parquet file of `files` (its name, its schema), or
/// the first file whose footer cannot be read, with why: asked only once a
/// table failed to register.
pub(super) async fn file_schemas(
    ctx: &SessionContext,
    store_url: &datafusion::execution::object_store::ObjectStoreUrl,
    files: Vec<ObjectMeta>,
) -> std::result::Result<Vec<(String, Schema)>, String> {
    use futures::{FutureExt, StreamExt};
    let runtime = ctx.runtime_env();
    let cache = FooterCache::shared();
    let read = |f: ObjectMeta| {
        let (runtime, cache) = (&runtime, &cache);
        async move {
            let read = std::panic::AssertUnwindSafe(footers_of(
                std::slice::from_ref(&f),
                store_url,
                runtime,
                cache,
            ))
            .catch_unwind()
            .await;
            let why = match read {
                Ok(Ok(footers)) => match file_schema(&ParquetFormat::default(), &footers[0]) {
                    Ok(schema) => return Ok((f.location.to_string(), schema)),
                    Err(e) => e.to_string(),
                },
                Ok(Err(e)) => e.to_string(),
                Err(panic) => format!(
                    "the Parquet reader failed: {}",
                    squall_core::error::panic_text(&panic)
                ),
            };
            Err(format!("file {} ({} bytes): {why}", f.location, f.size))
        }
    };
    futures::stream::iter(files)
        .map(read)
        .buffered(16)
        .try_collect()
        .await
}

#[cfg(test)]
mod tests {
    use super::{SCHEMA_FILES, schema_sample};

    #[test]
    fn big_folders_read_the_schema_of_their_first_and_last_files() {
        let files: Vec<object_store::ObjectMeta> = (0..1000)
            .map(|i| object_store::ObjectMeta {
                location: format!("t/dt={i:04}/part-0.parquet").into(),
                last_modified: Default::default(),
                size: 100,
                e_tag: None,
                version: None,
            })
            .collect();
        assert_eq!(schema_sample(&files[..SCHEMA_FILES]).len(), SCHEMA_FILES);
        let sample = schema_sample(&files);
        assert_eq!(sample.len(), SCHEMA_FILES);
        assert_eq!(sample[0].location, files[0].location);
        assert_eq!(
            sample[SCHEMA_FILES / 2 - 1].location,
            files[SCHEMA_FILES / 2 - 1].location
        );
        assert_eq!(
            sample[SCHEMA_FILES / 2].location,
            files[1000 - SCHEMA_FILES / 2].location
        );
        assert_eq!(sample[SCHEMA_FILES - 1].location, files[999].location);
    }
}
