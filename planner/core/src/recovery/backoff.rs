//! Exponential backoff with jitter, for every retry squall makes itself.
//!
//! The wait before retry `n` (from 0) is drawn uniformly from the upper half
//! of `min(max, first × 2^n)` ("equal jitter"): it grows like plain
//! exponential backoff, never drops to nothing, and spreads the retries of
//! many tasks that failed at the same moment (a 503 SlowDown burst, a
//! throttled fan-out) so they do not return at the same moment.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Backoff between retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Cap of the first wait.
    pub first: Duration,
    /// Largest cap.
    pub max: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Self {
        Self { first, max }
    }

    /// The cap of the wait before retry `n`: `min(max, first × 2^n)`.
    pub fn cap(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.min(31));
        self.first
            .saturating_mul(factor)
            .min(self.max.max(self.first))
    }

    /// The wait before retry `n`, drawn from `[cap / 2, cap)`.
    pub fn delay(&self, n: u32) -> Duration {
        let cap = self.cap(n);
        cap / 2 + (cap / 2).mul_f64(jitter())
    }
}

/// A draw in [0, 1) that differs per call and per process (jitter needs no
/// reproducibility: it only moves retries in time).
fn jitter() -> f64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    crate::fault::draw(nanos, "jitter", &[CALLS.fetch_add(1, Ordering::Relaxed)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_with_jitter_in_the_upper_half() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1000));
        let caps: Vec<u128> = (0..6).map(|n| b.cap(n).as_millis()).collect();
        assert_eq!(caps, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.cap(200), Duration::from_millis(1000));
        let waits: Vec<Duration> = (0..200).map(|_| b.delay(2)).collect();
        assert!(
            waits
                .iter()
                .all(|w| *w >= Duration::from_millis(200) && *w < Duration::from_millis(400))
        );
        assert!(waits.iter().any(|w| *w != waits[0]), "no jitter");
    }
}
