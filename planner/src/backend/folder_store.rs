//! The embedded exchange's object store: the local file system, whose
//! deletes also remove the folders they leave empty, up to the exchange
//! folder and never past it.
//!
//! `LocalFileSystem::with_automatic_cleanup` removes empty folders up to
//! the store's root. The exchange store is rooted at `/` (exchange keys are
//! absolute paths, the same keys the workers resolve through `file://`), so
//! its cleanup would climb past the exchange folder: a user's
//! `squall.exchange_location`, empty again after a query, was removed with
//! it, and so would be any of its parents left empty.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// [`LocalFileSystem`] at `/` whose deletes remove the folders they empty
/// below `root`.
#[derive(Debug)]
pub struct FolderStore {
    inner: Arc<LocalFileSystem>,
    root: Arc<PathBuf>,
}

impl FolderStore {
    /// Objects anywhere (keys are absolute paths); folders emptied by a
    /// delete are removed up to `root`, which is kept.
    pub fn new(root: PathBuf) -> Self {
        Self {
            inner: Arc::new(LocalFileSystem::new()),
            root: Arc::new(root),
        }
    }
}

/// Remove the folders holding `file` that are empty, innermost first,
/// stopping at `root` (kept) or at the first folder that is not empty or
/// not below `root`.
fn remove_empty_parents(root: &std::path::Path, file: &std::path::Path) {
    let mut folder = file.parent();
    while let Some(dir) = folder {
        if dir == root || !dir.starts_with(root) || std::fs::remove_dir(dir).is_err() {
            break;
        }
        folder = dir.parent();
    }
}

impl fmt::Display for FolderStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FolderStore({})", self.root.display())
    }
}

#[async_trait]
impl ObjectStore for FolderStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let (root, fs) = (Arc::clone(&self.root), Arc::clone(&self.inner));
        self.inner
            .delete_stream(locations)
            .then(move |deleted| {
                let (root, fs) = (Arc::clone(&root), Arc::clone(&fs));
                async move {
                    let Ok(location) = deleted else {
                        return deleted;
                    };
                    let Ok(file) = fs.path_to_filesystem(&location) else {
                        return Ok(location);
                    };
                    // A few `rmdir`s: off the runtime's threads, as the
                    // delete itself ran.
                    let _ = tokio::task::spawn_blocking(move || remove_empty_parents(&root, &file))
                        .await;
                    Ok(location)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    fn key(path: &std::path::Path) -> Path {
        Path::from(path.to_string_lossy().trim_start_matches('/'))
    }

    #[tokio::test]
    async fn deletes_remove_the_folders_they_empty_but_never_the_root_or_above() {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("exchange");
        std::fs::create_dir(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let store = FolderStore::new(root.clone());
        let a = root.join("00/q1/s1/t0/a0");
        let b = root.join("00/q1/s2/t0/a0");
        store.put(&key(&a), Bytes::from("a").into()).await.unwrap();
        store.put(&key(&b), Bytes::from("b").into()).await.unwrap();

        store.delete(&key(&a)).await.unwrap();
        assert!(!root.join("00/q1/s1").exists(), "an emptied folder stays");
        assert!(b.exists() && root.join("00/q1").exists());

        store.delete(&key(&b)).await.unwrap();
        assert!(!root.join("00").exists(), "an emptied folder stays");
        assert!(root.is_dir(), "the exchange folder itself was removed");
        assert!(parent.path().is_dir());
    }

    #[test]
    fn a_folder_outside_the_root_is_never_removed() {
        let parent = tempfile::tempdir().unwrap();
        let outside = parent.path().join("other/x");
        std::fs::create_dir_all(&outside).unwrap();
        let root = parent.path().join("exchange");
        remove_empty_parents(&root, &outside.join("file"));
        assert!(outside.is_dir());
    }
}
