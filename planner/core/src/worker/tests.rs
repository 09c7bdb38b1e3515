//! Tests of running tasks: stop markers, and failures that are not retried.

use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;

use super::*;
use crate::task::{ObjectLocation, attempt_stop_key};

/// A completion queue that keeps what it is sent.
#[derive(Default)]
struct Sink(Mutex<Vec<(String, String)>>);

#[async_trait]
impl CompletionQueue for Sink {
    async fn create(&self, query_id: &str) -> Result<String> {
        Ok(query_id.to_string())
    }
    async fn send(&self, address: &str, body: String) -> Result<()> {
        self.0.lock().unwrap().push((address.to_string(), body));
        Ok(())
    }
    async fn receive(&self, _: &str, _: Duration) -> Result<Vec<String>> {
        Ok(vec![])
    }
    async fn delete(&self, _: &str) -> Result<()> {
        Ok(())
    }
}

fn slow_spec(marker: &std::path::Path) -> TaskSpec {
    let key = marker.to_string_lossy().trim_start_matches('/').to_string();
    TaskSpec {
        protocol: PROTOCOL_VERSION,
        query_id: "q1".into(),
        stage: 2,
        task: 3,
        attempt: 0,
        plan: Bytes::from_static(b"never decoded: the task is stopped first"),
        scans: vec![],
        inputs: vec![],
        output: ObjectLocation {
            store_url: "file://".into(),
            key: format!("{key}.out"),
        },
        reply_to: "reply".into(),
        settings: vec![
            ("squall.fault.task_delay_ms".into(), "60000".into()),
            ("squall.task.stop_poll_ms".into(), "20".into()),
        ],
        filters: vec![],
        stop_marker: Some(ObjectLocation {
            store_url: "file://".into(),
            key,
        }),
    }
}

#[tokio::test]
async fn a_stop_marker_stops_a_running_task() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("stop");
    let sink = Arc::new(Sink::default());
    let env = WorkerEnv {
        runtime: Arc::new(RuntimeEnv::default()),
        queue: Arc::clone(&sink) as _,
    };
    let payload = slow_spec(&marker).encode().unwrap();
    let started = Instant::now();
    let task = tokio::spawn(async move { handle_task(&payload, &env).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !task.is_finished(),
        "the task ran before its delay was over"
    );
    std::fs::write(&marker, b"").unwrap();
    let report = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let TaskOutcome::Failed { error } = &report.outcome else {
        panic!("a stopped task succeeded: {report:?}");
    };
    assert_eq!(error.kind, FailureKind::Stopped);
    assert!(!error.retryable);
    assert!(
        error.message.contains("stage 2, task 3"),
        "{}",
        error.message
    );
    assert!(
        sink.0.lock().unwrap().is_empty(),
        "a report sent to an ended query"
    );
    assert!(
        !dir.path().join("stop.out").exists(),
        "a stopped task wrote its output"
    );
}

#[tokio::test]
async fn an_attempts_own_marker_stops_only_that_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("stop");
    let env = WorkerEnv {
        runtime: Arc::new(RuntimeEnv::default()),
        queue: Arc::new(Sink::default()),
    };
    let mut spec = slow_spec(&marker);
    spec.settings
        .push(("squall.task.speculation_min_ms".into(), "100".into()));
    let query_key = spec.stop_marker.as_ref().unwrap().key.clone();
    // Another task's attempt marker, and this task's other attempt's: not its own.
    for (task, attempt) in [(4, 0), (3, 1)] {
        let other = attempt_stop_key(&query_key, 2, task, attempt);
        std::fs::write(format!("/{other}"), b"").unwrap();
    }
    let payload = spec.encode().unwrap();
    let started = Instant::now();
    let task = tokio::spawn(async move { handle_task(&payload, &env).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !task.is_finished(),
        "stopped by a marker that is not its own"
    );
    let own = attempt_stop_key(&query_key, 2, 3, 0);
    std::fs::write(format!("/{own}"), b"").unwrap();
    let report = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let TaskOutcome::Failed { error } = &report.outcome else {
        panic!("a superseded attempt succeeded: {report:?}");
    };
    assert_eq!(error.kind, FailureKind::Stopped);
    assert!(error.message.contains(&own), "{}", error.message);
    assert!(!marker.exists(), "the query's own marker was never written");
}

#[tokio::test]
async fn a_task_started_after_the_stop_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("stop");
    std::fs::write(&marker, b"").unwrap();
    let sink = Arc::new(Sink::default());
    let env = WorkerEnv {
        runtime: Arc::new(RuntimeEnv::default()),
        queue: Arc::clone(&sink) as _,
    };
    let mut spec = slow_spec(&marker);
    spec.settings
        .push(("squall.task.stop_poll_ms".into(), "0".into()));
    let report = tokio::time::timeout(
        Duration::from_secs(10),
        handle_task(&spec.encode().unwrap(), &env),
    )
    .await
    .unwrap();
    assert!(
        report.failure_kind() == Some(FailureKind::Stopped),
        "{report:?}"
    );
}

