//! The aws backend end to end against local emulators.
//!
//! `infra/local/up.sh` starts moto (S3, SQS and Secrets Manager) and `cargo
//! lambda watch` (the Lambda Invoke API and function URLs, running the
//! `worker`, `coordinator` and `api` functions) on loopback ports, uploads
//! TPC-H SF 0.1 to `s3://squall-local/tpch/sf0.1` and, with
//! `SQUALL_API_AUTH=token`, keeps the api function's token in a secret;
//! `down.sh` stops them however the test ends. The emulators start once,
//! for one test that runs, in order:
//!
//! - the 22 TPC-H queries with `squall query --backend aws` (the command is
//!   the coordinator; every task an emulated Lambda invocation, exchange
//!   objects in S3, completion messages through one SQS queue per query),
//!   checked against the TPC-H answers (the stack runs every query staged:
//!   `SQUALL_QUERY_SINGLE_TASK_BYTES=0`), then Q6, Q14 and Q16 as one task
//!   each (`squall.query.single_task_bytes` at its default);
//! - Q3 and Q18 with their larger stages started through launcher
//!   invocations of the worker function (tree invocation), each task a
//!   pointer to its range of the batch's one object: the same answers;
//! - `requests`: Q3's `EXPLAIN ANALYZE` with every task payload through S3:
//!   the SQS requests, invocations, stop-marker HEADs and payload requests
//!   it counts add up;
//! - four of them again under injected faults (20% of task attempts crash,
//!   5% of object-store requests fail, 10% of completion messages are
//!   duplicated and 10% lost): the same answers, and the workers' own log
//!   shows the faults happened;
//! - Q6 and Q3 while 30% of task attempts kill their worker process
//!   mid-task: the same answers through the silent-attempt path;
//! - `partitioned`: a Hive-partitioned table through an `s3://` catalog and
//!   through the emulated Glue Data Catalog (`glue://`), equal to the
//!   embedded answers, partitions pruned in EXPLAIN;
//! - `api`: the api function over plain HTTP at its function URL, every
//!   request with the token as a bearer token — malformed requests (400,
//!   404, 405 with Trino-shaped errors, bad SQL
//!   refused before any coordinator starts); a TPC-H query and a result of
//!   several pages (each page one ranged GET) equal to the expected answers;
//!   two queries at once; an undecodable task payload failing the query
//!   with its stage and task named; a cancel that stops the running workers
//!   (seen in the workers' own log), also while they are inside a CPU-bound
//!   nested-loop join (their operators stop within a second of the marker);
//! - `handoff`: a query longer than one coordinator invocation (the session
//!   lowers `squall.coordinator.max_run_secs` to 0.1 s): checkpointed and
//!   handed over to fresh invocations, the right answer, the hand-offs in
//!   its profile, no task run twice, each generation claimed, no
//!   checkpoint left;
//! - `auth`: the token check — missing and wrong credentials refused with a
//!   Trino-shaped 401, the right token accepted as bearer and as basic-auth
//!   password, the token in neither the functions' environment nor their
//!   log, and an unreadable token secret stopping start-up;
//! - `squall serve --backend aws` on a local port: the same service (and the
//!   same token, read from the same secret), a TPC-H query and a syntax error;
//! - afterwards no exchange object and no query queue may be left.
//!
//! Each part prints its wall time (`--nocapture` shows it).

// Test code: a failed expectation panics (the workspace denies these lints
// in library code; clippy.toml allows them only inside #[test] functions).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api;
#[allow(dead_code)]
#[path = "../api/common.rs"]
mod api_common;
mod auth;
mod handoff;
mod partitioned;
mod requests;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use squall_tpch::compare::compare_csv;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The emulators, up for as long as this value lives.
struct Stack {
    env: Vec<(String, String)>,
    /// The api function's token, read from moto's Secrets Manager as a user
    /// reads a deployed stack's (`aws secretsmanager get-secret-value`).
    api_token: String,
}

impl Stack {
    fn up() -> Self {
        let ports = [
            ("SQUALL_MOTO_PORT", free_port()),
            ("SQUALL_LAMBDA_PORT", free_port()),
        ];
        let status = Command::new("bash")
            .arg(root().join("infra/local/up.sh"))
            .envs(ports.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .env("SQUALL_BIN", env!("CARGO_BIN_EXE_squall"))
            .env("SQUALL_API_AUTH", "token")
            // SF 0.1 is small enough to run every query as one task: the
            // stack stages them all, as this test is about the staged path
            // (the one-task path is checked on its own).
            .env("SQUALL_QUERY_SINGLE_TASK_BYTES", "0")
            .status()
            .expect("running infra/local/up.sh");
        // From here on, down.sh runs however the test ends.
        let mut stack = Stack {
            env: vec![],
            api_token: String::new(),
        };
        assert!(status.success(), "infra/local/up.sh failed");
        let text =
            std::fs::read_to_string(root().join("infra/local/env.sh")).expect("infra/local/env.sh");
        stack.env = text
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| {
                (
                    k.to_string(),
                    v.trim_matches('"').trim_matches('\'').to_string(),
                )
            })
            .collect();
        stack.api_token = stack.read_api_token();
        stack
    }

