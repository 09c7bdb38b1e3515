//! `squall fuzz`: seeded, bounded-time fuzzing of the HTTP API and the worker.
//!
//! ```text
//! TPC-H SF 0.01 (generated if missing)
//!  ├─ api:    squall API on 127.0.0.1:0 (embedded, token auth, a short timeout and
//!  │          memory limit so mutants that turn into huge queries end quickly)
//!  │          cases, interleaved: mutated/random SQL · malformed requests · raw non-HTTP bytes
//!  └─ worker: task payloads recorded from real TPC-H runs, mutated, run by handle_task
//! report: cases per target and outcome; findings (crash, hang, malformed answer) with their input
//! ```
//!
//! A run is reproduced by its seed: case `i` of a target draws from its own
//! generator forked from the seed (timing-dependent outcomes aside, such as
//! which queries a timeout stops). Each case is bounded by a deadline, so a
//! hang is a finding, not a stuck run; the run as a whole stops starting
//! cases at its duration. The API target is [`api`] here; the worker target,
//! the mutators and the generator are `squall_worker_fuzz`'s.

mod api;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use squall_planner::{Engine, EngineOptions};
use squall_server::ServerError;
use squall_server::serve::LoopbackServer;
use squall_tpch as tpch;
use squall_worker_fuzz::seeded::SplitMix64;
pub use squall_worker_fuzz::{Case, Finding};

use crate::client::TrinoClient;

/// What to fuzz, for how long.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    /// Time for each target.
    pub duration: Duration,
    pub seed: u64,
    pub api: bool,
    pub worker: bool,
    /// TPC-H data folder; default `data/tpch/sf0.01` (generated if missing).
    pub data: Option<PathBuf>,
    /// Longest one case may take before it counts as a hang.
    pub case_deadline: Duration,
    /// Concurrent API cases.
    pub concurrency: usize,
}

impl Default for FuzzOptions {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(30),
            seed: 1,
            api: true,
            worker: true,
            data: None,
            case_deadline: Duration::from_secs(60),
            concurrency: 4,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct FuzzReport {
    pub seed: u64,
    pub elapsed: Duration,
    /// Cases by target and outcome (`api sql failed: SYNTAX_ERROR`, …).
    pub outcomes: BTreeMap<String, u64>,
    pub findings: Vec<Finding>,
}

impl FuzzReport {
    pub fn cases(&self, target: &str) -> u64 {
        self.outcomes
            .iter()
            .filter(|(k, _)| k.starts_with(target))
            .map(|(_, n)| n)
            .sum()
    }

    fn record(&mut self, target: &str, case: Case) {
        let key = match case {
            Ok(outcome) => format!("{target} {outcome}"),
            Err(f) => {
                let key = format!("{target} FINDING");
                if self.findings.len() < 50 {
                    self.findings.push(f);
                }
                key
            }
        };
        *self.outcomes.entry(key).or_default() += 1;
    }

