//! A Delta Lake table's log, replayed: which Parquet files make up the
//! table now, with their partition values, and its schema.
//!
//! A Delta table is a folder of Parquet files and a `_delta_log/` folder of
//! commits (`00000000000000000007.json`: one action per line) and
//! checkpoints (`...10.checkpoint.parquet`, or in parts: the table's state
//! at that version). Files a commit removed (an overwrite, a DELETE, a
//! compaction) stay in the folder until a vacuum: reading the folder's
//! files would count rows twice or read deleted ones, silently. The log
//! names the files that hold the table: the latest checkpoint's `add`
//! actions, then each later commit's `add`s and `remove`s in order.
//!
//! Reading: one listing of `_delta_log/`, the checkpoint's parts (read as
//! Parquet) and the commits after it, 16 at once. A snapshot already
//! read is brought up to date with one listing from its version on and a
//! GET per newer commit ([`Snapshot::refreshed`]).
//!
//! What is not read is refused by name (the table, the feature, the
//! version), never read wrongly: column
//! mapping (the files' column names are not the table's), reader features
//! this reader does not know, a log whose commits are gone with no
//! checkpoint to start from, a table whose files are not Parquet.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::datatypes::Schema;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use serde_json::Value;

/// The log's folder below a table's.
pub(crate) const LOG: &str = "_delta_log";

/// How many log objects are read at once.
const READ_CONCURRENCY: usize = 16;

/// Reader features this reader reads correctly (with the checks in
/// [`Snapshot::check`] for those that need one).
const KNOWN_FEATURES: &[&str] = &[
    "columnMapping",
    "deletionVectors",
    "timestampNtz",
    "typeWidening",
    "typeWidening-preview",
    "v2Checkpoint",
    "vacuumProtocolCheck",
];

/// Whether the listed `objects` below `root` hold a Delta log.
pub(crate) fn is_delta(objects: &[ObjectMeta], root: &Path) -> bool {
    let depth = root.parts().count();
    objects.iter().any(|m| {
        m.location
            .parts()
            .nth(depth)
            .is_some_and(|p| p.as_ref() == LOG)
    })
}

/// A live data file of the table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DataFile {
    /// Its location in the store.
    pub location: Path,
    pub size: u64,
    /// Milliseconds since the epoch.
    pub modified: i64,
    /// Its value of each partition column, as the log writes it.
    pub partition_values: HashMap<String, Option<String>>,
    /// Rows, from the log's statistics when it has them.
    pub rows: Option<u64>,
    /// The log's statistics of the file (a JSON document: `numRecords`,
    /// `minValues`, `maxValues`, `nullCount`), read when a query filters.
    pub stats: Option<Arc<str>>,
    /// Where its rows deleted without a rewrite are (`rows` counts
    /// without them).
    pub deletion_vector: Option<super::deletes::DeletionVector>,
    /// Its Iceberg data sequence number (0 for Delta): which position
    /// delete files apply to it.
    pub sequence: i64,
}

/// The table's metadata action: its schema and partitioning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Metadata {
    pub schema: Arc<Schema>,
    pub partition_columns: Vec<String>,
    pub column_mapping: Option<String>,
    pub provider: String,
}

/// Which log a snapshot was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFormat {
    Delta,
    /// An Iceberg table's metadata ([`super::iceberg`]); `version` is its
    /// metadata file's number.
    Iceberg,
}

/// A point in a table's history a query reads it at (`FOR VERSION AS
/// OF`, `FOR TIMESTAMP AS OF`): a Delta version or Iceberg snapshot id, or
/// a time in milliseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TravelTo {
    Version(u64),
    Millis(i64),
}

/// The table at one version.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub format: LogFormat,
    pub version: u64,
    /// The metadata file it was read from (Iceberg's; none for Delta).
    pub source: Option<String>,
    pub metadata: Metadata,
    pub min_reader_version: i64,
    pub reader_features: Vec<String>,
    /// The live files, by their path as the log names them.
    pub files: BTreeMap<String, DataFile>,
    /// Iceberg's live position delete files (none for Delta).
    pub position_deletes: Vec<super::iceberg_deletes::PositionDeleteFile>,
}

