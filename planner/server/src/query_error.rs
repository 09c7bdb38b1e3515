//! [`QueryError`]: why a query failed, in Trino's terms — a message, an
//! error name and code from Trino's `StandardErrorCode` table, and an error
//! type. Clients branch on the type: the `trino` Python client raises
//! `TrinoUserError` for `USER_ERROR` and `TrinoQueryError` otherwise; the
//! JDBC driver maps names to SQLSTATEs.
//!
//! [`QueryError::from_failure`] is the one mapping of a query's failure
//! (`squall_planner::query_record::QueryFailure`, itself the one
//! classification of an engine error) into Trino's terms, on every backend;
//! [`QueryError::from_datafusion`] is the two in a row:
//!
//! | engine error | Trino error |
//! |---|---|
//! | SQL parser error | `SYNTAX_ERROR` (1), with the line and column when the parser gives them |
//! | `table '…' not found`, `No table named '…'` | `TABLE_NOT_FOUND` (46) |
//! | schema error: no field named … | `COLUMN_NOT_FOUND` (47) |
//! | an unknown function, or none of its name for the arguments' types (`failed to match any signature`, also at run time) | `FUNCTION_NOT_FOUND` (6) |
//! | a function refusing its argument (`json_parse` of text that is not JSON, a bad JSON path, a series past its ceiling) | `INVALID_FUNCTION_ARGUMENT` (7) |
//! | other planning / schema errors | `GENERIC_USER_ERROR` (0) |
//! | configuration (a bad setting) | `INVALID_SESSION_PROPERTY` (14) |
//! | not implemented (also found by a task: `count(DISTINCT a, b)`) | `NOT_SUPPORTED` (13) |
//! | divide by zero | `DIVISION_BY_ZERO` (8) |
//! | an integer `+`, `-`, `*` past its type's range (arithmetic overflow) | `NUMERIC_VALUE_OUT_OF_RANGE` (19) |
//! | a scalar subquery's second row | `SUBQUERY_MULTIPLE_ROWS` (28) |
//! | `CREATE TABLE` / `CREATE VIEW` of a name taken, `CREATE SCHEMA` of one there | `TABLE_ALREADY_EXISTS` (50), `SCHEMA_ALREADY_EXISTS` (49) |
//! | cast error (also a cast of JSON text that does not fit, text read as a timestamp, a value too large for its DECIMAL) | `INVALID_CAST_ARGUMENT` (9) |
//! | operands no type holds both (DataFusion's "Failed to coerce types") | `TYPE_MISMATCH` (58) |
//! | invalid input syntax (an unreadable literal), a field read of a value that is not a row, a NULL inserted into a NOT NULL column | `GENERIC_USER_ERROR` (0) |
//! | cancelled | `USER_CANCELED` (3) |
//! | exceeded the timeout (`squall.query.timeout_secs`) | `EXCEEDED_TIME_LIMIT` (131075, `INSUFFICIENT_RESOURCES`) |
//! | resources exhausted, a task's `memory_limit` failure | `EXCEEDED_LOCAL_MEMORY_LIMIT` (131079, `INSUFFICIENT_RESOURCES`) |
//! | anything else | `GENERIC_INTERNAL_ERROR` (65536, `INTERNAL_ERROR`) |
//!
//! Errors that come back from tasks are often flattened to text on the way
//! (a task report carries a message), so the last rows also match on the
//! message. The service's own decisions have kinds of their own: a full
//! admission queue is `QUERY_QUEUE_FULL` (131074, `INSUFFICIENT_RESOURCES`),
//! a query stopped by a shutdown `SERVER_SHUTTING_DOWN` (65545), one nobody
//! polled `ABANDONED_QUERY` (2). This module does not decide HTTP statuses:
//! a failed query is reported with 200 and `error` in the body, as Trino does.

use datafusion::error::DataFusionError;
use squall_planner::query_record::{ErrorKind, QueryFailure};

/// Trino's error types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    UserError,
    InternalError,
    InsufficientResources,
    External,
}