    fn read_api_token(&self) -> String {
        let out = Command::new("python3")
            .args([
                "-c",
                "import boto3,os\n\
                 sm=boto3.client('secretsmanager')\n\
                 print(sm.get_secret_value(SecretId=os.environ['SQUALL_API_TOKEN_SECRET'])['SecretString'])",
            ])
            .envs(self.env.iter().cloned())
            .output()
            .expect("python3 with boto3");
        assert!(
            out.status.success(),
            "reading the api token: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            token.len() >= 32,
            "a short api token: {} characters",
            token.len()
        );
        token
    }

    /// The api function's token (its secret's value).
    fn api_token(&self) -> &str {
        &self.api_token
    }

    /// The functions' environment (`up.sh` writes it for `cargo lambda watch`).
    fn functions_env(&self) -> PathBuf {
        root().join("infra/local/.run/functions.env")
    }

    /// A variable of the client environment (`infra/local/env.sh`).
    fn var(&self, name: &str) -> String {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{name} is not in infra/local/env.sh"))
    }

    /// What the functions print (`cargo lambda watch`'s output).
    fn lambda_log(&self) -> PathBuf {
        root().join("infra/local/.run/lambda.log")
    }

    /// The TPC-H SF 0.1 files `up.sh` uploaded.
    fn data_dir(&self) -> PathBuf {
        root().join("data/tpch/sf0.1")
    }

    fn squall(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_squall"))
            .args(args)
            .envs(self.env.iter().cloned())
            .output()
            .expect("running squall")
    }

    /// Objects under `prefix` in the emulated bucket and queues named like query queues.
    fn leftovers(&self) -> String {
        let out = Command::new("python3")
            .args([
                "-c",
                "import boto3,os\n\
                 s3=boto3.client('s3'); sqs=boto3.client('sqs')\n\
                 objs=s3.list_objects_v2(Bucket='squall-local',Prefix='exchange/').get('KeyCount',0)\n\
                 spilled=s3.list_objects_v2(Bucket='squall-local',Prefix='payloads/').get('KeyCount',0)\n\
                 qs=sqs.list_queues(QueueNamePrefix=os.environ['SQUALL_QUEUE_PREFIX']).get('QueueUrls',[])\n\
                 print(objs, spilled, len(qs))",
            ])
            .envs(self.env.iter().cloned())
            .output()
            .expect("python3 with boto3");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(root().join("infra/local/down.sh"))
            .status();
    }
}

/// `squall serve --backend aws --port 0` with the stack's environment; stopped on drop.
struct Served {
    child: std::process::Child,
    base: String,
}

