//! A Delta log's checkpoints read: a classic checkpoint's parts (Parquet),
//! and a V2 checkpoint (a JSON or Parquet manifest named by a UUID) with
//! the sidecar files it names in `_delta_log/_sidecars/`, each applied to
//! the log's replay as its `add`, `metaData` and `protocol` actions.

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use serde_json::Value;

use super::{LOG, LogError, READ_CONCURRENCY, Replay, log_folder};

/// Applies one checkpoint file: a classic checkpoint's part, or a V2
/// checkpoint (JSON or Parquet) and the sidecar files it names (in
/// `_delta_log/_sidecars/`, read 16 at once, applied in order).
pub(super) async fn apply_checkpoint(
    store: &dyn ObjectStore,
    part: &ObjectMeta,
    state: &mut Replay,
    root: &Path,
) -> Result<(), LogError> {
    let bytes = read_whole(store, &part.location).await?;
    let sidecars = apply_checkpoint_bytes(bytes, &part.location, state, root)?;
    let folder = log_folder(root).join("_sidecars");
    let locations = sidecars
        .iter()
        .map(|p| {
            let name = Path::from_url_path(p).map_err(|e| format!("sidecar {p}: {e}"))?;
            match (p.contains('/'), name.filename()) {
                (false, Some(file)) => Ok(folder.clone().join(file)),
                _ => Err(format!(
                    "checkpoint {} names a sidecar outside {LOG}/_sidecars/ ({p}), which \
                     squall does not read",
                    part.location
                )),
            }
        })
        .collect::<Result<Vec<_>, LogError>>()?;
    let mut read = futures::stream::iter(locations)
        .map(|location| async move {
            let bytes = read_whole(store, &location).await?;
            Ok::<_, LogError>((location, bytes))
        })
        .buffered(READ_CONCURRENCY);
    while let Some((location, bytes)) = read.try_next().await? {
        if !apply_checkpoint_bytes(bytes, &location, state, root)?.is_empty() {
            return Err(format!("sidecar {location} names sidecars of its own"));
        }
    }
    Ok(())
}

/// The object at `location`, whole: one GET.
pub(super) async fn read_whole(
    store: &dyn ObjectStore,
    location: &Path,
) -> Result<bytes::Bytes, LogError> {
    let bad = |e: &dyn std::fmt::Display| format!("cannot read {location}: {e}");
    store
        .get(location)
        .await
        .map_err(|e| bad(&e))?
        .bytes()
        .await
        .map_err(|e| bad(&e))
}

/// Applies the actions of one checkpoint file (`bytes`, read from
/// `location`: JSON lines if its name says so, else Parquet, read batch by
/// batch); the sidecar files it names.
fn apply_checkpoint_bytes(
    bytes: bytes::Bytes,
    location: &Path,
    state: &mut Replay,
    root: &Path,
) -> Result<Vec<String>, LogError> {
    let bad = |e: &dyn std::fmt::Display| format!("checkpoint {location}: {e}");
    let mut sidecars = Vec::new();
    let mut apply = |action: Value, state: &mut Replay| -> Result<(), LogError> {
        if let Some(path) = action
            .get("sidecar")
            .and_then(|s| s.get("path"))
            .and_then(Value::as_str)
        {
            sidecars.push(path.to_string());
        }
        state.apply(&action, root, true).map_err(|e| bad(&e))
    };
    if location.as_ref().ends_with(".json") {
        let text = std::str::from_utf8(&bytes).map_err(|e| bad(&e))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            apply(serde_json::from_str(line).map_err(|e| bad(&e))?, state)?;
        }
        return Ok(sidecars);
    }
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| bad(&e))?;
    let wanted: Vec<usize> = reader
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| ["add", "metaData", "protocol", "sidecar"].contains(&f.name().as_str()))
        .map(|(i, _)| i)
        .collect();
    let mask = parquet::arrow::ProjectionMask::roots(reader.parquet_schema(), wanted);
    let batches = reader.with_projection(mask).build().map_err(|e| bad(&e))?;
    for batch in batches {
        let batch = batch.map_err(|e| bad(&e))?;
        let mut writer = arrow::json::LineDelimitedWriter::new(Vec::new());
        writer.write(&batch).map_err(|e| bad(&e))?;
        writer.finish().map_err(|e| bad(&e))?;
        let text = writer.into_inner();
        for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            apply(serde_json::from_slice(line).map_err(|e| bad(&e))?, state)?;
        }
    }
    Ok(sidecars)
}
