//! Iceberg tables in a catalog folder: read as their metadata says.
//!
//! An Iceberg table's folder holds `metadata/` (`00008-<uuid>.metadata.json`
//! or `v8.metadata.json`, manifest lists and manifests in Avro) and the
//! data files of every snapshot still kept, deleted rows' files among
//! them. The table now is its latest metadata file (the number
//! `version-hint.text` names, else the highest), its current snapshot's
//! manifest list, and the live entries of those manifests: the Parquet
//! files a query reads. Each query brings the table up to date first,
//! looking for the next metadata numbers ([`refreshed`]).
//!
//! Files' paths in the metadata are absolute (`s3://bucket/t/data/...`);
//! those below the table's recorded `location` are read below the folder
//! the table is in now (a table copied or moved with its folder reads).
//! Iceberg reads columns by id, and so does squall, nested fields too
//! (each field's id in its metadata: `squall_core::case_blind`), so a
//! renamed column, or a name reused after a drop, reads right. Equality
//! delete files (rows deleted by their values), data files other than
//! Parquet and metadata past format version 2 are refused. Position delete files (merge-on-read DELETEs) are
//! applied ([`super::iceberg_deletes`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::datatypes::Schema;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use serde_json::Value;

use super::avro;
use super::delta_log::{DataFile, LogError, LogFormat, Metadata, Snapshot, TravelTo};
use super::iceberg_deletes::PositionDeleteFile;

/// How many manifests are read at once.
const READ_CONCURRENCY: usize = 16;

/// Whether the listed `objects` below `root` hold an Iceberg table's metadata.
pub(crate) fn is_iceberg(objects: &[ObjectMeta], root: &Path) -> bool {
    objects
        .iter()
        .any(|m| metadata_number(&m.location, root).is_some())
}

