//! The crate's error type. Variants carry the structured fields a user needs
//! to find the problem: the stage, task, object or file involved.

use datafusion::error::DataFusionError;

pub type Result<T, E = SquallError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum SquallError {
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),

    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),

    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),

    #[error("task payload could not be decoded: {0}")]
    BadTaskPayload(String),

    #[error("task protocol version {got} is not supported by this worker (it speaks {supported})")]
    ProtocolVersion { got: u32, supported: u32 },

    #[error("exchange object {key}: {message}")]
    Exchange { key: String, message: String },

    /// A map output could not be spilled to (or read back from) local disk.
    #[error("stage output {key}: spilling to local disk: {message}")]
    Spill { key: String, message: String },

    #[error("completion queue {queue}: {message}")]
    Queue { queue: String, message: String },

    #[error("invoking task {stage}/{task}: {message}")]
    Invoke {
        stage: u32,
        task: u32,
        message: String,
    },

    #[error("invoking task {stage}/{task}: throttled: {message}")]
    Throttled {
        stage: u32,
        task: u32,
        message: String,
    },

    #[error("stage {stage}, task {task}: {message}")]
    Task {
        stage: u32,
        task: u32,
        message: String,
    },

    /// The task's stage plan decoded but could not be made runnable (binding
    /// its scans, reads and filters, or DataFusion rebuilding an operator):
    /// another attempt would build the same plan.
    #[error("stage {stage}, task {task}: its plan could not be built: {message}")]
    TaskPlan {
        stage: u32,
        task: u32,
        message: String,
    },

    #[error(
        "stage {stage}, task {task}: stopped because its query was cancelled or has ended ({marker} exists)"
    )]
    Stopped {
        stage: u32,
        task: u32,
        marker: String,
    },

    #[error("injected fault: {0}")]
    InjectedFault(String),

    #[error("invalid plan: {0}")]
    Plan(String),

    #[error("configuration: {0}")]
    Config(String),

    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<SquallError> for DataFusionError {
    fn from(e: SquallError) -> Self {
        match e {
            SquallError::DataFusion(e) => e,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// Turn any displayable error into a [`DataFusionError::External`].
pub fn external(e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::External(e.to_string().into())
}

/// An error and all of its sources, `: `-separated (SDK and HTTP client
/// errors display only their top line; the cause is below it).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The message of a caught panic.
pub fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
