//! Heavy clients of `squall loadtest --heavy N`: beside the TPC-H clients,
//! N clients run [`HEAVY_SQL`] (a nested-loop join over `lineitem ×
//! lineitem`, minutes of CPU on every core) again and again; every other
//! one cancels its statement after a while (a DELETE on `nextUri`), the
//! rest let the statement timeout stop it.
//!
//! ```text
//! run 1: the TPC-H clients alone                      ─┐ short queries' p50 / p99 side by side,
//! run 2: the TPC-H clients + N heavy clients          ─┘ 0 wrong answers in both
//! after each run: seconds until the process's CPU time stops growing
//! ```
//!
//! What it shows: a heavy query takes one running slot and its share of the
//! CPU executor, never the whole service; a cancelled or timed-out one stops
//! its work at once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::client::{ClientError, TrinoClient};
use crate::loadtest::{LoadOptions, LoadReport, run};
use squall_server::ServerError;

/// The heavy statement: 3.6·10¹¹ pairs at SF 0.1, no row matches.
pub const HEAVY_SQL: &str =
    "SELECT count(*) FROM lineitem a, lineitem b WHERE a.l_orderkey + b.l_orderkey < 0";

/// The heavy clients of a run.
#[derive(Debug, Clone)]
pub struct HeavyOptions {
    /// Heavy clients (0: none).
    pub clients: usize,
    /// A cancelling client sends its DELETE this long after the POST.
    pub cancel_after: Duration,
    /// The statement timeout of the other heavy clients' queries.
    pub timeout: Duration,
}

impl Default for HeavyOptions {
    fn default() -> Self {
        Self {
            clients: 0,
            cancel_after: Duration::from_secs(3),
            timeout: Duration::from_secs(3),
        }
    }
}

/// How the heavy clients' statements ended.
#[derive(Debug, Clone, Default)]
pub struct HeavyReport {
    pub clients: usize,
    /// Cancelled by their client (DELETE on `nextUri`).
    pub cancelled: u64,
    /// Stopped by the statement timeout (EXCEEDED_TIME_LIMIT).
    pub timed_out: u64,
    /// Ran to their end (the answer, 0, checked).
    pub finished: u64,
    /// Anything else, by kind, with an example each.
    pub other: BTreeMap<String, (u64, String)>,
}

impl HeavyReport {
    pub fn display(&self) -> String {
        let mut out = format!(
            "heavy clients {}: {} cancelled, {} timed out, {} finished, {} other\n",
            self.clients,
            self.cancelled,
            self.timed_out,
            self.finished,
            self.other.values().map(|(n, _)| n).sum::<u64>()
        );
        for (kind, (n, example)) in &self.other {
            out.push_str(&format!("  heavy {kind}: {n}  (e.g. {example})\n"));
        }
        out
    }

    fn absorb(&mut self, other: HeavyReport) {
        self.cancelled += other.cancelled;
        self.timed_out += other.timed_out;
        self.finished += other.finished;
        for (kind, (n, example)) in other.other {
            let entry = self.other.entry(kind).or_insert((0, example));
            entry.0 += n;
        }
    }

    fn other(&mut self, kind: String, example: String) {
        self.other.entry(kind).or_insert((0, example)).0 += 1;
    }
}

