//! Hive-style partitioned tables: Parquet files under `key=value` folders,
//! `orders/o_year=1995/o_region=EU/part-0.parquet`.
//!
//! A catalog's table folder is inspected once when the catalog is
//! registered ([`inspect`]): one recursive listing names the partition
//! columns (the `key`s, the same at every file) and their types, inferred
//! from all values (`BIGINT` when every value is an integer, `DATE` when
//! every value is a `YYYY-MM-DD` date, `VARCHAR` otherwise; a value of
//! `__HIVE_DEFAULT_PARTITION__`, Hive's folder for NULL, or an empty one
//! (`p=`, DataFusion's), is left out of that and reads as NULL:
//! [`HiveFolderValues`]). The table is
//! then a DataFusion listing table with those partition columns: planning
//! a scan lists the files of the partitions the WHERE clause allows and
//! nothing else (a prefix when the filter fixes the leading columns), so
//! pruned partitions never become scan tasks and their footers and row
//! groups are never read. The partition values travel with each file in a
//! task's scan assignment.
//!
//! [`PartitionRegistry`] remembers how many partitions each partitioned
//! table had when it was registered (catalog tables and `CREATE EXTERNAL
//! TABLE ... PARTITIONED BY`), so that EXPLAIN and the profile can say how
//! many a query pruned. Partitions added later are read (every query lists
//! the table again) but are not in that count.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::RwLock;

use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use crate::error::PlannerError;

mod copy_nulls;
mod hive_values;
pub(crate) mod listed;
pub use copy_nulls::nulls_as_hive_folders;
pub use hive_values::HiveFolderValues;
pub use listed::{ListedPartition, ListedPartitionsTable};

/// What [`inspect`] found under a table's folder.
#[derive(Debug, Clone, PartialEq)]
pub struct TableLayout {
    /// Data files (of any size) below the folder.
    pub files: usize,
    /// The partition columns, outermost folder first, with their inferred types.
    pub columns: Vec<(String, DataType)>,
    /// Distinct partitions (combinations of partition values) that hold files.
    pub partitions: usize,
    /// Files below the folder that are not read: not data files (with
    /// [`DataFiles::NamedParquet`], not named `*.parquet`), and not hidden
    /// (`.x`) or bookkeeping (`_SUCCESS`).
    pub other_files: usize,
    /// One of them (its path in the table's folder), to name in an error.
    pub other_example: Option<String>,
    /// The partition columns with a folder for NULL (`__HIVE_DEFAULT_PARTITION__`, `p=`).
    pub null_folders: Vec<String>,
    /// The partition columns some of whose folder names are not their
    /// values as SQL writes them (`month=01`, BIGINT 1): DataFusion lists
    /// an equality with a value as the folder prefix it spells (`month=1/`),
    /// which no folder has ([`HiveFolderValues`] tests the values instead).
    pub spelled_otherwise: Vec<String>,
    /// The folders holding the table's files, relative to its own (`""`
    /// for itself, `2024/05`), where files are in folders below it that
    /// are no partitions; empty otherwise (its own folder, or partitions).
    pub folders: Vec<String>,
}

impl TableLayout {
    /// The partition columns as the listing table reads them: a column
    /// with a folder for NULL is read as text (the marker is no integer
    /// or date); [`HiveFolderValues`] presents it in its type.
    pub fn listed_columns(&self) -> Vec<(String, DataType)> {
        self.columns
            .iter()
            .map(|(c, ty)| match self.null_folders.contains(c) {
                true => (c.clone(), DataType::Utf8),
                false => (c.clone(), ty.clone()),
            })
            .collect()
    }
}

/// The null partition value Hive and Spark write.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// Whether a partition folder's value is NULL: Hive's and Spark's marker,
/// or nothing at all (`p=`, as DataFusion's `COPY ... PARTITIONED BY`,
/// and so squall's, writes a NULL).
pub fn is_null_folder(value: &str) -> bool {
    value == HIVE_NULL || value.is_empty()
}

