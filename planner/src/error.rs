//! [`PlannerError`]: the one error type of squall-planner. Every failure the
//! planner, the coordinator and the embedded backend raise themselves is a
//! variant with the fields that name what failed (the catalog and table,
//! the setting, the stage and task, the object); DataFusion's own errors
//! pass through untouched.
//!
//! It becomes a `DataFusionError` where DataFusion's `Result` is the
//! currency (the engine's API, operators), keeping the variant that says
//! whose fault it is: a bad catalog, table or location is `Plan`, a bad
//! setting `Configuration`, a cancelled, timed-out or failed query
//! `Execution`, an object that cannot be read `External`, a broken
//! invariant `Internal`. The HTTP API classifies errors into Trino's codes by
//! that variant (`squall_server::query_error`).

use std::time::Duration;

use datafusion::error::DataFusionError;
use squall_core::task::FailureKind;

/// What squall-planner itself can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PlannerError {
    /// A catalog location that cannot be listed or used.
    #[error("catalog {location}: {message}")]
    Catalog { location: String, message: String },
    /// A table of a catalog that cannot be registered.
    #[error("table {table} at {location}: {message}")]
    Table {
        table: String,
        location: String,
        message: String,
    },
    /// A location SQL names outside `squall.catalog.allowed_roots`.
    #[error(
        "{what} location {location:?} is outside the allowed roots ({roots}); \
         see squall.catalog.allowed_roots"
    )]
    OutsideRoots {
        what: String,
        location: String,
        roots: String,
    },
    /// A setting that does not parse or does not apply.
    #[error("{key}={value}: {message}")]
    Setting {
        key: String,
        value: String,
        message: String,
    },
    /// A setting only whoever runs the engine may set, named by a session.
    #[error(
        "setting {key} cannot be changed by a session; it is set where the engine runs \
         (--config or the SQUALL_* environment)"
    )]
    EngineOnlySetting { key: String },
    /// An empty statement.
    #[error("no SQL statement given")]
    NoStatement,
    /// The query was cancelled (by its client, Ctrl-C, or its service).
    #[error("{}", match .query_id { Some(id) => format!("query {id} was cancelled"), None => "query was cancelled".to_string() })]
    Cancelled { query_id: Option<String> },
    /// The query ran past `squall.query.timeout_secs`. The wording
    /// ("exceeded the timeout") is what the HTTP API maps to Trino's
    /// EXCEEDED_TIME_LIMIT, also when it has travelled as text.
    #[error(
        "query {query_id} exceeded the timeout of {} s (squall.query.timeout_secs); its tasks were stopped",
        .timeout.as_secs()
    )]
    TimedOut { query_id: String, timeout: Duration },
    /// A task failed for good: not retryable, or out of attempts.
    #[error("stage s{stage}, task {task} failed after {attempts} attempt(s): {message} ({kind})")]
    TaskFailed {
        stage: u32,
        task: u32,
        attempts: u32,
        kind: FailureKind,
        message: String,
    },
    /// No task reported for `squall.task.silence_timeout_secs`.
    #[error(
        "query {query_id}: no task reported for {}s (squall.task.silence_timeout_secs); waiting for {waiting_for}",
        .silence.as_secs()
    )]
    Silent {
        query_id: String,
        silence: Duration,
        waiting_for: String,
    },
    /// An object of the query (result, key section, key filter, Parquet
    /// footer) that cannot be read or written.
    #[error("{what} {location}: {source}")]
    Object {
        what: &'static str,
        location: String,
        #[source]
        source: object_store::Error,
    },
    /// A Parquet footer that cannot be read.
    #[error("reading Parquet footer of {file}: {message}")]
    Footer { file: String, message: String },
    /// A stored document (a query record, a result's schema) that does not decode.
    #[error("{what}: {message}")]
    Corrupt { what: &'static str, message: String },
    /// A stage plan that would not run as planned in a worker: a property
    /// lost at the cut or through the task codec (`plan_check`).
    #[error("{stage}: {message}")]
    StagePlan { stage: String, message: String },
    /// A coordinator run cannot resume its query from the checkpoint its
    /// predecessor handed over (`coordinator::checkpoint`).
    #[error(
        "query {query_id}: cannot resume from the checkpoint of its previous coordinator run: {reason}"
    )]
    Resume { query_id: String, reason: String },
    /// A query still running after `squall.coordinator.max_handoffs` hand-offs.
    #[error(
        "query {query_id}: still running after {handoffs} coordinator hand-offs (squall.coordinator.max_handoffs)"
    )]
    TooManyHandoffs { query_id: String, handoffs: u32 },
    /// A staged plan that breaks an invariant the planner keeps (a bug).
    #[error("{0}")]
    Internal(String),
}

impl From<PlannerError> for DataFusionError {
    fn from(e: PlannerError) -> Self {
        match e {
            PlannerError::Catalog { .. }
            | PlannerError::Table { .. }
            | PlannerError::OutsideRoots { .. }
            | PlannerError::StagePlan { .. }
            | PlannerError::NoStatement => DataFusionError::Plan(e.to_string()),
            PlannerError::Setting { .. } | PlannerError::EngineOnlySetting { .. } => {
                DataFusionError::Configuration(e.to_string())
            }
            PlannerError::Cancelled { .. }
            | PlannerError::TimedOut { .. }
            | PlannerError::TaskFailed { .. }
            | PlannerError::Silent { .. }
            | PlannerError::Resume { .. }
            | PlannerError::TooManyHandoffs { .. } => DataFusionError::Execution(e.to_string()),
            PlannerError::Object { .. }
            | PlannerError::Footer { .. }
            | PlannerError::Corrupt { .. } => DataFusionError::External(Box::new(e)),
            PlannerError::Internal(m) => DataFusionError::Internal(m),
        }
    }
}
