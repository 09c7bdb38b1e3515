//! [`TrinoClient`]: a small client of the Trino protocol, what the load test
//! and the fuzzer drive the API with: POST a statement, follow `nextUri` to
//! the end, and collect the columns and rows — or the query's error.
//!
//! ```text
//! POST /v1/statement ──> doc ──nextUri──> GET ──> doc ── … ──> last doc (no nextUri)
//!                         │ every doc: JSON, id, stats.state, nextUri under the server's address
//!                         └─ columns, data (rows), error (a failed query)
//! ```
//!
//! Every request has a timeout and a query may take at most a given number
//! of documents, so a server that stops answering or loops shows as an error
//! here, never as a hung client. It is no general-purpose client: no TLS,
//! no session headers it does not add itself, no retries.

use std::time::{Duration, Instant};

use serde_json::Value;

/// How a query went wrong from the client's side (not a failed query,
/// which is an [`Answer`] with an error).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No answer in time (a hung request or a query past the deadline).
    #[error("no answer within {seconds} s: {what}")]
    Timeout { what: String, seconds: u64 },
    /// The request could not be made or read.
    #[error("{what}: {message}")]
    Transport { what: String, message: String },
    /// An HTTP status other than 200 while following a query.
    #[error("HTTP {status} from {what}: {body}")]
    Status {
        what: String,
        status: u16,
        body: String,
    },
    /// A document that breaks the protocol.
    #[error("protocol violation at {what}: {message}")]
    Protocol { what: String, message: String },
}

impl ClientError {
    /// A short class for counting (`timeout`, `transport`, `http_503`, `protocol`).
    pub fn kind(&self) -> String {
        match self {
            Self::Timeout { .. } => "timeout".into(),
            Self::Transport { .. } => "transport".into(),
            Self::Status { status, .. } => format!("http_{status}"),
            Self::Protocol { .. } => "protocol".into(),
        }
    }
}

/// What a client saw of one query.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub id: String,
    pub columns: Vec<Value>,
    pub rows: Vec<Value>,
    /// The `error` of a failed query.
    pub error: Option<Value>,
    /// States seen, in order (`QUEUED`, `RUNNING`, …).
    pub states: Vec<String>,
    pub documents: usize,
    /// The client stopped reading (and cancelled the query) once it had
    /// the rows it asked for ([`TrinoClient::run_at_most`]).
    pub cut: bool,
}

impl Answer {
    /// The error's name (`SYNTAX_ERROR`, …), for a failed query.
    pub fn error_name(&self) -> Option<&str> {
        self.error.as_ref()?.get("errorName")?.as_str()
    }
}

/// A client of one server.
#[derive(Debug, Clone)]
pub struct TrinoClient {
    http: reqwest::Client,
    base: String,
    headers: Vec<(String, String)>,
    request_timeout: Duration,
}

