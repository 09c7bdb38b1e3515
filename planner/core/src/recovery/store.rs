//! [`ResilientStore`]: an `ObjectStore` wrapper with bounded retries and
//! hedged reads (`squall.store.*`).
//!
//! - **Retries.** A request that fails with a transient error
//!   ([`is_transient`]: a 503 SlowDown, a timeout, an I/O error) is sent
//!   again after a [`Backoff`], at most `max_retries` times; then its error
//!   goes up and fails the task (which the coordinator retries as a new
//!   attempt) or, on the coordinator, the query. PUTs are retried too: every
//!   object squall writes has a key of its own (attempt-scoped exchange
//!   objects, filters), so writing it twice stores the same bytes.
//! - **Not twice.** `object_store`'s S3 client already retries 5xx, 429 and
//!   transport errors (10 times within 3 minutes by default, with backoff);
//!   an error that comes out of that retry loop is not retried here again.
//!   The local folder of the embedded backend retries nothing itself.
//! - **Hedging.** A read (GET, ranged GET, HEAD, `get_ranges`) with no answer
//!   after `hedge_after_ms` is sent a second time and the first answer wins;
//!   the other request is dropped. This is Starling's answer to S3's
//!   multi-second latency tail: a tail request is rare, so a duplicate after
//!   the threshold almost always answers at the median. For a GET the answer
//!   is its headers (the body then streams), so object size does not matter.
//!
//! Starting a multipart upload is retried; its parts and completion, listing,
//! deleting and copying pass through.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

use super::Backoff;
use crate::config::StoreOptions;
use crate::requests::RequestCounter;

type Call<T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'static>>;

/// How requests are retried and hedged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StorePolicy {
    pub max_retries: u32,
    pub backoff: Backoff,
    /// Send a read again when it has not answered after this long.
    pub hedge_after: Option<Duration>,
}

impl StorePolicy {
    pub fn from_options(o: &StoreOptions) -> Self {
        Self {
            max_retries: o.max_retries,
            backoff: Backoff::new(
                Duration::from_millis(o.retry_backoff_ms),
                Duration::from_millis(o.retry_max_backoff_ms),
            ),
            hedge_after: (o.hedge_after_ms > 0).then(|| Duration::from_millis(o.hedge_after_ms)),
        }
    }
}

/// What the wrappers did, summed over every store that shares it.
#[derive(Debug, Default)]
pub struct StoreStats {
    /// Requests sent again after a transient error.
    pub retries: AtomicU64,
    /// Reads sent a second time because the first was slow.
    pub hedges: AtomicU64,
    /// Hedged reads the second request answered first.
    pub hedge_wins: AtomicU64,
    /// Every request sent, retries and hedges included
    /// ([`crate::requests::CountingStore`], under the retries).
    pub requests: Arc<RequestCounter>,
}

impl StoreStats {
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
    pub fn hedges(&self) -> u64 {
        self.hedges.load(Ordering::Relaxed)
    }

    /// Stats whose requests count into `requests`.
    pub fn counting_into(requests: &Arc<RequestCounter>) -> Self {
        Self {
            requests: Arc::clone(requests),
            ..Self::default()
        }
    }
}

/// Whether retrying `e` may help: a generic error (a 5xx, a timeout, an I/O
/// error) or a failed blocking task, unless an HTTP client's own retry loop
/// already gave up on it. Missing objects, failed preconditions, permission
/// and configuration errors are not transient.
pub fn is_transient(e: &object_store::Error) -> bool {
    match e {
        object_store::Error::Generic { .. } => !retried_by_client(e),
        object_store::Error::JoinError { .. } => true,
        _ => false,
    }
}

/// `object_store`'s HTTP retry loop reports its errors as "Error performing
/// {method} {url} in {elapsed}[, after N retries ...]" (its `RetryError` is
/// not exported, so its message is the only mark).
fn retried_by_client(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if err.to_string().starts_with("Error performing ") {
            return true;
        }
        next = err.source();
    }
    false
}

/// Retries and hedges the requests of `inner`.
pub struct ResilientStore {
    inner: Arc<dyn ObjectStore>,
    policy: StorePolicy,
    stats: Arc<StoreStats>,
}

impl ResilientStore {
    pub fn new(inner: Arc<dyn ObjectStore>, policy: StorePolicy, stats: Arc<StoreStats>) -> Self {
        Self {
            inner,
            policy,
            stats,
        }
    }

