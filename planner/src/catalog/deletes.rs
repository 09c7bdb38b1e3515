//! Rows deleted from a table's files without rewriting them: a Delta
//! deletion vector (what Databricks writes on DELETE, UPDATE and MERGE by
//! default), and where a scan's files get theirs from (Iceberg's position
//! delete files too: [`attach_deletions`]).
//!
//! The coordinator reads a file's deleted positions when it plans a scan of
//! the file ([`deleted_positions`]) and hands them to the scan as a
//! [`DeletedPositions`] extension of the file; splitting the scan into
//! tasks (`split::scan_units`) gives each task the positions within the row
//! groups it reads, which it skips (`squall_core::deleted_rows`). A task
//! makes no request for them.
//!
//! A deletion vector is a RoaringBitmap of row positions in the file, kept
//! in the log (`storageType` `i`, z85 text) or in a file beside the data
//! (`u`: `<prefix>/deletion_vector_<uuid>.bin`, the UUID z85-encoded in
//! the log; many vectors share a file, each at its `offset`, framed by its
//! size and a CRC-32). Vectors are immutable (a new one replaces the file's
//! old one in the log), so the process keeps those it read, up to
//! [`REMEMBERED_BYTES`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::datasource::listing::PartitionedFile;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::path::Path;
use roaring::RoaringTreemap;

use super::iceberg_deletes::{self, PositionDeleteFile};
use serde_json::Value;

/// The magic number before a Delta deletion vector's bitmap (RoaringBitmap's
/// portable serialization).
const PORTABLE_MAGIC: u32 = 1_681_511_377;

/// Deletion vector files read at once.
const READ_CONCURRENCY: usize = 16;

/// The deleted positions of the vectors the process remembers, in bytes of
/// their serialization.
const REMEMBERED_BYTES: usize = 256 << 20;

/// A file's deleted rows, by position in the file (from 0): the extension
/// of a scanned file that has any.
#[derive(Debug, Clone)]
pub(crate) struct DeletedPositions(pub Arc<RoaringTreemap>);

/// What finding one live file's deleted rows takes: its Delta deletion
/// vector, or its path as Iceberg's metadata names it and its data
/// sequence number (which position delete files apply to it).
pub(crate) struct FileDeletes<'a> {
    pub vector: Option<&'a DeletionVector>,
    pub name: &'a str,
    pub sequence: i64,
}

/// Each of `files` (of the table under `root`; `of` says how to find each
/// one's deletions) given its deleted rows' positions, when it has any, as
/// a [`DeletedPositions`] extension: from its Delta deletion vector, or
/// from the snapshot's Iceberg `position_deletes` no older than it.
pub(crate) async fn attach_deletions(
    store: &Arc<dyn ObjectStore>,
    root: &Path,
    files: &mut [PartitionedFile],
    of: &[FileDeletes<'_>],
    position_deletes: &[PositionDeleteFile],
) -> Result<(), String> {
    let (at, vectors): (Vec<usize>, Vec<&DeletionVector>) = of
        .iter()
        .enumerate()
        .filter_map(|(k, d)| d.vector.map(|v| (k, v)))
        .unzip();
    let positions = deleted_positions(store.as_ref(), root, &vectors).await?;
    for (k, positions) in at.into_iter().zip(positions) {
        files[k].extensions.insert(DeletedPositions(positions));
    }
    if position_deletes.is_empty() {
        return Ok(());
    }
    let read = iceberg_deletes::read_all(store, position_deletes).await?;
    let deletes: Vec<(i64, Arc<iceberg_deletes::Positions>)> = position_deletes
        .iter()
        .map(|d| d.sequence)
        .zip(read)
        .collect();
    for (file, d) in files.iter_mut().zip(of) {
        if let Some(positions) = iceberg_deletes::deleted_from(d.name, d.sequence, &deletes) {
            file.extensions.insert(DeletedPositions(positions));
        }
    }
    Ok(())
}

/// A Delta `add` action's `deletionVector`: where the file's deleted
/// positions are, and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeletionVector {
    storage: String,
    path_or_inline: String,
    offset: Option<u64>,
    size: u32,
    /// Rows it deletes.
    pub cardinality: u64,
}

