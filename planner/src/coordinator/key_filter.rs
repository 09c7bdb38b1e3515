//! Turning a build stage's key sections into the join-key filter its probe
//! stages apply: fetch every task's section (one ranged GET of its map
//! object) as the task finishes and merge it in ([`KeyWatch`]), and once the
//! stage has finished, fetch what is still missing, make the filter (never
//! from some tasks only) and ship it inline in the task payloads or as one
//! object under the query's prefix, with the merged key ranges alongside
//! ([`FilterBuild`], in a task of its own: the coordinator's loop keeps
//! receiving completions and launching meanwhile).
//!
//! A filter that cannot be made (more than `squall.bloom.max_keys` distinct
//! keys) is known before its stage ends: a build task reports that it saw
//! more, or the sections merged so far hold more. With
//! `squall.bloom.early_release` the probe stages are released then, without
//! a filter and without the keys' range ([`release`]), instead of waiting
//! for the rest of the build stage for a filter that will not come. At
//! 1,000 build tasks of which the first few dozen already hold too many
//! keys, the probe side starts that much sooner, and the sections of the
//! tasks after it are never fetched.

use crate::error::PlannerError;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use squall_core::exchange::filter_object_key;
use squall_core::key_filter::{ColumnRange, KeyRanges, KeyUnion};
use squall_core::key_filter::{FilterSizing, Merged, Section, decode_section};
use squall_core::task::{FilterBinding, FilterData, KeySection, ObjectLocation};

use super::{QueryJob, StageRun};
use crate::backend::Backend;
use crate::profile::FilterProfile;
use tracing::Instrument;

/// Key sections fetched at a time, for a stage's watch (over all stages of
/// the query) or for a finished stage's filter build.
const SECTION_FETCHES: usize = 32;
/// Bytes of key sections fetched at a time (at least one section): a
/// section holds up to `squall.bloom.max_keys` 8-byte hashes, and a
/// thousand build tasks finishing together must not put a thousand of them
/// in the coordinator's memory at once.
const SECTION_BYTES: u64 = 64 << 20;

/// Cut `wanted` (in order) into runs of at most [`SECTION_FETCHES`]
/// sections and [`SECTION_BYTES`] bytes (a larger section alone).
fn section_batches<T>(wanted: Vec<T>, bytes: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    let mut batches: Vec<Vec<T>> = Vec::new();
    let mut held = 0u64;
    for w in wanted {
        let b = bytes(&w);
        match batches.last_mut() {
            Some(last) if last.len() < SECTION_FETCHES && held + b <= SECTION_BYTES => {
                held += b;
                last.push(w);
            }
            _ => {
                held = b;
                batches.push(vec![w]);
            }
        }
    }
    batches
}

/// A running build stage's key sections merged so far, fetched as its tasks
/// are accepted.
#[derive(Default)]
pub(super) struct KeyWatch {
    union: Option<KeyUnion>,
    /// Per task: its section is merged in.
    merged: Vec<bool>,
    /// Section GETs sent for this stage.
    gets: u64,
}

impl KeyWatch {
    /// Merge in task `task`'s section (of `tasks`).
    pub(super) fn merge(&mut self, sizing: FilterSizing, tasks: usize, task: usize, s: Section) {
        self.merged.resize(tasks, false);
        if std::mem::replace(&mut self.merged[task], true) {
            return;
        }
        self.union
            .get_or_insert_with(|| KeyUnion::new(sizing))
            .add(task, s);
    }

    /// Why the filter will be skipped, once the sections merged so far tell
    /// (or, with `project`, let project for the stage's `tasks`:
    /// [`KeyUnion::projected_skip`]).
    pub(super) fn skipped(&self, tasks: usize, project: bool) -> Option<String> {
        let union = self.union.as_ref()?;
        match union.skipped() {
            Some(reason) => Some(reason.to_string()),
            None if project => union.projected_skip(tasks),
            None => None,
        }
    }
}

/// A key section's object and byte range.
type SectionAt = (String, std::ops::Range<u64>);

