//! The api function under `cargo lambda watch`, driven with plain HTTP at
//! its function URL (`http://127.0.0.1:PORT/lambda-url/api`): every request
//! is an API Gateway v2 event handled by the same axum router as `squall
//! serve`, every query a coordinator invocation, every task a worker
//! invocation, state and results in the emulated S3. The function requires
//! the token it read from moto's Secrets Manager at start-up; the client
//! sends it as a bearer token on every request (`auth.rs` checks the refusals).

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::Value;
use squall_tpch::compare::compare_csv;

use crate::Stack;
use crate::api_common::{assert_results_shape, assert_trino_error, rows_to_csv};

/// A plain HTTP client of the function URL.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    http: reqwest::Client,
    /// The `Authorization` header sent with every request, if any.
    authorization: Option<String>,
}

/// What a client saw of one query.
#[derive(Debug, Default)]
pub struct Outcome {
    pub id: String,
    pub columns: Vec<Value>,
    pub rows: Vec<Value>,
    pub last: Value,
    pub documents: usize,
}

impl Outcome {
    pub fn csv(&self) -> String {
        rows_to_csv(&self.columns, &self.rows)
    }
}

impl Client {
    /// A client of the api function's URL, with the stack's token as a bearer token.
    pub fn new(stack: &Stack) -> Self {
        Self::at(&stack.var("SQUALL_API_URL"))
            .with_authorization(Some(&format!("Bearer {}", stack.api_token())))
    }

    /// A client of the API at `base` (scheme, host and path prefix), sending no credentials.
    pub fn at(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("HTTP client"),
            authorization: None,
        }
    }

    /// The same client sending this `Authorization` header (or none).
    pub fn with_authorization(&self, authorization: Option<&str>) -> Self {
        Self {
            authorization: authorization.map(str::to_string),
            ..self.clone()
        }
    }

    pub async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut request = self
            .http
            .request(method.clone(), url)
            .header("X-Trino-User", "test");
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(b) = body {
            request = request.body(b.to_string());
        }
        let retry = (method == Method::GET)
            .then(|| request.try_clone())
            .flatten();
        let response = match (request.send().await, retry) {
            (Ok(r), _) => r,
            // `cargo lambda watch` drops a connection now and then while it
            // starts another instance (nothing reaches the function). A GET
            // of this protocol is idempotent: ask once more, as a client
            // retrying a gateway error would.
            (Err(e), Some(again)) => {
                eprintln!("aws_emulated: {method} {url}: {e}; asking again");
                tokio::time::sleep(Duration::from_millis(500)).await;
                again
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{method} {url}: {e}"))
            }
            (Err(e), None) => panic!("{method} {url}: {e}"),
        };
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("response body");
        let json = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{method} {url}: not JSON ({e}): {text}"))
        };
        (status, headers, json)
    }

    /// POSTs `sql`; the first document.
    pub async fn submit(&self, sql: &str, headers: &[(&str, &str)]) -> Value {
        let (status, _, doc) = self
            .call(
                Method::POST,
                &format!("{}/v1/statement", self.base),
                Some(sql),
                headers,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        assert_results_shape(&doc);
        doc
    }

    /// Follows `nextUri` from `doc` to the end, checking every document.
    pub async fn follow(&self, mut doc: Value, headers: &[(&str, &str)]) -> Outcome {
        let mut out = Outcome {
            id: doc["id"].as_str().expect("id").to_string(),
            ..Outcome::default()
        };
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            assert_results_shape(&doc);
            assert_eq!(doc["id"], out.id.as_str());
            out.documents += 1;
            if let Some(cols) = doc.get("columns").and_then(Value::as_array) {
                out.columns = cols.clone();
            }
            if let Some(data) = doc.get("data").and_then(Value::as_array) {
                out.rows.extend(data.iter().cloned());
            }
            let Some(next) = doc
                .get("nextUri")
                .and_then(Value::as_str)
                .map(str::to_string)
            else {
                out.last = doc;
                return out;
            };
            // Absolute URIs name the function URL the client used, prefix included.
            assert!(
                next.starts_with(&format!("{}/v1/statement/", self.base)),
                "{next} is not under {}",
                self.base
            );
            assert!(Instant::now() < deadline, "query {} never ended", out.id);
            let (mut status, _, mut next_doc) = self.call(Method::GET, &next, None, headers).await;
            if status == StatusCode::INTERNAL_SERVER_ERROR && is_emulator_error(&next_doc) {
                // `cargo lambda watch` itself, not the api function, answered
                // (its problem+json body; nothing in the function's log): seen
                // about once in five runs while it starts a second api
                // instance. A nextUri GET is idempotent (the page is named by
                // its token), so ask once more, as a client retrying a gateway
                // error would.
                eprintln!("aws_emulated: the emulator answered 500 to {next}; asking again");
                tokio::time::sleep(Duration::from_millis(500)).await;
                (status, _, next_doc) = self.call(Method::GET, &next, None, headers).await;
            }
            assert_eq!(status, StatusCode::OK, "{next_doc}");
            doc = next_doc;
        }
    }

    pub async fn run(&self, sql: &str, headers: &[(&str, &str)]) -> Outcome {
        let first = self.submit(sql, headers).await;
        self.follow(first, headers).await
    }
}

