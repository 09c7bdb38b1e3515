//! The query profile: what each stage and task did, summed per query.
//! `EXPLAIN ANALYZE` prints it, `squall tpch run --profile` writes it as JSON.
//!
//! [`QueryRequests`] holds every request the query made of S3, SQS and
//! Lambda, measured at the seams (`squall_core::requests`), by who made it:
//! the coordinator's planning, the task attempts (summed per stage, every
//! attempt that reported), the coordinator while the query ran, and the
//! coordinator function's state store. The cost model prices them
//! (`crate::cost`).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use squall_core::requests::RequestCounts;
use squall_core::task::{MapOutput, TaskMetrics};

/// Figures of one query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueryProfile {
    pub query_id: String,
    pub wall_ms: u64,
    pub rows: u64,
    pub stages: usize,
    pub tasks: usize,
    pub tasks_launched: usize,
    pub retries: usize,
    pub duplicates: usize,
    /// Attempts launched beside a silent or straggling one (deadlines).
    pub speculative: usize,
    /// Invocations refused as throttled and retried after a backoff.
    pub invoke_throttles: u64,
    /// Object-store requests sent again after a transient error, and reads
    /// hedged because they were slow (coordinator and accepted tasks).
    pub store_retries: u64,
    pub store_hedges: u64,
    pub messages: usize,
    /// Bytes and rows written to exchange objects by non-final stages.
    pub exchange_bytes: u64,
    pub exchange_rows: u64,
    pub row_groups_scanned: u64,
    pub row_groups_pruned: u64,
    /// Partitions of partitioned tables read, and pruned by the WHERE clause
    /// before any task was planned (their files never listed as scan work).
    pub partitions_read: u64,
    pub partitions_pruned: u64,
    pub scan_bytes: u64,
    /// Exchange GETs and PUTs as the shuffle operators of accepted attempts
    /// count them, plus the key filters' (every request: `requests`).
    pub s3_get: u64,
    pub s3_put: u64,
    /// Broadcast inputs the coordinator combined into one object for their
    /// readers (`coordinator::combine`).
    pub broadcasts_combined: u64,
    /// The coordinator's GETs of the map objects it combined.
    pub combine_get_requests: u64,
    /// Every request the query made, by who made it.
    pub requests: QueryRequests,
    /// Operator CPU time summed over tasks (DataFusion's `elapsed_compute`).
    pub cpu_ms: u64,
    /// The largest peak memory of any one task.
    pub peak_memory_bytes: u64,
    /// Rows join-key filters dropped before the shuffle.
    pub bloom_rows_dropped: u64,
    pub bloom_rows_checked: u64,
    /// Times exchange writers moved their output to local disk, and the
    /// bytes they moved (accepted tasks).
    pub spills: u64,
    pub spill_bytes: u64,
    /// Times a coordinator run handed the query over to a fresh run
    /// (`squall.coordinator.max_run_secs`), and the bytes of the checkpoints
    /// they wrote (each one PUT, read back with one GET; in `requests.coordinator`).
    pub handoffs: u64,
    pub checkpoint_bytes: u64,
    /// The join-key filters built for this query.
    pub filters: Vec<FilterProfile>,
    pub stage_profiles: Vec<StageProfile>,
}

/// Every request a query made of S3, SQS and Lambda, by who made it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueryRequests {
    /// The coordinator's planning reads: table listings, Parquet footers
    /// and metadata (what caches already held is not read again).
    pub planning: RequestCounts,
    /// Every task attempt that reported (retries, duplicates and failed
    /// attempts included): its stores, stop-marker looks, a spilled
    /// payload's GET, its report's SendMessage.
    pub tasks: RequestCounts,
    /// The coordinator while the query ran: key sections and filters,
    /// result reads, cleanup (LISTs, DELETEs), its completion queue,
    /// invocations, spilled payloads and stop markers.
    pub coordinator: RequestCounts,
    /// The coordinator function's query record, cancel-marker looks and
    /// result in the state store (aws; zero elsewhere).
    pub state: RequestCounts,
    /// Whether the tasks looked for stop markers (aws); when not, the cost
    /// model estimates the looks they would have made on AWS.
    pub stop_markers: bool,
}

impl QueryRequests {
    /// Everything, whoever made it.
    pub fn total(&self) -> RequestCounts {
        self.planning + self.tasks + self.coordinator + self.state
    }
}

/// One join-key filter: who published it and what it became.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FilterProfile {
    /// The stage whose keys it holds.
    pub source: u32,
    /// `exact`, `bloom`, or `none` when skipped.
    pub kind: String,
    /// Distinct keys.
    pub keys: u64,
    /// Encoded size.
    pub bytes: u64,
    /// Why no filter was made, when none was.
    pub skipped: Option<String>,
    /// The value range of the keys per key column (`[min, max]`, `*` when
    /// unbounded), pushed into the filtered scans to prune row groups.
    pub ranges: Option<String>,
    /// Time to fetch the key sections, merge them and ship the filter.
    pub build_ms: u64,
    pub get_requests: u64,
    pub put_requests: u64,
    /// Skipped before its stage finished (`squall.bloom.early_release`):
    /// the build tasks that had finished, of `tasks`, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released_after: Option<u64>,
    /// Tasks of the stage whose keys it holds.
    pub tasks: u64,
}