/// The object and byte range of a task's key section.
fn section_at(out: &squall_core::task::MapOutput) -> Option<SectionAt> {
    out.keys
        .map(|k: KeySection| (out.key.clone(), k.offset..k.offset + k.len))
}

/// Fetch and decode one key section.
async fn fetch_section(
    store: &Arc<dyn ObjectStore>,
    key: &str,
    range: std::ops::Range<u64>,
) -> Result<Section> {
    let bytes = store
        .get_range(&Path::from(key), range)
        .await
        .map_err(|source| PlannerError::Object {
            what: "key section of",
            location: key.to_string(),
            source,
        })?;
    Ok(decode_section(&bytes)?)
}

/// Task `t` of stage `run` (`stage`) was just accepted. If the stage
/// publishes keys and its filter is still open, either the task's report
/// tells the filter cannot be made (it saw more than `max_keys` keys) and,
/// with early release, the probe stages are released now (the profile of
/// the released filter returned), or its section is fetched for the watch.
/// The task that finishes the stage is left to [`FilterBuild`].
pub(super) fn task_accepted(
    job: &QueryJob,
    backend: &Backend,
    filters: &mut FilterBuilds,
    run: &mut StageRun,
    stage: &crate::stages::Stage,
    t: usize,
) -> Option<FilterProfile> {
    if !stage.publishes_filter() || run.filter.is_some() || run.finished.is_some() {
        return None;
    }
    let overflow = run.tasks.get(t)?.accepted.as_ref()?.1.keys?.overflow;
    if overflow && job.config.bloom.early_release {
        // No need to read its section: the filter cannot be made.
        let reason = squall_core::key_filter::task_overflowed(t, job.filters.sizing.max_keys);
        return Some(release(run, stage.id, reason));
    }
    filters.watch(backend, run, t);
    None
}

/// Task `t`'s section of stage `run` (`stage`) has come: merged into the
/// watch, unless the filter is decided or being built. Returns the profile
/// of the filter when the sections merged so far tell it cannot be made and
/// the probe stages are released now.
pub(super) fn section_fetched(
    job: &QueryJob,
    run: &mut StageRun,
    stage: u32,
    t: usize,
    section: Result<Section>,
) -> Option<FilterProfile> {
    if run.filter.is_some() || run.filter_building {
        return None;
    }
    match section {
        Ok(section) => {
            let tasks = run.tasks.len();
            run.keys.merge(job.filters.sizing, tasks, t, section);
        }
        // The build reads it again once the stage has finished.
        Err(e) => tracing::warn!(%e, stage, task = t, "reading a key section failed"),
    }
    let reason = run
        .keys
        .skipped(run.tasks.len(), job.config.bloom.early_release)?;
    job.config
        .bloom
        .early_release
        .then(|| release(run, stage, reason))
}

/// Release the probe stages of build stage `run` (id `stage`) without a
/// filter: `reason` says why none can be made. Drops what the stage's
/// watch held; returns the filter's profile.
fn release(run: &mut StageRun, stage: u32, reason: String) -> FilterProfile {
    let watch = std::mem::take(&mut run.keys);
    run.filter = Some(FilterBinding {
        source_stage: stage,
        data: FilterData::Skipped {
            reason: reason.clone(),
        },
        ranges: None,
    });
    tracing::info!(stage, accepted = run.accepted, tasks = run.tasks.len(), %reason, "key filter skipped before its stage ended: probe stages released");
    FilterProfile {
        source: stage,
        kind: "none".into(),
        skipped: Some(reason),
        get_requests: watch.gets,
        released_after: Some(run.accepted as u64),
        tasks: run.tasks.len() as u64,
        ..Default::default()
    }
}

/// What building the filter of a finished build stage takes, owned, so it
/// runs in a task of its own while the coordinator's loop goes on.
pub(super) struct FilterBuild {
    stage: u32,
    tasks: usize,
    /// The sections merged while the stage ran.
    union: KeyUnion,
    gets: u64,
    /// Per task whose section is not merged yet: its map object and the
    /// byte range of its section (`None`: the task reported none).
    wanted: Vec<(usize, Option<SectionAt>)>,
    inline_max_bytes: usize,
    shards: u32,
    query_id: String,
    store: Arc<dyn ObjectStore>,
    exchange_prefix: String,
    exchange_url: String,
}

