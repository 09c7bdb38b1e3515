//! The modelled AWS cost of one query, at list prices.
//!
//! A query on AWS pays for four things: worker Lambda time (GB-seconds at the
//! worker function's memory, one invocation per task attempt), the
//! coordinator Lambda for the query's wall time, S3 requests and SQS
//! requests. Bytes moved between S3 and Lambda in one region are free, so
//! request counts, not bytes, set the price of a shuffle.
//!
//! ```text
//! QueryProfile ──CostInputs::from_profile──> CostInputs ──query_cost──> QueryCost
//!  (requests measured   (+ what only AWS makes,   (counts,          (dollars per
//!   at the seams)          estimated: AwsEstimate)   ms, MB)           component)
//! ```
//!
//! [`query_cost`] is pure arithmetic over [`CostInputs`]. Every request the
//! profile counts is measured where it is made (`squall_core::requests`,
//! summed in `QueryProfile::requests`): planning's listings and footer
//! reads; each task attempt's Parquet, exchange and filter GETs, its PUT,
//! its stop-marker HEADs, a spilled payload's GET and its report's
//! SendMessage; the coordinator's key-section and result GETs, filter PUTs,
//! cleanup LISTs (one per shard written to) and DELETEs, spilled-payload
//! PUTs, stop markers, its queue's CreateQueue, ReceiveMessage,
//! DeleteMessageBatch and DeleteQueue, and every Invoke (throttled ones
//! included); on the coordinator function, its state store's record writes,
//! cancel-marker looks and result. Retries and hedged reads are requests of
//! their own.
//!
//! **Estimated** ([`AwsEstimate`], added by [`CostInputs::from_profile`]):
//! - *on the embedded backend*, SQS requests are what the same receives
//!   would have needed on SQS (10 messages a request: see
//!   `backend::local`), and what only the aws backend does is estimated
//!   when the profile did not count it: each task attempt's stop-marker
//!   HEADs (one at its start and one per `squall.task.stop_poll_ms` of its
//!   run time) and the stop marker's PUT (plus one per speculative
//!   attempt's own marker); the coordinator function's state (one record
//!   GET, a cancel-marker HEAD at the start, the end and every
//!   `squall.state_poll_ms` of the query's wall time rounded up, three
//!   record PUTs — running, result, final — and one progress rewrite per
//!   poll, at most one per task; measured on the emulated stack for a
//!   388 ms Q1: 1 GET, 3 HEADs, 4 PUTs, as estimated);
//! - *always*, the API function, which serves the client outside the
//!   query's profile: the submit (one record PUT), one invocation per long
//!   poll (one per second of the query's wall time, plus the submit and the
//!   last page), a status GET and a cancel-marker HEAD per
//!   `squall.state_poll_ms` while the query runs, then one record GET and
//!   one ranged GET of the (one-page) result.
//!
//! What it deliberately leaves out: the free tiers (a per-account monthly
//! allowance, not a per-query cost), Lambda cold-start (INIT) time, the API
//! function's duration (it waits on the client's long polls), the engine's
//! catalog registration (once per engine, not per query; once per query on
//! the coordinator function), requests of task attempts whose reports never
//! arrived (lost, or still running when the query ended), and storage of the
//! data being queried.

use serde::{Deserialize, Serialize};
use squall_core::config::SquallConfig;
use squall_core::requests::RequestCounts;

use crate::profile::QueryProfile;

/// List prices, AWS US East (N. Virginia), on-demand, first pricing tier.
///
/// Sources (recorded 2026-11-30 for this module; these figures have been the
/// published list prices since arm64 Lambda launched in September 2021):
/// - Lambda: <https://aws.amazon.com/lambda/pricing/> — arm64 duration
///   $0.0000133334 per GB-second (x86_64: $0.0000166667), $0.20 per 1M
///   requests, duration rounded up to the millisecond.
/// - S3 Standard: <https://aws.amazon.com/s3/pricing/> — PUT, COPY, POST, LIST
///   $0.005 per 1,000; GET and other reads (HEAD) $0.0004 per 1,000; DELETE
///   free; transfer from S3 to Lambda in the same region free.
/// - SQS standard queues: <https://aws.amazon.com/sqs/pricing/> — $0.40 per 1M
///   requests (each 64 KiB chunk of a request counts as one; completion
///   messages are far smaller).
pub mod prices {
    /// Dollars per GB-second of an arm64 Lambda function (squall's functions are arm64).
    pub const LAMBDA_ARM64_PER_GB_SECOND: f64 = 0.000_013_333_4;
    /// Dollars per Lambda invocation request.
    pub const LAMBDA_PER_REQUEST: f64 = 0.20 / 1_000_000.0;
    /// Dollars per S3 Standard GET or HEAD request.
    pub const S3_PER_GET: f64 = 0.0004 / 1_000.0;
    /// Dollars per S3 Standard PUT, COPY, POST or LIST request.
    pub const S3_PER_PUT_OR_LIST: f64 = 0.005 / 1_000.0;
    /// Dollars per S3 DELETE request: free.
    pub const S3_PER_DELETE: f64 = 0.0;
    /// Dollars per SQS standard-queue request.
    pub const SQS_PER_REQUEST: f64 = 0.40 / 1_000_000.0;
}

/// How long one API long poll waits at most (`ApiOptions::max_wait` of the
/// server's router): one API invocation per this much of a query's run.
pub const API_LONG_POLL_MS: u64 = 1_000;

