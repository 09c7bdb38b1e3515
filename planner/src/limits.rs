//! Query limits the engine enforces on every backend: which settings a
//! client's session may change, limits a session may lower but never raise,
//! and the statement timeout.
//!
//! ```text
//! engine settings (--config, SQUALL_*)      session settings (X-Trino-Session, SET SESSION, RunOptions)
//!            │                                         │ check_session_setting: no deployment or security keys
//!            └──────────── effective = min_nonzero(engine, session) for the limits ──> the query's config
//!                                                                                       │ sent to every task
//! statement ── until_cancelled(planning) ── run_query(cancel = child token) ──┐
//!     timer (squall.query.timeout_secs) ── cancels the child token ──────────┴─> "exceeded the timeout of N s"
//! ```
//!
//! A timed-out query is stopped exactly like a cancelled one (the coordinator
//! stops its tasks and deletes its exchange objects); only the error differs.
//! What this module does not do: admission (the HTTP API's service queues
//! queries) or per-task memory accounting (`squall_core::memory`).

use crate::error::PlannerError;
use std::time::Duration;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionConfig;
use squall_core::config::SquallConfig;
use tokio_util::sync::CancellationToken;

/// Settings only whoever runs the engine sets (`--config`, `SQUALL_*`): where
/// tasks run and write, what SQL may read, admission. A session naming one of
/// these (or anything under a key ending in `.`) is refused.
const ENGINE_ONLY: &[&str] = &[
    "squall.backend",
    "squall.exchange_location",
    "squall.worker_function",
    "squall.coordinator_function",
    "squall.queue_prefix",
    "squall.payload_location",
    "squall.inline_payload_bytes",
    "squall.state_location",
    "squall.worker_slots",
    "squall.worker_memory_mb",
    "squall.process_memory_bytes",
    "squall.coordinator_memory_mb",
    "squall.coordinator_start_wait_ms",
    "squall.state_poll_ms",
    "squall.coordinator.max_handoffs",
    "squall.server.",
    "squall.catalog.",
    "datafusion.runtime.",
    "datafusion.catalog.",
];

/// Limits a session may lower, never raise (0 = no limit).
const LOWER_ONLY: &[&str] = &[
    "squall.query.timeout_secs",
    "squall.query.memory_limit_bytes",
    "squall.task.memory_limit_bytes",
    "squall.coordinator.max_run_secs",
];