/// The number of the metadata file at `location`, if it is one directly
/// in `root`'s `metadata/` (`00008-<uuid>.metadata.json`,
/// `v8.metadata.json`, either `.gz.metadata.json`).
fn metadata_number(location: &Path, root: &Path) -> Option<u64> {
    let depth = root.parts().count();
    let below: Vec<_> = location.parts().skip(depth).collect();
    let [folder, name] = below.as_slice() else {
        return None;
    };
    if folder.as_ref() != "metadata" || !name.as_ref().ends_with(".metadata.json") {
        return None;
    }
    let name = name.as_ref();
    let digits: String = name
        .strip_prefix('v')
        .unwrap_or(name)
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The table under `root` now.
pub(crate) async fn read(store: &dyn ObjectStore, root: &Path) -> Result<Snapshot, LogError> {
    read_at(store, root, None).await
}

/// The table as of `at` (its current snapshot when `None`): a snapshot id,
/// or the snapshot current at a time (its latest metadata's snapshot log),
/// read in the schema it was written in.
pub(crate) async fn read_at(
    store: &dyn ObjectStore,
    root: &Path,
    at: Option<TravelTo>,
) -> Result<Snapshot, LogError> {
    let folder = root.clone().join("metadata");
    let listed: Vec<ObjectMeta> = store
        .list(Some(&folder))
        .try_collect()
        .await
        .map_err(|e| format!("cannot list its Iceberg metadata: {e}"))?;
    let latest = latest_metadata(store, root, &listed).await?;
    read_version(store, root, latest, at).await
}

/// This snapshot brought up to the table's latest metadata, if newer: the
/// next numbers' metadata files looked for one at a time (a listing from
/// the number, or a HEAD of `vN.metadata.json`: one request when nothing
/// changed, whatever the manifests in `metadata/`).
///
/// `sorted`: the store lists keys in order (S3), so the first key past a
/// number's prefix is its file or there is none; a local folder lists in
/// no order and is read through.
pub(crate) async fn refreshed(
    snapshot: &Snapshot,
    store: &dyn ObjectStore,
    root: &Path,
    sorted: bool,
) -> Result<Option<Snapshot>, LogError> {
    let folder = root.clone().join("metadata");
    let named_v = snapshot
        .source
        .as_deref()
        .is_some_and(|s| s.starts_with('v'));
    let mut newest = None;
    for n in snapshot.version + 1.. {
        let found = match named_v {
            true => {
                let path = folder.clone().join(format!("v{n}.metadata.json"));
                match store.head(&path).await {
                    Ok(meta) => Some(meta),
                    Err(object_store::Error::NotFound { .. }) => None,
                    Err(e) => return Err(format!("cannot read its Iceberg metadata: {e}")),
                }
            }
            false => {
                let prefix = format!("{n:05}-");
                let offset = folder.clone().join(prefix.as_str());
                let mut listed = store.list_with_offset(Some(&folder), &offset);
                let mut found = None;
                while let Some(item) = listed.next().await {
                    let meta =
                        item.map_err(|e| format!("cannot list its Iceberg metadata: {e}"))?;
                    let name = meta.location.filename().unwrap_or_default();
                    if name.starts_with(&prefix) && name.ends_with(".metadata.json") {
                        found = Some(meta);
                        break;
                    }
                    if sorted {
                        break;
                    }
                }
                found
            }
        };
        match found {
            Some(meta) => newest = Some((n, meta)),
            None => break,
        }
        if n > snapshot.version + 1_000 {
            // Far behind: the highest of a whole listing.
            return read(store, root).await.map(Some);
        }
    }
    match newest {
        Some(latest) => read_version(store, root, latest, None).await.map(Some),
        None => Ok(None),
    }
}

/// The latest metadata file of `listed`: the one `version-hint.text`
/// names if it is there, else the highest numbered.
async fn latest_metadata(
    store: &dyn ObjectStore,
    root: &Path,
    listed: &[ObjectMeta],
) -> Result<(u64, ObjectMeta), LogError> {
    let numbered: Vec<(u64, &ObjectMeta)> = listed
        .iter()
        .filter_map(|m| Some((metadata_number(&m.location, root)?, m)))
        .collect();
    let hint = listed
        .iter()
        .find(|m| m.location.filename() == Some("version-hint.text"));
    if let Some(hint) = hint
        && let Ok(text) = get(store, &hint.location).await
        && let Ok(n) = String::from_utf8_lossy(&text).trim().parse::<u64>()
        && let Some((_, m)) = numbered.iter().find(|(v, _)| *v == n)
    {
        return Ok((n, (*m).clone()));
    }
    numbered
        .into_iter()
        .max_by_key(|(n, _)| *n)
        .map(|(n, m)| (n, m.clone()))
        .ok_or_else(|| "its metadata/ folder holds no metadata file".to_string())
}

async fn get(store: &dyn ObjectStore, location: &Path) -> Result<bytes::Bytes, LogError> {
    let failed = |e: object_store::Error| format!("cannot read {location}: {e}");
    store
        .get(location)
        .await
        .map_err(failed)?
        .bytes()
        .await
        .map_err(failed)
}

/// The table as the metadata file `meta` (number `version`) says.
async fn read_version(
    store: &dyn ObjectStore,
    root: &Path,
    (version, meta): (u64, ObjectMeta),
    travel: Option<TravelTo>,
) -> Result<Snapshot, LogError> {
    let mut bytes = get(store, &meta.location).await?.to_vec();
    if meta.location.as_ref().ends_with(".gz.metadata.json") {
        let mut plain = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(bytes.as_slice()),
            &mut plain,
        )
        .map_err(|e| format!("metadata {}: {e}", meta.location))?;
        bytes = plain;
    }
    let doc: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("metadata {} is not JSON: {e}", meta.location))?;
    let at = &meta.location;
    let format_version = doc
        .get("format-version")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    if format_version > 2 {
        return Err(format!(
            "its Iceberg metadata is of format version {format_version} ({at}); squall reads 1 and 2"
        ));
    }
    let location = doc
        .get("location")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_string();
    let current = match travel {
        None => doc
            .get("current-snapshot-id")
            .and_then(Value::as_i64)
            .filter(|&id| id >= 0),
        Some(travel) => Some(travelled_to(&doc, travel)?),
    };
    // A snapshot travelled to is read in the schema it was written in.
    let schema_id = match travel {
        None => None,
        Some(_) => snapshot_of(&doc, current).and_then(|s| s.get("schema-id")?.as_i64()),
    };
    let schema = current_schema(&doc, schema_id).map_err(|e| format!("metadata {at}: {e}"))?;
    let bounded = bounded_columns(&doc, schema_id);
    let mut files = BTreeMap::new();
    let mut position_deletes = Vec::new();
    if let Some(id) = current {
        let snapshot = doc
            .get("snapshots")
            .and_then(Value::as_array)
            .and_then(|s| {
                s.iter()
                    .find(|s| s.get("snapshot-id").and_then(Value::as_i64) == Some(id))
            })
            .ok_or_else(|| format!("metadata {at}: its current snapshot {id} is not listed"))?;
        // Each manifest's path, content (0 data, 1 deletes) and sequence
        // number (its added entries' when they have none).
        let manifests: Vec<(String, i64, i64)> =
            match snapshot.get("manifest-list").and_then(Value::as_str) {
                Some(list) => {
                    let list = located(list, &location, root)?;
                    avro::records(&get(store, &list).await?)
                        .map_err(|e| format!("manifest list {list}: {e}"))?
                        .iter()
                        .map(|m| {
                            let path = m.get("manifest_path").and_then(Value::as_str).ok_or_else(
                                || format!("manifest list {list}: an entry without its path"),
                            )?;
                            let content = m.get("content").and_then(Value::as_i64).unwrap_or(0);
                            let sequence = m
                                .get("sequence_number")
                                .and_then(Value::as_i64)
                                .unwrap_or(0);
                            Ok((path.to_string(), content, sequence))
                        })
                        .collect::<Result<_, LogError>>()?
                }
                None => snapshot
                    .get("manifests")
                    .and_then(Value::as_array)
                    .map(|m| {
                        m.iter()
                            .filter_map(|p| Some((p.as_str()?.to_string(), 0, 0)))
                            .collect()
                    })
                    .unwrap_or_default(),
            };
        let located_manifests = manifests
            .into_iter()
            .map(|(path, content, sequence)| {
                Ok((located(&path, &location, root)?, content, sequence))
            })
            .collect::<Result<Vec<_>, LogError>>()?;
        let mut entries = futures::stream::iter(located_manifests)
            .map(|(path, content, sequence)| async move {
                let bytes = get(store, &path).await?;
                let records = avro::records(&bytes).map_err(|e| format!("manifest {path}: {e}"))?;
                Ok::<_, LogError>((path, content, sequence, records))
            })
            .buffered(READ_CONCURRENCY);
        while let Some((path, content, manifest_sequence, records)) = entries.try_next().await? {
            for entry in records {
                // 2: deleted in this snapshot.
                if entry.get("status").and_then(Value::as_i64) == Some(2) {
                    continue;
                }
                let sequence = entry
                    .get("sequence_number")
                    .and_then(Value::as_i64)
                    .unwrap_or(manifest_sequence);
                let data = entry
                    .get("data_file")
                    .ok_or_else(|| format!("manifest {path}: an entry without its data_file"))?;
                let kind = data
                    .get("content")
                    .and_then(Value::as_i64)
                    .unwrap_or(content);
                let file_path = data
                    .get("file_path")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("manifest {path}: a data file without its path"))?;
                let format = data
                    .get("file_format")
                    .and_then(Value::as_str)
                    .unwrap_or("PARQUET");
                let size = data
                    .get("file_size_in_bytes")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("file {file_path} has no size"))?;
                if kind > 1 {
                    return Err(format!(
                        "it has equality delete files (rows deleted by their values, such \
                         as {file_path}), which squall does not read; rewriting the table's \
                         data files (rewrite_data_files) applies them"
                    ));
                }
                if !format.eq_ignore_ascii_case("parquet") {
                    let what = if kind == 1 { "position delete" } else { "data" };
                    return Err(format!(
                        "its {what} file {file_path} is {format}; squall reads Parquet"
                    ));
                }
                if kind == 1 {
                    position_deletes.push(PositionDeleteFile {
                        location: located(file_path, &location, root)?,
                        size,
                        sequence,
                    });
                    continue;
                }
                let file = DataFile {
                    location: located(file_path, &location, root)?,
                    size,
                    modified: 0,
                    partition_values: HashMap::new(),
                    rows: data.get("record_count").and_then(Value::as_u64),
                    stats: file_stats(data, &bounded),
                    deletion_vector: None,
                    sequence,
                };
                files.insert(file_path.to_string(), file);
            }
        }
    }
    Ok(Snapshot {
        format: LogFormat::Iceberg,
        version,
        source: meta.location.filename().map(str::to_string),
        metadata: Metadata {
            schema: Arc::new(schema),
            partition_columns: Vec::new(),
            column_mapping: None,
            provider: "parquet".into(),
        },
        min_reader_version: 1,
        reader_features: Vec::new(),
        files,
        position_deletes,
    })
}

