//! Per-task memory accounting: a [`MemoryPool`] that forwards to another pool
//! and remembers the most it ever had reserved, so every task reports its
//! peak memory (what DataFusion's operators and the exchange writer reserve).
//!
//! Two limits can sit between a task and the worker's pool, each a
//! [`BoundedPool`] that refuses growth past its limit and forwards the rest:
//!
//! ```text
//! task pool (peak) ─> task limit (squall.task.memory_limit_bytes, this task)
//!                  ─> query limit (squall.query.memory_limit_bytes, shared by the
//!                                  query's tasks running in this worker process)
//!                  ─> the worker's pool
//! ```
//!
//! Below them all, the process's budget ([`process_pool`],
//! `squall.process_memory_bytes`): every query of a `squall serve`, every
//! task of a Lambda worker, shares it.
//!
//! The query pools live in a process-wide registry keyed by query id and
//! last as long as a task of the query runs here. On Lambda a worker runs
//! one task at a time, so the query limit bounds each task; embedded, the
//! query's concurrent tasks share it. An operator that cannot spill fails
//! with DataFusion's "Resources exhausted" error naming the limit, which the
//! task reports (naming its stage and task) without retrying; operators that
//! can spill (sorts, aggregations) spill to the worker's temporary folder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};

/// The pool every query of this process reserves from: at most `configured`
/// bytes, or (0) three quarters of [`memory_available`]; unbounded only
/// where neither is known.
pub fn process_pool(configured: usize) -> Arc<dyn MemoryPool> {
    let unbounded: Arc<dyn MemoryPool> =
        Arc::new(datafusion::execution::memory_pool::UnboundedMemoryPool::default());
    let budget = match configured {
        0 => memory_available().map(|bytes| bytes / 4 * 3),
        n => Some(n),
    };
    match budget {
        Some(limit) => Arc::new(BoundedPool::greedy(
            unbounded,
            limit,
            "this process's memory budget (squall.process_memory_bytes; 0: three quarters \
             of the memory it may use)"
                .into(),
        )),
        None => unbounded,
    }
}

/// The memory this process may use: the least of the machine's
/// (`/proc/meminfo`), its cgroup's limit (v2 `memory.max`, v1
/// `memory.limit_in_bytes`) and a Lambda function's size
/// (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`, MB).
pub fn memory_available() -> Option<usize> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let machine = read("/proc/meminfo").and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            .map(|kb| kb * 1024)
    });
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|p| read(p))
    .filter_map(|v| v.trim().parse::<usize>().ok())
    // v1 writes a huge number for "no limit".
    .find(|&bytes| bytes < 1 << 60);
    let lambda = std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        .ok()
        .and_then(|mb| mb.trim().parse::<usize>().ok())
        .map(|mb| mb * 1024 * 1024);
    [machine, cgroup, lambda].into_iter().flatten().min()
}

/// Forwards to `inner`, tracking this pool's own current and peak reservation.
#[derive(Debug)]
pub struct PeakTrackingPool {
    inner: Arc<dyn MemoryPool>,
    current: AtomicUsize,
    peak: AtomicUsize,
}

impl PeakTrackingPool {
    pub fn new(inner: Arc<dyn MemoryPool>) -> Self {
        Self {
            inner,
            current: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// A pool for one task of `query_id` over `shared` (the worker's pool),
    /// under the query's limit on this worker and the task's own limit
    /// (each only when `> 0`).
    pub fn for_task(
        shared: &Arc<dyn MemoryPool>,
        query_id: &str,
        query_limit: usize,
        task_limit: usize,
    ) -> Self {
        let mut inner = Arc::clone(shared);
        if query_limit > 0 {
            inner = query_pool(query_id, query_limit, inner);
        }
        if task_limit > 0 {
            inner = Arc::new(BoundedPool::new(
                inner,
                task_limit,
                "the task's memory limit (squall.task.memory_limit_bytes)".into(),
            ));
        }
        Self::new(inner)
    }

    /// The most this pool ever had reserved at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    fn added(&self, n: usize) {
        let now = self.current.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }
}

impl std::fmt::Display for PeakTrackingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "squall task pool (peak {} bytes) over {}",
            self.peak(),
            self.inner
        )
    }
}

