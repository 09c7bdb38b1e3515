//! Iceberg position delete files: rows deleted without rewriting their
//! data files (merge-on-read, what Athena's and Trino's DELETE, UPDATE and
//! MERGE write on Iceberg tables).
//!
//! A position delete file is Parquet of (`file_path`, `pos`) rows: the data
//! file, by its path as the metadata names it, and a row's position in it.
//! It deletes those rows from data files whose data sequence number is at
//! most its own (a file written after the delete is untouched). The
//! coordinator reads a snapshot's delete files when it plans a scan of the
//! table, and a data file's deleted positions reach the tasks that read it
//! as a Delta deletion vector's do ([`super::deletes`]). Delete files are
//! immutable: the process keeps those it read, up to [`REMEMBERED_ROWS`]
//! deleted rows in all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Int64Type};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use roaring::RoaringTreemap;

/// Delete files read at once.
const READ_CONCURRENCY: usize = 16;

/// Deleted rows (of all delete files) the process remembers.
const REMEMBERED_ROWS: u64 = 50_000_000;

/// A live position delete file of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PositionDeleteFile {
    pub location: Path,
    pub size: u64,
    /// Its data sequence number: it deletes from data files of at most this.
    pub sequence: i64,
}

/// A delete file's rows: per data file (its path as the metadata names
/// it), the deleted positions.
pub(crate) type Positions = HashMap<String, RoaringTreemap>;

type Remembered = (HashMap<(Path, u64), Arc<Positions>>, u64);

fn remembered() -> &'static Mutex<Remembered> {
    static REMEMBERED: std::sync::OnceLock<Mutex<Remembered>> = std::sync::OnceLock::new();
    REMEMBERED.get_or_init(Default::default)
}

/// The rows of each of `files`, in order: those the process remembers, the
/// others read (16 at once).
pub(crate) async fn read_all(
    store: &Arc<dyn ObjectStore>,
    files: &[PositionDeleteFile],
) -> Result<Vec<Arc<Positions>>, String> {
    let known: Vec<Option<Arc<Positions>>> = {
        let cache = remembered().lock().unwrap_or_else(|e| e.into_inner());
        files
            .iter()
            .map(|f| cache.0.get(&(f.location.clone(), f.size)).cloned())
            .collect()
    };
    let missing: Vec<usize> = (0..files.len()).filter(|&i| known[i].is_none()).collect();
    let read: Vec<(usize, Arc<Positions>)> = futures::stream::iter(missing)
        .map(|i| async move { Ok::<_, String>((i, Arc::new(read(store, &files[i]).await?))) })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let mut out = known;
    let mut cache = remembered().lock().unwrap_or_else(|e| e.into_inner());
    for (i, positions) in read {
        let rows: u64 = positions.values().map(RoaringTreemap::len).sum();
        if cache.1 + rows > REMEMBERED_ROWS {
            cache.0.clear();
            cache.1 = 0;
        }
        if rows <= REMEMBERED_ROWS {
            let file = &files[i];
            cache
                .0
                .insert((file.location.clone(), file.size), Arc::clone(&positions));
            cache.1 += rows;
        }
        out[i] = Some(positions);
    }
    Ok(out.into_iter().flatten().collect())
}

/// One delete file's rows (the file read whole: one GET).
async fn read(
    store: &Arc<dyn ObjectStore>,
    file: &PositionDeleteFile,
) -> Result<Positions, String> {
    let place = format!("position delete file {}", file.location);
    let failed = |e: &dyn std::fmt::Display| format!("cannot read {place}: {e}");
    let bytes = store
        .get(&file.location)
        .await
        .map_err(|e| failed(&e))?
        .bytes()
        .await
        .map_err(|e| failed(&e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(|e| failed(&e))?;
    let columns = builder.parquet_schema();
    for name in ["file_path", "pos"] {
        if !columns.columns().iter().any(|c| c.path().string() == name) {
            return Err(format!("{place} has no {name} column"));
        }
    }
    let mask = ProjectionMask::columns(columns, ["file_path", "pos"]);
    let batches = builder
        .with_projection(mask)
        .build()
        .map_err(|e| failed(&e))?;
    let mut out = Positions::new();
    for batch in batches {
        let batch = batch.map_err(|e| failed(&e))?;
        let column = |name: &str, ty: &DataType| {
            let array = batch
                .column_by_name(name)
                .ok_or_else(|| format!("{place} has no {name} column"))?;
            arrow::compute::cast(array, ty).map_err(|e| format!("{place}: its {name}: {e}"))
        };
        let paths = column("file_path", &DataType::Utf8)?;
        let positions = column("pos", &DataType::Int64)?;
        let (paths, positions) = (
            paths.as_string::<i32>(),
            positions.as_primitive::<Int64Type>(),
        );
        if paths.null_count() > 0 || positions.null_count() > 0 {
            return Err(format!("{place} has a row without its file_path or pos"));
        }
        for (path, pos) in paths.iter().zip(positions.values()) {
            let (Some(path), Ok(pos)) = (path, u64::try_from(*pos)) else {
                return Err(format!("{place} deletes position {pos}, below 0"));
            };
            match out.get_mut(path) {
                Some(set) => {
                    set.insert(pos);
                }
                None => {
                    out.insert(path.to_string(), [pos].into_iter().collect());
                }
            }
        }
    }
    Ok(out)
}

/// The positions deleted from the data file named `path` (as the metadata
/// names it) of data sequence number `sequence`, by `deletes` (each with
/// its file's sequence number); `None` when none.
pub(crate) fn deleted_from(
    path: &str,
    sequence: i64,
    deletes: &[(i64, Arc<Positions>)],
) -> Option<Arc<RoaringTreemap>> {
    let mut found: Vec<&RoaringTreemap> = deletes
        .iter()
        .filter(|(s, _)| *s >= sequence)
        .filter_map(|(_, p)| p.get(path))
        .collect();
    match found.len() {
        0 => None,
        1 => Some(Arc::new(found.remove(0).clone())),
        _ => Some(Arc::new(
            found.into_iter().fold(RoaringTreemap::new(), |a, b| a | b),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delete_file_deletes_from_files_no_newer_than_itself() {
        let file = |rows: &[(&str, u64)]| {
            let mut p = Positions::new();
            for (path, pos) in rows {
                p.entry(path.to_string()).or_default().insert(*pos);
            }
            Arc::new(p)
        };
        let deletes = vec![
            (3, file(&[("a", 1), ("a", 2), ("b", 0)])),
            (5, file(&[("a", 7)])),
        ];
        let got =
            |path, seq| deleted_from(path, seq, &deletes).map(|p| p.iter().collect::<Vec<_>>());
        assert_eq!(got("a", 1), Some(vec![1, 2, 7]));
        assert_eq!(got("a", 4), Some(vec![7]));
        assert_eq!(got("a", 6), None);
        assert_eq!(got("b", 3), Some(vec![0]));
        assert_eq!(got("c", 0), None);
    }
}
