//! A query longer than one coordinator invocation, through the api function:
//! the session lowers `squall.coordinator.max_run_secs` to a tenth of a second, so
//! the coordinator function checkpoints the query and invokes itself, maybe
//! several times, each new invocation claiming its generation and resuming
//! from a fresh plan. The answer is right, the profile the last invocation
//! records counts the hand-offs, no stage ran a task twice, the claims are
//! in the query's state, and its checkpoints are gone with its other
//! exchange objects (the test's final leftover check covers the rest).

use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use crate::Stack;
use crate::api::{Client, check_tpch};

/// Keys under `prefix` in the emulated bucket.
fn keys(stack: &Stack, prefix: &str) -> Vec<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import boto3,sys\n\
             s3=boto3.client('s3')\n\
             p=s3.get_paginator('list_objects_v2')\n\
             for page in p.paginate(Bucket='squall-local',Prefix=sys.argv[1]):\n\
             \x20   for o in page.get('Contents',[]): print(o['Key'])",
            prefix,
        ])
        .envs(stack.env.iter().cloned())
        .output()
        .expect("python3 with boto3");
    assert!(
        out.status.success(),
        "listing {prefix}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The query's record as the coordinator function wrote it.
fn record(stack: &Stack, id: &str) -> Value {
    let out = Command::new("python3")
        .args([
            "-c",
            "import boto3,sys\n\
             s3=boto3.client('s3')\n\
             print(s3.get_object(Bucket='squall-local',Key=sys.argv[1])['Body'].read().decode())",
            &format!("state/{id}/status.json"),
        ])
        .envs(stack.env.iter().cloned())
        .output()
        .expect("python3 with boto3");
    assert!(
        out.status.success(),
        "reading the record of {id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON record")
}

pub async fn handed_over(client: &Client, stack: &Stack) {
    let started = Instant::now();
    let session = [("X-Trino-Session", "squall.coordinator.max_run_secs=0.1")];
    let out = client
        .run(squall_tpch::query(3).expect("q3"), &session)
        .await;
    assert_eq!(out.last["stats"]["state"], "FINISHED", "{}", out.last);
    check_tpch(3, &out).unwrap_or_else(|e| panic!("{e}"));

    let record = record(stack, &out.id);
    let profile = &record["profile"];
    let handoffs = profile["handoffs"].as_u64().expect("handoffs");
    assert!(handoffs >= 1, "no hand-off: {profile}");
    assert!(profile["checkpoint_bytes"].as_u64() > Some(0), "{profile}");
    assert_eq!(profile["retries"], 0, "{profile}");
    assert_eq!(profile["speculative"], 0, "{profile}");
    for stage in profile["stage_profiles"].as_array().expect("stages") {
        assert_eq!(
            stage["attempts"], stage["tasks"],
            "a stage ran a task twice: {stage}"
        );
    }
    // Each invocation after the first claimed its generation.
    let state = keys(stack, &format!("state/{}/", out.id));
    for g in 1..=handoffs {
        let claim = format!("state/{}/run-g{g}", out.id);
        assert!(state.contains(&claim), "no {claim} in {state:?}");
    }
    // The checkpoints went with the query's exchange objects.
    let left: Vec<String> = keys(stack, "exchange/")
        .into_iter()
        .filter(|k| k.contains(&out.id))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    eprintln!(
        "aws_emulated: q03 with {handoffs} coordinator hand-off(s) in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