/// Which files below a table's folder hold its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFiles {
    /// Files named `*.parquet`, as squall, Spark, DuckDB and DataFusion
    /// name what they write (a folder may hold other files beside them).
    NamedParquet,
    /// Every file but hidden (`.x`) and bookkeeping (`_x`) ones, whatever
    /// its name, as Hive, Trino and Athena read a table declared Parquet:
    /// Hive writes `000000_0`, Athena's CTAS and INSERT write names without
    /// an extension.
    AllVisible,
}

impl DataFiles {
    /// Whether the object at `location`, below a table folder `depth`
    /// segments deep, is one of the table's files.
    pub fn holds(self, location: &Path, depth: usize) -> bool {
        let named = match self {
            DataFiles::NamedParquet => location.as_ref().ends_with(".parquet"),
            DataFiles::AllVisible => true,
        };
        named && !is_hidden(location, depth)
    }

    /// The listing table URL of the folder `url` that lists these files:
    /// for [`DataFiles::AllVisible`], with a glob leaving out the hidden
    /// and bookkeeping files (DataFusion lists every file whose name ends
    /// with the extension, and the extension is then empty).
    pub fn listing_url(self, url: &str) -> Result<ListingTableUrl> {
        let parsed = ListingTableUrl::parse(url)?;
        match self {
            DataFiles::NamedParquet => Ok(parsed),
            DataFiles::AllVisible => {
                let visible = glob::Pattern::new("[!_.]*")
                    .map_err(|e| DataFusionError::Internal(format!("glob: {e}")))?;
                let url: &url::Url = parsed.as_ref();
                ListingTableUrl::try_new(url.clone(), Some(visible))
            }
        }
    }

    /// The listing table URLs of a table at `url` whose files are in
    /// `folders` below it ([`TableLayout::folders`]; none: its own folder
    /// and its partitions), each listing the files of its folder alone.
    pub fn listing_urls(self, url: &str, folders: &[String]) -> Result<Vec<ListingTableUrl>> {
        if folders.is_empty() {
            return Ok(vec![self.listing_url(url)?]);
        }
        let base = url.trim_end_matches('/');
        folders
            .iter()
            .map(|folder| match folder.is_empty() {
                true => self.listing_url(&format!("{base}/")),
                false => self.listing_url(&format!("{base}/{folder}/")),
            })
            .collect()
    }

    /// The file extension a listing table of these files filters by.
    pub fn extension(self) -> &'static str {
        match self {
            DataFiles::NamedParquet => ".parquet",
            DataFiles::AllVisible => "",
        }
    }
}

/// Lists the files under `root` of `store` and works out its partition
/// columns; `data` says which files hold rows. `table` and `location` name
/// the table in errors.
pub async fn inspect(
    store: &dyn ObjectStore,
    root: &Path,
    table: &str,
    location: &str,
    data: DataFiles,
) -> Result<TableLayout> {
    let objects = list_table(store, root, table, location, Listing::Sequential).await?;
    layout(&objects, root, table, location, data)
}

/// How a table's folder is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// One listing, page after page.
    Sequential,
    /// A big table's folders as key ranges listed at once: for a store that
    /// lists keys in order a page at a time, from an offset (S3), where
    /// each page of 1,000 keys is a round trip.
    RangesAtOnce,
}

/// Keys a listing page holds (S3's, and the emulators').
const PAGE: usize = 1000;

/// Pages read one after the other before a table is known to be big
/// enough to list the rest as ranges (below some 7,000 keys, the folders'
/// listing and a round of ranges cost about what the remaining pages do).
const PAGES_FIRST: usize = 5;

/// How many key ranges of a big table are listed at once.
const RANGES_AT_ONCE: usize = 16;

/// The fewest files per folder, among a big table's first keys, for which
/// its folders are listed (one key per folder, against a page's 1,000
/// files) to list their ranges at once.
const FILES_PER_FOLDER: usize = 16;