impl DeletionVector {
    /// The descriptor in `dv` (an `add` action's `deletionVector` of file
    /// `file`); `None` when null.
    pub(crate) fn parse(dv: &Value, file: &str) -> Result<Option<Self>, String> {
        if dv.is_null() {
            return Ok(None);
        }
        let bad = |what: &str| format!("file {file}: its deletion vector has {what}");
        let storage = dv
            .get("storageType")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no storageType"))?;
        let path_or_inline = dv
            .get("pathOrInlineDv")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no pathOrInlineDv"))?;
        let size = dv
            .get("sizeInBytes")
            .and_then(Value::as_u64)
            .and_then(|s| u32::try_from(s).ok())
            .ok_or_else(|| bad("no sizeInBytes"))?;
        let cardinality = dv
            .get("cardinality")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("no cardinality"))?;
        let offset = dv.get("offset").and_then(Value::as_u64);
        match storage {
            "u" if path_or_inline.len() < 20 => {
                return Err(bad(&format!(
                    "a file name {path_or_inline:?} of fewer than 20 characters"
                )));
            }
            "u" | "i" => {}
            "p" => {
                return Err(format!(
                    "file {file}: its deletion vector is kept at an absolute path \
                     ({path_or_inline}), which squall does not read"
                ));
            }
            other => return Err(bad(&format!("an unknown storageType {other:?}"))),
        }
        Ok(Some(Self {
            storage: storage.to_string(),
            path_or_inline: path_or_inline.to_string(),
            offset,
            size,
            cardinality,
        }))
    }

    /// What identifies the vector in the table (Delta's unique id).
    fn key(&self) -> String {
        match self.offset {
            Some(offset) => format!("{}{}@{offset}", self.storage, self.path_or_inline),
            None => format!("{}{}", self.storage, self.path_or_inline),
        }
    }

    /// The file it is kept in, below the table's folder `root`; `None`
    /// when kept in the log.
    fn file(&self, root: &Path) -> Result<Option<Path>, String> {
        if self.storage != "u" {
            return Ok(None);
        }
        let text = &self.path_or_inline;
        let (prefix, encoded) = text.split_at(text.len() - 20);
        let bytes = z85::decode(encoded)
            .map_err(|e| format!("deletion vector {text}: its file name is not z85 ({e:?})"))?;
        let uuid = uuid::Uuid::from_slice(&bytes)
            .map_err(|e| format!("deletion vector {text}: its file name is not a UUID ({e})"))?;
        let name = format!("deletion_vector_{uuid}.bin");
        let mut parts: Vec<String> = root.parts().map(|p| p.as_ref().to_string()).collect();
        if !prefix.is_empty() {
            parts.push(prefix.to_string());
        }
        parts.push(name);
        Ok(Some(Path::from_iter(parts)))
    }

    /// The bytes of the vector within its file: the size, magic, bitmap and
    /// CRC-32.
    fn range(&self) -> std::ops::Range<u64> {
        let start = self.offset.unwrap_or(1);
        start..start + 4 + u64::from(self.size) + 4
    }

    /// The positions in the vector's bytes: `framed` as its file holds
    /// them (`file` names it), else the log's z85 text.
    fn positions(&self, framed: Option<(&[u8], &Path)>) -> Result<RoaringTreemap, String> {
        let (serialized, place) = match framed {
            Some((bytes, file)) => {
                let place = format!("deletion vector in {file} at {}", self.range().start);
                if bytes.len() as u64 != self.range().end - self.range().start {
                    return Err(format!("{place}: the file ends before it does"));
                }
                let size = u32::from_be_bytes(bytes[0..4].try_into().unwrap_or_default());
                if size != self.size {
                    return Err(format!(
                        "{place}: {size} bytes in the file, {} in the log",
                        self.size
                    ));
                }
                let body = &bytes[4..4 + size as usize];
                let crc =
                    u32::from_be_bytes(bytes[4 + size as usize..].try_into().unwrap_or_default());
                if crc32fast::hash(body) != crc {
                    return Err(format!(
                        "{place}: its checksum does not match (a damaged file)"
                    ));
                }
                (body.to_vec(), place)
            }
            None => {
                let place = format!("deletion vector {:?} kept in the log", self.path_or_inline);
                let body = z85::decode(&self.path_or_inline)
                    .map_err(|e| format!("{place}: not z85 text ({e:?})"))?;
                (body, place)
            }
        };
        if serialized.len() < 4 {
            return Err(format!("{place}: too short"));
        }
        let magic = u32::from_le_bytes(serialized[0..4].try_into().unwrap_or_default());
        if magic != PORTABLE_MAGIC {
            return Err(format!(
                "{place}: magic number {magic}, not RoaringBitmap's portable serialization"
            ));
        }
        let positions = RoaringTreemap::deserialize_from(&serialized[4..])
            .map_err(|e| format!("{place}: {e}"))?;
        if positions.len() != self.cardinality {
            return Err(format!(
                "{place}: {} rows, the log says {}",
                positions.len(),
                self.cardinality
            ));
        }
        Ok(positions)
    }
}

/// The vectors the process read, by table and vector; their bytes.
type Remembered = (HashMap<String, Arc<RoaringTreemap>>, usize);

fn remembered() -> &'static Mutex<Remembered> {
    static REMEMBERED: std::sync::OnceLock<Mutex<Remembered>> = std::sync::OnceLock::new();
    REMEMBERED.get_or_init(Default::default)
}

