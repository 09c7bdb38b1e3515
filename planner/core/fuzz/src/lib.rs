//! # squall-worker-fuzz
//!
//! Fuzzing squall's worker, beside the worker it fuzzes
//! (`squall_core::worker::handle_task`): real task payloads recorded while
//! the embedded engine runs TPC-H queries, mutated and run, every mutant
//! bounded by a deadline. `squall fuzz --target worker` runs it; the API
//! fuzzer of the `squall` command shares its mutators and generator.
//!
//! # Layout
//!
//! - [`seeded`]: [`SplitMix64`](seeded::SplitMix64), the seeded generator a run is reproduced from.
//! - [`mutate`]: the mutators (SQL tokens, bytes, JSON nodes).
//! - [`worker`]: recording payloads, mutating them, checking each report.
//! - [`Finding`], [`Case`]: what a case shows; [`fuzz_worker`]: a bounded run.

pub mod mutate;
/// The seeded generator, shared with the rest of the workspace (`squall_core::seeded`).
pub use squall_core::seeded;
pub mod worker;

use std::sync::Arc;
use std::time::{Duration, Instant};

use seeded::SplitMix64;

/// Something a fuzz case showed that must not happen.
#[derive(Debug, Clone)]
pub struct Finding {
    pub target: &'static str,
    /// The input, shortened.
    pub input: String,
    pub problem: String,
}

impl Finding {
    pub fn new(target: &'static str, input: &str, problem: String) -> Self {
        Self {
            target,
            input: input.chars().take(200).collect(),
            problem: problem.chars().take(500).collect(),
        }
    }
}

/// One case: its outcome (`worker failed: bad_payload`, …) or a finding.
pub type Case = Result<String, Finding>;

/// What can stop a fuzz run before its cases (never a finding).
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// Recording payloads: the engine could not run a TPC-H query.
    #[error("recording task payloads: {0}")]
    Engine(#[from] datafusion::error::DataFusionError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("a fuzz lane failed: {0}")]
    Lane(#[from] tokio::task::JoinError),
}

/// Mutated payloads through the worker for `duration`, on two lanes; the
/// payloads are recorded from TPC-H queries over `catalog`.
pub async fn fuzz_worker(
    catalog: &str,
    duration: Duration,
    seed: u64,
    case_deadline: Duration,
) -> Result<Vec<Case>, FuzzError> {
    let dir = tempfile::Builder::new()
        .prefix("squall-fuzz-")
        .tempdir()
        .map_err(|source| FuzzError::Io {
            context: "making the fuzzer's folder".into(),
            source,
        })?;
    let exchange = dir.path().join("exchange");
    let sandbox = dir.path().join("mutants");
    for d in [&exchange, &sandbox] {
        std::fs::create_dir_all(d).map_err(|source| FuzzError::Io {
            context: format!("making {}", d.display()),
            source,
        })?;
    }
    let payloads = worker::record_payloads(catalog, &exchange).await?;
    let target = Arc::new(worker::WorkerTarget::new(payloads, sandbox));
    let deadline = Instant::now() + duration;
    let mut seeds = SplitMix64::new(seed ^ 0x5eed);
    let mut lanes = Vec::new();
    for lane in 0..2u64 {
        let mut rng = seeds.fork(lane);
        let target = Arc::clone(&target);
        lanes.push(tokio::spawn(async move {
            let mut cases = Vec::new();
            while Instant::now() < deadline {
                cases.push(target.case(&mut rng, case_deadline).await);
            }
            cases
        }));
    }
    let mut cases = Vec::new();
    for lane in lanes {
        cases.extend(lane.await?);
    }
    Ok(cases)
}
