//! The JSON documents of the Trino client protocol, as squall writes them.
//!
//! Every answer to `POST /v1/statement` and to a `nextUri` is a
//! [`QueryResults`]:
//!
//! ```json
//! {"id": "20260101_120000_00001_abcde", "infoUri": "http://host/v1/query/…",
//!  "nextUri": "http://host/v1/statement/executing/…/1",
//!  "columns": [{"name": "n", "type": "bigint", "typeSignature": {"rawType": "bigint", "arguments": []}}],
//!  "data": [[42]],
//!  "stats": {"state": "FINISHED", "queued": false, "scheduled": true, "nodes": 1, "totalSplits": 9, …},
//!  "warnings": []}
//! ```
//!
//! `nextUri` is absent once there is nothing more to fetch; `columns` appear
//! once the result's schema is known (the query has finished), `data` only
//! with rows, `error` only on failure. Errors of the protocol itself (an
//! unknown query, a malformed request) use the same document with state
//! `FAILED` and an `error`, so clients that parse error bodies see one shape.
//!
//! The wire state is Trino's: a cancelled query is `FAILED` with the error
//! `USER_CANCELED`, since Trino's `stats.state` has no cancelled state.
//! This module builds documents; it does not decide what goes in them (the
//! router does) nor how values are encoded ([`encoding`](crate::encoding)).

use arrow::datatypes::Schema;
use serde::Serialize;
use serde_json::Value;

use crate::query_error::{ErrorCode, QueryError};
use crate::service::{QueryState, QueryStatus};
use crate::types::trino_type;

/// One answer of the statement protocol.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResults {
    pub id: String,
    pub info_uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<Vec<Column>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Vec<Value>>,
    pub stats: StatementStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    pub warnings: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_type: Option<String>,
    /// The rows an `INSERT`, `DELETE` or `UPDATE` changed (the Python
    /// client's `cursor.rowcount`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_count: Option<u64>,
}

/// A result column: name, Trino type name and type signature.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub type_signature: Value,
}

/// The columns of a result schema.
pub fn columns(schema: &Schema) -> Vec<Column> {
    schema
        .fields()
        .iter()
        .map(|f| {
            let t = trino_type(f.data_type());
            Column {
                name: f.name().clone(),
                type_name: t.display_name(),
                type_signature: t.signature(),
            }
        })
        .collect()
}

/// `stats` of a [`QueryResults`]. Splits are squall's tasks.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatementStats {
    pub state: String,
    pub queued: bool,
    pub scheduled: bool,
    pub nodes: u64,
    pub total_splits: u64,
    pub queued_splits: u64,
    pub running_splits: u64,
    pub completed_splits: u64,
    pub cpu_time_millis: u64,
    pub wall_time_millis: u64,
    pub queued_time_millis: u64,
    pub elapsed_time_millis: u64,
    pub processed_rows: u64,
    pub processed_bytes: u64,
    pub physical_input_bytes: u64,
    pub peak_memory_bytes: u64,
    pub spilled_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_percentage: Option<f64>,
}

/// The state as Trino's `stats.state` spells it.
pub fn wire_state(state: QueryState) -> &'static str {
    match state {
        QueryState::Canceled => "FAILED",
        other => other.as_str(),
    }
}

impl StatementStats {
    pub fn from_status(status: &QueryStatus) -> Self {
        let p = &status.progress;
        let m = &status.metrics;
        Self {
            state: wire_state(status.state).to_string(),
            queued: status.state == QueryState::Queued,
            scheduled: status.state != QueryState::Queued,
            nodes: 1,
            total_splits: p.total_tasks,
            queued_splits: p.queued_tasks,
            running_splits: p.running_tasks,
            completed_splits: p.completed_tasks,
            cpu_time_millis: m.cpu_ms,
            wall_time_millis: m.wall_ms,
            queued_time_millis: m.queued_ms,
            elapsed_time_millis: m.elapsed_ms,
            processed_rows: m.processed_rows,
            processed_bytes: m.processed_bytes,
            physical_input_bytes: m.physical_input_bytes,
            peak_memory_bytes: m.peak_memory_bytes,
            spilled_bytes: 0,
            progress_percentage: if status.state == QueryState::Finished {
                Some(100.0)
            } else {
                p.percentage()
            },
        }
    }

    /// Stats of a request that never became a running query.
    pub fn failed() -> Self {
        Self {
            state: "FAILED".to_string(),
            ..Self::default()
        }
    }
}

/// `error` of a [`QueryResults`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorInfo {
    pub message: String,
    pub error_code: i32,
    pub error_name: String,
    pub error_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_location: Option<ErrorLocation>,
    pub failure_info: FailureInfo,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorLocation {
    pub line_number: u32,
    pub column_number: u32,
}

/// Trino's `failureInfo`: the failure as an exception. squall has no Java
/// stack, so `stack` and `suppressed` are empty.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureInfo {
    #[serde(rename = "type")]
    pub failure_type: String,
    pub message: String,
    pub suppressed: Vec<Value>,
    pub stack: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_location: Option<ErrorLocation>,
}

impl From<&QueryError> for ErrorInfo {
    fn from(e: &QueryError) -> Self {
        let location = e
            .location
            .map(|(line_number, column_number)| ErrorLocation {
                line_number,
                column_number,
            });
        Self {
            message: e.message.clone(),
            error_code: e.code.code,
            error_name: e.code.name.to_string(),
            error_type: e.code.error_type.as_str().to_string(),
            error_location: location.clone(),
            failure_info: FailureInfo {
                failure_type: "squall.QueryError".to_string(),
                message: e.message.clone(),
                suppressed: Vec::new(),
                stack: Vec::new(),
                error_location: location,
            },
        }
    }
}

/// The document of a protocol error: state `FAILED` and an `error`.
pub fn error_results(
    id: &str,
    info_uri: String,
    code: ErrorCode,
    message: impl Into<String>,
) -> QueryResults {
    let error = QueryError::new(code, message);
    QueryResults {
        id: id.to_string(),
        info_uri,
        next_uri: None,
        columns: None,
        data: None,
        stats: StatementStats::failed(),
        error: Some(ErrorInfo::from(&error)),
        warnings: Vec::new(),
        update_type: None,
        update_count: None,
    }
}