/// The objects below a table's folder `root`, sorted by key. A table of a
/// few pages is listed once, page after page. With
/// [`Listing::RangesAtOnce`], a bigger one whose folders hold many files
/// each (a partitioned table of 100,000 files in 1,000 day folders: 100
/// pages, seconds of round trips before a query can plan) is then listed
/// as key ranges at once after its first [`PAGES_FIRST`] pages: its
/// folders are listed (one key per folder), cut
/// into [`RANGES_AT_ONCE`] ranges, and each range read from its first key
/// until it ends. The same objects, in about 12 round trips instead of a
/// hundred, for at most one LIST per folder page and one per range more.
///
/// The listing stops at the first object of a `_delta_log/` folder: the
/// folder is a Delta table, whose files its log names (the objects so far
/// are returned; `_` sorts before lowercase names, so that is usually the
/// first page).
pub async fn list_table(
    store: &dyn ObjectStore,
    root: &Path,
    table: &str,
    location: &str,
    listing: Listing,
) -> Result<Vec<ObjectMeta>> {
    let failed = |e: object_store::Error| PlannerError::Table {
        table: table.to_string(),
        location: location.to_string(),
        message: format!("cannot list: {e}"),
    };
    let mut listed = store.list(Some(root));
    let mut objects: Vec<ObjectMeta> = Vec::new();
    let depth = root.parts().count();
    while let Some(meta) = listed.try_next().await.map_err(failed)? {
        let delta_log = meta
            .location
            .parts()
            .nth(depth)
            .is_some_and(|p| p.as_ref() == "_delta_log");
        objects.push(meta);
        if delta_log {
            objects.sort_by(|a, b| a.location.cmp(&b.location));
            return Ok(objects);
        }
        if listing == Listing::RangesAtOnce
            && objects.len() == PAGES_FIRST * PAGE
            && many_files_per_folder(&objects, root)
        {
            break;
        }
    }
    if objects.len() < PAGES_FIRST * PAGE || listing == Listing::Sequential {
        objects.sort_by(|a, b| a.location.cmp(&b.location));
        return Ok(objects);
    }
    objects.sort_by(|a, b| a.location.cmp(&b.location));
    let last = objects
        .last()
        .map(|m| m.location.clone())
        .unwrap_or_default();
    let folders = store
        .list_with_delimiter(Some(root))
        .await
        .map_err(failed)?
        .common_prefixes;
    let mut later: Vec<Path> = folders.into_iter().filter(|f| *f > last).collect();
    later.sort();
    if later.len() < 2 {
        // Nothing to split: the rest as one listing.
        while let Some(meta) = listed.try_next().await.map_err(failed)? {
            objects.push(meta);
        }
        objects.sort_by(|a, b| a.location.cmp(&b.location));
        return Ok(objects);
    }
    drop(listed);
    // Range i holds the keys after bounds[i], up to bounds[i + 1]
    // included (the last, to the end): each key in one range.
    let per = later.len().div_ceil(RANGES_AT_ONCE - 1);
    let mut bounds = vec![last];
    bounds.extend(later.into_iter().step_by(per));
    let ranges: Vec<(Path, Option<Path>)> = bounds
        .iter()
        .enumerate()
        .map(|(i, from)| (from.clone(), bounds.get(i + 1).cloned()))
        .collect();
    let read = |(from, to): (Path, Option<Path>)| async move {
        store
            .list_with_offset(Some(root), &from)
            .try_take_while(move |m| {
                std::future::ready(Ok(to.as_ref().is_none_or(|to| m.location <= *to)))
            })
            .try_collect::<Vec<ObjectMeta>>()
            .await
    };
    let parts: Vec<Vec<ObjectMeta>> = futures::stream::iter(ranges)
        .map(read)
        .buffered(RANGES_AT_ONCE)
        .try_collect()
        .await
        .map_err(failed)?;
    objects.extend(parts.into_iter().flatten());
    Ok(objects)
}

/// Whether `objects` (a table's first keys, below `root`) hold at least
/// [`FILES_PER_FOLDER`] files per top folder.
fn many_files_per_folder(objects: &[ObjectMeta], root: &Path) -> bool {
    let depth = root.parts().count();
    let mut folders: Vec<_> = objects
        .iter()
        .filter_map(|m| {
            let parts: Vec<_> = m.location.parts().skip(depth).collect();
            (parts.len() > 1).then(|| parts[0].clone())
        })
        .collect();
    folders.dedup();
    !folders.is_empty() && objects.len() / folders.len() >= FILES_PER_FOLDER
}

