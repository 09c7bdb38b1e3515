//! One query's record, the same on every backend: where it is in its life
//! ([`QueryState`]), how far it got ([`ProgressRecord`]) and why it failed
//! ([`QueryFailure`], the one classification of an engine error). The
//! embedded service keeps these in memory, the aws one in S3
//! (`squall_aws::state`); the HTTP API reads them the same way from both.

use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::parser::ParserError;
use serde::{Deserialize, Serialize};

use crate::coordinator::QueryProgress;

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_kind() {
        let e = DataFusionError::Plan("table 'x' not found".into()).context("planning");
        assert_eq!(
            QueryFailure::from_datafusion(&e),
            QueryFailure::new(ErrorKind::Plan, "table 'x' not found")
        );
        let e = DataFusionError::SQL(
            Box::new(ParserError::ParserError("bad at Line: 1, Column: 2".into())),
            None,
        );
        assert_eq!(QueryFailure::from_datafusion(&e).kind, ErrorKind::Syntax);
        let e = DataFusionError::Execution("stage s1, task 0 failed".into());
        assert_eq!(
            QueryFailure::from_datafusion(&e).message,
            "stage s1, task 0 failed"
        );
    }
}