impl TrinoClient {
    /// A client of the server at `base` (`http://127.0.0.1:PORT`) sending
    /// `headers` with every request (authorization, user, session).
    pub fn new(
        base: &str,
        headers: Vec<(String, String)>,
        request_timeout: Duration,
    ) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .timeout(request_timeout)
            .build()
            .map_err(|e| ClientError::Transport {
                what: "building the HTTP client".into(),
                message: e.to_string(),
            })?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            headers,
            request_timeout,
        })
    }

    /// The same client, opening a new connection for every request. For
    /// the fuzzer: a server rightly closes a connection after a malformed
    /// request, and a pooled connection reused at that instant fails on the
    /// client's side, which is no fault of the server's.
    pub fn without_pooling(mut self) -> Result<Self, ClientError> {
        self.http = reqwest::Client::builder()
            .timeout(self.request_timeout)
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| ClientError::Transport {
                what: "building the HTTP client".into(),
                message: e.to_string(),
            })?;
        Ok(self)
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// The headers sent with every request.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Runs `sql` to its end, or fails once `deadline` has passed.
    pub async fn run(&self, sql: &str, deadline: Duration) -> Result<Answer, ClientError> {
        self.run_at_most(sql, deadline, usize::MAX).await
    }

    /// [`Self::run`], but a client that wants only the first `max_rows`
    /// rows: once it has them and more are to come, it cancels the query
    /// (DELETE of its next URI, which must be answered 204) and returns
    /// what it read, marked `cut`. A result of millions of rows is then
    /// no longer read whole, as a person at a terminal would not.
    pub async fn run_at_most(
        &self,
        sql: &str,
        deadline: Duration,
        max_rows: usize,
    ) -> Result<Answer, ClientError> {
        let started = Instant::now();
        let url = format!("{}/v1/statement", self.base);
        let mut doc = self.request(reqwest::Method::POST, &url, Some(sql)).await?;
        let mut answer = Answer::default();
        loop {
            answer.documents += 1;
            let next = self.take(&mut answer, &doc, &url)?;
            let Some(next) = next else {
                return Ok(answer);
            };
            if answer.rows.len() >= max_rows {
                self.cancel(&next).await?;
                answer.cut = true;
                return Ok(answer);
            }
            if started.elapsed() > deadline {
                // Leave nothing running behind.
                let _ = self.request(reqwest::Method::DELETE, &next, None).await;
                return Err(ClientError::Timeout {
                    what: format!("query {} ({} documents)", answer.id, answer.documents),
                    seconds: deadline.as_secs(),
                });
            }
            doc = self.request(reqwest::Method::GET, &next, None).await?;
        }
    }

    /// Cancels a query at one of its URIs: 204, or the status is an error.
    async fn cancel(&self, uri: &str) -> Result<(), ClientError> {
        let what = format!("DELETE {uri}");
        let mut req = self.http.delete(uri);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = req.send().await.map_err(|e| self.transport(&what, &e))?;
        match resp.status().as_u16() {
            204 => Ok(()),
            status => Err(ClientError::Status {
                what,
                status,
                body: resp.text().await.unwrap_or_default(),
            }),
        }
    }

    /// Checks one document and keeps what it carries; returns its `nextUri`.
    fn take(
        &self,
        answer: &mut Answer,
        doc: &Value,
        at: &str,
    ) -> Result<Option<String>, ClientError> {
        let violation = |message: String| ClientError::Protocol {
            what: at.to_string(),
            message,
        };
        let id = doc["id"]
            .as_str()
            .ok_or_else(|| violation(format!("no id: {doc}")))?;
        if answer.id.is_empty() {
            answer.id = id.to_string();
        } else if answer.id != id {
            return Err(violation(format!("id changed from {} to {id}", answer.id)));
        }
        let state = doc["stats"]["state"]
            .as_str()
            .ok_or_else(|| violation(format!("no stats.state: {doc}")))?;
        if answer.states.last().map(String::as_str) != Some(state) {
            answer.states.push(state.to_string());
        }
        if let Some(cols) = doc.get("columns").and_then(Value::as_array) {
            answer.columns = cols.clone();
        }
        if let Some(data) = doc.get("data").and_then(Value::as_array) {
            answer.rows.extend(data.iter().cloned());
        }
        if let Some(e) = doc.get("error") {
            check_error(e).map_err(violation)?;
            answer.error = Some(e.clone());
        }
        match doc.get("nextUri").and_then(Value::as_str) {
            Some(next) if !next.starts_with(&self.base) => Err(violation(format!(
                "nextUri {next} is not under {}",
                self.base
            ))),
            Some(next) => Ok(Some(next.to_string())),
            None if state != "FINISHED" && state != "FAILED" => {
                Err(violation(format!("no nextUri in state {state}")))
            }
            None => Ok(None),
        }
    }

    /// One request of a query's protocol: 200 and a JSON document.
    async fn request(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&str>,
    ) -> Result<Value, ClientError> {
        let what = format!("{method} {url}");
        let mut req = self.http.request(method.clone(), url);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        let resp = req.send().await.map_err(|e| self.transport(&what, &e))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| self.transport(&what, &e))?;
        if method == reqwest::Method::DELETE {
            return Ok(Value::Null);
        }
        if status != 200 {
            return Err(ClientError::Status {
                what,
                status,
                body: text.chars().take(300).collect(),
            });
        }
        serde_json::from_str(&text).map_err(|e| ClientError::Protocol {
            what,
            message: format!(
                "not JSON ({e}): {}",
                text.chars().take(300).collect::<String>()
            ),
        })
    }

    fn transport(&self, what: &str, e: &reqwest::Error) -> ClientError {
        if e.is_timeout() {
            ClientError::Timeout {
                what: what.to_string(),
                seconds: self.request_timeout.as_secs(),
            }
        } else {
            ClientError::Transport {
                what: what.to_string(),
                message: error_chain(e),
            }
        }
    }
}

pub use squall_core::error::error_chain;

/// Checks a Trino `error` object: message, errorName, errorType, errorCode, failureInfo.
pub fn check_error(e: &Value) -> Result<(), String> {
    let ok = e["message"].as_str().is_some_and(|m| !m.is_empty())
        && e["errorName"].as_str().is_some_and(|n| !n.is_empty())
        && matches!(
            e["errorType"].as_str(),
            Some("USER_ERROR" | "INTERNAL_ERROR" | "INSUFFICIENT_RESOURCES" | "EXTERNAL")
        )
        && e["errorCode"].is_i64()
        && e["failureInfo"]["type"].is_string();
    if ok {
        Ok(())
    } else {
        Err(format!("malformed error: {e}"))
    }
}

/// Rows as JSON arrays (Trino's value encodings) as CSV with a header, NULL
/// as an empty field: the form `squall_tpch::compare` reads.
pub fn rows_to_csv(columns: &[Value], rows: &[Value]) -> String {
    let field = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::new();
    let names: Vec<String> = columns
        .iter()
        .map(|c| field(c["name"].as_str().unwrap_or("")))
        .collect();
    out.push_str(&names.join(","));
    out.push('\n');
    for row in rows {
        let cells: Vec<String> = row
            .as_array()
            .map(|cells| {
                cells
                    .iter()
                    .map(|v| match v {
                        Value::Null => String::new(),
                        Value::String(s) => field(s),
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => n.to_string(),
                        other => field(&other.to_string()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        if cells.len() == 1 && cells[0].is_empty() {
            out.push_str("\"\"");
        } else {
            out.push_str(&cells.join(","));
        }
        out.push('\n');
    }
    out
}
