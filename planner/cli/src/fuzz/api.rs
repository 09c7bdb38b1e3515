//! Fuzzing the HTTP API: mutated and random SQL through the whole protocol,
//! malformed requests (methods, paths, headers, bodies, `nextUri` tokens),
//! and raw bytes that are not HTTP at all.
//!
//! What every case must show:
//!
//! | case | a well-formed answer |
//! |---|---|
//! | SQL | the query ends (FINISHED, or FAILED with a complete Trino `error`) within the deadline |
//! | request | 2xx with a JSON document, or a 4xx/503 whose body is a Trino error document; never another 5xx |
//! | raw bytes | an HTTP error status or a closed connection within the deadline |
//!
//! After every raw case the server must still answer `GET /v1/info`, so a
//! crash or a wedged accept loop shows at once.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use squall_worker_fuzz::mutate::{mutate_bytes, mutate_sql};
use squall_worker_fuzz::seeded::SplitMix64;
use squall_worker_fuzz::{Case, Finding};

use crate::client::{TrinoClient, check_error};

/// Rows a SQL case reads before it cancels the query. A mutant can ask
/// for a huge result (a join condition cut off leaves a cross join of five
/// tables: 100 million rows at SF 0.01, computed in about 5 s, as fast as
/// the fuzzer's timeout): reading it whole would take minutes, a fault of
/// the case, not of the server.
const MAX_ROWS: usize = 100_000;

/// One SQL case: a mutant of a TPC-H query run to its end, or cancelled
/// once [`MAX_ROWS`] rows have been read.
pub(super) async fn sql_case(
    client: &TrinoClient,
    rng: &mut SplitMix64,
    deadline: Duration,
) -> Case {
    let seed = squall_tpch::query(1 + rng.below(22)).unwrap_or("select 1");
    let sql = mutate_sql(rng, seed);
    let sql = if sql.trim().is_empty() {
        "select".to_string()
    } else {
        sql
    };
    let shown: String = sql.chars().take(160).collect();
    match client.run_at_most(&sql, deadline, MAX_ROWS).await {
        Ok(answer) => match (&answer.error, answer.states.last().map(String::as_str)) {
            (Some(e), _) if e["errorType"] == "INTERNAL_ERROR" => {
                // Worth a look: show what the engine said.
                let message: String = e["message"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(90)
                    .collect();
                Ok(format!(
                    "sql failed: {}: {message}",
                    answer.error_name().unwrap_or("?")
                ))
            }
            (Some(_), _) => Ok(format!(
                "sql failed: {}",
                answer.error_name().unwrap_or("?")
            )),
            (None, _) if answer.cut => Ok("sql result cut and cancelled".into()),
            (None, Some("FINISHED")) => Ok("sql finished".into()),
            (None, state) => Err(Finding::new(
                "sql",
                &shown,
                format!("ended in {state:?} without an error"),
            )),
        },
        // A 4xx answer to a malformed body is right when it is a Trino error.
        Err(crate::client::ClientError::Status { status, body, .. })
            if (400..500).contains(&status) =>
        {
            match trino_error_body(&body) {
                Ok(()) => Ok(format!("sql http {status}")),
                Err(m) => Err(Finding::new("sql", &shown, m)),
            }
        }
        Err(e) => Err(Finding::new("sql", &shown, e.to_string())),
    }
}

fn trino_error_body(body: &str) -> Result<(), String> {
    let doc: Value =
        serde_json::from_str(body).map_err(|e| format!("error body is not JSON ({e}): {body}"))?;
    if doc["stats"]["state"] != "FAILED" {
        return Err(format!("error body is not FAILED: {body}"));
    }
    check_error(&doc["error"])
}

const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "FOO",
];

/// A request path: a real query's URIs with mutated parts, or junk.
fn random_path(rng: &mut SplitMix64, id: &str, slug: &str) -> String {
    let token = match rng.below(6) {
        0 => "0".to_string(),
        1 => "-1".to_string(),
        2 => "99999999999999999999999".to_string(),
        3 => "%FF%FE".to_string(),
        4 => "1.5".to_string(),
        _ => rng.below(5).to_string(),
    };
    let id = if rng.one_in(3) { "nosuchquery" } else { id };
    let slug = if rng.one_in(3) { "wrongslug" } else { slug };
    match rng.below(9) {
        0 => format!("/v1/statement/queued/{id}/{slug}/{token}"),
        1 => format!("/v1/statement/executing/{id}/{slug}/{token}"),
        2 => format!("/v1/query/{id}"),
        3 => "/v1/statement".to_string(),
        4 => "/v1/info".to_string(),
        5 => format!("/v1/statement/executing/{id}/{slug}/{token}/extra/%00"),
        6 => format!("/{}", "a/".repeat(rng.below(500))),
        7 => format!("/v1/query/{}", "%".repeat(1 + rng.below(3))),
        _ => format!(
            "/v1/statement/queued/{}/{slug}/1",
            "x".repeat(rng.below(5000))
        ),
    }
}

fn random_headers(rng: &mut SplitMix64) -> Vec<(String, String)> {
    let mut h = Vec::new();
    for _ in 0..rng.below(4) {
        let (k, v) = match rng.below(8) {
            0 => ("X-Trino-Session", "novalue".to_string()),
            1 => (
                "X-Trino-Session",
                format!("squall.query.timeout_secs={}", rng.below(3)),
            ),
            2 => (
                "X-Trino-Session",
                "squall.exchange_location=/tmp/elsewhere".to_string(),
            ),
            3 => ("Authorization", "Basic !!!notbase64".to_string()),
            4 => ("X-Forwarded-Host", "evil.example\"><script>".to_string()),
            5 => ("X-Trino-User", "u".repeat(rng.below(8_000))),
            6 => ("Content-Type", "application/x-garbage".to_string()),
            _ => ("X-Trino-Session", "%ZZ=%ZZ".to_string()),
        };
        h.push((k.to_string(), v));
    }
    h
}

