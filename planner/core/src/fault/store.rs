//! [`FaultyStore`]: an `ObjectStore` wrapper that makes requests fail with a
//! 503 SlowDown (`squall.fault.store_error_rate`) or answer late
//! (`squall.fault.store_slow_rate`, `store_slow_ms`).
//!
//! Requests that read or write objects are affected: GET, ranged GET, HEAD
//! (all `get_opts`), `get_ranges`, PUT, and a multipart upload's creation,
//! parts and completion. A failed read never reaches the store; a failed PUT
//! (or part, or completion) fails before it is sent or, half the time, after
//! it was stored (the answer is lost on the way back, as when a connection
//! drops), so a retry rewrites an object that already exists. Listing,
//! deleting, copying and aborting pass through unchanged.
//!
//! Each decision is drawn from the seed, the wrapper's scope (the task's
//! stage, task and attempt, or the query on the coordinator), a hash of the
//! operation, object and range, and how many times that same request has
//! been made through this wrapper: a retry draws again.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};

use super::{Occurrences, draw, happens, hash_text};
use crate::config::FaultOptions;

/// The error an injected store fault carries (inside `object_store::Error::Generic`).
#[derive(Debug, thiserror::Error)]
#[error("503 Slow Down (injected by squall.fault.store_error_rate): {op} {path}")]
pub struct InjectedStoreError {
    pub op: &'static str,
    pub path: String,
}

/// Injects store errors and slow requests into `inner`.
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    faults: Arc<Faults>,
}

/// What decides the faults (shared with the multipart uploads it starts).
struct Faults {
    seed: u64,
    error_rate: f64,
    slow_rate: f64,
    slow: Duration,
    scope: Vec<u64>,
    seen: Occurrences,
}

enum Fault {
    None,
    Error,
    /// A PUT that is stored, but whose answer is an error.
    ErrorAfter,
    Slow,
}

impl FaultyStore {
    /// Wraps `inner` when `options` inject any store fault; returns `inner` otherwise.
    /// `scope` are the coordinates of whoever makes the requests.
    pub fn wrap(
        inner: Arc<dyn ObjectStore>,
        options: &FaultOptions,
        scope: &[u64],
    ) -> Arc<dyn ObjectStore> {
        if options.store_error_rate <= 0.0 && options.store_slow_rate <= 0.0 {
            return inner;
        }
        Arc::new(Self {
            inner,
            faults: Arc::new(Faults {
                seed: options.seed,
                error_rate: options.store_error_rate,
                slow_rate: options.store_slow_rate,
                slow: Duration::from_millis(options.store_slow_ms),
                scope: scope.to_vec(),
                seen: Occurrences::default(),
            }),
        })
    }
}

impl Faults {
    fn decide(&self, op: &str, path: &Path, detail: &str) -> Fault {
        let key = hash_text(&[op, path.as_ref(), detail]);
        let n = self.seen.next(key);
        let mut coords = self.scope.clone();
        coords.extend([key, n]);
        if happens(self.error_rate, self.seed, "store_error", &coords) {
            let write = matches!(op, "PUT" | "UploadPart" | "CompleteMultipartUpload");
            if write && draw(self.seed, "store_error_when", &coords) < 0.5 {
                return Fault::ErrorAfter;
            }
            return Fault::Error;
        }
        if happens(self.slow_rate, self.seed, "store_slow", &coords) {
            return Fault::Slow;
        }
        Fault::None
    }

    /// Applies a decision that acts before the request: wait, or fail.
    async fn before(&self, fault: &Fault, op: &'static str, path: &Path) -> Result<()> {
        match fault {
            Fault::Error => Err(injected(op, path)),
            Fault::Slow => {
                tokio::time::sleep(self.slow).await;
                Ok(())
            }
            Fault::None | Fault::ErrorAfter => Ok(()),
        }
    }
}

fn injected(op: &'static str, path: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "fault",
        source: Box::new(InjectedStoreError {
            op,
            path: path.to_string(),
        }),
    }
}