impl ErrorType {
    /// The name on the wire (`USER_ERROR`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UserError => "USER_ERROR",
            Self::InternalError => "INTERNAL_ERROR",
            Self::InsufficientResources => "INSUFFICIENT_RESOURCES",
            Self::External => "EXTERNAL",
        }
    }
}

/// An entry of Trino's `StandardErrorCode` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode {
    pub name: &'static str,
    pub code: i32,
    pub error_type: ErrorType,
}

const fn user(name: &'static str, code: i32) -> ErrorCode {
    ErrorCode {
        name,
        code,
        error_type: ErrorType::UserError,
    }
}

pub const GENERIC_USER_ERROR: ErrorCode = user("GENERIC_USER_ERROR", 0);
pub const SYNTAX_ERROR: ErrorCode = user("SYNTAX_ERROR", 1);
pub const ABANDONED_QUERY: ErrorCode = user("ABANDONED_QUERY", 2);
pub const USER_CANCELED: ErrorCode = user("USER_CANCELED", 3);
pub const PERMISSION_DENIED: ErrorCode = user("PERMISSION_DENIED", 4);
pub const NOT_FOUND: ErrorCode = user("NOT_FOUND", 5);
pub const FUNCTION_NOT_FOUND: ErrorCode = user("FUNCTION_NOT_FOUND", 6);
pub const INVALID_FUNCTION_ARGUMENT: ErrorCode = user("INVALID_FUNCTION_ARGUMENT", 7);
pub const DIVISION_BY_ZERO: ErrorCode = user("DIVISION_BY_ZERO", 8);
pub const INVALID_CAST_ARGUMENT: ErrorCode = user("INVALID_CAST_ARGUMENT", 9);
pub const SUBQUERY_MULTIPLE_ROWS: ErrorCode = user("SUBQUERY_MULTIPLE_ROWS", 28);
pub const NUMERIC_VALUE_OUT_OF_RANGE: ErrorCode = user("NUMERIC_VALUE_OUT_OF_RANGE", 19);
pub const NOT_SUPPORTED: ErrorCode = user("NOT_SUPPORTED", 13);
pub const INVALID_SESSION_PROPERTY: ErrorCode = user("INVALID_SESSION_PROPERTY", 14);
pub const TABLE_NOT_FOUND: ErrorCode = user("TABLE_NOT_FOUND", 46);
pub const COLUMN_NOT_FOUND: ErrorCode = user("COLUMN_NOT_FOUND", 47);
pub const SCHEMA_ALREADY_EXISTS: ErrorCode = user("SCHEMA_ALREADY_EXISTS", 49);
pub const TABLE_ALREADY_EXISTS: ErrorCode = user("TABLE_ALREADY_EXISTS", 50);
pub const TYPE_MISMATCH: ErrorCode = user("TYPE_MISMATCH", 58);
pub const GENERIC_INTERNAL_ERROR: ErrorCode = ErrorCode {
    name: "GENERIC_INTERNAL_ERROR",
    code: 65536,
    error_type: ErrorType::InternalError,
};
pub const SERVER_SHUTTING_DOWN: ErrorCode = ErrorCode {
    name: "SERVER_SHUTTING_DOWN",
    code: 65545,
    error_type: ErrorType::InternalError,
};
pub const QUERY_QUEUE_FULL: ErrorCode = ErrorCode {
    name: "QUERY_QUEUE_FULL",
    code: 131074,
    error_type: ErrorType::InsufficientResources,
};
pub const EXCEEDED_TIME_LIMIT: ErrorCode = ErrorCode {
    name: "EXCEEDED_TIME_LIMIT",
    code: 131075,
    error_type: ErrorType::InsufficientResources,
};
pub const EXCEEDED_LOCAL_MEMORY_LIMIT: ErrorCode = ErrorCode {
    name: "EXCEEDED_LOCAL_MEMORY_LIMIT",
    code: 131079,
    error_type: ErrorType::InsufficientResources,
};

/// Why a query failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    pub message: String,
    pub code: ErrorCode,
    /// 1-based line and column of a syntax error, when known.
    pub location: Option<(u32, u32)>,
}