    /// Runs `call` (hedged when `hedge`) until it succeeds, fails for good,
    /// or has been retried `max_retries` times.
    async fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        location: &Path,
        hedge: bool,
        call: impl Fn() -> Call<T> + Send + Sync,
    ) -> Result<T> {
        let mut retry = 0;
        loop {
            let result = match (hedge, self.policy.hedge_after) {
                (true, Some(after)) => self.hedged(after, &call).await,
                _ => call().await,
            };
            match result {
                Err(e) if retry < self.policy.max_retries && is_transient(&e) => {
                    let wait = self.policy.backoff.delay(retry);
                    tracing::debug!(%e, %location, what, retry, ?wait, "retrying an object-store request");
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                other => return other,
            }
        }
    }

    /// The first answer of `call`, or of a second `call` sent `after` later.
    /// A failure of one waits for the other.
    async fn hedged<T: Send + 'static>(
        &self,
        after: Duration,
        call: &(impl Fn() -> Call<T> + Send + Sync),
    ) -> Result<T> {
        let mut first = call();
        tokio::select! {
            result = &mut first => return result,
            _ = tokio::time::sleep(after) => {}
        }
        self.stats.hedges.fetch_add(1, Ordering::Relaxed);
        let mut second = call();
        tokio::select! {
            result = &mut first => match result {
                Ok(v) => Ok(v),
                Err(_) => second.await,
            },
            result = &mut second => match result {
                Ok(v) => {
                    self.stats.hedge_wins.fetch_add(1, Ordering::Relaxed);
                    Ok(v)
                }
                Err(_) => first.await,
            },
        }
    }
}

impl fmt::Debug for ResilientStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilientStore")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .finish()
    }
}

