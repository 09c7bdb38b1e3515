//! Turning a finished build stage's key sections into the join-key filter
//! its probe stages apply: fetch every task's section (ranged GETs of the
//! map objects), merge them (never from some tasks only), and ship the
//! filter inline in the task payloads or as one object under the query's
//! prefix, with the merged key ranges alongside.

use crate::error::PlannerError;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use squall_core::exchange::filter_object_key;
use squall_core::key_filter::{ColumnRange, KeyRanges};
use squall_core::key_filter::{Merged, Section, decode_section, merge_ranges, merge_sections};
use squall_core::task::{FilterBinding, FilterData, ObjectLocation};

use super::{QueryJob, StageRun};
use crate::backend::Backend;
use crate::profile::FilterProfile;

/// Merge the key sections of every task of the finished stage `run` into its
/// join-key filter, and decide how tasks receive it (inline or one object).
pub(super) async fn build_filter(
    job: &QueryJob,
    backend: &Backend,
    run: &StageRun,
    stage: u32,
) -> Result<(FilterBinding, FilterProfile)> {
    let started = Instant::now();
    let mut fp = FilterProfile {
        source: stage,
        ..Default::default()
    };
    let mut fetches = Vec::with_capacity(run.tasks.len());
    for t in &run.tasks {
        // None: no accepted output or no section (never merged into a filter).
        let want = t.accepted.as_ref().and_then(|(_, out, _)| {
            out.keys
                .map(|k| (out.key.clone(), k.offset..k.offset + k.len))
        });
        let store = Arc::clone(&backend.exchange_store);
        fetches.push(async move {
            match want {
                None => Ok::<_, DataFusionError>(None),
                Some((key, range)) => {
                    let bytes = store
                        .get_range(&Path::from(key.as_str()), range)
                        .await
                        .map_err(|source| PlannerError::Object {
                            what: "key section of",
                            location: key.clone(),
                            source,
                        })?;
                    Ok(Some(decode_section(&bytes)?))
                }
            }
        });
    }
    let sections: Vec<Option<Section>> = futures::future::try_join_all(fetches).await?;
    fp.get_requests = sections.iter().filter(|s| s.is_some()).count() as u64;
    let ranges = match merge_ranges(&sections).filter(|r| r.is_useful()) {
        Some(r) => {
            fp.ranges = Some(describe_ranges(&r));
            Some(Bytes::from(r.encode()?))
        }
        None => None,
    };
    let data = match merge_sections(&sections, job.filters.sizing)? {
        Merged::Skipped(reason) => {
            fp.kind = "none".into();
            fp.skipped = Some(reason.clone());
            FilterData::Skipped { reason }
        }
        Merged::Filter(filter) => {
            fp.kind = filter.kind().into();
            fp.keys = filter.keys();
            let bytes = Bytes::from(filter.encode());
            fp.bytes = bytes.len() as u64;
            if bytes.len() <= job.filters.inline_max_bytes {
                FilterData::Inline { bytes }
            } else {
                let key = filter_object_key(
                    &backend.exchange_prefix,
                    job.config.shuffle.prefixes,
                    &job.query_id,
                    stage,
                );
                let len = bytes.len() as u64;
                backend
                    .exchange_store
                    .put(&Path::from(key.as_str()), PutPayload::from(bytes))
                    .await
                    .map_err(|source| PlannerError::Object {
                        what: "writing key filter",
                        location: key.clone(),
                        source,
                    })?;
                fp.put_requests = 1;
                FilterData::Object {
                    location: ObjectLocation {
                        store_url: backend.exchange_url.clone(),
                        key,
                    },
                    len,
                }
            }
        }
    };
    fp.build_ms = started.elapsed().as_millis() as u64;
    Ok((
        FilterBinding {
            source_stage: stage,
            data,
            ranges,
        },
        fp,
    ))
}

/// Resolve every shuffle read of stage `si` for task `t`.
/// `[min, max]` per key column, `*` where unbounded, for the profile.
fn describe_ranges(r: &KeyRanges) -> String {
    let cols: Vec<String> = r
        .columns
        .iter()
        .map(|c| match c {
            ColumnRange::Empty => "empty".to_string(),
            ColumnRange::Range(min, max) => format!("[{min}, {max}]"),
            ColumnRange::Unbounded => "*".to_string(),
        })
        .collect();
    cols.join(" x ")
}