/// [`inspect`] of objects already listed.
pub fn layout(
    objects: &[ObjectMeta],
    root: &Path,
    table: &str,
    location: &str,
    data: DataFiles,
) -> Result<TableLayout> {
    let bad = |message: String| PlannerError::Table {
        table: table.to_string(),
        location: location.to_string(),
        message,
    };
    let depth = root.parts().count();
    let mut keys: Option<(Vec<String>, String)> = None;
    let mut values: Vec<BTreeSet<String>> = Vec::new();
    let mut partitions = BTreeSet::new();
    let mut files = 0;
    let (mut other_files, mut other_example) = (0, None);
    let mut plain_folders = BTreeSet::new();
    for meta in objects {
        let parts: Vec<String> = meta
            .location
            .parts()
            .skip(depth)
            .map(|p| p.as_ref().to_string())
            .collect();
        let Some((_, folders)) = parts.split_last() else {
            continue;
        };
        if !data.holds(&meta.location, depth) {
            if !is_hidden(&meta.location, depth) {
                other_files += 1;
                other_example.get_or_insert_with(|| parts.join("/"));
            }
            continue;
        }
        files += 1;
        let mut these = Vec::with_capacity(folders.len());
        let mut tuple = Vec::with_capacity(folders.len());
        // Folders none of which is key=value (`2024/05/01/`, as Firehose
        // and many exports write) only hold files: the table's rows, with
        // no partition column, as Athena reads them.
        let folders = match folders.iter().any(|f| f.contains('=')) {
            true => folders,
            false => {
                plain_folders.insert(folders.join("/"));
                &[][..]
            }
        };
        for folder in folders {
            let (k, v) = folder.split_once('=').ok_or_else(|| {
                bad(format!(
                    "{} is in folder {folder:?}, which is not a key=value partition folder \
                     beside others that are (a table's files are read from its folder and \
                     the folders below it, which are either all key=value folders such as \
                     year=2024/month=01, the table's partitions, or none)",
                    meta.location
                ))
            })?;
            these.push(k.to_string());
            tuple.push(v.to_string());
        }
        match &keys {
            None => {
                values = vec![BTreeSet::new(); these.len()];
                keys = Some((these, meta.location.to_string()));
            }
            Some((first, first_file)) if *first != these => {
                return Err(bad(format!(
                    "files are partitioned differently: {first_file} by ({}), {} by ({})",
                    first.join(", "),
                    meta.location,
                    these.join(", ")
                ))
                .into());
            }
            Some(_) => {}
        }
        for (set, v) in values.iter_mut().zip(&tuple) {
            set.insert(v.clone());
        }
        partitions.insert(tuple);
    }
    let names = keys.map(|(k, _)| k).unwrap_or_default();
    let columns = names
        .into_iter()
        .zip(&values)
        .map(|(name, values)| (name, infer_type(values)))
        .collect::<Vec<_>>();
    let null_folders = columns
        .iter()
        .zip(&values)
        .filter(|(_, values)| values.iter().any(|v| is_null_folder(v)))
        .map(|((name, _), _)| name.clone())
        .collect();
    let spelled_otherwise = columns
        .iter()
        .zip(&values)
        .filter(|((_, ty), values)| {
            values
                .iter()
                .any(|v| !is_null_folder(v) && !spelled_as_value(v, ty))
        })
        .map(|((name, _), _)| name.clone())
        .collect();
    let nested = plain_folders.iter().any(|f| !f.is_empty());
    Ok(TableLayout {
        spelled_otherwise,
        folders: match columns.is_empty() && nested {
            true => plain_folders.into_iter().collect(),
            false => Vec::new(),
        },
        files,
        partitions: if columns.is_empty() {
            0
        } else {
            partitions.len()
        },
        columns,
        other_files,
        other_example,
        null_folders,
    })
}

/// Whether the partition folder value `v` of a column of type `ty` is the
/// value's text as SQL writes it (an integer without leading zeros or
/// sign; a date and text are written as their folders are).
fn spelled_as_value(v: &str, ty: &DataType) -> bool {
    match ty {
        DataType::Int64 => v.parse::<i64>().is_ok_and(|n| n.to_string() == v),
        _ => true,
    }
}

