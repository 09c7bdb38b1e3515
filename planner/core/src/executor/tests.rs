//! Tests of the CPU executor: work runs on its threads, a dropped task is
//! aborted at its next yield, and a panic comes back as a join error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::*;

#[tokio::test]
async fn work_runs_on_the_cpu_executor() {
    assert!(!on_cpu_executor());
    let on_cpu = spawn_cpu(async { on_cpu_executor() }).await.unwrap();
    assert!(on_cpu, "the work ran on the caller's thread");
}

#[tokio::test]
async fn a_dropped_task_stops_at_its_next_yield() {
    let polls = Arc::new(AtomicUsize::new(0));
    let task = spawn_cpu({
        let polls = Arc::clone(&polls);
        async move {
            loop {
                polls.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        }
    });
    while polls.load(Ordering::SeqCst) < 10 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(task);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after_drop = polls.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        polls.load(Ordering::SeqCst),
        after_drop,
        "the work went on after its task was dropped"
    );
}

#[tokio::test]
async fn a_panic_is_a_join_error_with_its_message() {
    let e = spawn_cpu(async {
        if std::hint::black_box(true) {
            panic!("boom");
        }
    })
    .await
    .unwrap_err();
    assert!(e.is_panic());
    assert_eq!(join_error_text(e), "boom");
}

#[tokio::test]
async fn the_caller_runtime_stays_free_while_cpu_work_spins() {
    // Busy work on every CPU thread must not delay a timer of the caller's.
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..cpu_threads())
        .map(|_| {
            let stop = Arc::clone(&stop);
            spawn_cpu(async move {
                while !stop.load(Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let answered = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::time::sleep(Duration::from_millis(10)),
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    assert!(answered.is_ok(), "the caller's runtime was starved");
    for s in spinners {
        s.await.unwrap();
    }
}