impl QueryError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code,
            location: None,
        }
    }

    /// The error of a query cancelled by its client.
    pub fn canceled() -> Self {
        Self::new(USER_CANCELED, "Query was canceled")
    }

    /// Classifies an engine error (see the module table).
    pub fn from_datafusion(error: &DataFusionError) -> Self {
        Self::from_failure(&QueryFailure::from_datafusion(error))
    }

    /// A query's failure in Trino's terms: the one mapping, whether the
    /// failure comes straight from the engine (embedded) or from a stored
    /// query record (aws).
    pub fn from_failure(failure: &QueryFailure) -> Self {
        let m = failure.message.clone();
        match failure.kind {
            ErrorKind::Canceled => Self::canceled(),
            ErrorKind::Internal => Self::new(GENERIC_INTERNAL_ERROR, m),
            ErrorKind::QueueFull => Self::new(QUERY_QUEUE_FULL, m),
            ErrorKind::ShuttingDown => Self::new(SERVER_SHUTTING_DOWN, m),
            ErrorKind::Abandoned => Self::new(ABANDONED_QUERY, m),
            ErrorKind::Syntax => Self {
                location: parse_location(&m),
                message: m,
                code: SYNTAX_ERROR,
            },
            ErrorKind::Configuration => Self::new(INVALID_SESSION_PROPERTY, m),
            ErrorKind::NotImplemented => Self::new(NOT_SUPPORTED, m),
            ErrorKind::ResourcesExhausted => Self::new(EXCEEDED_LOCAL_MEMORY_LIMIT, m),
            ErrorKind::Plan => Self::new(classify_user_message(&m), m),
            ErrorKind::Execution => Self::new(classify_runtime_message(&m), m),
        }
    }
}

fn classify_user_message(m: &str) -> ErrorCode {
    let lower = m.to_ascii_lowercase();
    if let Some(code) = already_exists(&lower) {
        code
    } else if is_unknown_table(&lower) {
        TABLE_NOT_FOUND
    } else if lower.contains("no field named") {
        COLUMN_NOT_FOUND
    } else if is_unknown_function(&lower) {
        FUNCTION_NOT_FOUND
    } else if squall_core::trino_udfs::is_argument_error(m) {
        INVALID_FUNCTION_ARGUMENT
    } else {
        GENERIC_USER_ERROR
    }
}

/// A function of that name, or of that name for the arguments' types,
/// is not there (DataFusion says it in several ways, some at run time).
fn is_unknown_function(lower: &str) -> bool {
    lower.contains("invalid function '")
        || lower.contains("no function matches the given name")
        || lower.contains("failed to match any signature")
}

/// A table, view or schema created under a name already taken
/// (DataFusion's "Table 't' already exists", squall's "schema 's' already
/// exists").
fn already_exists(lower: &str) -> Option<ErrorCode> {
    if !lower.contains("already exists") {
        None
    } else if lower.contains("schema '") {
        Some(SCHEMA_ALREADY_EXISTS)
    } else if lower.contains("table '") || lower.contains("view '") {
        Some(TABLE_ALREADY_EXISTS)
    } else {
        None
    }
}

fn is_unknown_table(lower: &str) -> bool {
    (lower.contains("table '") && (lower.contains("not found") || lower.contains("doesn't exist")))
        || lower.contains("no table named")
}

