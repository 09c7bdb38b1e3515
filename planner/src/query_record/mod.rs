//! One query's record, the same on every backend: where it is in its life
//! ([`QueryState`]), how far it got ([`ProgressRecord`]), why it failed
//! ([`QueryFailure`], the one classification of an engine error) and where
//! its result is ([`ResultIndex`]), all in one [`QueryRecord`] kept behind
//! one [`QueryStore`]: in memory for the embedded service
//! ([`MemoryQueryStore`]), in an object store for the aws one
//! ([`ObjectQueryStore`], S3 under `squall.state_location`). The HTTP API
//! turns a record into its answer the same way from both.
//!
//! ```text
//! QueryRecord::queued ──start──> RUNNING ──finish(ResultIndex)──> FINISHED
//!        │                          │
//!        └────────fail(QueryFailure)┴──> FAILED, or CANCELED for a cancel
//! ```

mod memory;
mod object;
mod store;
#[cfg(test)]
mod tests;

use std::io::Cursor;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow::datatypes::SchemaRef;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::parser::ParserError;
use serde::{Deserialize, Serialize};

pub use self::memory::MemoryQueryStore;
pub use self::object::ObjectQueryStore;
pub use self::store::QueryStore;
use crate::coordinator::QueryProgress;
use crate::error::PlannerError;
use crate::profile::QueryProfile;

/// Where a query is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum QueryState {
    Queued,
    Running,
    Finished,
    Failed,
    Canceled,
}

impl QueryState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "QUEUED",
            Self::Running => "RUNNING",
            Self::Finished => "FINISHED",
            Self::Failed => "FAILED",
            Self::Canceled => "CANCELED",
        }
    }

    /// FINISHED, FAILED or CANCELED: the state will not change again.
    pub fn is_done(self) -> bool {
        matches!(self, Self::Finished | Self::Failed | Self::Canceled)
    }
}

/// What kind of error ended a query: enough for the API to give it Trino's
/// error name, code and type without the original `DataFusionError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The SQL does not parse.
    Syntax,
    /// Planning failed: an unknown table or column, a type error.
    Plan,
    /// A bad setting.
    Configuration,
    NotImplemented,
    ResourcesExhausted,
    /// The client cancelled the query.
    Canceled,
    /// Execution failed (a task ran out of attempts, a runtime error).
    Execution,
    /// The service itself failed (the coordinator could not be started or recorded).
    Internal,
    /// The service's admission queue was full.
    QueueFull,
    /// The server shut down while the query was queued or running.
    ShuttingDown,
    /// No client polled the query for too long, so it was stopped.
    Abandoned,
}

/// Why a query failed: the one classification of an engine error, which
/// the HTTP API turns into Trino's error name, code and type
/// (`squall_server::query_error`) on every backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryFailure {
    pub kind: ErrorKind,
    pub message: String,
}

impl QueryFailure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn canceled() -> Self {
        Self::new(ErrorKind::Canceled, "Query was canceled")
    }

    /// The kind and message of an engine error, looking through wrappers
    /// that add no meaning of their own (context, diagnostics, sharing).
    pub fn from_datafusion(error: &DataFusionError) -> Self {
        let mut root = error;
        loop {
            root = match root {
                DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => inner,
                DataFusionError::Shared(inner) => inner,
                DataFusionError::Collection(all) => match all.first() {
                    Some(first) => first,
                    None => break,
                },
                _ => break,
            };
        }
        match root {
            DataFusionError::SQL(parser, _) => {
                let text = match parser.as_ref() {
                    ParserError::TokenizerError(s) | ParserError::ParserError(s) => s.clone(),
                    ParserError::RecursionLimitExceeded => "recursion limit exceeded".to_string(),
                };
                Self::new(ErrorKind::Syntax, text)
            }
            DataFusionError::Configuration(m) => Self::new(ErrorKind::Configuration, m.clone()),
            DataFusionError::NotImplemented(m) => Self::new(ErrorKind::NotImplemented, m.clone()),
            DataFusionError::ResourcesExhausted(m) => {
                Self::new(ErrorKind::ResourcesExhausted, m.clone())
            }
            DataFusionError::Plan(m) => Self::new(ErrorKind::Plan, m.clone()),
            DataFusionError::SchemaError(..) => {
                Self::new(ErrorKind::Plan, root.message().into_owned())
            }
            _ => Self::new(ErrorKind::Execution, root.message().into_owned()),
        }
    }
}

/// Task and stage counts of a query at one moment (a snapshot of
/// [`QueryProgress`]), as a service reports them and the aws coordinator
/// records them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProgressRecord {
    pub total_tasks: u64,
    pub launched_tasks: u64,
    pub completed_tasks: u64,
    pub total_stages: u64,
    pub completed_stages: u64,
}

impl ProgressRecord {
    pub fn of(p: &QueryProgress) -> Self {
        use std::sync::atomic::Ordering::Relaxed;
        Self {
            total_tasks: p.total_tasks.load(Relaxed) as u64,
            launched_tasks: p.launched_tasks.load(Relaxed) as u64,
            completed_tasks: p.completed_tasks.load(Relaxed) as u64,
            total_stages: p.total_stages.load(Relaxed) as u64,
            completed_stages: p.completed_stages.load(Relaxed) as u64,
        }
    }
}

