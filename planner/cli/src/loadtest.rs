//! `squall loadtest`: N concurrent clients submit TPC-H queries through the
//! HTTP API for a fixed time, and every answer is checked.
//!
//! ```text
//! TPC-H data (generated if missing) ──> expected answers (carried at SF 0.1/1, else single-node DataFusion)
//! squall API on 127.0.0.1:0 (embedded engine, bearer token, admission as configured)
//!   client 1..N: loop until the deadline { pick a query (seeded), POST, follow nextUri, compare;
//!                                          after an error, wait 100 ms }
//!   heavy client 1..H (--heavy): loop until the deadline { a nested-loop join over lineitem × lineitem,
//!                                          cancelled after a while or stopped by its timeout }
//! report: completed, wrong (must be 0), errors by kind, latency p50/p90/p99/max, queries/s,
//!         heavy queries by how they ended, seconds until the process's CPU is idle after the end
//! ```
//!
//! With heavy clients the command runs twice, without them and with them,
//! and prints the short queries' latency side by side ([`heavy`]).
//!
//! It listens on loopback only and stops submitting at the deadline; queries
//! in flight then finish, each bounded by the per-query limit, so a run lasts
//! at most the duration plus that limit. Latency is the client's: from the
//! POST to the last document, queueing included. Errors are counted by the
//! Trino error name of a failed query (`EXCEEDED_TIME_LIMIT`, …) or the
//! client's error class (`timeout`, `http_503`, `protocol`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::prelude::SessionContext;
use squall_planner::{Engine, EngineOptions};
use squall_server::ServerError;
use squall_server::serve::LoopbackServer;
use squall_tpch as tpch;
use squall_worker_fuzz::seeded::SplitMix64;

use crate::client::{TrinoClient, rows_to_csv};

pub mod heavy;
use heavy::{HeavyOptions, HeavyReport};

/// How long a client waits after an error before its next query.
const ERROR_BACKOFF: Duration = Duration::from_millis(100);

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub clients: usize,
    pub duration: Duration,
    pub scale_factor: f64,
    /// Data folder; default `data/tpch/sf{SF}` (generated if missing).
    pub data: Option<PathBuf>,
    /// TPC-H query numbers to draw from; empty = all 22.
    pub queries: Vec<usize>,
    pub seed: u64,
    /// Longest one query may take, from POST to its last document.
    pub query_deadline: Duration,
    /// Engine and admission settings (`squall.*`, `datafusion.*`).
    pub settings: Vec<(String, String)>,
    /// Clients running heavy statements beside the others (none by default).
    pub heavy: HeavyOptions,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            clients: 8,
            duration: Duration::from_secs(60),
            scale_factor: 0.01,
            data: None,
            queries: Vec::new(),
            seed: 1,
            query_deadline: Duration::from_secs(300),
            settings: Vec::new(),
            heavy: HeavyOptions::default(),
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    pub clients: usize,
    pub elapsed: Duration,
    /// Queries answered and checked right.
    pub completed: u64,
    /// Queries answered wrong (must be 0), with the first messages.
    pub wrong: u64,
    pub wrong_examples: Vec<String>,
    /// Errors by kind, and one example message per kind.
    pub errors: BTreeMap<String, u64>,
    pub error_examples: BTreeMap<String, String>,
    /// Client latency of every completed query, in ms, sorted.
    pub latencies_ms: Vec<f64>,
    /// Most queries seen queued or running at once in the API.
    pub max_running: usize,
    pub max_queued: usize,
    /// How the heavy clients' statements ended.
    pub heavy: HeavyReport,
    /// From the end of the last query until the process's CPU time stopped
    /// growing (None: not within 30 s, or not measurable here).
    pub cpu_idle_after: Option<Duration>,
}