/// The snapshot of `doc` whose id is `id`.
fn snapshot_of(doc: &Value, id: Option<i64>) -> Option<&Value> {
    doc.get("snapshots")?
        .as_array()?
        .iter()
        .find(|s| s.get("snapshot-id").and_then(Value::as_i64) == id)
}

/// The snapshot id `travel` names in `doc`: the id itself, if the table has
/// that snapshot, or the snapshot current at a time (the snapshot log's
/// last entry at or before it).
fn travelled_to(doc: &Value, travel: TravelTo) -> Result<i64, LogError> {
    match travel {
        TravelTo::Version(v) => {
            let id = i64::try_from(v).unwrap_or(i64::MAX);
            snapshot_of(doc, Some(id))
                .map(|_| id)
                .ok_or_else(|| format!("it has no snapshot {v}"))
        }
        TravelTo::Millis(ms) => {
            let entries: Vec<(i64, i64)> = doc
                .get("snapshot-log")
                .and_then(Value::as_array)
                .or_else(|| doc.get("snapshots").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some((
                        e.get("timestamp-ms")?.as_i64()?,
                        e.get("snapshot-id")?.as_i64()?,
                    ))
                })
                .collect();
            entries
                .into_iter()
                .filter(|(t, _)| *t <= ms)
                .max_by_key(|(t, _)| *t)
                .map(|(_, id)| id)
                .ok_or_else(|| {
                    format!(
                        "it has no snapshot at or before {}",
                        chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
                    )
                })
        }
    }
}

