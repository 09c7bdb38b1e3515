//! [`CountingStore`]: an `ObjectStore` wrapper that counts every request it
//! passes on, by the kind S3 bills, into a [`RequestCounter`]; and
//! [`CountingRegistry`], an object-store registry whose stores all count
//! into one counter (the coordinator's planning reads).
//!
//! What counts as one request is what S3 would receive:
//!
//! | call                      | counted                                             |
//! |---------------------------|-----------------------------------------------------|
//! | `get_opts`                | a GET, or a HEAD when `options.head`                |
//! | `get_ranges`              | a GET per merged range: the ranges are coalesced here, as `object_store` does for S3 (gaps up to 1 MiB), and each merged range is one ranged GET of the inner store |
//! | `put_opts`, `copy_opts`   | a PUT                                               |
//! | multipart upload          | a PUT to create it, one per part, one to complete it; an abort is a delete |
//! | `list`, `list_with_offset`| a LIST per 1,000 keys listed (at least one)         |
//! | `list_with_delimiter`     | a LIST per 1,000 keys and folders (at least one)    |
//! | `delete_stream`           | a delete per key                                    |
//!
//! Placed below the retrying layer (`recovery::layered_store`), so every
//! retry and every hedged read is a request of its own, as S3 sees it.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::error::Result as DfResult;
use datafusion::execution::object_store::ObjectStoreRegistry;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, OBJECT_STORE_COALESCE_DEFAULT,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result, UploadPart, coalesce_ranges,
};
use url::Url;

use super::{Request, RequestCounter};

/// Keys one S3 LIST request returns at most.
pub const LIST_PAGE: u64 = 1_000;

/// Counts the requests of `inner` into `counter`.
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counter: Arc<RequestCounter>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn ObjectStore>, counter: Arc<RequestCounter>) -> Self {
        Self { inner, counter }
    }

    /// `inner` counting into `counter`, as a store.
    pub fn wrap(
        inner: Arc<dyn ObjectStore>,
        counter: &Arc<RequestCounter>,
    ) -> Arc<dyn ObjectStore> {
        Arc::new(Self::new(inner, Arc::clone(counter)))
    }

    /// `stream` of listed entries, counting one LIST per page of 1,000.
    fn paged<T: Send + 'static>(
        &self,
        stream: BoxStream<'static, Result<T>>,
    ) -> BoxStream<'static, Result<T>> {
        self.counter.count(Request::List, 1);
        let counter = Arc::clone(&self.counter);
        let mut listed = 0u64;
        stream
            .inspect(move |entry| {
                if entry.is_ok() {
                    listed += 1;
                    if listed > 1 && (listed - 1).is_multiple_of(LIST_PAGE) {
                        counter.count(Request::List, 1);
                    }
                }
            })
            .boxed()
    }
}

impl fmt::Debug for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingStore")
            .field("inner", &self.inner)
            .finish()
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.counter.count(Request::Put, 1);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.counter.count(Request::Put, 1);
        let upload = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(CountingUpload {
            inner: upload,
            counter: Arc::clone(&self.counter),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let kind = if options.head {
            Request::Head
        } else {
            Request::Get
        };
        self.counter.count(kind, 1);
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let (inner, counter) = (&self.inner, &self.counter);
        coalesce_ranges(
            ranges,
            |range| {
                counter.count(Request::Get, 1);
                inner.get_range(location, range)
            },
            OBJECT_STORE_COALESCE_DEFAULT,
        )
        .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let counter = Arc::clone(&self.counter);
        let counted = locations
            .inspect(move |l| {
                if l.is_ok() {
                    counter.count(Request::Delete, 1);
                }
            })
            .boxed();
        self.inner.delete_stream(counted)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.paged(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.paged(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let listed = self.inner.list_with_delimiter(prefix).await;
        let entries = listed
            .as_ref()
            .map(|l| (l.objects.len() + l.common_prefixes.len()) as u64)
            .unwrap_or(0);
        self.counter
            .count(Request::List, entries.div_ceil(LIST_PAGE).max(1));
        listed
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.counter.count(Request::Put, 1);
        self.inner.copy_opts(from, to, options).await
    }
}

/// A multipart upload whose parts and completion count as PUTs.
#[derive(Debug)]
struct CountingUpload {
    inner: Box<dyn MultipartUpload>,
    counter: Arc<RequestCounter>,
}

#[async_trait]
impl MultipartUpload for CountingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.counter.count(Request::Put, 1);
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.counter.count(Request::Put, 1);
        self.inner.complete().await
    }

    async fn abort(&mut self) -> Result<()> {
        self.counter.count(Request::Delete, 1);
        self.inner.abort().await
    }
}

/// Hands out the stores of `inner`, each counting into one counter.
pub struct CountingRegistry {
    inner: Arc<dyn ObjectStoreRegistry>,
    counter: Arc<RequestCounter>,
}

impl CountingRegistry {
    pub fn new(inner: Arc<dyn ObjectStoreRegistry>, counter: Arc<RequestCounter>) -> Self {
        Self { inner, counter }
    }
}

impl fmt::Debug for CountingRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingRegistry")
            .field("inner", &self.inner)
            .finish()
    }
}

impl ObjectStoreRegistry for CountingRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        Ok(CountingStore::wrap(
            self.inner.get_store(url)?,
            &self.counter,
        ))
    }
}
