//! Per-task memory accounting: a [`MemoryPool`] that forwards to another pool
//! and remembers the most it ever had reserved, so every task reports its
//! peak memory (what DataFusion's operators and the exchange writer reserve).
//!
//! With `squall.task.memory_limit_bytes` set, each task gets a pool of its
//! own with that limit: an operator that cannot spill fails with DataFusion's
//! "Resources exhausted" error, which the task reports (naming its stage and
//! task) without retrying; operators that can spill (sorts, aggregations)
//! spill to the worker's temporary folder.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::Result;
use datafusion::execution::memory_pool::{
    GreedyMemoryPool, MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};

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

    /// A pool for one task: limited to `limit` bytes when `limit > 0`, else
    /// sharing `shared` (the worker's pool).
    pub fn for_task(shared: &Arc<dyn MemoryPool>, limit: usize) -> Self {
        let inner: Arc<dyn MemoryPool> = if limit > 0 {
            Arc::new(GreedyMemoryPool::new(limit))
        } else {
            Arc::clone(shared)
        };
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

#[cfg(test)]
mod tests {
    use datafusion::execution::memory_pool::UnboundedMemoryPool;

    use super::*;

    #[test]
    fn tracks_the_peak_and_enforces_the_limit() {
        let shared: Arc<dyn MemoryPool> = Arc::new(UnboundedMemoryPool::default());
        let tracker = Arc::new(PeakTrackingPool::for_task(&shared, 1000));
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
}
