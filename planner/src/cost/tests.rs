use super::*;
use crate::profile::{QueryRequests, StageProfile};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-9)
}

#[test]
fn one_gb_second_and_one_million_requests() {
    // 1 GB for 1 s on the workers, a free coordinator, nothing else.
    let c = query_cost(&CostInputs {
        worker_invocations: 999_999,
        worker_ms: 1000,
        worker_memory_mb: 1024,
        ..Default::default()
    });
    assert!(close(c.lambda_gb_seconds, 1.0));
    assert!(close(c.lambda_compute_usd, 0.000_013_333_4));
    assert_eq!(c.lambda_requests, 1_000_000);
    assert!(close(c.lambda_requests_usd, 0.20));
    assert!(close(c.total_usd, 0.20 + 0.000_013_333_4));
}

#[test]
fn s3_and_sqs_at_list_prices() {
    let c = query_cost(&CostInputs {
        s3_get: 1000,
        s3_put: 900,
        s3_list: 100,
        sqs_requests: 1_000_000,
        ..Default::default()
    });
    assert!(close(c.s3_get_usd, 0.0004));
    assert!(close(c.s3_put_usd, 0.005));
    assert!(close(c.sqs_usd, 0.40));
    // The coordinator's own invocation is always billed.
    assert_eq!(c.lambda_requests, 1);
    assert!(close(c.total_usd, 0.0004 + 0.005 + 0.40 + 0.20 / 1e6));
}

#[test]
fn head_is_priced_like_get_list_like_put_and_delete_is_free() {
    let heads = query_cost(&CostInputs {
        s3_head: 1000,
        ..Default::default()
    });
    let gets = query_cost(&CostInputs {
        s3_get: 1000,
        ..Default::default()
    });
    assert!(close(heads.s3_get_usd, 0.0004));
    assert!(close(heads.total_usd, gets.total_usd));
    let lists = query_cost(&CostInputs {
        s3_list: 1000,
        ..Default::default()
    });
    let puts = query_cost(&CostInputs {
        s3_put: 1000,
        ..Default::default()
    });
    assert!(close(lists.s3_put_usd, 0.005));
    assert!(close(lists.total_usd, puts.total_usd));
    let deletes = query_cost(&CostInputs {
        s3_delete: 1_000_000,
        ..Default::default()
    });
    assert!(close(
        deletes.total_usd,
        query_cost(&CostInputs::default()).total_usd
    ));
    assert!(close(deletes.s3_put_usd, 0.0));
}

#[test]
fn api_invocations_are_lambda_requests() {
    let c = query_cost(&CostInputs {
        worker_invocations: 10,
        api_invocations: 5,
        ..Default::default()
    });
    assert_eq!(c.lambda_requests, 10 + 1 + 5);
    assert!(close(c.lambda_requests_usd, 16.0 * 0.20 / 1e6));
}

#[test]
fn coordinator_time_at_its_own_memory() {
    let c = query_cost(&CostInputs {
        worker_ms: 2000,
        worker_memory_mb: 2048,
        coordinator_ms: 500,
        coordinator_memory_mb: 512,
        ..Default::default()
    });
    assert!(close(c.lambda_gb_seconds, 2.0 * 2.0 + 0.5 * 0.5));
}