/// Figures of one stage, summed over its accepted task attempts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageProfile {
    pub stage: u32,
    pub layout: String,
    pub tasks: usize,
    pub attempts: usize,
    pub wall_ms: u64,
    pub task_wall_ms_max: u64,
    pub task_wall_ms_sum: u64,
    pub rows_out: u64,
    pub bytes_out: u64,
    pub rows_in_exchange: u64,
    pub bytes_in_exchange: u64,
    pub row_groups: u64,
    pub row_groups_pruned: u64,
    pub partitions_read: u64,
    pub partitions_pruned: u64,
    pub scan_bytes: u64,
    pub get_requests: u64,
    pub put_requests: u64,
    pub cpu_ms: u64,
    pub scan_ms: u64,
    pub peak_memory_bytes: u64,
    pub bloom_rows_dropped: u64,
    pub bloom_rows_checked: u64,
    /// Every request of the stage's attempts that reported.
    pub requests: RequestCounts,
    pub spills: u64,
    pub spill_bytes: u64,
    /// For a combine stage (two-level exchange): the grid it formed.
    pub grid: Option<GridProfile>,
}

/// What a combine stage's grid was, for the profile and EXPLAIN ANALYZE.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GridProfile {
    /// The map stage it combined.
    pub source: u32,
    pub map_objects: usize,
    pub map_groups: usize,
    pub partition_ranges: usize,
    /// Requests modelled (GETs; the two-level figure includes the combine
    /// tasks' PUTs and messages at their price in GETs).
    pub direct_requests: u64,
    pub two_level_requests: u64,
    /// The combine stage ran no task: the grid would not have halved the requests.
    pub forwarded: bool,
}

impl StageProfile {
    pub fn new(stage: u32, layout: String, tasks: usize) -> Self {
        Self {
            stage,
            layout,
            tasks,
            ..Default::default()
        }
    }

    pub fn add_task(&mut self, out: &MapOutput, m: &TaskMetrics) {
        self.task_wall_ms_max = self.task_wall_ms_max.max(m.wall_ms);
        self.task_wall_ms_sum += m.wall_ms;
        self.rows_out += out.partitions.iter().map(|p| p.rows).sum::<u64>();
        self.bytes_out += out.partitions.iter().map(|p| p.len).sum::<u64>();
        self.rows_in_exchange += m.rows_in_exchange;
        self.bytes_in_exchange += m.bytes_in_exchange;
        self.row_groups += m.row_groups;
        self.row_groups_pruned += m.row_groups_pruned;
        self.scan_bytes += m.scan_bytes;
        self.get_requests += m.get_requests;
        self.put_requests += m.put_requests;
        self.cpu_ms += m.cpu_ms;
        self.scan_ms += m.scan_ms;
        self.peak_memory_bytes = self.peak_memory_bytes.max(m.peak_memory_bytes);
        self.bloom_rows_dropped += m.bloom_rows_dropped;
        self.bloom_rows_checked += m.bloom_rows_checked;
        self.spills += m.spills;
        self.spill_bytes += m.spill_bytes;
    }
}

impl QueryProfile {
    pub fn new(query_id: &str) -> Self {
        Self {
            query_id: query_id.to_string(),
            ..Default::default()
        }
    }

    pub fn add_stage(&mut self, s: StageProfile, is_final: bool) {
        self.stages += 1;
        self.tasks += s.tasks;
        if !is_final {
            self.exchange_bytes += s.bytes_out;
            self.exchange_rows += s.rows_out;
        }
        self.row_groups_scanned += s.row_groups;
        self.row_groups_pruned += s.row_groups_pruned;
        self.partitions_read += s.partitions_read;
        self.partitions_pruned += s.partitions_pruned;
        self.scan_bytes += s.scan_bytes;
        self.s3_get += s.get_requests;
        self.s3_put += s.put_requests;
        self.cpu_ms += s.cpu_ms;
        self.peak_memory_bytes = self.peak_memory_bytes.max(s.peak_memory_bytes);
        self.bloom_rows_dropped += s.bloom_rows_dropped;
        self.bloom_rows_checked += s.bloom_rows_checked;
        self.requests.tasks += s.requests;
        self.spills += s.spills;
        self.spill_bytes += s.spill_bytes;
        self.stage_profiles.push(s);
    }