impl fmt::Debug for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultyStore")
            .field("inner", &self.inner)
            .field("error_rate", &self.faults.error_rate)
            .field("slow_rate", &self.faults.slow_rate)
            .finish()
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let fault = self.faults.decide("PUT", location, "");
        self.faults.before(&fault, "PUT", location).await?;
        let result = self.inner.put_opts(location, payload, opts).await?;
        match fault {
            Fault::ErrorAfter => Err(injected("PUT", location)),
            _ => Ok(result),
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let op = "CreateMultipartUpload";
        let fault = self.faults.decide(op, location, "");
        self.faults.before(&fault, op, location).await?;
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(FaultyUpload {
            inner,
            faults: Arc::clone(&self.faults),
            location: location.clone(),
            parts: 0,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let (op, detail) = match (&options.head, &options.range) {
            (true, _) => ("HEAD", String::new()),
            (false, Some(range)) => ("GET", range.to_string()),
            (false, None) => ("GET", String::new()),
        };
        let fault = self.faults.decide(op, location, &detail);
        self.faults.before(&fault, op, location).await?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let detail: Vec<String> = ranges
            .iter()
            .map(|r| format!("{}-{}", r.start, r.end))
            .collect();
        let fault = self.faults.decide("GET", location, &detail.join(","));
        self.faults.before(&fault, "GET", location).await?;
        self.inner.get_ranges(location, ranges).await
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

/// A multipart upload whose parts and completion fail or answer late as
/// the store's requests do.
#[derive(Debug)]
struct FaultyUpload {
    inner: Box<dyn MultipartUpload>,
    faults: Arc<Faults>,
    location: Path,
    parts: usize,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("error_rate", &self.error_rate)
            .field("slow_rate", &self.slow_rate)
            .finish()
    }
}

#[async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let op = "UploadPart";
        let fault = self
            .faults
            .decide(op, &self.location, &self.parts.to_string());
        self.parts += 1;
        let faults = Arc::clone(&self.faults);
        let location = self.location.clone();
        let part = match fault {
            Fault::Error => None,
            _ => Some(self.inner.put_part(data)),
        };
        Box::pin(async move {
            faults.before(&fault, op, &location).await?;
            part.ok_or_else(|| injected(op, &location))?.await?;
            match fault {
                Fault::ErrorAfter => Err(injected(op, &location)),
                _ => Ok(()),
            }
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let op = "CompleteMultipartUpload";
        let fault = self.faults.decide(op, &self.location, "");
        self.faults.before(&fault, op, &self.location).await?;
        let result = self.inner.complete().await?;
        match fault {
            Fault::ErrorAfter => Err(injected(op, &self.location)),
            _ => Ok(result),
        }
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;

    use super::*;

    fn options(error: f64, slow: f64) -> FaultOptions {
        FaultOptions {
            seed: 9,
            store_error_rate: error,
            store_slow_rate: slow,
            store_slow_ms: 1,
            ..Default::default()
        }
    }

    /// Outcome (ok or injected) of the first `n` GETs of each of 20 objects.
    async fn outcomes(store: &Arc<dyn ObjectStore>, n: usize) -> Vec<bool> {
        let mut out = Vec::new();
        for i in 0..20 {
            let path = Path::from(format!("k{i}"));
            for _ in 0..n {
                out.push(store.get(&path).await.is_ok());
            }
        }
        out
    }

    #[tokio::test]
    async fn injected_errors_are_reproducible_and_retries_draw_again() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        for i in 0..20 {
            inner
                .put(&Path::from(format!("k{i}")), PutPayload::from_static(b"x"))
                .await
                .unwrap();
        }
        let a = FaultyStore::wrap(Arc::clone(&inner), &options(0.3, 0.0), &[1, 2, 3]);
        let b = FaultyStore::wrap(Arc::clone(&inner), &options(0.3, 0.0), &[1, 2, 3]);
        let (ra, rb) = (outcomes(&a, 4).await, outcomes(&b, 4).await);
        assert_eq!(ra, rb, "same seed and scope, different faults");
        let failed = ra.iter().filter(|ok| !**ok).count();
        assert!((5..50).contains(&failed), "{failed} of 80 failed at 30%");
        // Some object failed once and then answered: a retry draws again.
        assert!(
            ra.chunks(4).any(|c| !c[0] && c.iter().any(|ok| *ok)),
            "{ra:?}"
        );
        let other = FaultyStore::wrap(Arc::clone(&inner), &options(0.3, 0.0), &[1, 2, 4]);
        assert_ne!(
            outcomes(&other, 4).await,
            ra,
            "another scope, the same faults"
        );
        let err = a.get(&Path::from("k0")).await;
        if let Err(e) = err {
            assert!(e.to_string().contains("503 Slow Down"), "{e}");
        }
    }

    #[tokio::test]
    async fn no_rates_means_no_wrapper_and_a_failed_put_may_have_landed() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let same = FaultyStore::wrap(Arc::clone(&inner), &options(0.0, 0.0), &[]);
        assert!(Arc::ptr_eq(&same, &inner));
        let always = FaultyStore::wrap(Arc::clone(&inner), &options(1.0, 0.0), &[]);
        let mut landed = 0;
        for i in 0..40 {
            let path = Path::from(format!("p{i}"));
            assert!(
                always
                    .put(&path, PutPayload::from_static(b"x"))
                    .await
                    .is_err()
            );
            landed += usize::from(inner.head(&path).await.is_ok());
        }
        assert!(
            (5..35).contains(&landed),
            "{landed} of 40 failed PUTs were stored"
        );
    }

    /// Whether each of 20 uploads of three parts went through.
    async fn uploads(store: &Arc<dyn ObjectStore>) -> Vec<bool> {
        let mut out = Vec::new();
        for i in 0..20 {
            let path = Path::from(format!("u{i}"));
            let ok = async {
                let mut up = store.put_multipart(&path).await?;
                for _ in 0..3 {
                    up.put_part(PutPayload::from_static(b"part")).await?;
                }
                up.complete().await
            }
            .await;
            out.push(ok.is_ok());
        }
        out
    }

    #[tokio::test]
    async fn multipart_uploads_fail_reproducibly() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let a = FaultyStore::wrap(Arc::clone(&inner), &options(0.2, 0.0), &[7]);
        let b = FaultyStore::wrap(Arc::clone(&inner), &options(0.2, 0.0), &[7]);
        let (ra, rb) = (uploads(&a).await, uploads(&b).await);
        assert_eq!(ra, rb, "same seed and scope, different faults");
        let failed = ra.iter().filter(|ok| !**ok).count();
        // Five requests per upload at 20% each: most uploads meet a fault.
        assert!((5..20).contains(&failed), "{failed} of 20 uploads failed");
        let always = FaultyStore::wrap(Arc::clone(&inner), &options(1.0, 0.0), &[7]);
        let err = always.put_multipart(&Path::from("x")).await.unwrap_err();
        assert!(err.to_string().contains("CreateMultipartUpload"), "{err}");
    }
}
