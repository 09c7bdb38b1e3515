//! Counting the requests a query makes of the cloud services, where they
//! are made: the object store (S3), the completion queue (SQS) and the
//! invoker (Lambda). The profile sums them per query and the cost model
//! prices them (`squall_planner::cost`).
//!
//! ```text
//!   task (worker)      LayeredRegistry ─> CountingStore    Parquet, exchange, filter objects
//!                      stop-marker watch (HEADs), a spilled payload's GET, its report's SendMessage
//!                        └──────── RequestCounts in its TaskReport's metrics ────────┐
//!   coordinator        layered exchange store ─> CountingStore  key sections,        │
//!                        filters, results, cleanup LISTs and DELETEs                 ├─> QueryProfile
//!                      CompletionQueue::take_requests   CreateQueue, Receive, ...    │     .requests
//!                      Invoker::take_requests           Invoke, spilled payloads,    │
//!                                                       stop markers                 │
//!   planning           CountingRegistry ─> CountingStore  listings, footers ─────────┘
//! ```
//!
//! - [`RequestCounts`]: the counts, by the kind AWS bills (a plain value:
//!   reports carry it, the profile sums it).
//! - [`RequestCounter`]: the same counts as atomics, shared by whatever
//!   makes requests for one task or one query.
//! - [`RequestTally`]: one counter per query (or queue address), for a
//!   backend seam shared by many queries.
//! - [`store`]: [`CountingStore`], the `ObjectStore` wrapper that counts, and
//!   [`CountingRegistry`], which hands out counting stores.
//!
//! What it does not do: price anything, or estimate what could not be
//! counted (both `squall_planner::cost`).

pub mod store;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::ops::{Add, AddAssign};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use store::{CountingRegistry, CountingStore};

/// Requests made of S3, SQS and Lambda, by kind. Every field reads 0 when
/// missing (reports of older workers, `squall cost` inputs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestCounts {
    /// Object GETs, whole or ranged (a `get_ranges` counts one per merged range).
    pub get: u64,
    /// Object HEADs (stop-marker and cancel-marker looks).
    pub head: u64,
    /// Object PUTs, copies, and multipart creations, parts and completions.
    pub put: u64,
    /// LIST requests: one per 1,000 keys listed, at least one per listing.
    pub list: u64,
    /// Objects deleted, and multipart uploads aborted (S3's DeleteObjects
    /// carries up to 1,000 keys per request; deletes are free).
    pub delete: u64,
    pub sqs_create_queue: u64,
    pub sqs_send: u64,
    pub sqs_receive: u64,
    pub sqs_delete_batch: u64,
    pub sqs_delete_queue: u64,
    /// Invocations the platform accepted (task attempts started).
    pub invoke: u64,
    /// Invocations refused as throttled (and sent again after a backoff).
    pub invoke_throttled: u64,
}

impl RequestCounts {
    /// SQS requests of every kind.
    pub fn sqs(&self) -> u64 {
        self.sqs_create_queue
            + self.sqs_send
            + self.sqs_receive
            + self.sqs_delete_batch
            + self.sqs_delete_queue
    }

    /// Lambda Invoke requests sent, throttled ones included.
    pub fn invocations(&self) -> u64 {
        self.invoke + self.invoke_throttled
    }

    /// Object-store requests of every kind.
    pub fn objects(&self) -> u64 {
        self.get + self.head + self.put + self.list + self.delete
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl AddAssign for RequestCounts {
    fn add_assign(&mut self, o: Self) {
        self.get += o.get;
        self.head += o.head;
        self.put += o.put;
        self.list += o.list;
        self.delete += o.delete;
        self.sqs_create_queue += o.sqs_create_queue;
        self.sqs_send += o.sqs_send;
        self.sqs_receive += o.sqs_receive;
        self.sqs_delete_batch += o.sqs_delete_batch;
        self.sqs_delete_queue += o.sqs_delete_queue;
        self.invoke += o.invoke;
        self.invoke_throttled += o.invoke_throttled;
    }
}

impl Add for RequestCounts {
    type Output = Self;
    fn add(mut self, o: Self) -> Self {
        self += o;
        self
    }
}

/// What `self` counts beyond `earlier` (a later reading of one counter).
impl std::ops::Sub for RequestCounts {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self {
            get: self.get.saturating_sub(o.get),
            head: self.head.saturating_sub(o.head),
            put: self.put.saturating_sub(o.put),
            list: self.list.saturating_sub(o.list),
            delete: self.delete.saturating_sub(o.delete),
            sqs_create_queue: self.sqs_create_queue.saturating_sub(o.sqs_create_queue),
            sqs_send: self.sqs_send.saturating_sub(o.sqs_send),
            sqs_receive: self.sqs_receive.saturating_sub(o.sqs_receive),
            sqs_delete_batch: self.sqs_delete_batch.saturating_sub(o.sqs_delete_batch),
            sqs_delete_queue: self.sqs_delete_queue.saturating_sub(o.sqs_delete_queue),
            invoke: self.invoke.saturating_sub(o.invoke),
            invoke_throttled: self.invoke_throttled.saturating_sub(o.invoke_throttled),
        }
    }
}

impl std::iter::Sum for RequestCounts {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), Add::add)
    }
}

