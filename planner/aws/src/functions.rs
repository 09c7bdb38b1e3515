//! What the Lambda functions run, as library calls their thin `main.rs`
//! wires to `lambda_runtime` (and tests call directly).
//!
//! - [`WorkerFunction`]: one task per invocation. The event is the task
//!   itself (the same JSON the embedded backend hands its workers) or a
//!   [`PayloadPointer`] to it in S3. It always answers with a small summary
//!   and never panics on bad input: undecodable tasks become failure reports
//!   sent to the task's completion queue when its address can be read.
//! - [`CoordinatorFunction`]: plans and drives one query, and records its
//!   state and result under `squall.state_location` (see [`state`]).

use std::sync::Arc;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use squall_core::task::TaskOutcome;
use squall_core::worker::{WorkerEnv, handle_task};
use squall_planner::EngineOptions;

use crate::engine::{aws_engine, aws_runtime};
use crate::env::AwsEnv;
use crate::lambda::PayloadPointer;
use crate::sqs::SqsQueue;

pub mod state;

/// The worker function's state across invocations of one Lambda environment.
pub struct WorkerFunction {
    env: WorkerEnv,
}

impl WorkerFunction {
    pub async fn from_env() -> Result<Self> {
        let aws = AwsEnv::load().await;
        let runtime = aws_runtime(&aws)?;
        Ok(Self {
            env: WorkerEnv {
                runtime,
                queue: Arc::new(SqsQueue::new(&aws, "")),
            },
        })
    }

    /// Run the task in `event`; returns a summary (status, stage, task, attempt).
    pub async fn handle(&self, event: serde_json::Value) -> serde_json::Value {
        let payload = match self.payload(event).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(%e, "task payload unavailable");
                return serde_json::json!({"status": "failed", "error": e.to_string()});
            }
        };
        let report = handle_task(&payload, &self.env).await;
        let (status, error) = match &report.outcome {
            TaskOutcome::Succeeded { .. } => ("succeeded", None),
            TaskOutcome::Failed { error } => ("failed", Some(error.message.clone())),
        };
        serde_json::json!({
            "status": status,
            "query_id": report.query_id,
            "stage": report.stage,
            "task": report.task,
            "attempt": report.attempt,
            "error": error,
        })
    }

    async fn payload(&self, event: serde_json::Value) -> Result<Bytes> {
        if let Ok(pointer) = serde_json::from_value::<PayloadPointer>(event.clone()) {
            let (url, key) = crate::s3::split_s3_url(&pointer.payload_location)?;
            let store = self
                .env
                .runtime
                .object_store(ObjectStoreUrl::parse(&url)?)?;
            let bytes = store
                .get(&Path::from(key.as_str()))
                .await
                .map_err(|e| {
                    DataFusionError::External(
                        format!("task payload {}: {e}", pointer.payload_location).into(),
                    )
                })?
                .bytes()
                .await
                .map_err(|e| {
                    DataFusionError::External(
                        format!("task payload {}: {e}", pointer.payload_location).into(),
                    )
                })?;
            return Ok(bytes);
        }
        serde_json::to_vec(&event)
            .map(Bytes::from)
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }
}

/// What the API sends the coordinator function.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CoordinatorRequest {
    pub query_id: String,
    pub sql: String,
    #[serde(default)]
    pub catalog: Option<String>,
    #[serde(default)]
    pub settings: Vec<(String, String)>,
}

/// Runs one query per invocation and records it under the state location.
pub struct CoordinatorFunction;

impl CoordinatorFunction {
    pub async fn handle(&self, request: CoordinatorRequest) -> serde_json::Value {
        let store = match state::StateStore::from_env().await {
            Ok(s) => s,
            Err(e) => return serde_json::json!({"status": "failed", "error": e.to_string()}),
        };
        let _ = store
            .write_status(&request.query_id, &state::QueryStatus::running())
            .await;
        let outcome = async {
            let engine = aws_engine(EngineOptions {
                catalog: request.catalog.clone(),
                settings: request.settings.clone(),
            })
            .await?;
            engine.sql(&request.sql).await
        }
        .await;
        let status = match outcome {
            Ok(result) => match store.write_result(&request.query_id, &result).await {
                Ok(()) => state::QueryStatus::finished(&result),
                Err(e) => state::QueryStatus::failed(&e.to_string()),
            },
            Err(e) => state::QueryStatus::failed(&e.to_string()),
        };
        if let Err(e) = store.write_status(&request.query_id, &status).await {
            tracing::error!(%e, query_id = %request.query_id, "recording query state failed");
        }
        serde_json::to_value(&status).unwrap_or_default()
    }
}

/// JSON logs (Lambda's log format) filtered by `SQUALL_LOG` (default `info`).
pub fn init_tracing() {
    let filter = std::env::var("SQUALL_LOG").unwrap_or_else(|_| "info".to_string());
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_current_span(true)
        .without_time()
        .try_init();
}
