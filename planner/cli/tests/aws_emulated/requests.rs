//! The requests of a query on the aws backend, as `EXPLAIN ANALYZE` counts
//! them where they are made: the SQS requests of the coordinator's queue
//! (one CreateQueue and DeleteQueue, ReceiveMessage and DeleteMessageBatch
//! by tens), a SendMessage per report, an Invoke per attempt, the workers'
//! stop-marker HEADs, and every task payload through S3 (a PUT by the
//! coordinator, a GET by the worker, listed and deleted at the end).

use crate::Stack;

/// The numbers of one line of the profile, in order.
fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// The line of `text` that starts with `prefix` (after leading spaces).
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in\n{text}"))
}

pub fn sqs_and_s3_requests(stack: &Stack) {
    let sql = squall_tpch::query(3).expect("query");
    let out = stack.squall(&[
        "query",
        "--backend",
        "aws",
        // Every payload through S3.
        "--config",
        "squall.inline_payload_bytes=256",
        &format!("explain analyze {sql}"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "explain analyze: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "query q...: N ms, R rows, S stages, T tasks (X retries), exchange B bytes / W rows, M messages"
    let head = numbers(line(&text, "query "));
    let (tasks, messages) = (head[head.len() - 5], head[head.len() - 1]);
    // "SQS: c CreateQueue, s SendMessage, r ReceiveMessage, d DeleteMessageBatch, q DeleteQueue; Lambda: i invocations, t throttled"
    let sqs = numbers(line(&text, "SQS:"));
    let [
        create,
        sends,
        receives,
        batches,
        deletes,
        invocations,
        throttled,
    ] = sqs[..]
    else {
        panic!("SQS line: {sqs:?}\n{text}");
    };
    assert_eq!(create, 1, "{text}");
    assert!(deletes >= 1, "{text}");
    assert_eq!(throttled, 0, "{text}");
    assert!(
        invocations >= tasks && sends >= tasks && sends <= invocations && sends <= messages,
        "a report per attempt that ran, an invocation per attempt\n{text}"
    );
    assert!(receives >= sends.div_ceil(10), "{text}");
    assert!(
        batches >= sends.div_ceil(10) && batches <= receives,
        "{text}"
    );
    // "  tasks  GET HEAD PUT LIST DELETE SQS Invoke"
    let by_tasks = numbers(line(&text, "tasks "));
    let by_coordinator = numbers(line(&text, "coordinator "));
    assert!(
        by_tasks[1] >= tasks,
        "a stop-marker HEAD per task at least\n{text}"
    );
    assert!(
        by_tasks[0] >= invocations,
        "a payload GET per attempt at least\n{text}"
    );
    assert!(
        by_coordinator[2] > invocations,
        "a payload PUT per attempt and the stop marker\n{text}"
    );
    assert!(
        by_coordinator[3] >= 2,
        "LISTs of the payloads and the exchange shards\n{text}"
    );
    assert!(
        by_coordinator[4] >= invocations + by_tasks[2],
        "every payload and exchange object deleted\n{text}"
    );
}