impl Served {
    fn start(stack: &Stack) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_squall"))
            .args(["serve", "--backend", "aws", "--port", "0"])
            .envs(stack.env.iter().cloned())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("starting squall serve");
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let served = Served {
            base: line.trim().trim_start_matches("listening on ").to_string(),
            child,
        };
        assert!(
            served.base.starts_with("http://127.0.0.1:"),
            "squall serve printed {line:?}"
        );
        served
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn aws_path_on_emulated_lambda_s3_and_sqs() {
    let t = Instant::now();
    let stack = Stack::up();
    eprintln!(
        "aws_emulated: emulators up in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    tpch_through_the_command(&stack);
    eprintln!(
        "aws_emulated: 22 TPC-H queries through `squall query --backend aws` in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    many_tasks_in_one_stage(&stack);
    eprintln!(
        "aws_emulated: a stage of 160 tasks in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    tree_invocation(&stack);
    eprintln!(
        "aws_emulated: 2 TPC-H queries started through launcher invocations in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    requests::sqs_and_s3_requests(&stack);
    eprintln!(
        "aws_emulated: the requests of Q3, counted, in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    tpch_under_faults(&stack);
    eprintln!(
        "aws_emulated: 4 TPC-H queries under injected faults in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    worker_deaths(&stack);
    eprintln!(
        "aws_emulated: 2 TPC-H queries with worker processes dying mid-task in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    partitioned::partitioned_tables(&stack);
    eprintln!(
        "aws_emulated: a partitioned table through s3:// and glue:// catalogs in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    partitioned::text_tables(&stack);
    eprintln!(
        "aws_emulated: text tables in byte ranges and whole files through s3:// in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let client = api::Client::new(&stack);
        let timed = |name: &str, t: Instant| {
            eprintln!(
                "aws_emulated: api function, {name}: {:.1}s",
                t.elapsed().as_secs_f64()
            );
        };
        let t = Instant::now();
        api::malformed(&client).await;
        timed("malformed requests", t);
        let t = Instant::now();
        api::queries(&client, &stack).await;
        timed("queries", t);
        let t = Instant::now();
        api::created_tables_live_for_their_request(&client, &stack).await;
        timed("created tables live for their request", t);
        let t = Instant::now();
        api::concurrent(&client).await;
        timed("two queries at once", t);
        let t = Instant::now();
        handoff::handed_over(&client, &stack).await;
        timed("a query handed over between coordinator invocations", t);
        let t = Instant::now();
        api::undecodable_task(&client).await;
        timed("an undecodable task", t);
        let t = Instant::now();
        api::cancel(&client, &stack).await;
        timed("a cancel", t);
        let t = Instant::now();
        api::heavy_cancel(&client, &stack).await;
        timed("a cancel inside a nested-loop join", t);
        let t = Instant::now();
        auth::token(&client, &stack).await;
        auth::unreadable_secret(&stack);
        timed("token authentication", t);
    });

    let t = Instant::now();
    let serve = Served::start(&stack);
    let bearer = format!("Bearer {}", stack.api_token());
    runtime.block_on(api::served(
        &api::Client::at(&serve.base).with_authorization(Some(&bearer)),
    ));
    drop(serve);
    eprintln!(
        "aws_emulated: squall serve --backend aws: {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // Queries end (and clean up) shortly after their clients see the end.
    let deadline = Instant::now() + Duration::from_secs(60);
    while stack.leftovers() != "0 0 0" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        stack.leftovers(),
        "0 0 0",
        "exchange objects / spilled task payloads / query queues left behind"
    );

    // Bad SQL fails in planning, with the column named and exit code 1.
    let out = stack.squall(&["query", "--backend", "aws", "select nope from lineitem"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nope"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs TPC-H queries `qs` with `squall query --backend aws` and `settings`
/// and checks each answer against the SF 0.1 answers; panics naming every
/// query that failed or answered wrong (`what` says under which conditions).
fn tpch_checked(stack: &Stack, qs: &[usize], settings: &[&str], what: &str) {
    let mut failures = Vec::new();
    for &q in qs {
        let sql = squall_tpch::query(q).expect("query");
        let mut args = vec!["query", "--backend", "aws", "--format", "csv"];
        for s in settings {
            args.extend(["--config", s]);
        }
        args.push(sql);
        let out = stack.squall(&args);
        if !out.status.success() {
            failures.push(format!(
                "q{q:02}{what}: exit {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
            continue;
        }
        let expected = squall_tpch::expected_answer(0.1, q).expect("answer");
        match compare_csv(expected, &String::from_utf8_lossy(&out.stdout), Some(sql)) {
            Ok(c) if c.ok => {}
            Ok(c) => failures.push(format!("q{q:02}{what}: {}", c.message)),
            Err(e) => failures.push(format!("q{q:02}{what}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Q1, Q3, Q6 and Q10 with crashing tasks, failing S3 requests, and
/// duplicated and lost SQS messages, all injected at the seams the embedded
/// backend shares; the answers must not change.
fn tpch_under_faults(stack: &Stack) {
    let faults = [
        "squall.fault.seed=11",
        "squall.fault.task_crash_rate=0.2",
        "squall.fault.store_error_rate=0.05",
        "squall.fault.message_duplicate_rate=0.1",
        "squall.fault.message_loss_rate=0.1",
        "squall.task.max_attempts=8",
        "squall.task.speculation_min_ms=1000",
        "squall.task.attempt_timeout_ms=5000",
        // Every task payload travels through S3 (and must be gone afterwards).
        "squall.inline_payload_bytes=256",
    ];
    tpch_checked(stack, &[1, 3, 6, 10], &faults, " under faults");
    // The faults did happen (decisions depend on the random query ids, so
    // any one kind may miss a run; ~30 tasks make both checks near certain).
    // The functions' output reaches the log file through a pipe: give the
    // last lines a few seconds to arrive.
    let shows = |needles: &[&str]| {
        (0..50).any(|_| {
            let log = std::fs::read_to_string(stack.lambda_log()).unwrap_or_default();
            let found = needles.iter().any(|n| log.contains(n));
            if !found {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            found
        })
    };
    assert!(
        shows(&["task crashed"]),
        "the workers' log shows no crashed task"
    );
    assert!(
        shows(&["completion message lost", "completion message duplicated"]),
        "the workers' log shows no lost or duplicated completion message"
    );
}

/// Q6 and Q3 while 30% of task attempts kill their worker process mid-task
/// (`abort`, before or after writing the output): no report ever comes,
/// the coordinator's deadlines launch new attempts beside the dead ones
/// (the silent-attempt path a Lambda that runs out of memory takes), and
/// the answers do not change. The functions' own log shows the deaths and
/// the processes started again (`infra/local/cargo-shim.sh` plays Lambda
/// replacing a dead environment).
fn worker_deaths(stack: &Stack) {
    let settings = [
        "squall.fault.seed=5",
        "squall.fault.task_abort_rate=0.3",
        "squall.task.max_attempts=8",
        "squall.task.speculation_min_ms=1000",
        "squall.task.attempt_timeout_ms=4000",
    ];
    tpch_checked(stack, &[6, 3], &settings, " with dying workers");
    let log = std::fs::read_to_string(stack.lambda_log()).unwrap_or_default();
    assert!(
        log.contains("the worker process aborts") && log.contains("starting it again"),
        "the functions' log shows no worker process that died and came back"
    );
}

/// A stage of 160 tasks, more than `cargo lambda watch` holds waiting (it
/// stops dispatching for good at 100): the coordinator keeps at most
/// `squall.task.max_unanswered_invokes` invocations unanswered, which the
/// local stack sets below that, and the answer equals the embedded
/// backend's on the same files, on disk and in S3.
fn many_tasks_in_one_stage(stack: &Stack) {
    // Grouped by part (line items are written in order-key order: grouped
    // by order key the aggregation would need no exchange, `clustered`).
    let sql = "select count(*), sum(c) from \
               (select l_partkey, count(*) c from lineitem group by l_partkey) t";
    let settings = [
        "--config",
        "squall.shuffle.partitions=160",
        "--config",
        "squall.shuffle.target_task_bytes=1",
    ];
    // `local`: the embedded backend over the same files on disk; `s3`: the
    // embedded backend over the stack's catalog in (emulated) S3.
    let run = |backend: &str, sql: &str| {
        let data = stack.data_dir();
        let mut args = vec!["query", "--format", "csv", "--backend"];
        match backend {
            "local" => args.extend(["local", "--catalog", data.to_str().expect("utf-8 path")]),
            "s3" => args.push("local"),
            aws => args.push(aws),
        }
        args.extend(settings);
        args.push(sql);
        let out = stack.squall(&args);
        assert!(
            out.status.success(),
            "{backend}: exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let aws = run("aws", sql);
    assert_eq!(aws, run("local", sql));
    assert_eq!(aws, run("s3", sql));
    let explained = run("aws", &format!("explain analyze {sql}"));
    assert!(
        explained.contains("160 tasks]"),
        "no stage of 160 tasks:\n{explained}"
    );
}

/// Q3 and Q18 with their larger stages started through launcher
/// invocations (tree invocation, a low threshold): the worker function
/// reads each batch's object and invokes its tasks, every one as a pointer
/// to its range of that object (the inline limit is tiny), and the answers
/// do not change. The functions' log shows the launchers at work.
/// (`cargo lambda watch` stops dispatching once 100 invocations of a
/// function wait, counting the launchers' own: stages stay small here.)
/// Their reduce stages are kept (clustered by order key, their
/// aggregations would run in the scans' few tasks).
fn tree_invocation(stack: &Stack) {
    let settings = [
        "squall.scan.clustered_aggregation=false",
        "squall.shuffle.partitions=24",
        "squall.shuffle.target_task_bytes=1",
        "squall.task.tree_min_tasks=12",
        "squall.task.tree_fanout=6",
        "squall.inline_payload_bytes=256",
    ];
    tpch_checked(stack, &[3, 18], &settings, " through launcher invocations");
    let shows = || {
        (0..50).any(|_| {
            let log = std::fs::read_to_string(stack.lambda_log()).unwrap_or_default();
            let found = log.contains("launch batch sent");
            if !found {
                std::thread::sleep(Duration::from_millis(100));
            }
            found
        })
    };
    assert!(shows(), "the functions' log shows no launcher invocation");
}

fn tpch_through_the_command(stack: &Stack) {
    let all: Vec<usize> = (1..=22).collect();
    tpch_checked(stack, &all, &[], "");
    // Small queries as one Lambda task each (the product's default
    // threshold): the same answers, one invocation.
    let one_task = "squall.query.single_task_bytes=33554432";
    tpch_checked(stack, &[6, 14, 16], &[one_task], " as one task");
    let sql = format!("explain analyze {}", squall_tpch::query(6).expect("query"));
    let out = stack.squall(&["query", "--backend", "aws", "--config", one_task, &sql]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("single (small query)") && text.contains("1 stages, 1 tasks"),
        "Q6 as one task on the aws backend:\n{text}"
    );
}