fn classify_runtime_message(m: &str) -> ErrorCode {
    let lower = m.to_ascii_lowercase();
    if let Some(code) = already_exists(&lower) {
        code
    } else if squall_planner::limits::is_timeout_message(m) {
        EXCEEDED_TIME_LIMIT
    } else if lower.contains("(memory_limit)") || lower.contains("resources exhausted") {
        EXCEEDED_LOCAL_MEMORY_LIMIT
    } else if lower.contains("this feature is not implemented") {
        // Found by a task, after planning (`count(DISTINCT a, b)`).
        NOT_SUPPORTED
    } else if lower.contains("cancelled") || lower.contains("canceled") {
        USER_CANCELED
    } else if lower.contains("divide by zero") || lower.contains("division by zero") {
        DIVISION_BY_ZERO
    } else if lower.contains("arithmetic overflow")
        || lower.contains("overflow happened on")
        || (lower.contains("compute error") && lower.contains("overflow"))
    {
        // Arrow's kernels word theirs "Int64Array overflow on abs(...)".
        NUMERIC_VALUE_OUT_OF_RANGE
    } else if lower.contains("cast error")
        || lower.contains("cannot cast")
        || lower.contains("unable to cast")
        || lower.contains("error parsing timestamp from")
        || lower.contains("too large to store in a decimal")
        || squall_core::trino_udfs::is_cast_error(m)
    {
        // Text read as a date or timestamp beside one (`ts < 'FRANCE'`).
        INVALID_CAST_ARGUMENT
    } else if lower.contains("failed to coerce types") {
        // Operands no type holds both, found by DataFusion's type coercion
        // as an internal error (`(a > 1) BETWEEN 1 AND 2`).
        TYPE_MISMATCH
    } else if squall_core::trino_udfs::is_argument_error(m) {
        INVALID_FUNCTION_ARGUMENT
    } else if m.contains(squall_core::exec::RECURSION_TOO_DEEP) {
        // Trino's class for its `max_recursion_depth`.
        NOT_SUPPORTED
    } else if m.contains(squall_core::scalar_subquery::TOO_MANY_ROWS) {
        SUBQUERY_MULTIPLE_ROWS
    } else if is_unknown_function(&lower) {
        // A signature DataFusion checks as the plan is made physical.
        FUNCTION_NOT_FOUND
    } else if is_unknown_table(&lower) {
        TABLE_NOT_FOUND
    } else if lower.contains("invalid input syntax")
        || lower.contains("cannot access field at argument")
        || lower.contains("is declared as non-nullable but contains null values")
    {
        // A literal the engine cannot read (`interval '1-x' year`); a field
        // of a value that has none (`d.f` of a DATE in a select list); a
        // NULL inserted into a NOT NULL column.
        GENERIC_USER_ERROR
    } else {
        GENERIC_INTERNAL_ERROR
    }
}

