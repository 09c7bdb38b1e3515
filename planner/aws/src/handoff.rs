//! Hand-offs of the coordinator function: a query longer than one
//! invocation (`squall.coordinator.max_run_secs`, below the function's
//! timeout) goes on in a fresh invocation of the same function.
//!
//! ```text
//! invocation g   ── engine hands over: checkpoint g+1 written ──> Invoke(self, Event,
//!                   request + HandoffRequest{resume: checkpoint, generation g+1})
//!                   record stays RUNNING; tasks run on, reports wait in the query's queue
//! invocation g+1 ── claims {state}/{query}/run-g{g+1} (conditional PUT)
//!                   ├─ claimed already: a duplicate invocation, returns at once
//!                   └─ plans again, resumes from the checkpoint, watches for cancels
//! ```
//!
//! The function invokes itself by its own name (`AWS_LAMBDA_FUNCTION_NAME`,
//! which Lambda sets; else `squall.coordinator_function`), so the stack
//! lets it invoke itself. A successor that cannot be started ends the
//! query (its tasks stopped, its objects and queue deleted) with an error
//! naming the query. What this module does not do: checkpoints themselves
//! (`squall_planner::coordinator::checkpoint`).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use squall_core::config::SquallConfig;
use squall_core::requests::RequestCounts;
use squall_planner::coordinator::{HandedOver, Resume};

use crate::env::AwsEnv;
use crate::functions::CoordinatorRequest;
use crate::lambda::{FunctionStarter, Start};
use crate::state::ObjectQueryStore;

/// What a coordinator invocation that handed its query over tells the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffRequest {
    /// Where the next run resumes from.
    pub resume: Resume,
    /// The state-store requests of the earlier invocations, for the profile.
    #[serde(default)]
    pub state_requests: RequestCounts,
}

/// The name of the state-store object that claims `generation` of a query.
fn claim_name(generation: u32) -> String {
    format!("run-g{generation}")
}

/// Claims the run of `generation` of query `query_id`: `false` when another
/// invocation has claimed it (this one is a duplicate and must not run).
pub async fn claim(
    store: &ObjectQueryStore,
    query_id: &str,
    generation: u32,
) -> datafusion::error::Result<bool> {
    store.claim(query_id, &claim_name(generation)).await
}

/// The function to invoke for the next run: this very function.
fn own_name(squall: &SquallConfig) -> String {
    std::env::var("AWS_LAMBDA_FUNCTION_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| squall.coordinator_function.clone())
}

/// Starts the next run of the query `handed` over: an asynchronous
/// invocation of this function with `request` and the checkpoint. On
/// failure the query is ended here (tasks stopped, objects and queue
/// deleted) and the error names the query.
pub async fn start_successor(
    request: &CoordinatorRequest,
    handed: HandedOver,
    state_requests: RequestCounts,
) -> Result<(), String> {
    let query_id = handed.query_id().to_string();
    let failed = |message: String| {
        format!("query {query_id}: handing over to a new coordinator invocation failed: {message}")
    };
    let squall = match SquallConfig::from_env() {
        Ok(s) => s,
        Err(e) => {
            handed.abandon().await;
            return Err(failed(e.to_string()));
        }
    };
    let next = CoordinatorRequest {
        handoff: Some(HandoffRequest {
            resume: handed.resume.clone(),
            state_requests,
        }),
        ..request.clone()
    };
    let payload = match serde_json::to_vec(&next) {
        Ok(p) => p,
        Err(e) => {
            handed.abandon().await;
            return Err(failed(e.to_string()));
        }
    };
    let function = own_name(&squall);
    let starter = FunctionStarter::new(
        &AwsEnv::load().await,
        &function,
        Duration::from_millis(squall.coordinator_start_wait_ms),
    );
    match starter.start(payload).await {
        Ok(Start::Accepted) => {}
        Ok(Start::Pending(invocation)) => {
            // `cargo lambda watch` answers when the next run returns.
            let id = query_id.clone();
            tokio::spawn(async move {
                match invocation.await {
                    Ok(Ok(())) => {}
                    Ok(Err(message)) => {
                        tracing::error!(query_id = %id, %message, "the next coordinator run failed")
                    }
                    Err(e) => {
                        tracing::error!(query_id = %id, %e, "the next coordinator run failed")
                    }
                }
            });
        }
        Err(message) => {
            handed.abandon().await;
            return Err(failed(message));
        }
    }
    tracing::info!(
        query_id = %query_id,
        generation = handed.resume.generation,
        function = %function,
        "query handed over to a new coordinator invocation"
    );
    Ok(())
}