impl MemoryPool for PeakTrackingPool {
    fn name(&self) -> &str {
        "squall_task"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.inner.grow(reservation, additional);
        self.added(additional);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.inner.shrink(reservation, shrink);
        self.current.fetch_sub(
            shrink.min(self.current.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        self.inner.try_grow(reservation, additional)?;
        self.added(additional);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.current.load(Ordering::Relaxed)
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.inner.memory_limit()
    }
}

/// Forwards to `inner`, refusing growth that would take this pool past `limit`.
///
/// Consumers that can spill (sorts, aggregations, the exchange writer) share
/// the limit fairly, as DataFusion's `FairSpillPool` does: each may hold at
/// most what the consumers that cannot spill leave of the limit over the
/// spillable consumers registered, so two tasks of a query running side by
/// side both spill early instead of one taking all of it and the other
/// failing. (The share once left out what cannot spill: two sorts' merge
/// reservations took most of a limit, the sorts' shares the rest and more,
/// and a sort asking for its next batch found the limit full rather than
/// its share, and failed instead of spilling.)
#[derive(Debug)]
pub struct BoundedPool {
    inner: Arc<dyn MemoryPool>,
    limit: usize,
    used: AtomicUsize,
    /// Of `used`, what consumers that cannot spill hold.
    unspillable: AtomicUsize,
    /// Registered consumers that can spill.
    spillable: AtomicUsize,
    /// What the limit is, for the error (`query q1's memory limit …`).
    what: String,
    /// Whether spillable consumers are held to a fair share of the limit
    /// (a query's pool) or only to what is left of it (the process's).
    fair: bool,
}

impl BoundedPool {
    pub fn new(inner: Arc<dyn MemoryPool>, limit: usize, what: String) -> Self {
        Self {
            inner,
            limit,
            used: AtomicUsize::new(0),
            unspillable: AtomicUsize::new(0),
            spillable: AtomicUsize::new(0),
            what,
            fair: true,
        }
    }

    /// A pool whose consumers take what is left of `limit`, first come
    /// (the process's budget: the queries' own pools share fairly).
    pub fn greedy(inner: Arc<dyn MemoryPool>, limit: usize, what: String) -> Self {
        Self {
            fair: false,
            ..Self::new(inner, limit, what)
        }
    }
}

impl std::fmt::Display for BoundedPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} bytes) over {}",
            self.what, self.limit, self.inner
        )
    }
}

impl MemoryPool for BoundedPool {
    fn name(&self) -> &str {
        "squall_bounded"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        if consumer.can_spill() {
            self.spillable.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        if consumer.can_spill() {
            let _ = self
                .spillable
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    Some(n.saturating_sub(1))
                });
        }
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.inner.grow(reservation, additional);
        self.used.fetch_add(additional, Ordering::Relaxed);
        if !reservation.consumer().can_spill() {
            self.unspillable.fetch_add(additional, Ordering::Relaxed);
        }
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.inner.shrink(reservation, shrink);
        let less = |u: usize| Some(u.saturating_sub(shrink));
        let _ = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, less);
        if !reservation.consumer().can_spill() {
            let _ = self
                .unspillable
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, less);
        }
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        let consumer = reservation.consumer();
        if self.fair && consumer.can_spill() {
            let left = self
                .limit
                .saturating_sub(self.unspillable.load(Ordering::Relaxed));
            let share = left / self.spillable.load(Ordering::Relaxed).max(1);
            let wanted = reservation.size().saturating_add(additional);
            if wanted > share {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "{} of {} bytes exceeded: {} asked for {additional} more bytes with {} held, \
                     above its fair share of {share} bytes among the spillable consumers",
                    self.what,
                    self.limit,
                    consumer.name(),
                    reservation.size(),
                )));
            }
        }
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(additional).filter(|&n| n <= self.limit)
            })
            .map_err(|used| {
                DataFusionError::ResourcesExhausted(format!(
                    "{} of {} bytes exceeded: {} asked for {additional} more bytes with {used} in use",
                    self.what,
                    self.limit,
                    reservation.consumer().name(),
                ))
            })?;
        if let Err(e) = self.inner.try_grow(reservation, additional) {
            self.used.fetch_sub(additional, Ordering::Relaxed);
            return Err(e);
        }
        if !consumer.can_spill() {
            self.unspillable.fetch_add(additional, Ordering::Relaxed);
        }
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn memory_limit(&self) -> MemoryLimit {
        // The tighter of this pool's limit and its parent's.
        match self.inner.memory_limit() {
            MemoryLimit::Finite(parent) => MemoryLimit::Finite(parent.min(self.limit)),
            _ => MemoryLimit::Finite(self.limit),
        }
    }
}