/// Byte range and row count of one page of a stored result. The range is
/// the store's own: bytes of the result object in an [`ObjectQueryStore`],
/// the page's number in a [`MemoryQueryStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRange {
    pub offset: u64,
    pub len: u64,
    pub rows: u64,
}

/// Where each page of a finished query's result is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultIndex {
    /// The result's schema: an Arrow IPC stream without batches, base64.
    pub schema: String,
    /// At least one page (an empty result is one empty page).
    pub pages: Vec<PageRange>,
}

impl ResultIndex {
    /// An index of `pages` in a result of `schema`.
    pub fn new(schema: &SchemaRef, pages: Vec<PageRange>) -> Result<Self> {
        let mut writer = StreamWriter::try_new(Vec::new(), schema)?;
        writer.finish()?;
        Ok(Self {
            schema: STANDARD.encode(writer.into_inner()?),
            pages,
        })
    }

    pub fn decode_schema(&self) -> Result<SchemaRef> {
        let bytes = STANDARD
            .decode(&self.schema)
            .map_err(|e| PlannerError::Corrupt {
                what: "result schema",
                message: format!("not base64: {e}"),
            })?;
        Ok(StreamReader::try_new(Cursor::new(bytes), None)?.schema())
    }

    /// Rows of all pages.
    pub fn rows(&self) -> u64 {
        self.pages.iter().map(|p| p.rows).sum()
    }
}

/// One query as the API reports it (`status.json` in an object store).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    pub query_id: String,
    /// The unguessable part of the query's URIs.
    pub slug: String,
    pub sql: String,
    pub state: QueryState,
    /// Milliseconds since the Unix epoch.
    pub submitted_ms: u64,
    #[serde(default)]
    pub started_ms: Option<u64>,
    #[serde(default)]
    pub ended_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<QueryFailure>,
    #[serde(default)]
    pub progress: ProgressRecord,
    #[serde(default)]
    pub rows: u64,
    #[serde(default)]
    pub profile: Option<QueryProfile>,
    /// Set when FINISHED.
    #[serde(default)]
    pub result: Option<ResultIndex>,
    /// Trino's `updateType` of a statement that is not a query (`SET SESSION`).
    #[serde(default)]
    pub update_type: Option<String>,
    /// Trino's `updateCount`: the rows a statement that changes rows
    /// changed (`INSERT`, `DELETE`, `UPDATE`).
    #[serde(default)]
    pub update_count: Option<u64>,
    /// Session properties the client is asked to set and to clear.
    #[serde(default)]
    pub session_set: Vec<(String, String)>,
    #[serde(default)]
    pub session_clear: Vec<String>,
    /// The catalog and schema the client is asked to use (`USE`).
    #[serde(default)]
    pub session_catalog: Option<String>,
    #[serde(default)]
    pub session_schema: Option<String>,
}

impl QueryRecord {
    /// A query accepted now and not yet started.
    pub fn queued(query_id: &str, slug: &str, sql: &str) -> Self {
        Self {
            query_id: query_id.to_string(),
            slug: slug.to_string(),
            sql: sql.to_string(),
            state: QueryState::Queued,
            submitted_ms: now_ms(),
            started_ms: None,
            ended_ms: None,
            error: None,
            progress: ProgressRecord::default(),
            rows: 0,
            profile: None,
            result: None,
            update_type: None,
            update_count: None,
            session_set: Vec::new(),
            session_clear: Vec::new(),
            session_catalog: None,
            session_schema: None,
        }
    }

    pub fn start(&mut self) {
        self.state = QueryState::Running;
        self.started_ms = Some(now_ms());
    }

    /// Ends the query FAILED or CANCELED (by the error's kind).
    pub fn fail(&mut self, error: QueryFailure) {
        self.state = if error.kind == ErrorKind::Canceled {
            QueryState::Canceled
        } else {
            QueryState::Failed
        };
        self.error = Some(error);
        self.ended_ms = Some(now_ms());
    }

    /// Ends the query FINISHED with its stored result.
    pub fn finish(&mut self, result: ResultIndex) {
        self.state = QueryState::Finished;
        self.rows = result.rows();
        self.result = Some(result);
        self.ended_ms = Some(now_ms());
    }
}

/// The rows a statement changed, from its answer: one row of one integer
/// column (DataFusion's `count` of an INSERT, DELETE or UPDATE).
pub fn update_count_of(batches: &[arrow::array::RecordBatch]) -> Option<u64> {
    use arrow::array::{Array, Int64Array, UInt64Array};
    let rows: Vec<_> = batches.iter().filter(|b| b.num_rows() > 0).collect();
    let [batch] = rows.as_slice() else {
        return None;
    };
    if batch.num_rows() != 1 || batch.num_columns() != 1 {
        return None;
    }
    let column = batch.column(0);
    if column.is_null(0) {
        return None;
    }
    if let Some(c) = column.as_any().downcast_ref::<UInt64Array>() {
        return Some(c.value(0));
    }
    column
        .as_any()
        .downcast_ref::<Int64Array>()
        .and_then(|c| u64::try_from(c.value(0)).ok())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