    /// Per-stage table for `EXPLAIN ANALYZE`.
    pub fn display(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "query {}: {} ms, {} rows, {} stages, {} tasks ({} retries), exchange {} bytes / {} rows, {} messages",
            self.query_id,
            self.wall_ms,
            self.rows,
            self.stages,
            self.tasks,
            self.retries,
            self.exchange_bytes,
            self.exchange_rows,
            self.messages
        );
        if self.speculative + self.duplicates > 0
            || self.invoke_throttles + self.store_retries + self.store_hedges > 0
        {
            let _ = writeln!(
                out,
                "recovery: {} attempts beside silent ones, {} duplicate messages, {} throttled invocations, {} store retries, {} hedged reads",
                self.speculative,
                self.duplicates,
                self.invoke_throttles,
                self.store_retries,
                self.store_hedges
            );
        }
        if self.handoffs > 0 {
            let _ = writeln!(
                out,
                "coordinator: {} hand-offs to a fresh run, checkpoints of {} bytes",
                self.handoffs, self.checkpoint_bytes
            );
        }
        if self.broadcasts_combined > 0 {
            let _ = writeln!(
                out,
                "exchange: {} broadcast inputs combined into one object each",
                self.broadcasts_combined
            );
        }
        if self.partitions_read + self.partitions_pruned > 0 {
            let _ = writeln!(
                out,
                "partitions: {} read, {} pruned before planning tasks",
                self.partitions_read, self.partitions_pruned
            );
        }
        if self.spills > 0 {
            let stages: Vec<String> = self
                .stage_profiles
                .iter()
                .filter(|s| s.spills > 0)
                .map(|s| format!("s{} {} bytes in {}", s.stage, s.spill_bytes, s.spills))
                .collect();
            let _ = writeln!(
                out,
                "exchange writers spilled to local disk: {} bytes in {} spills ({})",
                self.spill_bytes,
                self.spills,
                stages.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "{:>6} {:<28} {:>6} {:>8} {:>10} {:>8} {:>12} {:>12} {:>12} {:>9} {:>11} {:>6} {:>6} {:>6} {:>10}",
            "stage",
            "layout",
            "tasks",
            "wall_ms",
            "max_task",
            "cpu_ms",
            "rows_out",
            "bytes_out",
            "bytes_in",
            "row_grps",
            "key_dropped",
            "GETs",
            "HEADs",
            "PUTs",
            "peak_mem"
        );
        for s in &self.stage_profiles {
            let _ = writeln!(
                out,
                "{:>6} {:<28} {:>6} {:>8} {:>10} {:>8} {:>12} {:>12} {:>12} {:>9} {:>11} {:>6} {:>6} {:>6} {:>10}",
                format!("s{}", s.stage),
                s.layout,
                s.tasks,
                s.wall_ms,
                s.task_wall_ms_max,
                s.cpu_ms,
                s.rows_out,
                s.bytes_out,
                s.bytes_in_exchange,
                format!("{}/{}", s.row_groups, s.row_groups + s.row_groups_pruned),
                s.bloom_rows_dropped,
                s.requests.get,
                s.requests.head,
                s.requests.put,
                s.peak_memory_bytes
            );
        }
        for f in &self.filters {
            let ranges = f
                .ranges
                .as_ref()
                .map(|r| format!("; key range {r}"))
                .unwrap_or_default();
            let _ = match &f.skipped {
                Some(why) => {
                    let early = f
                        .released_after
                        .map(|n| {
                            format!("; its probe released after {n} of {} build tasks", f.tasks)
                        })
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "key filter of s{}: none ({why}){ranges}{early}",
                        f.source
                    )
                }
                None => writeln!(
                    out,
                    "key filter of s{}: {} of {} keys, {} bytes, built in {} ms{ranges}",
                    f.source, f.kind, f.keys, f.bytes, f.build_ms
                ),
            };
        }
        self.requests.display(&mut out);
        out
    }
}

impl QueryRequests {
    /// The requests table of `EXPLAIN ANALYZE`: who made how many of each kind.
    fn display(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "{:<13} {:>7} {:>7} {:>7} {:>6} {:>7} {:>6} {:>7}",
            "requests", "GET", "HEAD", "PUT", "LIST", "DELETE", "SQS", "Invoke"
        );
        let total = self.total();
        for (who, c) in [
            ("planning", &self.planning),
            ("tasks", &self.tasks),
            ("coordinator", &self.coordinator),
            ("state", &self.state),
            ("total", &total),
        ] {
            let _ = writeln!(
                out,
                "  {who:<11} {:>7} {:>7} {:>7} {:>6} {:>7} {:>6} {:>7}",
                c.get,
                c.head,
                c.put,
                c.list,
                c.delete,
                c.sqs(),
                c.invocations()
            );
        }
        let _ = writeln!(
            out,
            "SQS: {} CreateQueue, {} SendMessage, {} ReceiveMessage, {} DeleteMessageBatch, {} DeleteQueue; Lambda: {} invocations, {} throttled",
            total.sqs_create_queue,
            total.sqs_send,
            total.sqs_receive,
            total.sqs_delete_batch,
            total.sqs_delete_queue,
            total.invoke,
            total.invoke_throttled
        );
    }
}