type QueryPools = Mutex<HashMap<String, Weak<BoundedPool>>>;

fn query_pools() -> &'static QueryPools {
    static POOLS: OnceLock<QueryPools> = OnceLock::new();
    POOLS.get_or_init(QueryPools::default)
}

/// The pool of `query_id`'s limit in this process, shared by its running
/// tasks; made when the first of them starts, gone when the last ends.
fn query_pool(query_id: &str, limit: usize, inner: Arc<dyn MemoryPool>) -> Arc<dyn MemoryPool> {
    let mut pools = query_pools()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    pools.retain(|_, p| p.strong_count() > 0);
    if let Some(pool) = pools.get(query_id).and_then(Weak::upgrade) {
        return pool;
    }
    let pool = Arc::new(BoundedPool::new(
        inner,
        limit,
        format!("query {query_id}'s memory limit on this worker (squall.query.memory_limit_bytes)"),
    ));
    pools.insert(query_id.to_string(), Arc::downgrade(&pool));
    pool
}

/// Bytes the running tasks of `query_id` hold in this process under its
/// query limit (0 when none of them runs, or the query has no limit).
pub fn query_reserved(query_id: &str) -> usize {
    query_pools()
        .lock()
        .map(|p| {
            p.get(query_id)
                .and_then(Weak::upgrade)
                .map(|pool| pool.reserved())
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use datafusion::execution::memory_pool::UnboundedMemoryPool;

    use super::*;

    #[test]
    fn the_process_budget_is_what_it_is_set_to_or_three_quarters_of_the_memory() {
        let machine = memory_available().expect("this machine's memory");
        assert!(machine > 64 << 20, "{machine}");
        let pool = process_pool(1000);
        let spiller = MemoryConsumer::new("sort")
            .with_can_spill(true)
            .register(&pool);
        let other = MemoryConsumer::new("join").register(&pool);
        // First come: a spillable consumer may take what is left, not a share.
        spiller.try_grow(900).unwrap();
        let err = other.try_grow(200).unwrap_err().to_string();
        assert!(
            err.contains("this process's memory budget") && err.contains("of 1000 bytes"),
            "{err}"
        );
        drop(spiller);
        other.try_grow(1000).unwrap();
        let auto = process_pool(0);
        let big = MemoryConsumer::new("big").register(&auto);
        big.try_grow(machine / 2).unwrap();
        assert!(big.try_grow(machine / 2).is_err());
    }

    #[test]
    fn tracks_the_peak_and_enforces_the_limit() {
        let shared: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::default());
        let tracker = Arc::new(PeakTrackingPool::for_task(&shared, "q", 0, 1000));
        let pool: Arc<dyn MemoryPool> = Arc::clone(&tracker) as _;
        let a = MemoryConsumer::new("a").register(&pool);
        a.try_grow(600).unwrap();
        a.shrink(500);
        a.try_grow(300).unwrap();
        assert_eq!(pool.reserved(), 400);
        let err = a.try_grow(700).unwrap_err().to_string();
        assert!(err.contains("Resources exhausted"), "{err}");
        drop(a);
        assert_eq!(pool.reserved(), 0);
        // The peak is what was reserved at once, not the sum of growths.
        assert_eq!(tracker.peak(), 600);
    }

    #[test]
    fn tasks_of_one_query_share_its_limit() {
        let shared: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::default());
        let one: Arc<dyn MemoryPool> =
            Arc::new(PeakTrackingPool::for_task(&shared, "qshare", 1000, 0));
        let two: Arc<dyn MemoryPool> =
            Arc::new(PeakTrackingPool::for_task(&shared, "qshare", 1000, 800));
        let other: Arc<dyn MemoryPool> =
            Arc::new(PeakTrackingPool::for_task(&shared, "qother", 1000, 0));
        let a = MemoryConsumer::new("a").register(&one);
        let b = MemoryConsumer::new("b").register(&two);
        let c = MemoryConsumer::new("c").register(&other);
        a.try_grow(700).unwrap();
        assert_eq!(query_reserved("qshare"), 700);
        let err = b.try_grow(400).unwrap_err().to_string();
        assert!(
            err.contains("query qshare's memory limit on this worker")
                && err.contains("1000 bytes"),
            "{err}"
        );
        b.try_grow(300).unwrap();
        c.try_grow(900).unwrap();
        assert_eq!(shared.reserved(), 1900);
        drop(a);
        let err = b.try_grow(600).unwrap_err().to_string();
        assert!(err.contains("the task's memory limit"), "{err}");
        drop((b, c, one, two, other));
        assert_eq!(shared.reserved(), 0);
        assert_eq!(query_reserved("qshare"), 0);
    }

    #[test]
    fn spillable_consumers_of_a_query_share_its_limit_fairly() {
        let shared: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::default());
        let one: Arc<dyn MemoryPool> =
            Arc::new(PeakTrackingPool::for_task(&shared, "qfair", 1000, 0));
        let two: Arc<dyn MemoryPool> =
            Arc::new(PeakTrackingPool::for_task(&shared, "qfair", 1000, 0));
        let a = MemoryConsumer::new("agg a")
            .with_can_spill(true)
            .register(&one);
        // Alone, a spillable consumer may take the whole limit.
        a.try_grow(900).unwrap();
        a.shrink(900);
        let b = MemoryConsumer::new("agg b")
            .with_can_spill(true)
            .register(&two);
        a.try_grow(500).unwrap();
        let err = a.try_grow(1).unwrap_err().to_string();
        assert!(err.contains("fair share of 500 bytes"), "{err}");
        // The other task's share is left for it, so it need not fail.
        b.try_grow(500).unwrap();
        // A consumer that cannot spill is bound by the limit only.
        let c = MemoryConsumer::new("join").register(&two);
        assert!(c.try_grow(1).is_err(), "the limit is all taken");
        drop(b);
        c.try_grow(500).unwrap();
        drop((a, c, one, two));
        assert_eq!(query_reserved("qfair"), 0);
    }

    #[test]
    fn what_cannot_spill_comes_out_of_the_spillable_shares() {
        let shared: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::default());
        let pool: Arc<dyn MemoryPool> =
            Arc::new(PeakTrackingPool::for_task(&shared, "qleft", 1000, 0));
        let a = MemoryConsumer::new("sort a")
            .with_can_spill(true)
            .register(&pool);
        let b = MemoryConsumer::new("sort b")
            .with_can_spill(true)
            .register(&pool);
        // A merge reservation (it cannot spill) takes 400 of the 1,000.
        let merge = MemoryConsumer::new("merge").register(&pool);
        merge.try_grow(400).unwrap();
        // Each sort's share is 300 of the 600 left, so each spills at 300
        // rather than one taking 500 and the other finding the limit full.
        a.try_grow(300).unwrap();
        let err = a.try_grow(1).unwrap_err().to_string();
        assert!(err.contains("fair share of 300 bytes"), "{err}");
        b.try_grow(300).unwrap();
        // Freed, the merge's bytes are the sorts' again (grown without a
        // check, as DataFusion grows what it must, they count alike).
        merge.shrink(400);
        a.try_grow(200).unwrap();
        merge.grow(100);
        assert!(
            a.try_grow(1).is_err(),
            "the share is (1,000 - 100) / 2 = 450"
        );
        drop((a, b, merge, pool));
        assert_eq!(query_reserved("qleft"), 0);
    }
}
