//! Fuzzing the worker: real task payloads, recorded while the embedded
//! engine runs TPC-H queries, mutated (bytes, JSON nodes, the protocol
//! version) and handed to [`handle_task`] — the function the embedded
//! invoker and the worker Lambda function both call.
//!
//! Every mutant must end in time without a panic and with a well-formed
//! report: a payload that does not decode is a non-retryable `bad_payload`
//! or `protocol` failure carrying the identity the worker could salvage;
//! one that decodes ends succeeded or failed with a known kind and a
//! message. A mutant that decodes has its output and stop marker moved
//! into the fuzzer's own folder first, so no mutant writes elsewhere.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::local::LocalFileSystem;
use serde_json::Value;
use squall_core::error::Result as CoreResult;
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::task::{
    FailureKind, ObjectLocation, TaskIdentity, TaskOutcome, TaskReport, TaskSpec,
};
use squall_core::worker::{WorkerEnv, handle_task};
use squall_planner::backend::Backend;
use squall_planner::backend::local::{LocalInvoker, LocalQueue};
use squall_planner::{Engine, EngineOptions};

use crate::mutate::{mutate_bytes, mutate_json};
use crate::seeded::SplitMix64;
use crate::{Case, Finding};

/// Passes tasks on to the embedded invoker and keeps a copy of each payload.
struct Recorder {
    inner: LocalInvoker,
    payloads: Mutex<Vec<Bytes>>,
}

#[async_trait]
impl Invoker for Recorder {
    async fn invoke(&self, payload: Bytes) -> CoreResult<()> {
        if let Ok(mut p) = self.payloads.lock() {
            p.push(payload.clone());
        }
        self.inner.invoke(payload).await
    }

    async fn cancel(&self, query_id: &str) -> CoreResult<()> {
        self.inner.cancel(query_id).await
    }
}

/// A completion queue that only counts what it is sent.
#[derive(Default)]
struct Sink(Mutex<usize>);

#[async_trait]
impl CompletionQueue for Sink {
    async fn create(&self, query_id: &str) -> CoreResult<String> {
        Ok(query_id.to_string())
    }
    async fn send(&self, _: &str, _: String) -> CoreResult<()> {
        if let Ok(mut n) = self.0.lock() {
            *n += 1;
        }
        Ok(())
    }
    async fn receive(&self, _: &str, _: Duration) -> CoreResult<Vec<String>> {
        Ok(vec![])
    }
    async fn delete(&self, _: &str) -> CoreResult<()> {
        Ok(())
    }
}

/// Real task payloads of a few TPC-H queries over `catalog`.
pub async fn record_payloads(
    catalog: &str,
    exchange: &std::path::Path,
) -> datafusion::error::Result<Vec<Bytes>> {
    let options = EngineOptions {
        catalog: Some(catalog.to_string()),
        settings: Vec::new(),
    };
    let config = squall_planner::engine::session_config(&options.settings)?;
    let ctx = datafusion::prelude::SessionContext::new_with_config(config);
    let queue = Arc::new(LocalQueue::new());
    let env = WorkerEnv {
        runtime: ctx.runtime_env(),
        queue: Arc::clone(&queue) as _,
    };
    let recorder = Arc::new(Recorder {
        inner: LocalInvoker::new(env, 2),
        payloads: Mutex::new(Vec::new()),
    });
    let backend = Backend {
        exchange_store: Arc::new(LocalFileSystem::new()),
        exchange_url: "file://".into(),
        exchange_prefix: exchange
            .to_string_lossy()
            .trim_start_matches('/')
            .to_string(),
        queue: queue as _,
        invoker: Arc::clone(&recorder) as _,
    };
    let engine = Engine::with_backend(options, ctx.runtime_env(), backend).await?;
    for q in [1, 3, 5, 13, 18, 21] {
        let sql = squall_tpch::query(q).unwrap_or("select 1");
        engine.sql(sql).await?;
    }
    let payloads = recorder
        .payloads
        .lock()
        .map(|p| p.clone())
        .unwrap_or_default();
    Ok(payloads)
}

/// The worker fuzzer's state: recorded payloads and where mutants write.
pub struct WorkerTarget {
    pub payloads: Vec<Bytes>,
    pub sandbox: std::path::PathBuf,
    pub env: WorkerEnv,
}