/// [`RequestCounts`] as atomics, added to by everything that makes
/// requests for one task or one query.
#[derive(Debug, Default)]
pub struct RequestCounter {
    get: AtomicU64,
    head: AtomicU64,
    put: AtomicU64,
    list: AtomicU64,
    delete: AtomicU64,
    sqs_create_queue: AtomicU64,
    sqs_send: AtomicU64,
    sqs_receive: AtomicU64,
    sqs_delete_batch: AtomicU64,
    sqs_delete_queue: AtomicU64,
    invoke: AtomicU64,
    invoke_throttled: AtomicU64,
}

/// One kind of request, for [`RequestCounter::count`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Get,
    Head,
    Put,
    List,
    Delete,
    SqsCreateQueue,
    SqsSend,
    SqsReceive,
    SqsDeleteBatch,
    SqsDeleteQueue,
    Invoke,
    InvokeThrottled,
}

impl RequestCounter {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Count `n` requests of `kind`.
    pub fn count(&self, kind: Request, n: u64) {
        let field = match kind {
            Request::Get => &self.get,
            Request::Head => &self.head,
            Request::Put => &self.put,
            Request::List => &self.list,
            Request::Delete => &self.delete,
            Request::SqsCreateQueue => &self.sqs_create_queue,
            Request::SqsSend => &self.sqs_send,
            Request::SqsReceive => &self.sqs_receive,
            Request::SqsDeleteBatch => &self.sqs_delete_batch,
            Request::SqsDeleteQueue => &self.sqs_delete_queue,
            Request::Invoke => &self.invoke,
            Request::InvokeThrottled => &self.invoke_throttled,
        };
        field.fetch_add(n, Ordering::Relaxed);
    }

    /// Add counts made elsewhere (a fetch before the counter existed).
    pub fn add(&self, c: &RequestCounts) {
        for (kind, n) in [
            (Request::Get, c.get),
            (Request::Head, c.head),
            (Request::Put, c.put),
            (Request::List, c.list),
            (Request::Delete, c.delete),
            (Request::SqsCreateQueue, c.sqs_create_queue),
            (Request::SqsSend, c.sqs_send),
            (Request::SqsReceive, c.sqs_receive),
            (Request::SqsDeleteBatch, c.sqs_delete_batch),
            (Request::SqsDeleteQueue, c.sqs_delete_queue),
            (Request::Invoke, c.invoke),
            (Request::InvokeThrottled, c.invoke_throttled),
        ] {
            if n > 0 {
                self.count(kind, n);
            }
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        let v = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RequestCounts {
            get: v(&self.get),
            head: v(&self.head),
            put: v(&self.put),
            list: v(&self.list),
            delete: v(&self.delete),
            sqs_create_queue: v(&self.sqs_create_queue),
            sqs_send: v(&self.sqs_send),
            sqs_receive: v(&self.sqs_receive),
            sqs_delete_batch: v(&self.sqs_delete_batch),
            sqs_delete_queue: v(&self.sqs_delete_queue),
            invoke: v(&self.invoke),
            invoke_throttled: v(&self.invoke_throttled),
        }
    }
}

/// One [`RequestCounter`] per key (a query id, a queue address), for a seam
/// that serves many queries at once. A key's counter lives until it is
/// [taken](RequestTally::take), which the coordinator does when its query
/// has ended.
#[derive(Debug, Default)]
pub struct RequestTally(Mutex<HashMap<String, Arc<RequestCounter>>>);

impl RequestTally {
    /// The counter of `key`, made at its first use.
    pub fn counter(&self, key: &str) -> Arc<RequestCounter> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(map.entry(key.to_string()).or_default())
    }

    /// Count `n` requests of `kind` for `key`.
    pub fn count(&self, key: &str, kind: Request, n: u64) {
        self.counter(key).count(kind, n);
    }

    /// The counts of `key`, forgetting it (zero when it never counted).
    pub fn take(&self, key: &str) -> RequestCounts {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(key).map(|c| c.snapshot()).unwrap_or_default()
    }

    /// Keys counted and not taken.
    pub fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Messages one SQS ReceiveMessage or DeleteMessageBatch request carries at most.
pub const SQS_BATCH: u64 = 10;

/// The ReceiveMessage and DeleteMessageBatch requests SQS needs to hand
/// over `messages` messages in one receive: one receive at least (an empty
/// long poll is a request too), one more per 10 messages beyond the first
/// 10, and one batch delete per 10. The embedded backend's queue, which
/// hands over any number at once, counts what SQS would have needed.
pub fn sqs_receive_requests(messages: u64) -> (u64, u64) {
    (
        messages.div_ceil(SQS_BATCH).max(1),
        messages.div_ceil(SQS_BATCH),
    )
}