#[test]
fn inputs_from_json_default_to_zero() {
    let i: CostInputs =
        serde_json::from_str(r#"{"worker_ms": 1000, "worker_memory_mb": 1024}"#).unwrap();
    assert_eq!(i.worker_ms, 1000);
    assert_eq!(
        (i.s3_get, i.s3_head, i.s3_delete, i.api_invocations),
        (0, 0, 0, 0)
    );
    assert!(close(query_cost(&i).lambda_gb_seconds, 1.0));
    let back = serde_json::to_string(&query_cost(&i)).unwrap();
    assert!(back.contains("\"total_usd\""), "{back}");
    // What the scale model sent before the new fields still prices the same.
    let old: CostInputs = serde_json::from_str(
        r#"{"worker_invocations": 3, "s3_get": 10, "s3_put": 3, "s3_list": 1, "sqs_requests": 11}"#,
    )
    .unwrap();
    let c = query_cost(&old);
    assert!(close(
        c.total_usd,
        4.0 * 0.20 / 1e6 + 10.0 * 0.0004 / 1e3 + 4.0 * 0.005 / 1e3 + 11.0 * 0.40 / 1e6
    ));
}

/// A profile as the embedded backend measures it: two stages, one retry.
fn profile() -> QueryProfile {
    let mut p = QueryProfile::new("q");
    let mut scan = StageProfile::new(0, "scan".into(), 3);
    scan.task_wall_ms_sum = 300;
    scan.row_groups = 10;
    scan.requests = RequestCounts {
        get: 13,
        put: 3,
        sqs_send: 4,
        ..Default::default()
    };
    let mut reduce = StageProfile::new(1, "hash x2".into(), 2);
    reduce.task_wall_ms_sum = 40;
    reduce.requests = RequestCounts {
        get: 6,
        put: 2,
        sqs_send: 2,
        ..Default::default()
    };
    p.add_stage(scan, false);
    p.add_stage(reduce, true);
    p.tasks_launched = 5;
    p.retries = 1;
    p.messages = 6;
    p.wall_ms = 1200;
    p.requests.planning = RequestCounts {
        get: 5,
        list: 2,
        ..Default::default()
    };
    p.requests.coordinator = RequestCounts {
        get: 2,
        list: 2,
        delete: 5,
        sqs_create_queue: 1,
        sqs_receive: 4,
        sqs_delete_batch: 3,
        sqs_delete_queue: 1,
        invoke: 6,
        invoke_throttled: 1,
        ..Default::default()
    };
    p
}

#[test]
fn inputs_from_a_profile_are_the_measured_requests_plus_the_estimate() {
    let config = SquallConfig::default();
    let p = profile();
    let i = CostInputs::from_profile(&p, &config);
    let e = AwsEstimate::of(&p, &config);
    assert_eq!(
        i.worker_invocations, 7,
        "accepted and throttled Invoke requests"
    );
    assert_eq!(i.worker_ms, 340 + 5);
    assert_eq!(i.coordinator_ms, 1200);
    assert_eq!((i.worker_memory_mb, i.coordinator_memory_mb), (1769, 1024));
    let measured = p.requests.total();
    assert_eq!(measured.get, 13 + 6 + 5 + 2);
    assert_eq!(i.s3_get, measured.get + e.requests().get);
    assert_eq!(i.s3_head, e.requests().head);
    assert_eq!(i.s3_put, 5 + e.requests().put);
    assert_eq!(i.s3_list, 4);
    assert_eq!(i.s3_delete, 5);
    assert_eq!(i.sqs_requests, 6 + 1 + 4 + 3 + 1);
    assert_eq!(i.api_invocations, e.api_invocations);

    // Embedded: stop-marker looks (one per attempt at its start, one per
    // second of task time) and the marker, the coordinator function's
    // state, the API's polls (1.2 s at 500 ms: 3 polls, 2 long polls).
    assert_eq!((e.stop_markers.head, e.stop_markers.put), (6, 1));
    assert_eq!((e.state.get, e.state.head, e.state.put), (1, 2 + 3, 3 + 3));
    assert_eq!((e.api.put, e.api.get, e.api.head), (1, 3 + 2, 3));
    assert_eq!(e.api_invocations, 2 + 2);
}

#[test]
fn what_the_profile_measured_is_not_estimated_again() {
    let config = SquallConfig::default();
    let mut p = profile();
    p.requests = QueryRequests {
        stop_markers: true,
        state: RequestCounts {
            get: 1,
            put: 4,
            head: 3,
            ..Default::default()
        },
        ..p.requests
    };
    let e = AwsEstimate::of(&p, &config);
    assert!(e.stop_markers.is_empty() && e.state.is_empty(), "{e:?}");
    assert!(!e.api.is_empty(), "the API is never in the profile");
}

#[test]
fn a_profile_without_request_counts_falls_back_to_its_attempts() {
    let mut p = QueryProfile::new("q");
    p.add_stage(StageProfile::new(0, "scan".into(), 3), true);
    p.tasks_launched = 3;
    p.retries = 1;
    let i = CostInputs::from_profile(&p, &SquallConfig::default());
    assert_eq!(i.worker_invocations, 4, "first attempts and a retry");
}

#[test]
fn worker_memory_changes_only_the_compute_cost() {
    let p = profile();
    let small = profile_cost(&p, &SquallConfig::default());
    let mut config = SquallConfig::default();
    config.worker_memory_mb *= 2;
    let big = profile_cost(&p, &config);
    assert!(big.lambda_compute_usd > small.lambda_compute_usd);
    assert!(close(big.s3_get_usd, small.s3_get_usd));
    assert!(small.total_usd > 0.0);
    let sum = small.lambda_compute_usd
        + small.lambda_requests_usd
        + small.s3_get_usd
        + small.s3_put_usd
        + small.sqs_usd;
    assert!(close(small.total_usd, sum));
}