/// Where the object the metadata names `path` is: below `root` if it is
/// below the table's recorded `location`, else where it says, in this store.
fn located(path: &str, location: &str, root: &Path) -> Result<Path, LogError> {
    if let Some(rest) = path
        .strip_prefix(location)
        .filter(|r| !location.is_empty() && r.starts_with('/'))
    {
        let parts = rest
            .split('/')
            .filter(|p| !p.is_empty())
            .map(object_store::path::PathPart::from);
        return Ok(Path::from_iter(root.parts().chain(parts)));
    }
    Err(format!(
        "{path} is outside the table's location {location}, which squall does not read"
    ))
}

/// The table's current schema in Arrow's types, each column and nested
/// field with its field id (read by it) and name (files without ids).
fn current_schema(doc: &Value, schema_id: Option<i64>) -> Result<Schema, LogError> {
    let schemas: Vec<&Value> = match doc.get("schemas").and_then(Value::as_array) {
        Some(s) => s.iter().collect(),
        None => doc.get("schema").into_iter().collect(),
    };
    let current_id = schema_id.or_else(|| doc.get("current-schema-id").and_then(Value::as_i64));
    let current = schemas
        .iter()
        .find(|s| current_id.is_none() || s.get("schema-id").and_then(Value::as_i64) == current_id)
        .ok_or_else(|| "no current schema".to_string())?;
    // Every column and nested field is read by its field id, as Iceberg
    // reads it: a renamed one reads its older files, a name reused after a
    // drop does not read the dropped one's values (`squall_core::case_blind`).
    let metadata_of = |json: &Value| {
        use squall_core::case_blind::{FILE_COLUMN, FILE_FIELD_ID};
        let mut metadata = HashMap::new();
        // Files without field ids (imported) are read by name.
        if let Some(name) = json.get("name").and_then(Value::as_str) {
            metadata.insert(FILE_COLUMN.to_string(), name.to_string());
        }
        if let Some(id) = json.get("id").and_then(Value::as_i64) {
            metadata.insert(FILE_FIELD_ID.to_string(), id.to_string());
        }
        metadata
    };
    let fields = super::log_types::iceberg_fields(current)?;
    let fields = match super::log_types::with_field_metadata(
        &arrow::datatypes::DataType::Struct(fields.clone()),
        current,
        &metadata_of,
    ) {
        arrow::datatypes::DataType::Struct(mapped) => mapped,
        _ => fields,
    };
    Ok(Schema::new(fields))
}

#[path = "iceberg_bounds.rs"]
mod bounds;
use bounds::{bounded_columns, file_stats};

#[cfg(test)]
#[path = "iceberg_tests.rs"]
mod tests;