fn random_body(rng: &mut SplitMix64) -> Vec<u8> {
    match rng.below(6) {
        0 => Vec::new(),
        1 => vec![0xff, 0xfe, 0x00, 0x80],
        2 => vec![b'x'; (1 << 20) + 1 + rng.below(1000)], // over the SQL limit
        3 => b"select 1".to_vec(),
        4 => mutate_bytes(rng, b"select n_name from nation where n_nationkey = 3"),
        _ => (0..rng.below(300)).map(|_| rng.next_u64() as u8).collect(),
    }
}

/// One malformed request against the API.
pub(super) async fn request_case(
    client: &TrinoClient,
    rng: &mut SplitMix64,
    auth: &[(String, String)],
    live: &(String, String),
) -> Case {
    let method = rng.pick(METHODS).copied().unwrap_or("GET");
    let path = random_path(rng, &live.0, &live.1);
    let url = format!("{}{path}", client.base());
    let what = format!("{method} {}", path.chars().take(120).collect::<String>());
    let Ok(m) = reqwest::Method::from_bytes(method.as_bytes()) else {
        return Ok("bad method".into());
    };
    let mut req = client.http().request(m.clone(), &url);
    if !rng.one_in(8) {
        for (k, v) in auth {
            req = req.header(k.as_str(), v.as_str());
        }
    }
    for (k, v) in random_headers(rng) {
        req = req.header(k, v);
    }
    let body = random_body(rng);
    let large_body = body.len() > 64 * 1024;
    req = req.body(body);
    let resp = match req.send().await {
        Ok(r) => r,
        // reqwest refuses to send some of these (a URL it cannot parse).
        Err(e) if e.is_builder() => return Ok("unsendable".into()),
        Err(e) => {
            let chain = crate::client::error_chain(&e);
            // A server may answer a request without reading a body it has no
            // use for and close the connection: the client, still writing a
            // large body, sees the pipe break. The server is fine (the next
            // cases reach it); anything else is a finding.
            if large_body && (chain.contains("Broken pipe") || chain.contains("Connection reset")) {
                return Ok("closed while a large body was sent".into());
            }
            return Err(Finding::new(
                "request",
                &what,
                format!("no answer: {chain}"),
            ));
        }
    };
    let status = resp.status().as_u16();
    let body = match resp.text().await {
        Ok(b) => b,
        Err(e) => {
            return Err(Finding::new(
                "request",
                &what,
                format!("unreadable body: {e}"),
            ));
        }
    };
    if m == reqwest::Method::HEAD || status == 204 {
        return Ok(format!("http {status}"));
    }
    if status >= 500 && status != 503 {
        return Err(Finding::new(
            "request",
            &what,
            format!("HTTP {status}: {body}"),
        ));
    }
    if status >= 400 {
        return trino_error_body(&body)
            .map(|()| format!("http {status}"))
            .map_err(|m| Finding::new("request", &what, m));
    }
    match serde_json::from_str::<Value>(&body) {
        Ok(_) => Ok(format!("http {status}")),
        Err(e) => Err(Finding::new(
            "request",
            &what,
            format!("HTTP {status} body is not JSON ({e})"),
        )),
    }
}

/// Bytes that are not a valid HTTP request, sent on a raw connection.
fn raw_request(rng: &mut SplitMix64) -> Vec<u8> {
    let valid =
        b"POST /v1/statement HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 8\r\n\r\nselect 1";
    match rng.below(6) {
        0 => mutate_bytes(rng, valid),
        1 => b"GET /v1/info HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n"
            .to_vec(),
        2 => format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(100_000)).into_bytes(),
        3 => format!("GET / HTTP/1.1\r\n{}\r\n\r\n", "X-A: b\r\n".repeat(5_000)).into_bytes(),
        4 => {
            b"POST /v1/statement HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nselect".to_vec()
        }
        _ => (0..1 + rng.below(2000))
            .map(|_| rng.next_u64() as u8)
            .collect(),
    }
}

/// One raw case; then the server must still answer.
pub(super) async fn raw_case(
    client: &TrinoClient,
    rng: &mut SplitMix64,
    deadline: Duration,
) -> Case {
    let addr = client.base().trim_start_matches("http://").to_string();
    let bytes = raw_request(rng);
    let what = format!("raw {} bytes", bytes.len());
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(&addr).await?;
        // The server may close as soon as it has seen enough: not an error.
        let _ = stream.write_all(&bytes).await;
        let _ = stream.shutdown().await;
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = match tokio::time::timeout(deadline, exchange).await {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => return Err(Finding::new("raw", &what, format!("cannot connect: {e}"))),
        Err(_) => {
            return Err(Finding::new(
                "raw",
                &what,
                "the server neither answered nor closed".into(),
            ));
        }
    };
    let head = String::from_utf8_lossy(&answer[..answer.len().min(12)]).to_string();
    let info = client
        .http()
        .get(format!("{}/v1/info", client.base()))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| e.to_string());
    if info != Ok(200) {
        return Err(Finding::new(
            "raw",
            &what,
            format!("the server stopped answering: {info:?}"),
        ));
    }
    Ok(if head.is_empty() {
        "raw closed".into()
    } else {
        format!("raw {}", head.trim())
    })
}
