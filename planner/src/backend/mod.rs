//! Backends: where objects live, how completion messages travel, and how
//! tasks are started. A [`Backend`] is the seams of one backend plus where
//! exchange objects live; the coordinator only sees that
//! (`squall_core::seams`). The embedded backend is [`local`]; the aws one
//! is built by `squall-aws` (the only crate linking the AWS SDKs). The
//! engine is built the same way over either: `Engine::with_backend`.

mod folder_store;
pub mod local;

use std::sync::Arc;

use object_store::ObjectStore;
use squall_core::seams::{CompletionQueue, Invoker};

/// The seams of one backend, plus where exchange objects live.
#[derive(Clone)]
pub struct Backend {
    /// Store of exchange objects.
    pub exchange_store: Arc<dyn ObjectStore>,
    /// URL of that store as registered with DataFusion (`file://`, `s3://bucket`).
    pub exchange_url: String,
    /// Key prefix of exchange objects inside the store.
    pub exchange_prefix: String,
    pub queue: Arc<dyn CompletionQueue>,
    pub invoker: Arc<dyn Invoker>,
}