/// `… at Line: 1, Column: 8` (sqlparser's wording) as (line, column).
fn parse_location(text: &str) -> Option<(u32, u32)> {
    let at = text.rfind("Line: ")?;
    let rest = &text[at + "Line: ".len()..];
    let (line, rest) = rest.split_once(',')?;
    let column = rest.trim_start().strip_prefix("Column: ")?;
    let digits: String = column.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((line.trim().parse().ok()?, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::Column;
    use datafusion::common::SchemaError;
    use datafusion::sql::sqlparser::parser::ParserError;

    #[test]
    fn parser_errors_are_syntax_errors_with_a_location() {
        let e = DataFusionError::SQL(
            Box::new(ParserError::ParserError(
                "Expected: an SQL statement, found: selec at Line: 1, Column: 1".into(),
            )),
            None,
        );
        let q = QueryError::from_datafusion(&e);
        assert_eq!(q.code, SYNTAX_ERROR);
        assert_eq!(q.location, Some((1, 1)));
        assert!(q.message.contains("selec"));
    }

    #[test]
    fn planning_errors_are_user_errors() {
        let e = DataFusionError::Plan("table 'datafusion.public.nope' not found".into());
        assert_eq!(QueryError::from_datafusion(&e).code, TABLE_NOT_FOUND);
        // SHOW COLUMNS / SHOW CREATE TABLE of a table there is not.
        let e = DataFusionError::Plan("No table named 'nosuch'".into());
        assert_eq!(QueryError::from_datafusion(&e).code, TABLE_NOT_FOUND);
        let e = DataFusionError::SchemaError(
            Box::new(SchemaError::FieldNotFound {
                field: Box::new(Column::from_name("x")),
                valid_fields: vec![],
            }),
            Box::new(None),
        );
        let q = QueryError::from_datafusion(&e);
        assert_eq!(q.code, COLUMN_NOT_FOUND, "{q:?}");
        let e = DataFusionError::Plan("something else".into()).context("planning");
        assert_eq!(QueryError::from_datafusion(&e).code, GENERIC_USER_ERROR);
        let e = DataFusionError::Plan("Invalid function 'nope'.\nDid you mean 'now'?".into());
        assert_eq!(QueryError::from_datafusion(&e).code, FUNCTION_NOT_FOUND);
    }

    #[test]
    fn functions_refusing_their_arguments_are_user_errors() {
        for (message, code) in [
            (
                "stage s1, task 0 failed after 1 attempt(s): Execution error: json_parse: '{' is not JSON: EOF",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "json_extract: invalid JSON path 'a.b': it does not begin with $",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "range(...) would build an array of 3000000000 elements, more than ...",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "stage s1, task 0 failed after 1 attempt(s): Execution error: Date part 'profit' not supported",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "Parser error: Invalid timezone \"Mars/Base\": failed to parse timezone",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "array_sort: the comparator must answer -1, 0 or 1, not 2",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "Error during planning: lag: offset must be at least 0",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "CAST of JSON '[1, \"x\"]' to List(Int64): failed to parse",
                INVALID_CAST_ARGUMENT,
            ),
            // DataFusion's own refusals (chr(-1), regexp_like(s, '('),
            // sequence(1, 10, 0), ntile(0)).
            (
                "Execution error: invalid Unicode scalar value: -1",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "regex parse error:\n    (\n    ^\nerror: unclosed group",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "step can't be 0 for function generate_series(start [, stop, step])",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "NTILE requires a positive integer",
                INVALID_FUNCTION_ARGUMENT,
            ),
            (
                "map key must be unique, duplicate key found: 1",
                INVALID_FUNCTION_ARGUMENT,
            ),
            ("field position must not be zero", INVALID_FUNCTION_ARGUMENT),
            (
                "Unsupported date_trunc granularity: 'fortnight'. Supported values are: ...",
                INVALID_FUNCTION_ARGUMENT,
            ),
        ] {
            let q = QueryError::from_datafusion(&DataFusionError::Execution(message.into()));
            assert_eq!(q.code, code, "{message}");
            assert_eq!(q.code.error_type, ErrorType::UserError);
        }
    }

    #[test]
    fn operands_of_no_common_type_and_unreadable_timestamps_are_user_errors() {
        for (message, code) in [
            (
                "Internal error: Failed to coerce types Boolean and Int64 in BETWEEN expression.\n\
                 This issue was likely caused by a bug in DataFusion's code.",
                TYPE_MISMATCH,
            ),
            (
                "Parser error: Error parsing timestamp from 'FRANCE': timestamp must contain \
                 at least 10 characters",
                INVALID_CAST_ARGUMENT,
            ),
            (
                "stage s1, task 0 failed after 1 attempt(s): Arrow error: Invalid argument \
                 error: 25.00 is too large to store in a Decimal128 of precision 2. Max is 0.99",
                INVALID_CAST_ARGUMENT,
            ),
        ] {
            let e = DataFusionError::Internal(message.into());
            let q = QueryError::from_datafusion(&e);
            assert_eq!(q.code, code, "{message}");
            assert_eq!(q.code.error_type, ErrorType::UserError);
        }
    }

    #[test]
    fn runtime_errors() {
        let e = DataFusionError::Execution("query was cancelled".into());
        assert_eq!(QueryError::from_datafusion(&e).code, USER_CANCELED);
        let e =
            DataFusionError::Execution("stage 2 task 0: Arrow error: Divide by zero error".into());
        assert_eq!(QueryError::from_datafusion(&e).code, DIVISION_BY_ZERO);
        let e = DataFusionError::Execution(
            "Function 'sum' failed to match any signature, errors: ...".into(),
        );
        assert_eq!(QueryError::from_datafusion(&e).code, FUNCTION_NOT_FOUND);
        let e = DataFusionError::Execution("Table 'with' doesn't exist.".into());
        assert_eq!(QueryError::from_datafusion(&e).code, TABLE_NOT_FOUND);
        let e = DataFusionError::Execution("Table 't2' already exists".into());
        assert_eq!(QueryError::from_datafusion(&e).code, TABLE_ALREADY_EXISTS);
        let e = DataFusionError::Plan("schema 's' already exists".into());
        assert_eq!(QueryError::from_datafusion(&e).code, SCHEMA_ALREADY_EXISTS);
        assert_eq!(TABLE_ALREADY_EXISTS.code, 50);
        assert_eq!(SUBQUERY_MULTIPLE_ROWS.code, 28);
        let e = DataFusionError::ArrowError(
            Box::new(arrow::error::ArrowError::ArithmeticOverflow(
                "bigint addition overflow: 9223372036854775807 + 1".into(),
            )),
            None,
        );
        assert_eq!(
            QueryError::from_datafusion(&e).code,
            NUMERIC_VALUE_OUT_OF_RANGE
        );
        let e = DataFusionError::Execution(
            "stage s1, task 0 failed after 1 attempt(s): Compute error: Int64Array overflow on abs(-9223372036854775808) (data)".into(),
        );
        assert_eq!(
            QueryError::from_datafusion(&e).code,
            NUMERIC_VALUE_OUT_OF_RANGE
        );
        let e = DataFusionError::Execution(
            "stage s1, task 0 failed after 1 attempt(s): Execution error: Scalar subquery returned more than one row (data)".into(),
        );
        assert_eq!(QueryError::from_datafusion(&e).code, SUBQUERY_MULTIPLE_ROWS);
        let e = DataFusionError::Execution(
            "stage s1, task 0 failed after 1 attempt(s): Execution error: recursion depth limit exceeded: the recursive query t still made rows after 10000 iterations (data)".into(),
        );
        assert_eq!(QueryError::from_datafusion(&e).code, NOT_SUPPORTED);
        let e = DataFusionError::Execution(
            "Parser error: Invalid input syntax for type interval: \"1-x YEAR\"".into(),
        );
        assert_eq!(QueryError::from_datafusion(&e).code, GENERIC_USER_ERROR);
        let e = DataFusionError::Execution(
            "stage s1, task 0 failed after 1 attempt(s): This feature is not implemented: COUNT DISTINCT with multiple arguments".into(),
        );
        assert_eq!(QueryError::from_datafusion(&e).code, NOT_SUPPORTED);
        let e = DataFusionError::ArrowError(
            Box::new(arrow::error::ArrowError::InvalidArgumentError(
                "Column 'column1' is declared as non-nullable but contains null values".into(),
            )),
            None,
        );
        assert_eq!(QueryError::from_datafusion(&e).code, GENERIC_USER_ERROR);
        let e = DataFusionError::Execution(
            "Cannot access field at argument 1: type Date32 is not Struct, Map, or Null".into(),
        );
        assert_eq!(QueryError::from_datafusion(&e).code, GENERIC_USER_ERROR);
        let e = squall_planner::limits::timeout_error("q1", std::time::Duration::from_secs(5));
        let q = QueryError::from_datafusion(&e);
        assert_eq!(q.code, EXCEEDED_TIME_LIMIT);
        assert!(q.message.contains("timeout of 5 s"), "{}", q.message);
        let e = DataFusionError::Execution(
            "stage s2, task 0 failed after 1 attempt(s): Resources exhausted: ... (memory_limit)"
                .into(),
        );
        assert_eq!(
            QueryError::from_datafusion(&e).code,
            EXCEEDED_LOCAL_MEMORY_LIMIT
        );
        let e = DataFusionError::Internal("boom".into());
        let q = QueryError::from_datafusion(&e);
        assert_eq!(q.code.error_type, ErrorType::InternalError);
        let e = DataFusionError::Configuration("squall.nope=1: unknown".into());
        assert_eq!(
            QueryError::from_datafusion(&e).code,
            INVALID_SESSION_PROPERTY
        );
    }
}