/// Why a log cannot be read, said of the table.
pub(crate) type LogError = String;

#[path = "delta_listing.rs"]
mod listing;
use listing::{LogObjects, list_numbered};

impl Snapshot {
    /// The table under `root` now, from its log.
    pub(crate) async fn read(
        store: &dyn ObjectStore,
        root: &Path,
        sorted: bool,
    ) -> Result<Self, LogError> {
        Self::read_at(store, root, sorted, None).await
    }

    /// The table as of `at` (its latest version when `None`): a version,
    /// or the last version committed at or before a time.
    pub(crate) async fn read_at(
        store: &dyn ObjectStore,
        root: &Path,
        sorted: bool,
        at: Option<TravelTo>,
    ) -> Result<Self, LogError> {
        let log = log_folder(root);
        let listed = list_numbered(store, &log, None, sorted).await?;
        let objects = LogObjects::from_listing(listed, &log);
        let newest = objects
            .latest()
            .ok_or_else(|| format!("its {LOG}/ folder holds no commit"))?;
        let latest = match at {
            None => newest,
            Some(TravelTo::Version(v)) if v > newest => {
                return Err(format!("it has no version {v} (its latest is {newest})"));
            }
            Some(TravelTo::Version(v)) => v,
            Some(TravelTo::Millis(ms)) => {
                committed_by(store, &objects, ms).await?.ok_or_else(|| {
                    format!(
                        "it has no version committed at or before {} (of its log's commits)",
                        chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
                    )
                })?
            }
        };
        // The latest checkpoint that every later commit follows, else
        // the commits from the first.
        let start = objects
            .checkpoints
            .keys()
            .rev()
            .filter(|&&cp| cp <= latest)
            .find(|&&cp| cp == latest || objects.commits_between(cp + 1, latest).is_some())
            .copied();
        let mut state = Replay::default();
        let first_commit = match start {
            Some(cp) => {
                for part in &objects.checkpoints[&cp] {
                    apply_checkpoint(store, part, &mut state, root).await?;
                }
                cp + 1
            }
            None => 0,
        };
        let commits = match first_commit > latest {
            true => Vec::new(),
            false => objects
                .commits_between(first_commit, latest)
                .ok_or_else(|| {
                    format!(
                        "its Delta log lacks commits before version {latest} and no \
                         checkpoint covers them"
                    )
                })?,
        };
        state.apply_commits(store, commits, root).await?;
        state.into_snapshot(latest)
    }

    /// This snapshot brought up to the log's latest version: one listing
    /// from this version on and the newer commits; the whole log again
    /// when they are gone (a log cleaned past this version).
    pub(crate) async fn refreshed(
        &self,
        store: &dyn ObjectStore,
        root: &Path,
        sorted: bool,
    ) -> Result<Option<Self>, LogError> {
        let log = log_folder(root);
        let offset = log.clone().join(format!("{:020}.json", self.version));
        let listed = list_numbered(store, &log, Some(&offset), sorted).await?;
        let objects = LogObjects::from_listing(listed, &log);
        let Some(latest) = objects.latest().filter(|&v| v > self.version) else {
            return Ok(None);
        };
        let Some(commits) = objects.commits_between(self.version + 1, latest) else {
            return Self::read(store, root, sorted).await.map(Some);
        };
        let mut state = Replay::from(self);
        state.apply_commits(store, commits, root).await?;
        state.into_snapshot(latest).map(Some)
    }

