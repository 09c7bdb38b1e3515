//! Stopping a running task from outside, and dying on purpose.
//!
//! On the aws backend nothing can reach into a running Lambda invocation,
//! so a task looks for stop markers in the object store: its query's (the
//! query has ended) and its attempt's own (another attempt of the task was
//! accepted). `squall.fault.task_abort_rate` kills a worker that has a
//! process of its own, as a Lambda dies.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::ObjectStoreExt;
use object_store::path::Path;

use super::{WorkerEnv, session_config};
use crate::config::SquallConfig;
use crate::error::SquallError;
use crate::requests::{Request, RequestCounter};
use crate::task::{ObjectLocation, TaskSpec, attempt_stop_key};

/// Resolves once the task's query's stop marker, or its attempt's own
/// marker ([`attempt_stop_key`]), exists (its `s3://…/key` text, and
/// whether it was the attempt's); never, for a task without one.
///
/// The query's marker is looked for at the start and every
/// `squall.task.stop_poll_ms`. The attempt's marker only matters to an
/// attempt that another one was launched beside, which happens no earlier
/// than `squall.task.speculation_min_ms` after it started: it is looked for
/// from then on, at every fourth look, so most tasks (short ones) never
/// send that request and a long one adds a quarter to its HEADs.
///
/// Every look is a HEAD, counted into `requests`.
pub(super) async fn stop_requested(
    spec: &TaskSpec,
    env: &WorkerEnv,
    requests: &Arc<RequestCounter>,
) -> (String, bool) {
    let Some(marker) = &spec.stop_marker else {
        return std::future::pending().await;
    };
    let task = session_config(&spec.settings)
        .map(|c| SquallConfig::from_session(&c).task)
        .unwrap_or_default();
    let attempt = ObjectLocation {
        store_url: marker.store_url.clone(),
        key: attempt_stop_key(&marker.key, spec.stage, spec.task, spec.attempt),
    };
    let after = Duration::from_millis(task.speculation_min_ms);
    watch_markers(marker, &attempt, after, env, task.stop_poll_ms, requests).await
}

/// Looks at every fourth poll for the attempt's marker, once `after` has passed.
const ATTEMPT_MARKER_EVERY: u64 = 4;

async fn watch_markers(
    query: &ObjectLocation,
    attempt: &ObjectLocation,
    after: Duration,
    env: &WorkerEnv,
    poll_ms: u64,
    requests: &RequestCounter,
) -> (String, bool) {
    let text = |m: &ObjectLocation| format!("{}/{}", m.store_url.trim_end_matches('/'), m.key);
    let store = match ObjectStoreUrl::parse(&query.store_url)
        .and_then(|u| env.runtime.object_store(u))
    {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!(%e, marker = %text(query), "stop marker store unavailable; the task cannot be stopped early");
            return std::future::pending().await;
        }
    };
    let started = Instant::now();
    let mut warned = false;
    for look in 0u64.. {
        let of_attempt = started.elapsed() >= after && look % ATTEMPT_MARKER_EVERY == 0;
        let marker = if of_attempt { attempt } else { query };
        requests.count(Request::Head, 1);
        match store.head(&Path::from(marker.key.as_str())).await {
            Ok(_) => return (text(marker), of_attempt),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => {
                if !warned {
                    tracing::warn!(%e, marker = %text(marker), "looking for the stop marker failed; looking again later");
                    warned = true;
                }
            }
        }
        if poll_ms == 0 {
            return std::future::pending().await;
        }
        tokio::time::sleep(Duration::from_millis(poll_ms)).await;
    }
    std::future::pending().await
}

/// Set by a worker that has a process of its own (the worker function):
/// an injected abort (`squall.fault.task_abort_rate`) may then kill it.
static OWN_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Declares that this process runs only workers, so an injected abort
/// kills it (as a Lambda dies) instead of failing the attempt.
pub fn worker_has_own_process() {
    OWN_PROCESS.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// An injected abort: the process dies at once, no report and no cleanup;
/// an embedded worker fails the attempt instead.
pub(super) fn die(when: &str) -> Result<(), SquallError> {
    if OWN_PROCESS.load(std::sync::atomic::Ordering::SeqCst) {
        tracing::error!(when, "injected fault: the worker process aborts");
        std::process::abort();
    }
    Err(SquallError::InjectedFault(format!(
        "task aborted {when} (an embedded worker fails the attempt rather than kill the engine)"
    )))
}
