//! Query state in S3: the [`ObjectQueryStore`] (see
//! `squall_planner::query_record` for the layout) under
//! `squall.state_location`, as the API, the coordinator function and the
//! workers of one query open it.
//!
//! ```text
//!  API ──submit──> status.json QUEUED ──invoke──> coordinator function
//!                                                   │ status.json RUNNING (+ progress every squall.state_poll_ms)
//!  API ──DELETE──> cancel ─────(polled)───────────> │ cancels the query
//!                                                   │ stop <─(polled by running workers)
//!                                                   │ result.arrow, then status.json FINISHED / FAILED / CANCELED
//!  API <──status / page── status.json, one ranged GET of result.arrow per page
//! ```
//!
//! `status.json` is written by the API once (QUEUED, or a final state for
//! statements it answers itself) and then only by the coordinator function,
//! so there is one writer at a time and no read-modify-write race.

use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use squall_core::config::SquallConfig;
pub use squall_planner::query_record::{
    ErrorKind, ObjectQueryStore, PageRange, ProgressRecord, QueryFailure, QueryRecord, QueryState,
    QueryStore, ResultIndex, now_ms,
};

use crate::env::AwsEnv;
use crate::error::AwsError;
use crate::s3::{aws_runtime, split_s3_url};

/// The state store at `squall.state_location` (`SQUALL_STATE_LOCATION`).
pub async fn state_store_from_env() -> Result<ObjectQueryStore> {
    let squall = SquallConfig::from_env()?;
    state_store_at(&AwsEnv::load().await, &squall.state_location)
}

/// The state store at `location` (`s3://bucket/prefix`).
pub fn state_store_at(env: &AwsEnv, location: &str) -> Result<ObjectQueryStore> {
    if location.is_empty() {
        return Err(AwsError::MissingSetting {
            setting: "squall.state_location",
            variable: "SQUALL_STATE_LOCATION",
            why: "the aws backend keeps query state there",
            example: "s3://bucket/state",
        }
        .into());
    }
    let runtime = aws_runtime(env)?;
    let (url, prefix) = split_s3_url(location)?;
    let store = runtime.object_store(ObjectStoreUrl::parse(&url)?)?;
    Ok(ObjectQueryStore::new(store, &url, &prefix))
}