    /// Refuses what this reader cannot read correctly.
    pub(crate) fn check(&self) -> Result<(), LogError> {
        let at = self.version;
        if self.min_reader_version > 3 {
            return Err(format!(
                "its Delta protocol asks for reader version {} (version {at}); squall reads up to 3",
                self.min_reader_version
            ));
        }
        if let Some(feature) = self
            .reader_features
            .iter()
            .find(|f| !KNOWN_FEATURES.contains(&f.as_str()))
        {
            return Err(format!(
                "its Delta protocol needs the reader feature {feature} (version {at}), which squall does not read"
            ));
        }
        if let Some(mode) = self.metadata.column_mapping.as_deref()
            && !["none", "name", "id"].contains(&mode)
        {
            return Err(format!(
                "it uses Delta column mapping mode {mode} (version {at}), which squall does not read"
            ));
        }
        if self.metadata.provider != "parquet" {
            return Err(format!(
                "its Delta files are {} (version {at}); squall reads Parquet",
                self.metadata.provider
            ));
        }
        Ok(())
    }
}

fn log_folder(root: &Path) -> Path {
    root.clone().join(LOG)
}

/// The table's state while actions are applied.
#[derive(Debug, Default)]
struct Replay {
    metadata: Option<Metadata>,
    min_reader_version: i64,
    reader_features: Vec<String>,
    files: BTreeMap<String, DataFile>,
}

impl From<&Snapshot> for Replay {
    fn from(s: &Snapshot) -> Self {
        Self {
            metadata: Some(s.metadata.clone()),
            min_reader_version: s.min_reader_version,
            reader_features: s.reader_features.clone(),
            files: s.files.clone(),
        }
    }
}

impl Replay {
    /// Applies `commits` in order (read 16 at once).
    async fn apply_commits(
        &mut self,
        store: &dyn ObjectStore,
        commits: Vec<&ObjectMeta>,
        root: &Path,
    ) -> Result<(), LogError> {
        let commits: Vec<ObjectMeta> = commits.into_iter().cloned().collect();
        let mut texts = futures::stream::iter(commits)
            .map(|meta: ObjectMeta| async move {
                let failed = |e: object_store::Error| format!("cannot read {}: {e}", meta.location);
                let bytes = store
                    .get(&meta.location)
                    .await
                    .map_err(failed)?
                    .bytes()
                    .await
                    .map_err(failed)?;
                Ok::<_, LogError>((meta.location.clone(), bytes))
            })
            .buffered(READ_CONCURRENCY);
        while let Some((location, bytes)) = texts.try_next().await? {
            let text = std::str::from_utf8(&bytes)
                .map_err(|e| format!("commit {location} is not text: {e}"))?;
            let actions = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|line| {
                    serde_json::from_str::<Value>(line).map_err(|e| {
                        format!("commit {location} holds a line that is not JSON: {e}")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            // A commit's actions are a set: a file's `remove` (with its old
            // deletion vector) goes before its `add` (with its new one),
            // whatever their order in the commit.
            let (removes, others): (Vec<&Value>, Vec<&Value>) =
                actions.iter().partition(|a| a.get("remove").is_some());
            for action in removes.into_iter().chain(others) {
                self.apply(action, root, false)
                    .map_err(|e| format!("commit {location}: {e}"))?;
            }
        }
        Ok(())
    }

    /// Applies one action (a checkpoint's `remove`s are tombstones of
    /// files already gone, and are skipped).
    fn apply(&mut self, action: &Value, root: &Path, checkpoint: bool) -> Result<(), LogError> {
        if let Some(add) = action.get("add").filter(|a| a.is_object()) {
            let path = text(add, "path")?;
            let file = data_file(add, path, root)?;
            self.files.insert(path.to_string(), file);
        }
        if let Some(remove) = action.get("remove").filter(|r| r.is_object())
            && !checkpoint
        {
            self.files.remove(text(remove, "path")?);
        }
        if let Some(meta) = action.get("metaData").filter(|m| m.is_object()) {
            self.metadata = Some(metadata(meta)?);
        }
        if let Some(protocol) = action.get("protocol").filter(|p| p.is_object()) {
            self.min_reader_version = protocol
                .get("minReaderVersion")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            self.reader_features = protocol
                .get("readerFeatures")
                .and_then(Value::as_array)
                .map(|fs| {
                    fs.iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
        }
        Ok(())
    }

    fn into_snapshot(self, version: u64) -> Result<Snapshot, LogError> {
        let metadata = self
            .metadata
            .ok_or_else(|| format!("its Delta log has no metadata up to version {version}"))?;
        Ok(Snapshot {
            format: LogFormat::Delta,
            version,
            source: None,
            metadata,
            min_reader_version: self.min_reader_version,
            reader_features: self.reader_features,
            files: self.files,
            position_deletes: Vec::new(),
        })
    }
}

fn text<'a>(action: &'a Value, key: &str) -> Result<&'a str, LogError> {
    action
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("an action without its {key}"))
}

/// An `add` action's file.
fn data_file(add: &Value, path: &str, root: &Path) -> Result<DataFile, LogError> {
    let location = file_location(path, root)?;
    let size = add
        .get("size")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("file {path} has no size in the log"))?;
    let partition_values = match add.get("partitionValues") {
        Some(Value::Object(values)) => values
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
            .collect(),
        _ => HashMap::new(),
    };
    // Statistics are a JSON document in a string (`stats`).
    let stats = add.get("stats").and_then(Value::as_str);
    let deletion_vector = match add.get("deletionVector") {
        Some(dv) => super::deletes::DeletionVector::parse(dv, path)?,
        None => None,
    };
    let rows = stats
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|s| s.get("numRecords").and_then(Value::as_u64))
        .map(|n| n.saturating_sub(deletion_vector.as_ref().map_or(0, |d| d.cardinality)));
    Ok(DataFile {
        location,
        size,
        modified: add
            .get("modificationTime")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        partition_values,
        rows,
        stats: stats.map(Arc::from),
        deletion_vector,
        sequence: 0,
    })
}