/// What a query used, in the units AWS bills. Missing fields read as 0
/// (`squall cost` takes these as JSON, for the scale model's predictions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostInputs {
    /// Worker Invoke requests: task attempts launched (retries and
    /// duplicates included), plus throttled requests sent again (priced
    /// too: an upper bound).
    pub worker_invocations: u64,
    /// Billed worker milliseconds, summed over invocations (each rounded up).
    pub worker_ms: u64,
    pub worker_memory_mb: u64,
    /// Billed coordinator milliseconds (the query's wall time).
    pub coordinator_ms: u64,
    pub coordinator_memory_mb: u64,
    /// API function invocations (the client's polls).
    pub api_invocations: u64,
    pub s3_get: u64,
    /// Priced like GETs.
    pub s3_head: u64,
    pub s3_put: u64,
    /// Priced like PUTs.
    pub s3_list: u64,
    /// Free; counted for completeness.
    pub s3_delete: u64,
    pub sqs_requests: u64,
}

/// The modelled cost of one query, by component, in US dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct QueryCost {
    pub inputs: CostInputs,
    /// Worker and coordinator GB-seconds.
    pub lambda_gb_seconds: f64,
    pub lambda_compute_usd: f64,
    /// Worker invocations, the coordinator's, and the API's.
    pub lambda_requests: u64,
    pub lambda_requests_usd: f64,
    /// GETs and HEADs.
    pub s3_get_usd: f64,
    /// PUTs and LISTs.
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
    let lambda_requests = inputs.worker_invocations + 1 + inputs.api_invocations;
    let lambda_requests_usd = lambda_requests as f64 * prices::LAMBDA_PER_REQUEST;
    let s3_get_usd = (inputs.s3_get + inputs.s3_head) as f64 * prices::S3_PER_GET;
    let s3_put_usd = (inputs.s3_put + inputs.s3_list) as f64 * prices::S3_PER_PUT_OR_LIST
        + inputs.s3_delete as f64 * prices::S3_PER_DELETE;
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

/// The requests a query makes on AWS that its profile could not count
/// (see the module docs): what only the aws backend does, when the profile
/// comes from elsewhere, and the API function's, always.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct AwsEstimate {
    /// Task stop-marker looks and the stop markers' PUTs.
    pub stop_markers: RequestCounts,
    /// The coordinator function's state store.
    pub state: RequestCounts,
    /// The API function's state reads and the submit's record.
    pub api: RequestCounts,
    pub api_invocations: u64,
}

/// Task attempts launched: first attempts, retries and speculative ones.
fn attempts(profile: &QueryProfile) -> u64 {
    ((profile.tasks_launched + profile.retries + profile.speculative) as u64)
        .max(profile.tasks as u64)
}

impl AwsEstimate {
    pub fn of(profile: &QueryProfile, config: &SquallConfig) -> Self {
        let wall = profile.wall_ms;
        let attempts = attempts(profile);
        let task_ms: u64 = profile
            .stage_profiles
            .iter()
            .map(|s| s.task_wall_ms_sum)
            .sum();
        let mut e = Self::default();
        if !profile.requests.stop_markers {
            e.stop_markers.head =
                attempts + task_ms.checked_div(config.task.stop_poll_ms).unwrap_or(0);
            e.stop_markers.put = 1 + profile.speculative as u64;
        }
        // Polls while the query runs (its function runs a little longer:
        // the engine's start, the result's write), so rounded up.
        let polls = wall.div_ceil(config.state_poll_ms.max(10));
        if profile.requests.state.is_empty() {
            e.state.get = 1;
            e.state.head = 2 + polls;
            e.state.put = 3 + polls.min(attempts);
        }
        e.api.put = 1;
        e.api.get = polls + 2;
        e.api.head = polls;
        e.api_invocations = 2 + wall.div_ceil(API_LONG_POLL_MS);
        e
    }

    /// The estimated requests, together.
    pub fn requests(&self) -> RequestCounts {
        self.stop_markers + self.state + self.api
    }
}

impl CostInputs {
    /// The billed quantities of a query from its profile, at the function
    /// memory sizes and polling intervals of `config`: the requests the
    /// profile measured plus the [`AwsEstimate`] of those it could not.
    pub fn from_profile(profile: &QueryProfile, config: &SquallConfig) -> Self {
        let task_ms: u64 = profile
            .stage_profiles
            .iter()
            .map(|s| s.task_wall_ms_sum)
            .sum();
        let accepted = profile.tasks as u64;
        let measured = profile.requests.total();
        let invocations = match measured.invocations() {
            0 => attempts(profile),
            n => n,
        };
        let estimate = AwsEstimate::of(profile, config);
        let requests = measured + estimate.requests();
        // Wall times are whole milliseconds rounded down; AWS rounds each
        // invocation up, so add one per accepted task.
        Self {
            worker_invocations: invocations,
            worker_ms: task_ms + accepted,
            worker_memory_mb: config.worker_memory_mb,
            coordinator_ms: profile.wall_ms,
            coordinator_memory_mb: config.coordinator_memory_mb,
            api_invocations: estimate.api_invocations,
            s3_get: requests.get,
            s3_head: requests.head,
            s3_put: requests.put,
            s3_list: requests.list,
            s3_delete: requests.delete,
            sqs_requests: requests.sqs(),
        }
    }
}

/// The modelled cost of a profiled query, with the settings in `config`.
pub fn profile_cost(profile: &QueryProfile, config: &SquallConfig) -> QueryCost {
    query_cost(&CostInputs::from_profile(profile, config))
}

#[cfg(test)]
#[path = "cost/tests.rs"]
mod tests;