impl fmt::Display for ResilientStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ResilientStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for ResilientStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let inner = Arc::clone(&self.inner);
        let path = location.clone();
        self.run("PUT", location, false, move || {
            let (inner, path, payload, opts) = (
                Arc::clone(&inner),
                path.clone(),
                payload.clone(),
                opts.clone(),
            );
            Box::pin(async move { inner.put_opts(&path, payload, opts).await })
        })
        .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        // Starting an upload is retried (a retry starts another; S3 expires
        // an abandoned one). Its parts and completion are not: another
        // put_part would be another part number.
        let inner = Arc::clone(&self.inner);
        let path = location.clone();
        self.run("CreateMultipartUpload", location, false, move || {
            let (inner, path, opts) = (Arc::clone(&inner), path.clone(), opts.clone());
            Box::pin(async move { inner.put_multipart_opts(&path, opts).await })
        })
        .await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let inner = Arc::clone(&self.inner);
        let path = location.clone();
        self.run("GET", location, true, move || {
            let (inner, path, options) = (Arc::clone(&inner), path.clone(), options.clone());
            Box::pin(async move { inner.get_opts(&path, options).await })
        })
        .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let inner = Arc::clone(&self.inner);
        let path = location.clone();
        let ranges: Arc<[Range<u64>]> = ranges.into();
        self.run("GET", location, true, move || {
            let (inner, path, ranges) = (Arc::clone(&inner), path.clone(), Arc::clone(&ranges));
            Box::pin(async move { inner.get_ranges(&path, &ranges).await })
        })
        .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
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
    use std::sync::Mutex;

    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;

    use super::*;

    /// A store whose GETs fail with the scripted errors, then sleep the
    /// scripted delays, then answer from memory; it counts GETs.
    #[derive(Debug, Default)]
    struct Scripted {
        memory: InMemory,
        failures: Mutex<Vec<object_store::Error>>,
        delays: Mutex<Vec<Duration>>,
        gets: AtomicU64,
    }

    impl fmt::Display for Scripted {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Scripted")
        }
    }

    #[async_trait]
    impl ObjectStore for Scripted {
        async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
            self.memory.put_opts(l, p, o).await
        }
        async fn put_multipart_opts(
            &self,
            l: &Path,
            o: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.memory.put_multipart_opts(l, o).await
        }
        async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            let failure = self.failures.lock().unwrap().pop();
            if let Some(e) = failure {
                return Err(e);
            }
            let delay = self.delays.lock().unwrap().pop();
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            self.memory.get_opts(l, o).await
        }
        fn delete_stream(
            &self,
            l: BoxStream<'static, Result<Path>>,
        ) -> BoxStream<'static, Result<Path>> {
            self.memory.delete_stream(l)
        }
        fn list(&self, p: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.memory.list(p)
        }
        async fn list_with_delimiter(&self, p: Option<&Path>) -> Result<ListResult> {
            self.memory.list_with_delimiter(p).await
        }
        async fn copy_opts(&self, f: &Path, t: &Path, o: CopyOptions) -> Result<()> {
            self.memory.copy_opts(f, t, o).await
        }
    }

    fn slow_down() -> object_store::Error {
        object_store::Error::Generic {
            store: "test",
            source: "503 Slow Down".into(),
        }
    }

    fn policy(max_retries: u32, hedge_ms: u64) -> StorePolicy {
        StorePolicy {
            max_retries,
            backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(4)),
            hedge_after: (hedge_ms > 0).then(|| Duration::from_millis(hedge_ms)),
        }
    }

    async fn store(
        script: Scripted,
        policy: StorePolicy,
    ) -> (Arc<Scripted>, ResilientStore, Arc<StoreStats>) {
        let inner = Arc::new(script);
        inner
            .memory
            .put(&Path::from("k"), PutPayload::from_static(b"value"))
            .await
            .unwrap();
        let stats = Arc::new(StoreStats::default());
        let store = ResilientStore::new(Arc::clone(&inner) as _, policy, Arc::clone(&stats));
        (inner, store, stats)
    }

    #[tokio::test]
    async fn transient_errors_are_retried_a_bounded_number_of_times() {
        let script = Scripted::default();
        *script.failures.lock().unwrap() = vec![slow_down(), slow_down()];
        let (inner, s, stats) = store(script, policy(3, 0)).await;
        let bytes = s
            .get(&Path::from("k"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"value");
        assert_eq!((inner.gets.load(Ordering::SeqCst), stats.retries()), (3, 2));

        let script = Scripted::default();
        *script.failures.lock().unwrap() = (0..10).map(|_| slow_down()).collect();
        let (inner, s, stats) = store(script, policy(3, 0)).await;
        let err = s.get(&Path::from("k")).await.unwrap_err();
        assert!(err.to_string().contains("503 Slow Down"), "{err}");
        assert_eq!(
            (inner.gets.load(Ordering::SeqCst), stats.retries()),
            (4, 3),
            "1 try + 3 retries"
        );
    }

    #[tokio::test]
    async fn permanent_and_client_retried_errors_are_not_retried() {
        let not_found = object_store::Error::NotFound {
            path: "k".into(),
            source: "gone".into(),
        };
        let client_gave_up = object_store::Error::Generic {
            store: "S3",
            source: "Error performing GET http://s3/k in 3s, after 10 retries, max_retries: 10, retry_timeout: 180s  - 503".into(),
        };
        assert!(is_transient(&slow_down()));
        assert!(!is_transient(&client_gave_up));
        for e in [not_found, client_gave_up] {
            let script = Scripted::default();
            *script.failures.lock().unwrap() = vec![e];
            let (inner, s, stats) = store(script, policy(3, 0)).await;
            assert!(s.get(&Path::from("k")).await.is_err());
            assert_eq!((inner.gets.load(Ordering::SeqCst), stats.retries()), (1, 0));
        }
    }

    #[tokio::test]
    async fn a_slow_read_is_hedged_and_the_first_answer_wins() {
        let script = Scripted::default();
        // The first GET takes 5 s; the hedge, sent after 20 ms, answers at once.
        *script.delays.lock().unwrap() = vec![Duration::ZERO, Duration::from_secs(5)];
        let (inner, s, stats) = store(script, policy(0, 20)).await;
        let bytes = s
            .get(&Path::from("k"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"value");
        assert_eq!(inner.gets.load(Ordering::SeqCst), 2);
        assert_eq!(
            (stats.hedges(), stats.hedge_wins.load(Ordering::SeqCst)),
            (1, 1)
        );

        // A fast read is never duplicated.
        let (inner, s, stats) = store(Scripted::default(), policy(0, 1000)).await;
        s.get(&Path::from("k")).await.unwrap();
        assert_eq!((inner.gets.load(Ordering::SeqCst), stats.hedges()), (1, 0));
    }
}
