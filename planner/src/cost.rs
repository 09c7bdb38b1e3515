//! The modelled AWS cost of one query, at list prices.
//!
//! A query on AWS pays for four things: worker Lambda time (GB-seconds at the
//! worker function's memory, one invocation per task attempt), the
//! coordinator Lambda for the query's wall time, S3 requests (exchange PUTs
//! and GETs, Parquet reads, the cleanup LIST) and SQS requests (one queue per
//! query, one message per task attempt). Bytes moved between S3 and Lambda in
//! one region are free, so request counts, not bytes, set the price of a
//! shuffle.
//!
//! ```text
//! QueryProfile ──CostInputs::from_profile──> CostInputs ──query_cost──> QueryCost
//!   (measured)      (+ worker/coordinator MB,    (counts,          (dollars per
//!                      read-side estimates)       ms, MB)           component)
//! ```
//!
//! [`query_cost`] is pure arithmetic over [`CostInputs`]; everything the
//! profile does not measure is estimated in [`CostInputs::from_profile`] and
//! named there. The benchmark (`bench/`) and `squall tpch run --profile`
//! read this figure, and the scale model (`bench/model.py`) prices its
//! predicted inputs with `squall cost`; none re-implements it.
//!
//! What it deliberately leaves out: the free tiers (a per-account monthly
//! allowance, not a per-query cost), Lambda cold-start (INIT) time, the API
//! function's own invocations (one per client poll), payload objects of tasks
//! over the inline limit, and storage of the data being queried.

use serde::{Deserialize, Serialize};
use squall_core::config::SquallConfig;

use crate::profile::QueryProfile;

/// List prices, AWS US East (N. Virginia), on-demand, first pricing tier.
///
/// Sources (recorded 2026-11-30 for this module; these figures have been the
/// published list prices since arm64 Lambda launched in September 2021):
/// - Lambda: <https://aws.amazon.com/lambda/pricing/> — arm64 duration
///   $0.0000133334 per GB-second (x86_64: $0.0000166667), $0.20 per 1M
///   requests, duration rounded up to the millisecond.
/// - S3 Standard: <https://aws.amazon.com/s3/pricing/> — PUT, COPY, POST, LIST
///   $0.005 per 1,000; GET and other reads $0.0004 per 1,000; DELETE free;
///   transfer from S3 to Lambda in the same region free.
/// - SQS standard queues: <https://aws.amazon.com/sqs/pricing/> — $0.40 per 1M
///   requests (each 64 KiB chunk of a request counts as one; completion
///   messages are far smaller).
pub mod prices {
    /// Dollars per GB-second of an arm64 Lambda function (squall's functions are arm64).
    pub const LAMBDA_ARM64_PER_GB_SECOND: f64 = 0.000_013_333_4;
    /// Dollars per Lambda invocation request.
    pub const LAMBDA_PER_REQUEST: f64 = 0.20 / 1_000_000.0;
    /// Dollars per S3 Standard GET request.
    pub const S3_PER_GET: f64 = 0.0004 / 1_000.0;
    /// Dollars per S3 Standard PUT, COPY, POST or LIST request.
    pub const S3_PER_PUT_OR_LIST: f64 = 0.005 / 1_000.0;
    /// Dollars per SQS standard-queue request.
    pub const SQS_PER_REQUEST: f64 = 0.40 / 1_000_000.0;
    /// Objects returned by one S3 LIST request.
    pub const S3_LIST_PAGE: u64 = 1_000;
}

/// What a query used, in the units AWS bills. Missing fields read as 0
/// (`squall cost` takes these as JSON, for the scale model's predictions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostInputs {
    /// Worker invocations: task attempts launched (retries and duplicates included).
    pub worker_invocations: u64,
    /// Billed worker milliseconds, summed over invocations (each rounded up).
    pub worker_ms: u64,
    pub worker_memory_mb: u64,
    /// Billed coordinator milliseconds (the query's wall time).
    pub coordinator_ms: u64,
    pub coordinator_memory_mb: u64,
    pub s3_get: u64,
    pub s3_put: u64,
    pub s3_list: u64,
    pub sqs_requests: u64,
}

/// The modelled cost of one query, by component, in US dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct QueryCost {
    pub inputs: CostInputs,
    /// Worker and coordinator GB-seconds.
    pub lambda_gb_seconds: f64,
    pub lambda_compute_usd: f64,
    /// Worker invocations plus the coordinator's.
    pub lambda_requests: u64,
    pub lambda_requests_usd: f64,
    pub s3_get_usd: f64,
    pub s3_put_usd: f64,
    pub sqs_usd: f64,
    pub total_usd: f64,
}

/// MB of function memory as billed GB (AWS bills memory in GB = 1,024 MB).
fn gb(mb: u64) -> f64 {
    mb as f64 / 1024.0
}