pub fn check_tpch(q: usize, out: &Outcome) -> Result<(), String> {
    if let Some(e) = out.last.get("error") {
        return Err(format!("q{q:02} failed: {e}"));
    }
    let sql = squall_tpch::query(q).ok_or("no such query")?;
    let expected = squall_tpch::expected_answer(0.1, q).ok_or("no answer")?;
    let c = compare_csv(expected, &out.csv(), Some(sql))?;
    if c.ok {
        Ok(())
    } else {
        Err(format!("q{q:02}: {}", c.message))
    }
}

/// (a) A TPC-H query and a result of several pages, through the API; the
/// pages equal the embedded engine's answer on the same files.
pub async fn queries(client: &Client, stack: &Stack) {
    let started = Instant::now();
    let q3 = client.run(squall_tpch::query(3).expect("q3"), &[]).await;
    assert_eq!(q3.last["stats"]["state"], "FINISHED", "{}", q3.last);
    check_tpch(3, &q3).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "aws_emulated: q03 through the api function in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    // 2,501 rows: three pages of at most 1,000 rows, each one ranged GET.
    let sql = "select l_orderkey, l_linenumber, l_shipdate, l_extendedprice, l_comment from lineitem \
               where l_orderkey <= 10000 and l_linenumber <= 2 order by l_orderkey, l_linenumber";
    let paged = client.run(sql, &[]).await;
    assert_eq!(paged.last["stats"]["state"], "FINISHED", "{}", paged.last);
    let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(stack.data_dir().to_string_lossy().to_string()),
        settings: vec![],
    })
    .await
    .expect("embedded engine");
    let local = engine.sql(sql).await.expect("embedded answer");
    let expected = squall_tpch::run::to_csv(&local.schema, &local.batches).expect("csv");
    let c = compare_csv(&expected, &paged.csv(), Some(sql)).expect("comparable");
    assert!(
        c.ok,
        "paged result differs from the embedded engine: {}",
        c.message
    );
    assert!(paged.rows.len() > 2000, "{} rows", paged.rows.len());
    assert!(
        paged.documents >= 4,
        "{} documents for {} rows",
        paged.documents,
        paged.rows.len()
    );
}

