//! The snapshots of Delta and Iceberg tables this process has read.

use std::sync::Arc;

use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::path::Path;

use super::Snapshot;

/// Snapshots read in this process, by table (store and folder), the most
/// recent last: an engine built again (the aws backend builds one per
/// request) brings a table it names up to date from its snapshot (one
/// listing) instead of reading its log or manifests again. Kept while
/// they hold at most [`KEPT_FILES`] files in all (about 1.6 KB a file),
/// the most recent always.
static READ: std::sync::LazyLock<std::sync::Mutex<Remembered>> =
    std::sync::LazyLock::new(Default::default);

/// Snapshots by table key ([`table_key`]), the most recent last.
type Remembered = Vec<(String, Arc<Snapshot>)>;

/// Live files the process's snapshots may hold in all.
const KEPT_FILES: usize = 200_000;

fn table_key(store_url: &ObjectStoreUrl, root: &Path) -> String {
    format!("{}{}", store_url.as_str(), root)
}

pub(super) fn remembered(store_url: &ObjectStoreUrl, root: &Path) -> Option<Arc<Snapshot>> {
    let key = table_key(store_url, root);
    let read = READ.lock().ok()?;
    read.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, s)| Arc::clone(s))
}

pub(super) fn remember(store_url: &ObjectStoreUrl, root: &Path, snapshot: &Arc<Snapshot>) {
    let key = table_key(store_url, root);
    let Ok(mut read) = READ.lock() else {
        return;
    };
    read.retain(|(k, _)| *k != key);
    read.push((key, Arc::clone(snapshot)));
    while read.len() > 1 && read.iter().map(|(_, s)| s.files.len()).sum::<usize>() > KEPT_FILES {
        read.remove(0);
    }
}
