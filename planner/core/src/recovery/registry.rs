//! [`LayeredRegistry`]: an object-store registry that hands out every store
//! of an inner registry wrapped in the task's fault injection (if any) and
//! recovery ([`super::layered_store`]).
//!
//! A worker builds one per task, from the task's own settings and
//! coordinates, around its process's registry: the Parquet scans, the
//! shuffle reads and the exchange write of that task all go through it, on
//! every backend. Wrapped stores are kept per URL, so that the same store
//! keeps counting its requests (a retry draws a fresh fault decision).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreRegistry;
use object_store::ObjectStore;
use url::Url;

use super::{StoreStats, layered_store};
use crate::config::SquallConfig;

/// Wraps the stores of `inner` for one task.
pub struct LayeredRegistry {
    inner: Arc<dyn ObjectStoreRegistry>,
    config: SquallConfig,
    scope: Vec<u64>,
    stats: Arc<StoreStats>,
    wrapped: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl LayeredRegistry {
    pub fn new(
        inner: Arc<dyn ObjectStoreRegistry>,
        config: &SquallConfig,
        scope: &[u64],
        stats: Arc<StoreStats>,
    ) -> Self {
        Self {
            inner,
            config: config.clone(),
            scope: scope.to_vec(),
            stats,
            wrapped: Mutex::default(),
        }
    }
}

impl fmt::Debug for LayeredRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LayeredRegistry")
            .field("inner", &self.inner)
            .field("scope", &self.scope)
            .finish()
    }
}

/// The registry's key of a URL: scheme and authority (as DataFusion's own).
fn key(url: &Url) -> String {
    format!(
        "{}://{}",
        url.scheme(),
        &url[url::Position::BeforeHost..url::Position::AfterPort]
    )
}

impl ObjectStoreRegistry for LayeredRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        if let Ok(mut wrapped) = self.wrapped.lock() {
            wrapped.remove(&key(url));
        }
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        if let Ok(mut wrapped) = self.wrapped.lock() {
            wrapped.remove(&key(url));
        }
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let k = key(url);
        if let Some(store) = self.wrapped.lock().ok().and_then(|w| w.get(&k).cloned()) {
            return Ok(store);
        }
        let store = layered_store(
            self.inner.get_store(url)?,
            &self.config,
            &self.scope,
            &self.stats,
        );
        if let Ok(mut wrapped) = self.wrapped.lock() {
            return Ok(Arc::clone(wrapped.entry(k).or_insert(store)));
        }
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::execution::object_store::DefaultObjectStoreRegistry;

    use super::*;

    #[test]
    fn every_store_is_wrapped_once_per_url() {
        let inner: Arc<dyn ObjectStoreRegistry> = Arc::new(DefaultObjectStoreRegistry::new());
        let registry = LayeredRegistry::new(
            Arc::clone(&inner),
            &SquallConfig::default(),
            &[1],
            Arc::default(),
        );
        let url = Url::parse("file:///tmp/x").unwrap();
        let a = registry.get_store(&url).unwrap();
        let b = registry
            .get_store(&Url::parse("file:///other").unwrap())
            .unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one wrapper per store URL");
        assert!(a.to_string().starts_with("ResilientStore("), "{a}");
        assert!(!Arc::ptr_eq(&a, &inner.get_store(&url).unwrap()));
    }
}