impl LoadReport {
    /// The `q` quantile (0..=1) of completed queries' latency, nearest rank.
    pub fn latency_ms(&self, q: f64) -> f64 {
        if self.latencies_ms.is_empty() {
            return 0.0;
        }
        let rank = (q * self.latencies_ms.len() as f64).ceil() as usize;
        self.latencies_ms[rank.clamp(1, self.latencies_ms.len()) - 1]
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The report as text, one figure per line.
    pub fn display(&self) -> String {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let mut out = format!(
            "clients {}  duration {:.1} s\ncompleted {}  ({:.2} queries/s)\nwrong {}\nerrors {}\n",
            self.clients,
            secs,
            self.completed,
            self.completed as f64 / secs,
            self.wrong,
            self.error_count(),
        );
        for (kind, n) in &self.errors {
            let example = self
                .error_examples
                .get(kind)
                .map(String::as_str)
                .unwrap_or("");
            out.push_str(&format!("  {kind}: {n}  (e.g. {example})\n"));
        }
        for w in &self.wrong_examples {
            out.push_str(&format!("  wrong: {w}\n"));
        }
        out.push_str(&format!(
            "latency ms  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}\n",
            self.latency_ms(0.5),
            self.latency_ms(0.9),
            self.latency_ms(0.99),
            self.latency_ms(1.0)
        ));
        out.push_str(&format!(
            "API: at most {} running and {} queued at once\n",
            self.max_running, self.max_queued
        ));
        if self.heavy.clients > 0 {
            out.push_str(&self.heavy.display());
        }
        match self.cpu_idle_after {
            Some(d) => out.push_str(&format!(
                "CPU idle {:.2} s after the last query ended\n",
                d.as_secs_f64()
            )),
            None => out.push_str("CPU idle: not measured or not within 30 s\n"),
        }
        out
    }
}

/// One finished query as a client saw it.
enum Outcome {
    Right(f64),
    Wrong(String),
    Error(String, String),
}

/// Runs the load test; see the module docs.
pub async fn run(options: &LoadOptions) -> Result<LoadReport, ServerError> {
    let data = options
        .data
        .clone()
        .unwrap_or_else(|| tpch::run::default_data_dir(options.scale_factor));
    tpch::run::ensure_data(options.scale_factor, &data, true)?;
    let catalog = data.to_string_lossy().to_string();
    let queries: Vec<usize> = if options.queries.is_empty() {
        (1..=22).collect()
    } else {
        options.queries.clone()
    };
    let mut reference: Option<SessionContext> = None;
    let mut expected = BTreeMap::new();
    for &q in &queries {
        let (csv, _) =
            tpch::run::expected_csv(options.scale_factor, q, &catalog, &mut reference).await?;
        expected.insert(q, csv);
    }
    let expected = Arc::new(expected);

    let engine = Engine::local(EngineOptions {
        catalog: Some(catalog),
        settings: options.settings.clone(),
    })
    .await?;
    let server = LoopbackServer::start(engine).await?;
    let (addr, token, service) = (server.addr, server.token.clone(), server.service.clone());

    let client = TrinoClient::new(
        &format!("http://{addr}"),
        vec![
            ("Authorization".into(), format!("Bearer {token}")),
            ("X-Trino-User".into(), "loadtest".into()),
        ],
        Duration::from_secs(60),
    )
    .map_err(|e| ServerError::Internal {
        message: e.to_string(),
    })?;
    let started = Instant::now();
    let deadline = started + options.duration;
    let mut seeds = SplitMix64::new(options.seed);
    let mut clients = Vec::with_capacity(options.clients);
    for i in 0..options.clients.max(1) {
        let (client, expected, queries) = (client.clone(), expected.clone(), queries.clone());
        let mut rng = seeds.fork(i as u64);
        let query_deadline = options.query_deadline;
        clients.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            while Instant::now() < deadline {
                let Some(&q) = rng.pick(&queries) else { break };
                let outcome = one_query(&client, q, &expected, query_deadline).await;
                if matches!(outcome, Outcome::Error(..)) {
                    // A refused or failed query: back off a little, as a client would.
                    tokio::time::sleep(ERROR_BACKOFF).await;
                }
                outcomes.push(outcome);
            }
            outcomes
        }));
    }
    let heavy = heavy::spawn_clients(&options.heavy, &client, deadline)?;
    // Watch the API's admission while the clients run.
    let (mut max_running, mut max_queued) = (0, 0);
    while clients.iter().any(|c| !c.is_finished()) || heavy.iter().any(|c| !c.is_finished()) {
        let (running, queued) = service.admission();
        max_running = max_running.max(running);
        max_queued = max_queued.max(queued);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    // Every query has ended: the process should fall idle at once.
    let cpu_idle_after = heavy::until_cpu_idle(Duration::from_secs(30)).await;
    let mut report = LoadReport {
        clients: options.clients.max(1),
        max_running,
        max_queued,
        heavy: heavy::collect(heavy).await?,
        cpu_idle_after,
        ..LoadReport::default()
    };
    for c in clients {
        let outcomes = c.await.map_err(|e| ServerError::Internal {
            message: format!("a load-test client failed: {e}"),
        })?;
        for outcome in outcomes {
            match outcome {
                Outcome::Right(ms) => {
                    report.completed += 1;
                    report.latencies_ms.push(ms);
                }
                Outcome::Wrong(message) => {
                    report.wrong += 1;
                    if report.wrong_examples.len() < 5 {
                        report.wrong_examples.push(message);
                    }
                }
                Outcome::Error(kind, message) => {
                    *report.errors.entry(kind.clone()).or_default() += 1;
                    report.error_examples.entry(kind).or_insert(message);
                }
            }
        }
    }
    report.elapsed = elapsed;
    report.latencies_ms.sort_by(f64::total_cmp);
    server.stop().await;
    Ok(report)
}

async fn one_query(
    client: &TrinoClient,
    q: usize,
    expected: &BTreeMap<usize, String>,
    deadline: Duration,
) -> Outcome {
    let Some(sql) = tpch::query(q) else {
        return Outcome::Error("no_query".into(), format!("no TPC-H query {q}"));
    };
    let started = Instant::now();
    let answer = match client.run(sql, deadline).await {
        Ok(a) => a,
        Err(e) => return Outcome::Error(e.kind(), format!("q{q}: {e}")),
    };
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Some(e) = &answer.error {
        let name = answer.error_name().unwrap_or("UNNAMED").to_string();
        let message: String = e["message"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        return Outcome::Error(name, format!("q{q}: {message}"));
    }
    let Some(want) = expected.get(&q) else {
        return Outcome::Error("no_answer".into(), format!("no expected answer for q{q}"));
    };
    let got = rows_to_csv(&answer.columns, &answer.rows);
    match tpch::run::check_answer(want, &got, sql).as_str() {
        "ok" => Outcome::Right(ms),
        other => Outcome::Wrong(format!("q{q} ({}): {other}", answer.id)),
    }
}
