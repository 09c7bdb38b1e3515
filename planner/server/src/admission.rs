//! [`Admission`]: a cap on running queries with a bounded FIFO queue behind
//! it (`squall.server.max_running_queries`, `squall.server.max_queued_queries`).
//!
//! ```text
//! try_admit ──> a slot is free ──────────────> Admit::Now(permit)          (RUNNING)
//!           ──> queue has room ──────────────> Admit::Queued(waiter)       (QUEUED)
//!           │        waiter.wait() resolves in submission order when a permit is dropped
//!           └─> queue full ──────────────────> Admit::Full                 (QUERY_QUEUE_FULL)
//! permit dropped ──> the slot passes to the oldest live waiter, or is freed
//! ```
//!
//! The decision is made when the query is submitted, so the order of the
//! queue is the order of submission and a full queue is known at once. A
//! waiter that is dropped (its query cancelled while queued) leaves the queue;
//! a slot handed to it in the same instant is passed on, never lost.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The running-query cap and its queue.
#[derive(Debug)]
pub struct Admission {
    max_running: usize,
    max_queued: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: usize,
    next_ticket: u64,
    queue: VecDeque<(u64, oneshot::Sender<()>)>,
}

/// The outcome of [`Admission::try_admit`].
#[derive(Debug)]
pub enum Admit {
    Now(Permit),
    Queued(Waiter),
    Full,
}

/// A running slot, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    admission: Arc<Admission>,
}

/// A place in the queue.
#[derive(Debug)]
pub struct Waiter {
    admission: Arc<Admission>,
    ticket: u64,
    rx: Option<oneshot::Receiver<()>>,
}

impl Admission {
    /// At most `max_running` (at least 1) queries run; at most `max_queued` wait.
    pub fn new(max_running: usize, max_queued: usize) -> Arc<Self> {
        Arc::new(Self {
            max_running: max_running.max(1),
            max_queued,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot now, a place in the queue, or neither.
    pub fn try_admit(self: &Arc<Self>) -> Admit {
        let mut state = self.lock();
        if state.running < self.max_running && state.queue.is_empty() {
            state.running += 1;
            return Admit::Now(Permit {
                admission: Arc::clone(self),
            });
        }
        if state.queue.len() >= self.max_queued {
            return Admit::Full;
        }
        let (tx, rx) = oneshot::channel();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back((ticket, tx));
        Admit::Queued(Waiter {
            admission: Arc::clone(self),
            ticket,
            rx: Some(rx),
        })
    }

    /// Queries holding a slot.
    pub fn running(&self) -> usize {
        self.lock().running
    }

    /// Queries waiting for one.
    pub fn queued(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn max_running(&self) -> usize {
        self.max_running
    }

    pub fn max_queued(&self) -> usize {
        self.max_queued
    }

    /// Passes a freed slot to the oldest waiter still waiting, or frees it.
    fn release(&self) {
        loop {
            let next = {
                let mut state = self.lock();
                match state.queue.pop_front() {
                    Some((_, tx)) => tx,
                    None => {
                        state.running = state.running.saturating_sub(1);
                        return;
                    }
                }
            };
            if next.send(()).is_ok() {
                return;
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.admission.release();
    }
}

impl Waiter {
    /// Resolves with a slot in queue order; `None` if `cancel` fires first.
    pub async fn wait(mut self, cancel: &CancellationToken) -> Option<Permit> {
        let rx = self.rx.as_mut()?;
        let got = tokio::select! {
            r = rx => r.is_ok(),
            _ = cancel.cancelled() => false,
        };
        if got {
            self.rx = None;
            return Some(Permit {
                admission: Arc::clone(&self.admission),
            });
        }
        None // dropping `self` leaves the queue
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        let ticket = self.ticket;
        self.admission.lock().queue.retain(|(t, _)| *t != ticket);
        // A slot handed over just before we left: pass it on.
        if rx.try_recv().is_ok() {
            self.admission.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fifo_with_a_bounded_queue() {
        let a = Admission::new(1, 2);
        let Admit::Now(first) = a.try_admit() else {
            panic!("the first query runs at once")
        };
        let Admit::Queued(w1) = a.try_admit() else {
            panic!("queued")
        };
        let Admit::Queued(w2) = a.try_admit() else {
            panic!("queued")
        };
        assert!(matches!(a.try_admit(), Admit::Full));
        assert_eq!((a.running(), a.queued()), (1, 2));
        let never = CancellationToken::new();
        let h2 = tokio::spawn({
            let never = never.clone();
            async move { w2.wait(&never).await.map(|_p| "w2") }
        });
        drop(first);
        let p1 = w1.wait(&never).await.expect("w1 is first in line");
        assert_eq!((a.running(), a.queued()), (1, 1));
        drop(p1);
        assert_eq!(h2.await.unwrap(), Some("w2"));
        assert_eq!((a.running(), a.queued()), (0, 0));
    }

    #[tokio::test]
    async fn a_cancelled_waiter_leaves_the_queue() {
        let a = Admission::new(1, 1);
        let Admit::Now(first) = a.try_admit() else {
            panic!()
        };
        let Admit::Queued(w) = a.try_admit() else {
            panic!()
        };
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(w.wait(&cancel).await.is_none());
        assert_eq!(a.queued(), 0);
        drop(first);
        assert_eq!(a.running(), 0);
        assert!(matches!(a.try_admit(), Admit::Now(_)));
    }
}
