//! Shared fixtures: the generated catalog, a real server on 127.0.0.1:0,
//! and a small protocol client that follows `nextUri`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use squall_planner::{Engine, EngineOptions};
use squall_server::{ApiAuth, ApiOptions, EmbeddedOptions, EmbeddedService, router, serve};
use squall_tpch::datagen::{GenOptions, generate};
use tokio::sync::oneshot;

/// TPC-H SF 0.01 (2,000-row row groups), generated once per test binary.
pub fn catalog() -> &'static PathBuf {
    struct Data {
        path: PathBuf,
    }
    static D: OnceLock<Data> = OnceLock::new();
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock();
    &D.get_or_init(|| {
        let dir = squall_tpch::scratch::process_dir("squall-api-").expect("tempdir");
        let path = dir.join("sf0.01");
        let mut opts = GenOptions::new(0.01, &path);
        opts.row_group_rows = 2_000;
        opts.progress = false;
        generate(&opts).expect("generate TPC-H");
        Data { path }
    })
    .path
}

/// A server running in this test's runtime; stopped on drop.
pub struct TestServer {
    pub base: String,
    pub engine: Arc<Engine>,
    pub service: Arc<EmbeddedService>,
    pub http: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub async fn start(auth: ApiAuth) -> TestServer {
    start_with(EmbeddedOptions::default(), ApiOptions::new(auth), &[]).await
}

pub async fn start_with(
    embedded: EmbeddedOptions,
    api: ApiOptions,
    settings: &[(&str, &str)],
) -> TestServer {
    let engine = Arc::new(
        Engine::local(EngineOptions {
            catalog: Some(catalog().to_string_lossy().to_string()),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
        .await
        .expect("engine"),
    );
    let service = Arc::new(EmbeddedService::new(Arc::clone(&engine), embedded));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = oneshot::channel::<()>();
    let app = router(service.clone(), api);
    tokio::spawn(async move {
        serve(listener, app, async {
            let _ = rx.await;
        })
        .await
        .expect("serve");
    });
    TestServer {
        base: format!("http://{addr}"),
        engine,
        service,
        http: reqwest::Client::new(),
        shutdown: Some(tx),
    }
}

/// Status and JSON body of one request.
pub async fn call(
    server: &TestServer,
    method: Method,
    url: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let mut req = server.http.request(method, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b.to_string());
    }
    let resp = req.send().await.expect("request");
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.text().await.expect("body");
    let json = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    };
    (status, headers, json)
}

/// Everything a client sees of one query.
#[derive(Debug, Default)]
pub struct Outcome {
    pub id: String,
    pub columns: Option<Vec<Value>>,
    pub rows: Vec<Value>,
    pub docs: Vec<Value>,
    /// Response headers of every document.
    pub headers: Vec<reqwest::header::HeaderMap>,
}

impl Outcome {
    pub fn last(&self) -> &Value {
        self.docs.last().expect("at least one document")
    }

    pub fn error(&self) -> Option<&Value> {
        self.last().get("error")
    }
}

/// POSTs `sql` and follows `nextUri` to the end, checking every document's shape.
pub async fn run_query(server: &TestServer, sql: &str, headers: &[(&str, &str)]) -> Outcome {
    let (status, h, doc) = call(
        server,
        Method::POST,
        &format!("{}/v1/statement", server.base),
        Some(sql),
        headers,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    let mut out = Outcome {
        id: doc["id"].as_str().expect("id").to_string(),
        ..Outcome::default()
    };
    let mut doc = doc;
    let mut h = h;
    for _ in 0..100_000 {
        assert_results_shape(&doc);
        assert_eq!(doc["id"], out.id.as_str());
        if let Some(cols) = doc.get("columns").and_then(Value::as_array) {
            out.columns = Some(cols.clone());
        }
        if let Some(data) = doc.get("data").and_then(Value::as_array) {
            assert!(!data.is_empty(), "data present only with rows");
            out.rows.extend(data.iter().cloned());
        }
        let next = doc
            .get("nextUri")
            .and_then(Value::as_str)
            .map(str::to_string);
        out.docs.push(doc);
        out.headers.push(h);
        let Some(next) = next else { return out };
        assert!(
            next.starts_with(&server.base),
            "{next} is not under {}",
            server.base
        );
        let (status, h2, d) = call(server, Method::GET, &next, None, headers).await;
        assert_eq!(status, StatusCode::OK, "{d}");
        doc = d;
        h = h2;
    }
    panic!("query {} never ended", out.id);
}

/// The fields every `QueryResults` document has.
pub fn assert_results_shape(doc: &Value) {
    assert!(doc["id"].is_string(), "id: {doc}");
    assert!(
        doc["infoUri"]
            .as_str()
            .is_some_and(|u| u.starts_with("http")),
        "infoUri: {doc}"
    );
    assert!(doc["warnings"].is_array(), "warnings: {doc}");
    let stats = &doc["stats"];
    assert!(
        ["QUEUED", "RUNNING", "FINISHED", "FAILED"]
            .contains(&stats["state"].as_str().unwrap_or("")),
        "state: {doc}"
    );
    for key in [
        "nodes",
        "totalSplits",
        "queuedSplits",
        "runningSplits",
        "completedSplits",
        "cpuTimeMillis",
        "wallTimeMillis",
        "queuedTimeMillis",
        "elapsedTimeMillis",
        "processedRows",
        "processedBytes",
        "physicalInputBytes",
        "peakMemoryBytes",
        "spilledBytes",
    ] {
        assert!(stats[key].is_u64(), "stats.{key}: {doc}");
    }
    assert!(
        stats["queued"].is_boolean() && stats["scheduled"].is_boolean(),
        "{doc}"
    );
}

/// A Trino-shaped error document: state FAILED and a complete `error`.
pub fn assert_trino_error(doc: &Value, name: &str, error_type: &str) {
    assert_results_shape(doc);
    assert_eq!(doc["stats"]["state"], "FAILED", "{doc}");
    assert!(doc.get("nextUri").is_none(), "{doc}");
    let e = &doc["error"];
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{doc}"
    );
    assert_eq!(e["errorName"], name, "{doc}");
    assert_eq!(e["errorType"], error_type, "{doc}");
    assert!(e["errorCode"].is_i64(), "{doc}");
    assert!(e["failureInfo"]["type"].is_string(), "{doc}");
}

/// JSON rows as CSV, as the load test checks them.
pub use squall_cli::client::rows_to_csv;

/// Polls `cond` every 20 ms for up to `secs` seconds.
pub async fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

/// Number of files under `dir`, recursively.
pub fn count_files(dir: &std::path::Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() { count_files(&p) } else { 1 }
        })
        .sum()
}