/// Starts the heavy clients; each stops submitting at `deadline`.
pub(crate) fn spawn_clients(
    options: &HeavyOptions,
    client: &TrinoClient,
    deadline: Instant,
) -> Result<Vec<tokio::task::JoinHandle<HeavyReport>>, ServerError> {
    let mut headers = vec![
        ("X-Trino-User".to_string(), "loadtest-heavy".to_string()),
        (
            "X-Trino-Session".to_string(),
            format!(
                "squall.query.timeout_secs={}",
                options.timeout.as_secs().max(1)
            ),
        ),
    ];
    if let Some(auth) = client.headers().iter().find(|(k, _)| k == "Authorization") {
        headers.push(auth.clone());
    }
    let timing_out =
        TrinoClient::new(client.base(), headers, Duration::from_secs(60)).map_err(|e| {
            ServerError::Internal {
                message: e.to_string(),
            }
        })?;
    Ok((0..options.clients)
        .map(|i| {
            let cancels = i % 2 == 0;
            let client = if cancels {
                client.clone()
            } else {
                timing_out.clone()
            };
            let cancel_after = options.cancel_after;
            tokio::spawn(async move {
                let mut report = HeavyReport::default();
                while Instant::now() < deadline {
                    // A cancelling client's deadline is its cancel: the client
                    // sends the DELETE once it has passed.
                    let limit = if cancels {
                        cancel_after
                    } else {
                        Duration::from_secs(300)
                    };
                    match client.run(HEAVY_SQL, limit).await {
                        Err(ClientError::Timeout { .. }) if cancels => report.cancelled += 1,
                        Err(e) => {
                            report.other(e.kind(), e.to_string());
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Ok(answer) => match answer.error_name() {
                            Some("EXCEEDED_TIME_LIMIT") => report.timed_out += 1,
                            None if answer.rows == vec![serde_json::json!([0])] => {
                                report.finished += 1
                            }
                            None => report.other("wrong".into(), format!("{:?}", answer.rows)),
                            Some(name) => {
                                report.other(name.to_string(), answer.id.clone());
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                        },
                    }
                }
                report
            })
        })
        .collect())
}

/// Sums the heavy clients' reports.
pub(crate) async fn collect(
    clients: Vec<tokio::task::JoinHandle<HeavyReport>>,
) -> Result<HeavyReport, ServerError> {
    let mut total = HeavyReport {
        clients: clients.len(),
        ..HeavyReport::default()
    };
    for c in clients {
        total.absorb(c.await.map_err(|e| ServerError::Internal {
            message: format!("a heavy load-test client failed: {e}"),
        })?);
    }
    Ok(total)
}

/// CPU seconds this process has used (utime + stime of `/proc/self/stat`);
/// None where there is no procfs.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces): state is
    // field 3 of stat(5), utime and stime fields 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ, the unit of these fields, is 100 on Linux.
    Some(ticks as f64 / 100.0)
}

/// Time until this process's CPU time stops growing: the start of the
/// first second in which it grew by at most 0.05 s. None if that does not
/// happen within `within`, or where it cannot be measured.
pub async fn until_cpu_idle(within: Duration) -> Option<Duration> {
    const WINDOW: Duration = Duration::from_secs(1);
    const IDLE_CPU: f64 = 0.05;
    let started = Instant::now();
    let mut samples = vec![(started, process_cpu_seconds()?)];
    while started.elapsed() < within {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (now, cpu) = (Instant::now(), process_cpu_seconds()?);
        samples.push((now, cpu));
        samples.retain(|(t, _)| now.duration_since(*t) <= WINDOW + Duration::from_millis(500));
        if let Some((t, c)) = samples
            .iter()
            .find(|(t, _)| now.duration_since(*t) >= WINDOW)
            && cpu - c <= IDLE_CPU
        {
            return Some(t.duration_since(started));
        }
    }
    None
}

/// Runs the load test without and then with the heavy clients of `options`.
pub async fn run_compared(options: &LoadOptions) -> Result<(LoadReport, LoadReport), ServerError> {
    let alone = run(&LoadOptions {
        heavy: HeavyOptions {
            clients: 0,
            ..options.heavy.clone()
        },
        ..options.clone()
    })
    .await?;
    let mixed = run(options).await?;
    Ok((alone, mixed))
}

/// `squall loadtest`: one run, or with heavy clients the two runs of
/// [`run_compared`] and their comparison, printed; returns the report whose
/// `wrong` counts every wrong answer.
pub async fn run_and_print(options: &LoadOptions) -> Result<LoadReport, ServerError> {
    if options.heavy.clients == 0 {
        let report = run(options).await?;
        print!("{}", report.display());
        return Ok(report);
    }
    let (alone, mixed) = run_compared(options).await?;
    print!("== without heavy clients\n{}", alone.display());
    print!(
        "== with {} heavy clients\n{}",
        options.heavy.clients,
        mixed.display()
    );
    print!("{}", comparison(&alone, &mixed));
    Ok(LoadReport {
        wrong: alone.wrong + mixed.wrong,
        ..mixed
    })
}

/// The short queries' figures of two runs side by side.
pub fn comparison(alone: &LoadReport, mixed: &LoadReport) -> String {
    let line = |name: &str, r: &LoadReport| {
        format!(
            "{name:<22} {:>9} {:>6} {:>10.1} {:>10.1} {:>9}\n",
            r.completed,
            r.wrong,
            r.latency_ms(0.5),
            r.latency_ms(0.99),
            r.cpu_idle_after
                .map(|d| format!("{:.2}", d.as_secs_f64()))
                .unwrap_or_else(|| "-".into())
        )
    };
    let mut out = format!(
        "{:<22} {:>9} {:>6} {:>10} {:>10} {:>9}\n",
        "short queries", "completed", "wrong", "p50 ms", "p99 ms", "idle s"
    );
    out.push_str(&line("without heavy clients", alone));
    out.push_str(&line(&format!("with {} heavy", mixed.heavy.clients), mixed));
    out
}