/// Refuses a setting a client's session may not change, with an error
/// naming it (a `Configuration` error: Trino's INVALID_SESSION_PROPERTY).
pub fn check_session_setting(key: &str) -> Result<()> {
    let key = key.trim().to_ascii_lowercase();
    let refused = ENGINE_ONLY.iter().any(|k| {
        if k.ends_with('.') {
            key.starts_with(k) || key == k.trim_end_matches('.')
        } else {
            key == *k
        }
    });
    if refused {
        return Err(PlannerError::EngineOnlySetting {
            key: key.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Applies the per-query `settings` to `config` (the engine's session
/// config): each must pass [`check_session_setting`], and the limits end up
/// as the stricter of the engine's and the session's.
pub fn apply_session_settings(
    config: &mut SessionConfig,
    settings: &[(String, String)],
) -> Result<()> {
    if settings.is_empty() {
        return Ok(());
    }
    let engine: Vec<(String, f64)> = LOWER_ONLY
        .iter()
        .map(|k| (k.to_string(), limit_value(config, k)))
        .collect();
    for (name, value) in settings {
        // Trino's own properties as squall's settings, or left out.
        let Some((k, v)) = crate::trino_session::as_setting(name, value)? else {
            continue;
        };
        check_session_setting(&k)?;
        config
            .options_mut()
            .set(&k, &v)
            .map_err(|e| setting_error(&k, &v, e))?;
    }
    for (key, engine_value) in engine {
        let session_value = limit_value(config, &key);
        let effective = min_nonzero(engine_value, session_value);
        if effective != session_value {
            config
                .options_mut()
                .set(&key, &effective.to_string())
                .map_err(|e| setting_error(&key, &effective.to_string(), e))?;
        }
    }
    Ok(())
}

/// The stricter of two limits where 0 (or less) means none.
fn min_nonzero(a: f64, b: f64) -> f64 {
    match (a > 0.0, b > 0.0) {
        (false, _) => b,
        (_, false) => a,
        _ => a.min(b),
    }
}

/// A lower-only limit's value (integers exactly: they stay below 2^53).
fn limit_value(config: &SessionConfig, key: &str) -> f64 {
    let squall = SquallConfig::from_session(config);
    match key {
        "squall.query.timeout_secs" => squall.query.timeout_secs as f64,
        "squall.query.memory_limit_bytes" => squall.query.memory_limit_bytes as f64,
        "squall.task.memory_limit_bytes" => squall.task.memory_limit_bytes as f64,
        "squall.coordinator.max_run_secs" => squall.coordinator.max_run_secs,
        _ => 0.0,
    }
}

/// The statement timeout of a query's config, if any.
pub fn statement_timeout(config: &SessionConfig) -> Option<Duration> {
    let secs = SquallConfig::from_session(config).query.timeout_secs;
    (secs > 0).then(|| Duration::from_secs(secs))
}

/// The error of a query stopped by its timeout. Its wording ("exceeded the
/// timeout") is what the HTTP API maps to Trino's EXCEEDED_TIME_LIMIT, also
/// when it has travelled as text (the aws query state).
pub fn timeout_error(query_id: &str, timeout: Duration) -> DataFusionError {
    PlannerError::TimedOut {
        query_id: query_id.to_string(),
        timeout,
    }
    .into()
}

/// Whether an error is [`timeout_error`]'s.
pub fn is_timeout_message(message: &str) -> bool {
    message.contains("exceeded the timeout of")
}

/// A deadline for one statement: a child of the caller's cancellation token
/// that a timer cancels when the timeout passes.
pub struct Deadline {
    pub token: CancellationToken,
    parent: CancellationToken,
    timer: Option<tokio::task::JoinHandle<()>>,
}

impl Deadline {
    pub fn new(parent: &CancellationToken, timeout: Option<Duration>) -> Self {
        let token = parent.child_token();
        let timer = timeout.map(|t| {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep(t).await;
                token.cancel();
            })
        });
        Self {
            token,
            parent: parent.clone(),
            timer,
        }
    }

    /// True when the timer, not the caller, stopped the statement.
    pub fn expired(&self) -> bool {
        self.timer.is_some() && self.token.is_cancelled() && !self.parent.is_cancelled()
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(t) = self.timer.take() {
            t.abort();
        }
    }
}

/// Runs `work` unless `cancel` fires first (then: a "cancelled" error).
/// For phases that start no tasks (planning, DDL), so dropping them is safe.
pub async fn until_cancelled<T>(
    cancel: &CancellationToken,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::select! {
        r = work => r,
        _ = cancel.cancelled() => Err(PlannerError::Cancelled { query_id: None }.into()),
    }
}

/// A setting that `config` refused.
pub fn setting_error(key: &str, value: &str, e: impl std::fmt::Display) -> DataFusionError {
    PlannerError::Setting {
        key: key.to_string(),
        value: value.to_string(),
        message: e.to_string(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::session_config;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn sessions_cannot_touch_deployment_settings() {
        for key in [
            "squall.exchange_location",
            "SQUALL.Worker_Function",
            "squall.catalog.allowed_roots",
            "squall.server.max_running_queries",
            "squall.process_memory_bytes",
            "datafusion.runtime.temp_directory",
        ] {
            let err = check_session_setting(key).unwrap_err().to_string();
            assert!(err.contains("cannot be changed by a session"), "{err}");
        }
        for key in [
            "squall.shuffle.partitions",
            "squall.query.timeout_secs",
            "datafusion.execution.batch_size",
        ] {
            check_session_setting(key).unwrap();
        }
    }

    #[test]
    fn limits_are_lowered_never_raised() {
        let mut config = session_config(&settings(&[
            ("squall.query.timeout_secs", "10"),
            ("squall.query.memory_limit_bytes", "1000"),
        ]))
        .unwrap();
        apply_session_settings(
            &mut config,
            &settings(&[
                ("squall.query.timeout_secs", "0"),
                ("squall.query.memory_limit_bytes", "500"),
                ("squall.task.memory_limit_bytes", "300"),
            ]),
        )
        .unwrap();
        let squall = SquallConfig::from_session(&config);
        assert_eq!(
            squall.query.timeout_secs, 10,
            "0 (none) cannot lift the limit"
        );
        assert_eq!(squall.query.memory_limit_bytes, 500);
        assert_eq!(squall.task.memory_limit_bytes, 300);
        let mut config = session_config(&settings(&[("squall.query.timeout_secs", "10")])).unwrap();
        apply_session_settings(
            &mut config,
            &settings(&[("squall.query.timeout_secs", "60")]),
        )
        .unwrap();
        assert_eq!(SquallConfig::from_session(&config).query.timeout_secs, 10);
        assert_eq!(statement_timeout(&config), Some(Duration::from_secs(10)));
        let err = apply_session_settings(&mut config, &settings(&[("squall.backend", "aws")]))
            .unwrap_err();
        assert!(matches!(err, DataFusionError::Configuration(_)), "{err}");
    }
}