/// Where the file the log names `path` is: a path relative to the table's
/// folder, percent-encoded as a URI's; an absolute URI (a shallow clone's
/// files elsewhere) is refused.
fn file_location(path: &str, root: &Path) -> Result<Path, LogError> {
    if path.contains("://") || path.starts_with('/') {
        return Err(format!(
            "file {path} is outside the table's folder (an absolute path in the Delta log), \
             which squall does not read"
        ));
    }
    let relative = Path::from_url_path(path).map_err(|e| format!("file {path}: {e}"))?;
    Ok(Path::from_iter(root.parts().chain(relative.parts())))
}

/// A `metaData` action.
fn metadata(meta: &Value) -> Result<Metadata, LogError> {
    let schema_text = text(meta, "schemaString")?;
    let schema: Value = serde_json::from_str(schema_text)
        .map_err(|e| format!("its Delta schema is not JSON: {e}"))?;
    let fields = super::log_types::delta_fields(&schema)?;
    let partition_columns = meta
        .get("partitionColumns")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let configuration = meta.get("configuration");
    let column_mapping = configuration
        .and_then(|c| c.get("delta.columnMapping.mode"))
        .and_then(Value::as_str)
        .map(str::to_string);
    // Column mapping: each column's files name it by its physical name (by
    // field id in `id` mode), which the column's metadata carries to the
    // scan (`squall_core::case_blind`).
    let fields = match column_mapping.as_deref() {
        Some("name" | "id") => super::log_types::mapped_fields(
            &schema,
            fields,
            column_mapping.as_deref() == Some("id"),
        ),
        _ => fields,
    };
    let provider = meta
        .get("format")
        .and_then(|f| f.get("provider"))
        .and_then(Value::as_str)
        .unwrap_or("parquet")
        .to_ascii_lowercase();
    Ok(Metadata {
        schema: Arc::new(Schema::new(fields)),
        partition_columns,
        column_mapping,
        provider,
    })
}

#[path = "delta_checkpoint.rs"]
mod checkpoint;
use checkpoint::{apply_checkpoint, read_whole};

#[path = "delta_history.rs"]
mod history;
use history::committed_by;

#[cfg(test)]
#[path = "delta_log_tests.rs"]
mod tests;
