//! How a task's failure is classed (whether another attempt could end
//! otherwise) and worded (the files a failed read was reading).

use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::ExecutionPlan;

use crate::error::SquallError;
use crate::task::FailureKind;

/// The short class of a task's failure, as its report names it.
pub(super) fn failure_kind(e: &SquallError) -> FailureKind {
    match e {
        SquallError::Task { message, .. } if message.starts_with("the task panicked") => {
            FailureKind::Panic
        }
        SquallError::InjectedFault(_) => FailureKind::Injected,
        SquallError::Config(_) => FailureKind::Config,
        SquallError::Stopped { .. } => FailureKind::Stopped,
        SquallError::BadTaskPayload(_) => FailureKind::BadPayload,
        SquallError::TaskPlan { .. } => FailureKind::Plan,
        SquallError::DataFusion(d) => match d.find_root() {
            DataFusionError::ResourcesExhausted(_) => FailureKind::MemoryLimit,
            // DataFusion's internal errors are broken invariants (an
            // operator given an input it was not planned for): the same
            // plan breaks them again.
            DataFusionError::Internal(_) => FailureKind::Internal,
            // A feature DataFusion lacks (`count(DISTINCT a, b)`), found as
            // the plan runs: it is missing again in any attempt.
            DataFusionError::NotImplemented(_) => FailureKind::Plan,
            // A plan DataFusion finds wrong only as it runs (a schema that
            // does not line up, a field of a value that is not a
            // constant): the same plan is wrong in any attempt.
            DataFusionError::Plan(_) | DataFusionError::SchemaError(..) => FailureKind::Plan,
            // A function refusing its arguments (`make_date` of month 13,
            // `chr` of a negative code, a text `date_parse` cannot read, a
            // second row of a scalar subquery): DataFusion's and squall's
            // functions raise execution errors over the rows they are given,
            // which the same rows raise again. squall's own requests fail
            // otherwise (`External`, `ObjectStore`, `IoError`); an execution
            // error that reads as a failed request is retried.
            DataFusionError::Execution(m) if !reads_as_a_request(m) => FailureKind::Data,
            // A value the SQL cannot compute (a division by zero, an
            // overflow, a string that is not a number): the same rows fail
            // again.
            // A CSV or JSON file its format's reader cannot parse: the
            // same file fails again.
            DataFusionError::ArrowError(e, _)
                if matches!(
                    e.as_ref(),
                    arrow::error::ArrowError::DivideByZero
                        | arrow::error::ArrowError::ArithmeticOverflow(_)
                        // A kernel refusing its values (`abs` of the
                        // smallest BIGINT, a negative square root).
                        | arrow::error::ArrowError::ComputeError(_)
                        | arrow::error::ArrowError::CastError(_)
                        | arrow::error::ArrowError::ParseError(_)
                        | arrow::error::ArrowError::CsvError(_)
                        | arrow::error::ArrowError::JsonError(_)
                ) =>
            {
                FailureKind::Data
            }
            // A value cast to a DECIMAL too narrow for it (`'25' > 0.00`
            // reads the text as DECIMAL(2,2)).
            DataFusionError::ArrowError(e, _)
                if matches!(
                    e.as_ref(),
                    arrow::error::ArrowError::InvalidArgumentError(m)
                        if m.contains("too large to store in a Decimal")
                ) =>
            {
                FailureKind::Data
            }
            _ => FailureKind::Execution,
        },
        _ => FailureKind::Execution,
    }
}

/// Whether an execution error's message reads as a request that failed
/// (which another attempt may not meet) rather than a value.
fn reads_as_a_request(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "timed out",
        "timeout",
        "connection",
        "broken pipe",
        "temporarily",
        "unavailable",
        "throttl",
        "slow down",
        "slowdown",
        "too many requests",
        "i/o error",
        "io error",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The files the scans of `plan` read, in order.
pub(super) fn scanned_files(plan: &Arc<dyn ExecutionPlan>) -> Vec<String> {
    let mut files = Vec::new();
    let _ = plan.apply(|node| {
        if let Some(config) = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|scan| scan.data_source().downcast_ref::<FileScanConfig>())
        {
            let paths = config.file_groups.iter().flat_map(|g| g.files());
            files.extend(paths.map(|f| f.object_meta.location.to_string()));
        }
        Ok(TreeNodeRecursion::Continue)
    });
    files
}

/// `e`, if a failure reading a file's contents (a reader refusing what it
/// read, or a compressed stream that does not decode), with the files the
/// task read (`files`) named: "reading file a/b.csv.gz", or the first few
/// of several.
pub(super) fn name_files(
    e: DataFusionError,
    files: impl FnOnce() -> Vec<String>,
) -> DataFusionError {
    use arrow::error::ArrowError;
    let reading = match e.find_root() {
        DataFusionError::ParquetError(_) | DataFusionError::IoError(_) => true,
        DataFusionError::ArrowError(e, _) => match e.as_ref() {
            ArrowError::CsvError(_)
            | ArrowError::JsonError(_)
            | ArrowError::ParquetError(_)
            | ArrowError::IoError(..) => true,
            // A CSV value that is not of its column's type ("Error while
            // parsing value 'abc' as type 'Int64' for column 1 at line 3001").
            ArrowError::ParseError(message) => message.contains(" at line "),
            _ => false,
        },
        _ => false,
    };
    if !reading {
        return e;
    }
    // Listed only now: a task that succeeds never walks its plan for them;
    // a file read as several ranges is named once.
    // A value unlike the rows a text column's type was inferred from.
    let hint = match e.find_root() {
        DataFusionError::ArrowError(inner, _)
            if matches!(inner.as_ref(), ArrowError::ParseError(_)) =>
        {
            " (a text table's column types are inferred from its first 100,000 rows)"
        }
        _ => "",
    };
    let mut files = files();
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.clone()));
    let what = match files.as_slice() {
        [] => return e,
        [one] => format!("reading file {one}"),
        many => format!(
            "reading one of {} files: {}{}",
            many.len(),
            many[..many.len().min(3)].join(", "),
            if many.len() > 3 { ", ..." } else { "" }
        ),
    };
    e.context(format!("{what}{hint}"))
}