/// The cost of `inputs` at [`prices`].
pub fn query_cost(inputs: &CostInputs) -> QueryCost {
    let gb_seconds = gb(inputs.worker_memory_mb) * inputs.worker_ms as f64 / 1000.0
        + gb(inputs.coordinator_memory_mb) * inputs.coordinator_ms as f64 / 1000.0;
    let lambda_compute_usd = gb_seconds * prices::LAMBDA_ARM64_PER_GB_SECOND;
    let lambda_requests = inputs.worker_invocations + 1;
    let lambda_requests_usd = lambda_requests as f64 * prices::LAMBDA_PER_REQUEST;
    let s3_get_usd = inputs.s3_get as f64 * prices::S3_PER_GET;
    let s3_put_usd = (inputs.s3_put + inputs.s3_list) as f64 * prices::S3_PER_PUT_OR_LIST;
    let sqs_usd = inputs.sqs_requests as f64 * prices::SQS_PER_REQUEST;
    QueryCost {
        inputs: *inputs,
        lambda_gb_seconds: gb_seconds,
        lambda_compute_usd,
        lambda_requests,
        lambda_requests_usd,
        s3_get_usd,
        s3_put_usd,
        sqs_usd,
        total_usd: lambda_compute_usd + lambda_requests_usd + s3_get_usd + s3_put_usd + sqs_usd,
    }
}

impl CostInputs {
    /// The billed quantities of a query from its profile, for workers of
    /// `worker_memory_mb` and a coordinator of `coordinator_memory_mb`.
    ///
    /// Measured: task attempts, task wall times, exchange GETs and PUTs,
    /// completion messages, the query's wall time. Estimated (the profile
    /// does not count them):
    /// - Parquet reads: one footer GET per scan task (DataFusion reads the
    ///   footer with a 512 KiB hint, so one request) plus one GET per row
    ///   group scanned (`object_store` coalesces a row group's projected
    ///   column chunks when the gaps between them are under 1 MiB);
    /// - result reads: one GET per final-stage task;
    /// - cleanup: one LIST per 1,000 exchange objects (deletes are free);
    /// - SQS: CreateQueue and DeleteQueue, one SendMessage per message, and
    ///   one ReceiveMessage plus one DeleteMessageBatch per message (tasks
    ///   finish at different times, so a receive mostly returns one message;
    ///   an upper bound).
    pub fn from_profile(
        profile: &QueryProfile,
        worker_memory_mb: u64,
        coordinator_memory_mb: u64,
    ) -> Self {
        let task_ms: u64 = profile
            .stage_profiles
            .iter()
            .map(|s| s.task_wall_ms_sum)
            .sum();
        let accepted = profile.tasks as u64;
        let attempts = (profile.tasks_launched as u64).max(accepted);
        // Wall times are whole milliseconds rounded down; AWS rounds each
        // invocation up, so add one per accepted task.
        let worker_ms = task_ms + accepted;
        let scan_tasks: u64 = profile
            .stage_profiles
            .iter()
            .filter(|s| s.row_groups > 0)
            .map(|s| s.tasks as u64)
            .sum();
        let final_tasks = profile
            .stage_profiles
            .last()
            .map(|s| s.tasks as u64)
            .unwrap_or(0);
        let s3_get = profile.s3_get + scan_tasks + profile.row_groups_scanned + final_tasks;
        let s3_list = profile.s3_put.div_ceil(prices::S3_LIST_PAGE).max(1);
        let messages = (profile.messages as u64).max(attempts);
        let sqs_requests = 2 + 3 * messages;
        Self {
            worker_invocations: attempts,
            worker_ms,
            worker_memory_mb,
            coordinator_ms: profile.wall_ms,
            coordinator_memory_mb,
            s3_get,
            s3_put: profile.s3_put,
            s3_list,
            sqs_requests,
        }
    }
}

/// The modelled cost of a profiled query, at the function memory sizes in `config`.
pub fn profile_cost(profile: &QueryProfile, config: &SquallConfig) -> QueryCost {
    query_cost(&CostInputs::from_profile(
        profile,
        config.worker_memory_mb,
        config.coordinator_memory_mb,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::StageProfile;

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
        assert_eq!(i.s3_get, 0);
        assert!(close(query_cost(&i).lambda_gb_seconds, 1.0));
        let back = serde_json::to_string(&query_cost(&i)).unwrap();
        assert!(back.contains("\"total_usd\""), "{back}");
    }

    fn profile() -> QueryProfile {
        let mut p = QueryProfile::new("q");
        let mut scan = StageProfile::new(0, "scan".into(), 3);
        scan.task_wall_ms_sum = 300;
        scan.row_groups = 10;
        scan.put_requests = 3;
        let mut reduce = StageProfile::new(1, "hash x2".into(), 2);
        reduce.task_wall_ms_sum = 40;
        reduce.get_requests = 6;
        reduce.put_requests = 2;
        p.add_stage(scan, false);
        p.add_stage(reduce, true);
        p.tasks_launched = 6; // one retry
        p.messages = 6;
        p.wall_ms = 120;
        p
    }

    #[test]
    fn inputs_from_a_profile() {
        let i = CostInputs::from_profile(&profile(), 3008, 1024);
        assert_eq!(i.worker_invocations, 6);
        assert_eq!(i.worker_ms, 340 + 5);
        assert_eq!(i.coordinator_ms, 120);
        // exchange 6 + footers 3 + row groups 10 + result 2
        assert_eq!(i.s3_get, 21);
        assert_eq!(i.s3_put, 5);
        assert_eq!(i.s3_list, 1);
        assert_eq!(i.sqs_requests, 2 + 3 * 6);
        assert_eq!((i.worker_memory_mb, i.coordinator_memory_mb), (3008, 1024));
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
}