/// In or itself a hidden (`.x`) or bookkeeping (`_x`) file or folder,
/// below a table folder `depth` segments deep.
fn is_hidden(location: &Path, depth: usize) -> bool {
    location
        .parts()
        .skip(depth)
        .any(|p| p.as_ref().starts_with('.') || p.as_ref().starts_with('_'))
}

/// The narrowest of BIGINT, DATE and VARCHAR that reads every value but
/// the folders for NULL.
fn infer_type(values: &BTreeSet<String>) -> DataType {
    let values: Vec<&String> = values.iter().filter(|v| !is_null_folder(v)).collect();
    let reads = |ty: &DataType| {
        values
            .iter()
            .all(|v| ScalarValue::try_from_string((*v).clone(), ty).is_ok())
    };
    // A date string never reads as an integer, so the order is free.
    [DataType::Int64, DataType::Date32]
        .into_iter()
        .find(|ty| !values.is_empty() && reads(ty))
        .unwrap_or(DataType::Utf8)
}

/// The partitions of each partitioned table, by where the table is.
#[derive(Debug, Default)]
pub struct PartitionRegistry {
    tables: RwLock<HashMap<String, usize>>,
}

/// Where a table is: its store URL (`file:///`, `s3://bucket/`) and folder.
fn table_key(store_url: &str, root: &str) -> String {
    format!(
        "{}/{}",
        store_url.trim_end_matches('/'),
        root.trim_matches('/')
    )
}

impl PartitionRegistry {
    /// Remembers that the table at `store_url` + `root` has `partitions`.
    pub fn record(&self, store_url: &str, root: &str, partitions: usize) {
        if let Ok(mut t) = self.tables.write() {
            t.insert(table_key(store_url, root), partitions);
        }
    }

    /// The partitions the table at `store_url` + `root` had when registered.
    pub fn partitions(&self, store_url: &str, root: &str) -> Option<usize> {
        self.tables
            .read()
            .ok()?
            .get(&table_key(store_url, root))
            .copied()
    }
}

/// The folder of a partitioned table a file of it is in: the path before
/// the first `first_column=` folder.
pub fn table_root<'a>(file: &'a str, first_column: &str) -> Option<&'a str> {
    let marker = format!("{first_column}=");
    let mut offset = 0;
    for part in file.split('/') {
        if part.starts_with(&marker) {
            return Some(file[..offset].trim_end_matches('/'));
        }
        offset += part.len() + 1;
    }
    None
}

/// Distinct partitions among files' partition values, and how many of the
/// table's were pruned (when the table's count is known).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionCount {
    pub read: usize,
    pub total: Option<usize>,
}

impl PartitionCount {
    /// The counts of several scans together (a total only when all know theirs).
    pub fn sum(counts: impl Iterator<Item = PartitionCount>) -> Self {
        let mut out = Self {
            read: 0,
            total: Some(0),
        };
        let mut any = false;
        for c in counts.filter(|c| c.read > 0 || c.total.is_some()) {
            any = true;
            out.read += c.read;
            out.total = out.total.zip(c.total).map(|(a, b)| a + b);
        }
        if any { out } else { Self::default() }
    }

    pub fn pruned(&self) -> usize {
        self.total.map(|t| t.saturating_sub(self.read)).unwrap_or(0)
    }
}

/// Distinct partitions among files' partition values.
pub fn distinct_partitions<'a>(tuples: impl Iterator<Item = &'a [ScalarValue]>) -> usize {
    tuples.collect::<HashSet<_>>().len()
}

/// A partition value as the text a task carries (`None` for null).
pub fn value_text(value: &ScalarValue) -> Result<Option<String>> {
    if value.is_null() {
        return Ok(None);
    }
    match value.cast_to(&DataType::Utf8)? {
        ScalarValue::Utf8(text) => Ok(text),
        other => Err(PlannerError::Internal(format!(
            "partition value {value} cast to text gave {other:?}"
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests;
