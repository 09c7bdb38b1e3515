//! Turning a finished build stage's key sections into the join-key filter
//! its probe stages apply: fetch every task's section (ranged GETs of the
//! map objects), merge them (never from some tasks only), and ship the
//! filter inline in the task payloads or as one object under the query's
//! prefix, with the merged key ranges alongside. A build runs in a task of
//! its own ([`FilterBuild`]): the coordinator's loop keeps receiving
//! completions and launching meanwhile.

use crate::error::PlannerError;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use squall_core::exchange::filter_object_key;
use squall_core::key_filter::{ColumnRange, KeyRanges};
use squall_core::key_filter::{Merged, Section, decode_section, merge_ranges, merge_sections};
use squall_core::task::{FilterBinding, FilterData, ObjectLocation};

use super::{QueryJob, StageRun};
use crate::backend::Backend;
use crate::profile::FilterProfile;
use tracing::Instrument;

/// What building the filter of a finished build stage takes, owned, so it
/// runs in a task of its own while the coordinator's loop goes on.
pub(super) struct FilterBuild {
    stage: u32,
    /// Per task: its map object and the byte range of its key section
    /// (`None`: no section, never merged into a filter).
    wanted: Vec<Option<(String, std::ops::Range<u64>)>>,
    sizing: squall_core::key_filter::FilterSizing,
    inline_max_bytes: usize,
    shards: u32,
    query_id: String,
    store: Arc<dyn ObjectStore>,
    exchange_prefix: String,
    exchange_url: String,
}

impl FilterBuild {
    /// The filter of the finished stage `run` (id `stage`).
    pub(super) fn new(job: &QueryJob, backend: &Backend, run: &StageRun, stage: u32) -> Self {
        let wanted = run
            .tasks
            .iter()
            .map(|t| {
                t.accepted.as_ref().and_then(|(_, out, _)| {
                    out.keys
                        .map(|k| (out.key.clone(), k.offset..k.offset + k.len))
                })
            })
            .collect();
        Self {
            stage,
            wanted,
            sizing: job.filters.sizing,
            inline_max_bytes: job.filters.inline_max_bytes,
            shards: job.config.shuffle.prefixes,
            query_id: job.query_id.clone(),
            store: Arc::clone(&backend.exchange_store),
            exchange_prefix: backend.exchange_prefix.clone(),
            exchange_url: backend.exchange_url.clone(),
        }
    }

    /// Merge every task's key section into the join-key filter, and decide
    /// how tasks receive it (inline or one object).
    pub(super) async fn build(self) -> Result<(FilterBinding, FilterProfile)> {
        let started = Instant::now();
        let stage = self.stage;
        let mut fp = FilterProfile {
            source: stage,
            ..Default::default()
        };
        let fetches = self.wanted.into_iter().map(|want| {
            let store = Arc::clone(&self.store);
            async move {
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
            }
        });
        let sections: Vec<Option<Section>> = futures::future::try_join_all(fetches).await?;
        fp.get_requests = sections.iter().filter(|s| s.is_some()).count() as u64;
        // Merging is CPU work: off the I/O threads.
        let sizing = self.sizing;
        let (ranges, merged) = tokio::task::spawn_blocking(move || {
            let ranges = merge_ranges(&sections).filter(|r| r.is_useful());
            let merged = merge_sections(&sections, sizing);
            (ranges, merged)
        })
        .await
        .map_err(|e| PlannerError::Internal(format!("building the key filter of s{stage}: {e}")))?;
        let ranges = match ranges {
            Some(r) => {
                fp.ranges = Some(describe_ranges(&r));
                Some(Bytes::from(r.encode()?))
            }
            None => None,
        };
        let data = match merged? {
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
                if bytes.len() <= self.inline_max_bytes {
                    FilterData::Inline { bytes }
                } else {
                    let key = filter_object_key(
                        &self.exchange_prefix,
                        self.shards,
                        &self.query_id,
                        stage,
                    );
                    let len = bytes.len() as u64;
                    self.store
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
                            store_url: self.exchange_url.clone(),
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

/// A stage's filter, built (or the error that stopped it).
pub(super) type BuiltFilter = (usize, Result<(FilterBinding, FilterProfile)>);

/// Key filters being built, each in a tokio task; yields each stage's
/// filter as it is done, and aborts the builds still running when dropped
/// (the query ended first).
#[derive(Default)]
pub(super) struct FilterBuilds {
    running: futures::stream::FuturesUnordered<futures::future::BoxFuture<'static, BuiltFilter>>,
    handles: Vec<tokio::task::AbortHandle>,
}

impl FilterBuilds {
    pub(super) fn start(&mut self, si: usize, build: FilterBuild) {
        let task = tokio::spawn(build.build().in_current_span());
        self.handles.push(task.abort_handle());
        self.running.push(Box::pin(async move {
            let built = task.await.unwrap_or_else(|e| {
                Err(PlannerError::Internal(format!("building a key filter: {e}")).into())
            });
            (si, built)
        }));
    }

    /// The next filter done; pending forever while none is being built.
    pub(super) async fn next(&mut self) -> Option<BuiltFilter> {
        use futures::StreamExt;
        if self.running.is_empty() {
            return std::future::pending().await;
        }
        self.running.next().await
    }
}

impl Drop for FilterBuilds {
    fn drop(&mut self) {
        for h in &self.handles {
            h.abort();
        }
    }
}
