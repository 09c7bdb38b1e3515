//! Tree invocation, as the coordinator drives it: over the embedded
//! backend's invoker wrapped in a launcher that starts each batch from a
//! task of its own (what a launcher invocation of the worker function does
//! on Lambda), the large stages go out in batches of at most the fan-out,
//! each of one stage, and the answers equal single-node DataFusion's. A
//! launcher that dies before starting its batch leaves its tasks silent:
//! their deadlines start them again, one by one, and the answers hold.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use squall_core::config::SquallConfig;
use squall_core::error::Result;
use squall_core::requests::RequestCounts;
use squall_core::seams::Invoker;
use squall_core::task::{ObjectLocation, TaskIdentity};
use squall_planner::backend::local::LocalBackend;
use squall_planner::engine::session_config;
use squall_planner::{Engine, EngineOptions};

use crate::common::*;

/// Starts batches from a task of its own; every `lose_every`-th batch is
/// never started (its launcher died).
struct Launchers {
    inner: Arc<dyn Invoker>,
    batches: Mutex<Vec<Vec<TaskIdentity>>>,
    lose_every: usize,
    seen: AtomicUsize,
}

#[async_trait]
impl Invoker for Launchers {
    async fn invoke(&self, payload: Bytes) -> Result<()> {
        self.inner.invoke(payload).await
    }

    fn launches_batches(&self) -> bool {
        true
    }

    async fn invoke_batch(&self, payloads: Vec<Bytes>) -> Result<()> {
        let ids = payloads
            .iter()
            .map(|p| TaskIdentity::salvage(p).expect("a task payload"))
            .collect();
        self.batches.lock().unwrap().push(ids);
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        if self.lose_every > 0 && n.is_multiple_of(self.lose_every) {
            return Ok(());
        }
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            for p in payloads {
                let _ = inner.invoke(p).await;
            }
        });
        Ok(())
    }

    async fn cancel(&self, query_id: &str) -> Result<()> {
        self.inner.cancel(query_id).await
    }

    fn stop_marker(&self, query_id: &str) -> Option<ObjectLocation> {
        self.inner.stop_marker(query_id)
    }

    fn take_requests(&self, query_id: &str) -> RequestCounts {
        self.inner.take_requests(query_id)
    }
}

async fn engine_with_launchers(
    data: &std::path::Path,
    pairs: &[(&str, &str)],
    lose_every: usize,
) -> (Engine, Arc<Launchers>, LocalBackend) {
    let options = EngineOptions {
        catalog: Some(data.to_string_lossy().to_string()),
        settings: settings(pairs),
    };
    let squall = SquallConfig::from_session(&session_config(&options.settings).unwrap());
    let runtime = RuntimeEnvBuilder::new().build_arc().unwrap();
    let local = LocalBackend::create(&squall, Arc::clone(&runtime)).unwrap();
    let launchers = Arc::new(Launchers {
        inner: Arc::clone(&local.backend.invoker),
        batches: Mutex::default(),
        lose_every,
        seen: AtomicUsize::new(0),
    });
    let mut backend = local.backend.clone();
    backend.invoker = Arc::clone(&launchers) as _;
    let engine = Engine::with_backend(options, runtime, backend)
        .await
        .unwrap();
    (engine, launchers, local)
}

const TREE: &[(&str, &str)] = &[
    ("squall.scan.target_task_bytes", "1"),
    ("squall.shuffle.partitions", "40"),
    ("squall.shuffle.target_task_bytes", "1"),
    ("squall.task.tree_min_tasks", "30"),
    ("squall.task.tree_fanout", "16"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_stages_start_in_batches_of_one_stage() {
    let data = sf001_tiny_groups();
    let (engine, launchers, local) = engine_with_launchers(&data.path, TREE, 0).await;
    let ctx = single_node(&data.path).await;
    for q in [3, 18, 21] {
        let sql = squall_tpch::query(q).unwrap();
        let expected = single_node_csv(&ctx, sql).await;
        let r = engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(&format!("q{q}, tree invocation"), &expected, &actual, sql);
        let p = r.profile.expect("profile");
        assert_eq!(
            p.tasks,
            p.tasks_launched + p.retries + p.speculative,
            "q{q}"
        );
    }
    let batches = launchers.batches.lock().unwrap();
    assert!(!batches.is_empty(), "no stage went out in batches");
    for b in batches.iter() {
        assert!(b.len() >= 2 && b.len() <= 16, "a batch of {}", b.len());
        assert!(
            b.iter().all(|id| id.stage == b[0].stage
                && id.query_id == b[0].query_id
                && id.attempt == 0),
            "a batch mixes stages or attempts: {b:?}"
        );
    }
    assert_eq!(local.queue.open_queues(), 0);
    assert_eq!(
        count_files(local.exchange_root()),
        0,
        "exchange objects left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_a_dead_launcher_start_again_by_their_deadlines() {
    let data = sf001_tiny_groups();
    let mut pairs = TREE.to_vec();
    pairs.extend([
        ("squall.task.attempt_timeout_ms", "1500"),
        ("squall.task.speculation_min_ms", "500"),
    ]);
    let (engine, launchers, local) = engine_with_launchers(&data.path, &pairs, 3).await;
    let ctx = single_node(&data.path).await;
    let sql = squall_tpch::query(3).unwrap();
    let expected = single_node_csv(&ctx, sql).await;
    let r = engine.sql(sql).await.unwrap_or_else(|e| panic!("q3: {e}"));
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert_same("q3, a launcher in three dead", &expected, &actual, sql);
    let p = r.profile.expect("profile");
    assert!(
        launchers.batches.lock().unwrap().len() >= 3,
        "fewer than three batches: none was lost"
    );
    assert!(p.speculative > 0, "no task started again:\n{}", p.display());
    assert_eq!(local.queue.open_queues(), 0);
}