/// A spec whose plan reads stage 1 but which carries no binding for it.
fn unbindable_spec(dir: &std::path::Path) -> TaskSpec {
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_plan::Partitioning;

    use crate::exec::{BoundaryProperties, ReadMode, ShuffleReadExec};

    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true)]));
    let read = ShuffleReadExec::try_new(
        1,
        ReadMode::Hash,
        Arc::clone(&schema),
        Partitioning::Hash(vec![col("a", &schema).unwrap()], 2),
        BoundaryProperties::default(),
    )
    .unwrap();
    let plan = Arc::new(ShuffleWriteExec::new(Arc::new(read), None));
    TaskSpec {
        protocol: PROTOCOL_VERSION,
        query_id: "q1".into(),
        stage: 2,
        task: 1,
        attempt: 0,
        plan: crate::codec::encode_plan(plan).unwrap(),
        scans: vec![],
        inputs: vec![],
        output: ObjectLocation {
            store_url: "file://".into(),
            key: format!("{}/out", dir.to_string_lossy().trim_start_matches('/')),
        },
        reply_to: "reply".into(),
        settings: vec![],
        filters: vec![],
        stop_marker: None,
    }
}

#[tokio::test]
async fn a_plan_that_cannot_be_built_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(Sink::default());
    let env = WorkerEnv {
        runtime: Arc::new(RuntimeEnv::default()),
        queue: Arc::clone(&sink) as _,
    };
    let spec = unbindable_spec(dir.path());
    let report = handle_task(&spec.encode().unwrap(), &env).await;
    let TaskOutcome::Failed { error } = &report.outcome else {
        panic!("a task without its input binding succeeded: {report:?}");
    };
    assert_eq!(error.kind, FailureKind::Plan, "{error:?}");
    assert!(!error.retryable, "{error:?}");
    assert!(
        error.message.contains("stage 2, task 1") && error.message.contains("stage 1"),
        "{}",
        error.message
    );
    assert_eq!(sink.0.lock().unwrap().len(), 1, "the report was not sent");
}

#[test]
fn internal_errors_and_plan_failures_are_not_retryable_kinds() {
    let internal = SquallError::DataFusion(DataFusionError::Context(
        "executing".into(),
        Box::new(DataFusionError::Internal("an invariant".into())),
    ));
    assert_eq!(failure_kind(&internal), FailureKind::Internal);
    let rows = SquallError::DataFusion(DataFusionError::Execution(
        crate::scalar_subquery::TOO_MANY_ROWS.into(),
    ));
    assert_eq!(failure_kind(&rows), FailureKind::Data);
    // A function refusing its arguments fails the same way every attempt;
    // a message of a failed request may not.
    for (message, kind) in [
        ("Month value '13' is out of range", FailureKind::Data),
        ("invalid Unicode scalar value: -1", FailureKind::Data),
        ("field position must not be zero", FailureKind::Data),
        ("request timed out after 30s", FailureKind::Execution),
        ("connection reset by peer", FailureKind::Execution),
    ] {
        let e = SquallError::DataFusion(DataFusionError::Context(
            "executing".into(),
            Box::new(DataFusionError::Execution(message.into())),
        ));
        assert_eq!(failure_kind(&e), kind, "{message}");
    }
    let plan = SquallError::DataFusion(DataFusionError::Context(
        "executing".into(),
        Box::new(DataFusionError::Plan(
            "a plan found wrong as it runs".into(),
        )),
    ));
    assert_eq!(failure_kind(&plan), FailureKind::Plan);
    // Values the SQL cannot compute fail the same way every attempt.
    for e in [
        arrow::error::ArrowError::DivideByZero,
        arrow::error::ArrowError::ArithmeticOverflow("i64".into()),
        arrow::error::ArrowError::CastError("'x' to Int32".into()),
        arrow::error::ArrowError::ComputeError(
            "Int64Array overflow on abs(-9223372036854775808)".into(),
        ),
        arrow::error::ArrowError::InvalidArgumentError(
            "25.00 is too large to store in a Decimal128 of precision 2. Max is 0.99".into(),
        ),
    ] {
        let value = SquallError::DataFusion(DataFusionError::Context(
            "executing".into(),
            Box::new(DataFusionError::ArrowError(Box::new(e), None)),
        ));
        assert_eq!(failure_kind(&value), FailureKind::Data, "{value}");
    }
    let io = SquallError::DataFusion(DataFusionError::ArrowError(
        Box::new(arrow::error::ArrowError::IoError(
            "reset".into(),
            std::io::Error::other("reset"),
        )),
        None,
    ));
    assert_eq!(failure_kind(&io), FailureKind::Execution);
    let store = SquallError::Exchange {
        key: "k".into(),
        message: "timed out".into(),
    };
    let spec = slow_spec(std::path::Path::new("/tmp/none"));
    assert!(matches!(
        plan_failure(&spec, store),
        SquallError::Exchange { .. }
    ));
    let broken = plan_failure(
        &spec,
        SquallError::DataFusion(DataFusionError::Internal("no binding".into())),
    );
    assert_eq!(failure_kind(&broken), FailureKind::Plan);
}