    /// The report as text.
    pub fn display(&self) -> String {
        let mut out = format!(
            "seed {}  {:.1} s  api cases {}  worker cases {}  findings {}\n",
            self.seed,
            self.elapsed.as_secs_f64(),
            self.cases("api"),
            self.cases("worker"),
            self.findings.len()
        );
        for (k, n) in &self.outcomes {
            out.push_str(&format!("  {n:>6}  {k}\n"));
        }
        for f in &self.findings {
            out.push_str(&format!(
                "FINDING [{}] {}\n  input: {:?}\n",
                f.target, f.problem, f.input
            ));
        }
        out
    }
}

/// Runs the fuzzers; see the module docs.
pub async fn run(options: &FuzzOptions) -> Result<FuzzReport, ServerError> {
    let data = options
        .data
        .clone()
        .unwrap_or_else(|| tpch::run::default_data_dir(0.01));
    if tpch::datagen::completed_scale_factor(&data).is_none() {
        tpch::run::ensure_data(0.01, &data, true)?;
    }
    let catalog = data.to_string_lossy().to_string();
    let started = Instant::now();
    let mut report = FuzzReport {
        seed: options.seed,
        ..FuzzReport::default()
    };
    if options.api {
        fuzz_api(options, &catalog, &mut report).await?;
    }
    if options.worker {
        fuzz_worker(options, &catalog, &mut report).await?;
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

async fn fuzz_api(
    options: &FuzzOptions,
    catalog: &str,
    report: &mut FuzzReport,
) -> Result<(), ServerError> {
    // Mutants can turn into cross joins: a timeout and a memory limit stop them.
    let settings = vec![
        ("squall.query.timeout_secs".to_string(), "5".to_string()),
        (
            "squall.query.memory_limit_bytes".to_string(),
            (256usize << 20).to_string(),
        ),
    ];
    let engine = Engine::local(EngineOptions {
        catalog: Some(catalog.to_string()),
        settings,
    })
    .await?;
    let server = LoopbackServer::start(engine).await?;
    let (addr, token) = (server.addr, server.token.clone());
    let auth = vec![("Authorization".to_string(), format!("Bearer {token}"))];
    let client = TrinoClient::new(
        &format!("http://{addr}"),
        auth.clone(),
        options.case_deadline,
    )
    .and_then(TrinoClient::without_pooling)
    .map_err(|e| ServerError::Internal {
        message: e.to_string(),
    })?;
    // A live query whose id and slug the malformed requests reuse.
    let live = live_query(&client, &auth).await;
    let deadline = Instant::now() + options.duration;
    let mut seeds = SplitMix64::new(options.seed);
    let mut lanes = Vec::new();
    for lane in 0..options.concurrency.max(1) {
        let mut rng = seeds.fork(lane as u64);
        let (client, auth, live) = (client.clone(), auth.clone(), live.clone());
        let case_deadline = options.case_deadline;
        lanes.push(tokio::spawn(async move {
            let mut cases = Vec::new();
            while Instant::now() < deadline {
                let case = match rng.below(10) {
                    0..=4 => api::sql_case(&client, &mut rng, case_deadline).await,
                    5..=8 => api::request_case(&client, &mut rng, &auth, &live).await,
                    _ => api::raw_case(&client, &mut rng, case_deadline).await,
                };
                cases.push(case);
            }
            cases
        }));
    }
    for lane in lanes {
        let cases = lane.await.map_err(|e| ServerError::Internal {
            message: format!("a fuzz lane failed: {e}"),
        })?;
        for case in cases {
            report.record("api", case);
        }
    }
    server.stop().await;
    Ok(())
}

/// Submits a query and returns its id and slug (empty if that fails).
async fn live_query(client: &TrinoClient, auth: &[(String, String)]) -> (String, String) {
    let mut req = client
        .http()
        .post(format!("{}/v1/statement", client.base()))
        .body("select count(*) from lineitem");
    for (k, v) in auth {
        req = req.header(k.as_str(), v.as_str());
    }
    let resp = req.send().await;
    let Ok(resp) = resp else {
        return Default::default();
    };
    let doc: serde_json::Value = match resp.text().await {
        Ok(t) => serde_json::from_str(&t).unwrap_or_default(),
        Err(_) => return Default::default(),
    };
    // .../queued/{id}/{slug}/1
    let next = doc["nextUri"].as_str().unwrap_or("");
    let parts: Vec<&str> = next.rsplitn(4, '/').collect();
    match parts.as_slice() {
        [_, slug, id, _] => (id.to_string(), slug.to_string()),
        _ => Default::default(),
    }
}

async fn fuzz_worker(
    options: &FuzzOptions,
    catalog: &str,
    report: &mut FuzzReport,
) -> Result<(), ServerError> {
    let cases = squall_worker_fuzz::fuzz_worker(
        catalog,
        options.duration,
        options.seed,
        options.case_deadline,
    )
    .await
    .map_err(|e| ServerError::Internal {
        message: e.to_string(),
    })?;
    for case in cases {
        report.record("worker", case);
    }
    Ok(())
}