impl WorkerTarget {
    pub fn new(payloads: Vec<Bytes>, sandbox: std::path::PathBuf) -> Self {
        let env = WorkerEnv {
            runtime: Arc::new(datafusion::execution::runtime_env::RuntimeEnv::default()),
            queue: Arc::new(Sink::default()),
        };
        Self {
            payloads,
            sandbox,
            env,
        }
    }

    /// A mutant of a recorded payload, made safe to run here.
    fn mutant(&self, rng: &mut SplitMix64) -> Vec<u8> {
        let Some(original) = rng.pick(&self.payloads).cloned() else {
            return b"{}".to_vec();
        };
        let bytes = match rng.below(4) {
            0 => mutate_bytes(rng, &original),
            1 => match serde_json::from_slice::<Value>(&original) {
                Ok(mut json) => {
                    json["protocol"] = Value::from(rng.next_u64() % 5);
                    json.to_string().into_bytes()
                }
                Err(_) => original.to_vec(),
            },
            _ => match serde_json::from_slice::<Value>(&original) {
                Ok(json) => mutate_json(rng, &json).to_string().into_bytes(),
                Err(_) => mutate_bytes(rng, &original),
            },
        };
        match TaskSpec::decode(&bytes) {
            Ok(mut spec) => {
                let n = rng.next_u64();
                let key = |name: &str| {
                    self.sandbox
                        .join(format!("{name}-{n:x}"))
                        .to_string_lossy()
                        .trim_start_matches('/')
                        .to_string()
                };
                spec.output = ObjectLocation {
                    store_url: "file://".into(),
                    key: key("out"),
                };
                if spec.stop_marker.is_some() {
                    spec.stop_marker = Some(ObjectLocation {
                        store_url: "file://".into(),
                        key: key("stop"),
                    });
                }
                spec.encode().map(|b| b.to_vec()).unwrap_or(bytes)
            }
            Err(_) => bytes,
        }
    }

    /// One mutant through the worker.
    pub async fn case(&self, rng: &mut SplitMix64, deadline: Duration) -> Case {
        let payload = self.mutant(rng);
        let what = format!("payload of {} bytes", payload.len());
        let decodes = TaskSpec::decode(&payload).is_ok();
        let salvaged = TaskIdentity::salvage(&payload);
        let env = self.env.clone();
        let run = tokio::spawn({
            let payload = payload.clone();
            async move { handle_task(&payload, &env).await }
        });
        let report = match tokio::time::timeout(deadline, run).await {
            Ok(Ok(report)) => report,
            Ok(Err(e)) => {
                return Err(Finding::new(
                    "worker",
                    &what,
                    format!("the worker panicked: {e}"),
                ));
            }
            Err(_) => return Err(Finding::new("worker", &what, "no report in time".into())),
        };
        check_report(&report, decodes, salvaged.as_ref())
            .map_err(|m| Finding::new("worker", &what, m))
    }
}

fn check_report(
    report: &TaskReport,
    decodes: bool,
    salvaged: Option<&TaskIdentity>,
) -> Result<String, String> {
    if report.encode().is_err() {
        return Err(format!("the report does not encode: {report:?}"));
    }
    match &report.outcome {
        TaskOutcome::Succeeded { .. } if decodes => Ok("worker succeeded".into()),
        TaskOutcome::Succeeded { .. } => Err("an undecodable payload succeeded".into()),
        TaskOutcome::Failed { error } => {
            if error.kind == FailureKind::Invoke || error.message.is_empty() {
                return Err(format!("malformed failure: {error:?}"));
            }
            if !decodes {
                if !matches!(error.kind, FailureKind::BadPayload | FailureKind::Protocol)
                    || error.retryable
                {
                    return Err(format!("an undecodable payload failed as {error:?}"));
                }
                if let Some(id) = salvaged
                    && (id.query_id != report.query_id
                        || id.stage != report.stage
                        || id.task != report.task)
                {
                    return Err(format!(
                        "the report lost the salvaged identity {id:?}: {report:?}"
                    ));
                }
            }
            Ok(format!("worker failed: {}", error.kind))
        }
    }
}