/// The deleted positions of each of `vectors` (of the table under `root`,
/// in order): those the process remembers, the others read from the log's
/// text or their files (a file's vectors read together).
pub(crate) async fn deleted_positions(
    store: &dyn ObjectStore,
    root: &Path,
    vectors: &[&DeletionVector],
) -> Result<Vec<Arc<RoaringTreemap>>, String> {
    let table = root.as_ref();
    let keys: Vec<String> = vectors
        .iter()
        .map(|v| format!("{table}\0{}", v.key()))
        .collect();
    let known: Vec<Option<Arc<RoaringTreemap>>> = {
        let cache = remembered().lock().unwrap_or_else(|e| e.into_inner());
        keys.iter().map(|k| cache.0.get(k).cloned()).collect()
    };
    // The missing vectors by the file they are kept in (none: in the log):
    // one request per file for all its vectors (ranges a MiB apart or less
    // are read together), 16 files at once.
    let mut by_file: HashMap<Option<Path>, Vec<usize>> = HashMap::new();
    for i in (0..vectors.len()).filter(|&i| known[i].is_none()) {
        by_file.entry(vectors[i].file(root)?).or_default().push(i);
    }
    let read: Vec<Vec<(usize, Arc<RoaringTreemap>)>> = futures::stream::iter(by_file)
        .map(|(file, indexes)| async move {
            let Some(file) = file else {
                return indexes
                    .into_iter()
                    .map(|i| Ok((i, Arc::new(vectors[i].positions(None)?))))
                    .collect::<Result<Vec<_>, String>>();
            };
            let ranges: Vec<std::ops::Range<u64>> =
                indexes.iter().map(|&i| vectors[i].range()).collect();
            let bytes = store
                .get_ranges(&file, &ranges)
                .await
                .map_err(|e| format!("cannot read the deletion vector in {file}: {e}"))?;
            indexes
                .into_iter()
                .zip(bytes)
                .map(|(i, bytes)| Ok((i, Arc::new(vectors[i].positions(Some((&bytes, &file)))?))))
                .collect()
        })
        .buffer_unordered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    let read = read.into_iter().flatten();
    let mut out = known;
    let mut cache = remembered().lock().unwrap_or_else(|e| e.into_inner());
    for (i, positions) in read {
        let bytes = positions.serialized_size();
        if cache.1 + bytes > REMEMBERED_BYTES {
            cache.0.clear();
            cache.1 = 0;
        }
        if bytes <= REMEMBERED_BYTES {
            cache.0.insert(keys[i].clone(), Arc::clone(&positions));
            cache.1 += bytes;
        }
        out[i] = Some(positions);
    }
    Ok(out.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptors_name_their_files_and_refuse_what_is_not_read() {
        let dv = DeletionVector::parse(
            &json!({"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
                    "offset": 1, "sizeInBytes": 36, "cardinality": 2}),
            "f.parquet",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            dv.file(&Path::from("t")).unwrap().unwrap().as_ref(),
            "t/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
        );
        assert_eq!(dv.range(), 1..45);
        assert!(DeletionVector::parse(&Value::Null, "f").unwrap().is_none());
        let absolute = DeletionVector::parse(
            &json!({"storageType": "p", "pathOrInlineDv": "s3://b/dv.bin",
                    "offset": 1, "sizeInBytes": 36, "cardinality": 2}),
            "f.parquet",
        )
        .unwrap_err();
        assert!(
            absolute.contains("file f.parquet") && absolute.contains("absolute path"),
            "{absolute}"
        );
    }

    #[test]
    fn inline_vectors_and_damaged_files_are_read_or_refused() {
        let positions: RoaringTreemap = [1u64, 5, 1 << 33].into_iter().collect();
        let mut body = PORTABLE_MAGIC.to_le_bytes().to_vec();
        positions.serialize_into(&mut body).unwrap();
        let inline = DeletionVector {
            storage: "i".into(),
            path_or_inline: z85::encode(&body),
            offset: None,
            size: body.len() as u32,
            cardinality: 3,
        };
        assert_eq!(inline.positions(None).unwrap(), positions);
        let miscounted = DeletionVector {
            cardinality: 4,
            ..inline.clone()
        };
        assert!(
            miscounted
                .positions(None)
                .unwrap_err()
                .contains("3 rows, the log says 4")
        );

        let mut framed = (body.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&body);
        framed.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        let stored = DeletionVector {
            storage: "u".into(),
            offset: Some(1),
            ..inline
        };
        let file = Path::from("t/x.bin");
        assert_eq!(stored.positions(Some((&framed, &file))).unwrap(), positions);
        framed[9] ^= 0xff;
        let damaged = stored.positions(Some((&framed, &file))).unwrap_err();
        assert!(
            damaged.contains("t/x.bin") && damaged.contains("checksum"),
            "{damaged}"
        );
    }
}