impl FilterBuild {
    /// The filter of the finished stage `run` (id `stage`), from the
    /// sections its watch merged and the ones still missing.
    pub(super) fn new(job: &QueryJob, backend: &Backend, run: &mut StageRun, stage: u32) -> Self {
        let watch = std::mem::take(&mut run.keys);
        let wanted = run
            .tasks
            .iter()
            .enumerate()
            .filter(|(t, _)| !watch.merged.get(*t).copied().unwrap_or(false))
            .map(|(t, task)| {
                (
                    t,
                    task.accepted
                        .as_ref()
                        .and_then(|(_, out, _)| section_at(out)),
                )
            })
            .collect();
        Self {
            stage,
            tasks: run.tasks.len(),
            union: watch
                .union
                .unwrap_or_else(|| KeyUnion::new(job.filters.sizing)),
            gets: watch.gets,
            wanted,
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
        let tasks = self.tasks;
        if let Some((missing, _)) = self.wanted.iter().find(|(_, w)| w.is_none()) {
            return Err(PlannerError::Internal(format!(
                "key filter of s{stage}: build task {missing} of {tasks} has not reported its keys; a partial filter is never applied"
            ))
            .into());
        }
        // A batch of sections at a time (SECTION_FETCHES, SECTION_BYTES),
        // each merged before the next is fetched: the coordinator holds one
        // batch and the union, not every section of a thousand-task stage.
        let wanted: Vec<(usize, SectionAt)> = self
            .wanted
            .into_iter()
            .map(|(t, want)| (t, want.unwrap_or_default()))
            .collect();
        let mut union = self.union;
        let mut gets = 0u64;
        for batch in section_batches(wanted, |(_, (_, r))| r.end - r.start) {
            let fetches =
                batch.into_iter().map(|(t, (key, range))| {
                    let store = Arc::clone(&self.store);
                    async move {
                        Ok::<_, DataFusionError>((t, fetch_section(&store, &key, range).await?))
                    }
                });
            let sections = futures::future::try_join_all(fetches).await?;
            gets += sections.len() as u64;
            // Merging is CPU work: off the I/O threads.
            union = tokio::task::spawn_blocking(move || {
                for (t, s) in sections {
                    union.add(t, s);
                }
                union
            })
            .await
            .map_err(|e| {
                PlannerError::Internal(format!("building the key filter of s{stage}: {e}"))
            })?;
        }
        fp.get_requests = self.gets + gets;
        fp.tasks = tasks as u64;
        let (ranges, merged) = tokio::task::spawn_blocking(move || {
            // A range from some tasks only would prune row groups that match
            // keys of the others.
            let ranges = (union.sections() == tasks)
                .then(|| union.ranges().cloned())
                .flatten()
                .filter(|r| r.is_useful());
            (ranges, union.finish())
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
        let data = match merged {
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

/// What the filter work running beside the coordinator's loop yields.
pub(super) enum FilterEvent {
    /// A stage's filter, built (or the error that stopped it).
    Built(usize, Result<(FilterBinding, FilterProfile)>),
    /// A task's key section, fetched while its stage runs: stage, task,
    /// the section's bytes, the section.
    Section(usize, usize, u64, Result<Section>),
}

/// Key filters being built and key sections being fetched, each in a tokio
/// task; yields each as it is done, and aborts what still runs when dropped
/// (the query ended first).
#[derive(Default)]
pub(super) struct FilterBuilds {
    running: futures::stream::FuturesUnordered<futures::future::BoxFuture<'static, FilterEvent>>,
    handles: Vec<tokio::task::AbortHandle>,
    /// Watched sections waiting to be fetched: stage index, task, where.
    queued: std::collections::VecDeque<(usize, usize, SectionAt)>,
    /// Watched section fetches in flight, and their bytes.
    watching: usize,
    watching_bytes: u64,
    /// The exchange store sections are read from (once one is watched).
    store: Option<Arc<dyn ObjectStore>>,
}

impl FilterBuilds {
    pub(super) fn start(&mut self, si: usize, build: FilterBuild) {
        let task = tokio::spawn(build.build().in_current_span());
        self.handles.push(task.abort_handle());
        self.running.push(Box::pin(async move {
            let built = task.await.unwrap_or_else(|e| {
                Err(PlannerError::Internal(format!("building a key filter: {e}")).into())
            });
            FilterEvent::Built(si, built)
        }));
    }

    /// Fetch the key section of task `t` of stage `run`, just accepted, for
    /// its watch (queued behind the sections being fetched when they are
    /// [`SECTION_FETCHES`] or [`SECTION_BYTES`]; [`Self::pump`] starts it);
    /// `false` when the task reported none.
    pub(super) fn watch(&mut self, backend: &Backend, run: &mut StageRun, t: usize) -> bool {
        let Some(at) = run.tasks[t]
            .accepted
            .as_ref()
            .and_then(|(_, out, _)| section_at(out))
        else {
            return false;
        };
        self.store
            .get_or_insert_with(|| Arc::clone(&backend.exchange_store));
        self.queued.push_back((run.index, t, at));
        true
    }

    /// Start queued section fetches while fewer than [`SECTION_FETCHES`]
    /// and [`SECTION_BYTES`] are in flight; a section whose stage's filter
    /// is decided or being built meanwhile is dropped unfetched (the build
    /// fetches what its watch did not merge).
    pub(super) fn pump(&mut self, runs: &mut [StageRun]) {
        let Some(store) = self.store.clone() else {
            return;
        };
        while let Some((si, _, (_, range))) = self.queued.front() {
            let run = &runs[*si];
            if run.filter.is_some() || run.filter_building || run.finished.is_some() {
                self.queued.pop_front();
                continue;
            }
            let bytes = range.end - range.start;
            if self.watching > 0
                && (self.watching >= SECTION_FETCHES || self.watching_bytes + bytes > SECTION_BYTES)
            {
                break;
            }
            let Some((si, t, (key, range))) = self.queued.pop_front() else {
                break;
            };
            runs[si].keys.gets += 1;
            self.watching += 1;
            self.watching_bytes += bytes;
            let store = Arc::clone(&store);
            let task = tokio::spawn(
                async move { fetch_section(&store, &key, range).await }.in_current_span(),
            );
            self.handles.push(task.abort_handle());
            self.running.push(Box::pin(async move {
                let section = task.await.unwrap_or_else(|e| {
                    Err(PlannerError::Internal(format!("fetching a key section: {e}")).into())
                });
                FilterEvent::Section(si, t, bytes, section)
            }));
        }
    }

    /// A watched section's fetch is over (`bytes` of it).
    pub(super) fn fetched(&mut self, bytes: u64) {
        self.watching = self.watching.saturating_sub(1);
        self.watching_bytes = self.watching_bytes.saturating_sub(bytes);
    }

    /// The next filter built or section fetched; pending forever while
    /// nothing runs.
    pub(super) async fn next(&mut self) -> Option<FilterEvent> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_batches_hold_at_most_a_count_and_a_budget_of_bytes() {
        let mib = 1u64 << 20;
        let sizes = vec![10 * mib, 40 * mib, 20 * mib, 200 * mib, mib, mib];
        let batches = section_batches(sizes, |b| *b);
        assert_eq!(
            batches,
            vec![
                vec![10 * mib, 40 * mib],
                vec![20 * mib],
                vec![200 * mib],
                vec![mib, mib]
            ]
        );
        let many = section_batches(vec![1u64; 70], |b| *b);
        let lens: Vec<usize> = many.iter().map(Vec::len).collect();
        assert_eq!(
            lens,
            vec![SECTION_FETCHES, SECTION_FETCHES, 70 - 2 * SECTION_FETCHES]
        );
    }
}