/// A statement whose effect would live only in the coordinator's memory
/// (a created table), as a request's last, is refused naming why; used in
/// the same request, it is what the request's query reads. Rows written
/// into the catalog (COPY, INSERT into a catalog table) stay, and an
/// INSERT's updateCount is its rows.
pub async fn created_tables_live_for_their_request(client: &Client, stack: &Stack) {
    for sql in [
        "create table kept as select n_nationkey from nation",
        "create view kept_view as select 1 as x",
    ] {
        let out = client.run(sql, &[]).await;
        let error = &out.last["error"];
        assert_eq!(out.last["stats"]["state"], "FAILED", "{sql}: {}", out.last);
        assert_eq!(error["errorName"], "NOT_SUPPORTED", "{sql}: {}", out.last);
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("aws backend") && message.contains("COPY (SELECT ...) TO"),
            "{sql}: {message}"
        );
    }
    let out = stack.squall(&[
        "query",
        "--backend",
        "aws",
        "--format",
        "csv",
        "create table kept as select n_nationkey from nation where n_regionkey = 1; \
         insert into kept values (100); select count(*) as n, sum(n_nationkey) as s from kept",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n,s\n6,147\n");
    // Rows written into the catalog outlive the request: a COPY makes a
    // table, an INSERT into it as a request of its own adds a file, and
    // Trino's updateCount says how many rows.
    let copy = "copy (select 1 as k) to 's3://squall-local/tpch/sf0.1/updates/a.parquet' \
                stored as parquet";
    let out = client.run(copy, &[]).await;
    assert_eq!(out.last["stats"]["state"], "FINISHED", "{}", out.last);
    let out = client.run("insert into updates values (2), (3)", &[]).await;
    assert_eq!(out.last["stats"]["state"], "FINISHED", "{}", out.last);
    assert_eq!(out.last["updateType"], "INSERT", "{}", out.last);
    assert_eq!(out.last["updateCount"], 2, "{}", out.last);
    let out = client
        .run("select count(*) as n, sum(k) as s from updates", &[])
        .await;
    assert_eq!(out.csv(), "n,s\n3,6\n", "{}", out.last);
}

/// (b) Two queries at once: both right, neither sees the other's rows.
pub async fn concurrent(client: &Client) {
    let started = Instant::now();
    let (a, b) = tokio::join!(
        client.run(squall_tpch::query(1).expect("q1"), &[]),
        client.run(squall_tpch::query(6).expect("q6"), &[]),
    );
    assert_ne!(a.id, b.id);
    let errors: Vec<String> = [check_tpch(1, &a), check_tpch(6, &b)]
        .into_iter()
        .filter_map(Result::err)
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    eprintln!(
        "aws_emulated: q01 and q06 at once in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// (c) Malformed requests: the right status, a Trino-shaped error.
pub async fn malformed(client: &Client) {
    let statement = format!("{}/v1/statement", client.base);
    let (status, _, doc) = client.call(Method::POST, &statement, Some("  "), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{doc}");
    assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");

    let (status, headers, doc) = client.call(Method::GET, &statement, None, &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{doc}");
    assert_eq!(headers["allow"], "POST");
    assert_trino_error(&doc, "NOT_SUPPORTED", "USER_ERROR");

    for id in ["0123456789abcdef0123456789abcdef", "nosuchquery"] {
        let (status, _, doc) = client
            .call(
                Method::GET,
                &format!("{statement}/executing/{id}/slug/0"),
                None,
                &[],
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{doc}");
        assert_trino_error(&doc, "NOT_FOUND", "USER_ERROR");
    }

    // A real query, then its nextUri with the token and the slug mangled.
    let out = client
        .run("select n_name from nation where n_nationkey = 7", &[])
        .await;
    assert_eq!(
        out.rows,
        vec![serde_json::json!(["GERMANY"])],
        "{}",
        out.last
    );
    let first = client.submit("select 1", &[]).await;
    let next = first["nextUri"].as_str().expect("nextUri").to_string();
    let (prefix, _) = next.rsplit_once('/').expect("token");
    let (status, _, doc) = client
        .call(Method::GET, &format!("{prefix}/garbage"), None, &[])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{doc}");
    assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");
    let (before_slug, _) = prefix.rsplit_once('/').expect("slug");
    let (status, _, doc) = client
        .call(
            Method::GET,
            &format!("{before_slug}/wrongslug/1"),
            None,
            &[],
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{doc}");
    let done = client.follow(first, &[]).await;
    assert_eq!(done.rows, vec![serde_json::json!([1])]);

    // Bad SQL is refused before any coordinator starts.
    let out = client.run("selec 1", &[]).await;
    assert_eq!(out.documents, 2, "{}", out.last);
    assert_trino_error(&out.last, "SYNTAX_ERROR", "USER_ERROR");
    let out = client.run("select nope from lineitem", &[]).await;
    assert_trino_error(&out.last, "COLUMN_NOT_FOUND", "USER_ERROR");
    assert!(
        out.last["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("nope"),
        "{}",
        out.last
    );
}

/// (d) A task payload the worker cannot decode: its structured failure
/// report fails the query at once, naming the stage and the task.
pub async fn undecodable_task(client: &Client) {
    let session = [("X-Trino-Session", "squall.fault.corrupt_payload_rate=1")];
    let out = client.run("select count(*) from nation", &session).await;
    assert_eq!(out.last["stats"]["state"], "FAILED", "{}", out.last);
    let message = out.last["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("stage s") && message.contains("task 0") && message.contains("1 attempt"),
        "{message}"
    );
    assert!(
        message.contains("could not be decoded") && message.contains("bad_payload"),
        "{message}"
    );
}

/// Lines of the functions' log (`cargo lambda watch`'s output) about query `id`.
fn log_lines(stack: &Stack, id: &str, text: &str) -> usize {
    std::fs::read_to_string(stack.lambda_log())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(id) && l.contains(text))
        .count()
}

/// (e) A cancel through the API stops the running workers: the workers' own
/// log says they stopped on the stop marker, long before their injected delay
/// was over, and none of them finished.
pub async fn cancel(client: &Client, stack: &Stack) {
    let session = [("X-Trino-Session", "squall.fault.task_delay_ms=120000")];
    let first = client.submit("select count(*) from nation", &session).await;
    let id = first["id"].as_str().expect("id").to_string();
    let mut next = first["nextUri"].as_str().expect("nextUri").to_string();
    let deadline = Instant::now() + Duration::from_secs(300);
    while log_lines(stack, &id, "task started") == 0 {
        assert!(Instant::now() < deadline, "no worker of query {id} started");
        let (status, _, doc) = client.call(Method::GET, &next, None, &session).await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        assert!(
            ["QUEUED", "RUNNING"].contains(&doc["stats"]["state"].as_str().unwrap_or("")),
            "{doc}"
        );
        next = doc["nextUri"]
            .as_str()
            .expect("nextUri while running")
            .to_string();
    }
    let started = log_lines(stack, &id, "task started");
    let cancelled_at = Instant::now();
    let (status, _, doc) = client.call(Method::DELETE, &next, None, &session).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{doc}");
    let (status, _, info) = client
        .call(
            Method::GET,
            &format!("{}/v1/query/{id}", client.base),
            None,
            &session,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{info}");
    assert_eq!(info["state"], "CANCELED", "{info}");

    // The coordinator sees the cancel, ends the query, writes the stop
    // marker; each running worker sees the marker and stops.
    while log_lines(stack, &id, "task stopped by its query's stop marker") < started {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(60),
            "workers of query {id} did not stop: {started} started"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let stopped_after = cancelled_at.elapsed();
    assert!(
        log_lines(stack, &id, "cancel requested; stopping the query") >= 1,
        "the coordinator never saw the cancel"
    );
    assert_eq!(
        log_lines(stack, &id, "task succeeded"),
        0,
        "a worker of the cancelled query finished"
    );
    eprintln!(
        "aws_emulated: {started} running worker(s) stopped {:.1}s after the cancel",
        stopped_after.as_secs_f64()
    );
    let (_, _, info) = client
        .call(
            Method::GET,
            &format!("{}/v1/query/{id}", client.base),
            None,
            &session,
        )
        .await;
    assert_eq!(info["state"], "CANCELED", "{info}");
    assert_eq!(info["errorCode"]["name"], "USER_CANCELED", "{info}");
}

/// (f) Workers stopped by the stop marker while inside a CPU-bound operator
/// (a nested-loop join over `lineitem × lineitem`, minutes of CPU per task)
/// let go of it at once: each one's log line says how long its operators
/// took to stop after it saw the marker.
pub async fn heavy_cancel(client: &Client, stack: &Stack) {
    const HEAVY: &str =
        "SELECT count(*) FROM lineitem a, lineitem b WHERE a.l_orderkey + b.l_orderkey < 0";
    const STOPPED: &str = "task stopped by its query's stop marker";
    let session = [("X-Trino-Session", "squall.task.stop_poll_ms=250")];
    let first = client.submit(HEAVY, &session).await;
    let id = first["id"].as_str().expect("id").to_string();
    let mut next = first["nextUri"].as_str().expect("nextUri").to_string();
    // Poll until workers run, then a few seconds more: they are inside the join.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut running_since = None;
    while running_since.is_none_or(|t: Instant| t.elapsed() < Duration::from_secs(5)) {
        assert!(Instant::now() < deadline, "no worker of query {id} started");
        if running_since.is_none() && log_lines(stack, &id, "task started") > 0 {
            running_since = Some(Instant::now());
        }
        let (status, _, doc) = client.call(Method::GET, &next, None, &session).await;
        assert_eq!(status, StatusCode::OK, "{doc}");
        assert_eq!(doc["stats"]["state"], "RUNNING", "{doc}");
        next = doc["nextUri"].as_str().expect("nextUri").to_string();
    }
    let cancelled_at = Instant::now();
    let (status, _, doc) = client.call(Method::DELETE, &next, None, &session).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{doc}");
    // Build-side tasks (the scan feeding the join) may have finished before.
    while log_lines(stack, &id, STOPPED) + log_lines(stack, &id, "task succeeded")
        < log_lines(stack, &id, "task started")
    {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(60),
            "workers of query {id} did not stop"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = std::fs::read_to_string(stack.lambda_log()).unwrap_or_default();
    let stops: Vec<Option<u64>> = log
        .lines()
        .filter(|l| l.contains(&id) && l.contains(STOPPED))
        .map(|l| {
            let (_, after) = l.split_once("operators_stopped_ms")?;
            let digits: String = after
                .trim_start_matches(|c: char| !c.is_ascii_digit())
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect();
    assert!(!stops.is_empty(), "no worker of query {id} was stopped");
    // "At once": well within the second the issue asks for, whatever the machine.
    assert!(
        stops.iter().all(|ms| ms.is_some_and(|ms| ms < 1000)),
        "operators of query {id} did not stop within a second of the marker: {stops:?}"
    );
    eprintln!(
        "aws_emulated: {} worker(s) inside a nested-loop join stopped {:?} ms after seeing the marker \
         ({:.1}s after the cancel)",
        stops.len(),
        stops.iter().flatten().collect::<Vec<_>>(),
        cancelled_at.elapsed().as_secs_f64()
    );
}

/// `squall serve --backend aws`: the same service and router on a local
/// port, for clients that take a host and a port. A query runs in the
/// coordinator function and its pages come from S3, as through the api function.
pub async fn served(client: &Client) {
    let out = client.run(squall_tpch::query(6).expect("q6"), &[]).await;
    check_tpch(6, &out).unwrap_or_else(|e| panic!("{e}"));
    let out = client.run("selec 1", &[]).await;
    assert_trino_error(&out.last, "SYNTAX_ERROR", "USER_ERROR");
}

/// True for `cargo lambda watch`'s own error body (RFC 7807), which the api
/// function never sends: its errors are Trino-shaped (`error` object).
fn is_emulator_error(doc: &Value) -> bool {
    doc.get("error").is_none()
        && doc.get("title").and_then(Value::as_str) == Some("Internal Server Error")
        && doc
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.starts_with("https://httpstatuses.com/"))
}
