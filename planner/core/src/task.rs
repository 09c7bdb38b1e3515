//! The task contract: [`TaskSpec`] is what a worker is asked to do,
//! [`TaskReport`] is the one completion message it sends back.
//!
//! Both travel as JSON — the same bytes as a Lambda event payload and an SQS
//! message body — so the embedded backend exercises exactly the encoding the
//! cloud path uses. The stage plan inside a spec is datafusion-proto bytes
//! (base64 in the JSON).
//!
//! ```text
//!  coordinator --TaskSpec--> invoker --> worker --TaskReport--> completion queue --> coordinator
//! ```

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SquallError};
use crate::requests::RequestCounts;

/// Version of the task contract. A worker rejects a spec of another version.
pub const PROTOCOL_VERSION: u32 = 1;

/// One task of one stage of one query.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskSpec {
    pub protocol: u32,
    pub query_id: String,
    pub stage: u32,
    pub task: u32,
    pub attempt: u32,
    /// The stage plan (root: `ShuffleWriteExec`), datafusion-proto encoded.
    #[serde(with = "base64_bytes")]
    pub plan: Bytes,
    /// One entry per Parquet scan leaf of the plan, in leaf order.
    pub scans: Vec<ScanAssignment>,
    /// One entry per `ShuffleReadExec` leaf of the plan, by upstream stage.
    pub inputs: Vec<InputBinding>,
    /// Where this attempt writes its exchange object.
    pub output: ObjectLocation,
    /// Completion queue address the report goes to.
    pub reply_to: String,
    /// Session settings (`datafusion.*`, `squall.*`) that differ from the defaults.
    pub settings: Vec<(String, String)>,
    /// One entry per key filter the plan applies (`KeyFilterExec`), by the
    /// stage that published it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<FilterBinding>,
    /// An object whose existence tells the task to stop: the backend creates
    /// it when the query is cancelled or has ended (see
    /// [`Invoker::stop_marker`](crate::seams::Invoker::stop_marker)). The task
    /// looks for it every `squall.task.stop_poll_ms` while it runs. Absent
    /// where the backend stops tasks itself (the embedded one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_marker: Option<ObjectLocation>,
}

/// The join-key filter published by stage `source_stage`, for a task that applies it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FilterBinding {
    pub source_stage: u32,
    pub data: FilterData,
    /// The published keys' value ranges ([`crate::key_filter::KeyRanges`]
    /// encoded), which the task pushes into its scans to prune row groups.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_base64_bytes"
    )]
    pub ranges: Option<Bytes>,
}

/// Where a task finds a key filter's bytes (see [`crate::key_filter::KeyFilter`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum FilterData {
    /// In the payload itself (small filters).
    Inline {
        #[serde(with = "base64_bytes")]
        bytes: Bytes,
    },
    /// In one object of the exchange store.
    Object { location: ObjectLocation, len: u64 },
    /// The build side published no filter (too many keys): apply nothing.
    Skipped { reason: String },
}

/// The key of one attempt's own stop marker, beside its query's marker
/// `query_marker_key`: written when another attempt of the same task has
/// been accepted, so a speculative loser stops then and not at query end.
pub fn attempt_stop_key(query_marker_key: &str, stage: u32, task: u32, attempt: u32) -> String {
    format!("{query_marker_key}-s{stage}-t{task}-a{attempt}")
}

/// The row groups (or, of a text file, the byte ranges) a task reads from one scan.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ScanAssignment {
    pub files: Vec<FileRowGroups>,
    /// Partitions (threads) the scan reads with; 0 = the worker's
    /// `squall.scan.task_partitions`. A query run as one task keeps the
    /// partitions its plan was made with.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partitions: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Some row groups of one Parquet file, or some chunks of one text file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileRowGroups {
    /// Object path within the scan's object store (no leading slash).
    pub path: String,
    pub size: u64,
    /// Modification time as the coordinator listed it (ns since the epoch;
    /// 0 unknown): with `size`, what keys the worker's cache of file metadata.
    #[serde(default)]
    pub last_modified_ns: i64,
    /// Number of row groups in the whole file.
    pub row_group_count: usize,
    /// The row groups this task reads, ascending.
    pub row_groups: Vec<usize>,
    /// The file's values of the table's partition columns (Hive-style
    /// `key=value` folders), in the scan's partition-column order, as text
    /// (`None` is null); empty for an unpartitioned table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partition_values: Vec<Option<String>>,
    /// The rows deleted from `row_groups` without rewriting the file (a
    /// Delta deletion vector, Iceberg position deletes), per row group that
    /// has any, ascending; the task skips them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<crate::deleted_rows::DeletedRows>,
    /// For a text file (CSV, JSON lines) read as byte ranges: the bytes of
    /// each of its chunks, `row_groups` then naming chunks (chunk `i` the
    /// bytes from `i` x this, the last one shorter) and `row_group_count`
    /// their number; a task reads its consecutive chunks as one range. 0
    /// for Parquet row groups and for a text file read whole (one "row
    /// group", the file).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub chunk_bytes: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// What one shuffle-read leaf reads: output partition `i` of the read node
/// streams `partitions[i]`, in order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InputBinding {
    pub stage: u32,
    /// Object store URL of the exchange (`file://`, `s3://bucket`).
    pub store_url: String,
    pub partitions: Vec<Vec<ObjectRange>>,
    /// For a combine task of a two-level exchange: per range of
    /// `partitions[0]` (same order), where each partition's streams lie in
    /// it, so the task regroups them by partition without decoding them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layout: Vec<RangeLayout>,
}

/// The partitions one read range holds, back to back from its start:
/// partition `first + i` has `lens[i]` bytes (0 when empty) and `rows[i]` rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RangeLayout {
    pub first: u32,
    pub lens: Vec<u64>,
    pub rows: Vec<u64>,
}

/// A byte range of an exchange object holding one partition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectRange {
    pub key: String,
    pub offset: u64,
    pub len: u64,
    pub rows: u64,
}

/// An object: store URL plus key (object path, no leading slash).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectLocation {
    pub store_url: String,
    pub key: String,
}

/// The completion message of one task attempt.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskReport {
    pub protocol: u32,
    pub query_id: String,
    pub stage: u32,
    pub task: u32,
    pub attempt: u32,
    pub outcome: TaskOutcome,
    pub metrics: TaskMetrics,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TaskOutcome {
    Succeeded { output: MapOutput },
    Failed { error: TaskFailure },
}

/// A map task's exchange object and where each output partition sits in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MapOutput {
    pub key: String,
    pub partitions: Vec<PartitionRange>,
    /// For a stage that publishes a join-key filter: this task's distinct key
    /// hashes, stored after the partitions in the same object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeySection>,
}

/// A task's key section inside its map object (`crate::key_filter` format).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct KeySection {
    pub offset: u64,
    pub len: u64,
    /// The task saw more distinct keys than it may collect: the section
    /// holds the keys' ranges but no hashes.
    pub overflow: bool,
}

/// One output partition inside a map object. `len == 0` means empty.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct PartitionRange {
    pub offset: u64,
    pub len: u64,
    pub rows: u64,
}

/// Why a task failed, structured so the coordinator can decide to retry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskFailure {
    pub kind: FailureKind,
    pub message: String,
    /// False when another attempt cannot succeed (bad payload, bad SQL).
    pub retryable: bool,
}

/// The class of a task's failure: the one list every side names failures by
/// (the worker that reports them, the backends that report tasks that never
/// ran, the coordinator that decides what to retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The payload does not decode (never retried).
    BadPayload,
    /// The payload speaks another protocol version (never retried).
    Protocol,
    /// An operator failed while the task ran.
    Execution,
    /// A setting the task was sent is invalid (never retried).
    Config,
    /// The task needs more memory than its limit (never retried).
    MemoryLimit,
    /// The decoded plan cannot be made runnable (never retried: the same
    /// plan fails again).
    Plan,
    /// A DataFusion internal error: a broken invariant (never retried).
    Internal,
    /// The query is wrong for its data, as SQL defines it (a scalar
    /// subquery of more than one row): never retried.
    Data,
    /// A fault injected by `squall.fault.*`.
    Injected,
    /// The query's stop marker stopped the task (its query has ended).
    Stopped,
    /// The task panicked; the worker caught it.
    Panic,
    /// The task never started: its invocation failed.
    Invoke,
}

impl FailureKind {
    pub const ALL: [FailureKind; 12] = [
        Self::BadPayload,
        Self::Protocol,
        Self::Execution,
        Self::Config,
        Self::MemoryLimit,
        Self::Plan,
        Self::Internal,
        Self::Data,
        Self::Injected,
        Self::Stopped,
        Self::Panic,
        Self::Invoke,
    ];

    /// The name reports and logs use (`bad_payload`, `memory_limit`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadPayload => "bad_payload",
            Self::Protocol => "protocol",
            Self::Execution => "execution",
            Self::Config => "config",
            Self::MemoryLimit => "memory_limit",
            Self::Plan => "plan",
            Self::Internal => "internal",
            Self::Data => "data",
            Self::Injected => "injected",
            Self::Stopped => "stopped",
            Self::Panic => "panic",
            Self::Invoke => "invoke",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TaskReport {
    /// The report of an attempt that failed: the one way every side builds one.
    pub fn failed(
        id: &TaskIdentity,
        kind: FailureKind,
        message: impl Into<String>,
        retryable: bool,
    ) -> Self {
        Self {
            protocol: PROTOCOL_VERSION,
            query_id: id.query_id.clone(),
            stage: id.stage,
            task: id.task,
            attempt: id.attempt,
            outcome: TaskOutcome::Failed {
                error: TaskFailure {
                    kind,
                    message: message.into(),
                    retryable,
                },
            },
            metrics: TaskMetrics::default(),
        }
    }

    /// The failure kind, when the attempt failed.
    pub fn failure_kind(&self) -> Option<FailureKind> {
        match &self.outcome {
            TaskOutcome::Failed { error } => Some(error.kind),
            TaskOutcome::Succeeded { .. } => None,
        }
    }
}

/// What a task measured about itself.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TaskMetrics {
    pub wall_ms: u64,
    pub cpu_ms: u64,
    pub rows_out: u64,
    pub bytes_out: u64,
    pub rows_in_exchange: u64,
    pub bytes_in_exchange: u64,
    pub row_groups: u64,
    pub scan_bytes: u64,
    pub get_requests: u64,
    pub put_requests: u64,
    pub peak_memory_bytes: u64,
    /// Rows a join-key filter dropped before the shuffle, and rows it checked.
    #[serde(default)]
    pub bloom_rows_dropped: u64,
    #[serde(default)]
    pub bloom_rows_checked: u64,
    /// Time the Parquet scans spent opening files and fetching and decoding
    /// row groups (DataFusion's scan timers, summed over partitions).
    #[serde(default)]
    pub scan_ms: u64,
    /// Row groups of the task's assignment its scans skipped by statistics
    /// at run time (against the published join keys' ranges); not in `row_groups`.
    #[serde(default)]
    pub row_groups_pruned: u64,
    /// Object-store requests sent again after a transient error, and reads
    /// hedged because they were slow (`squall.store.*`).
    #[serde(default)]
    pub store_retries: u64,
    #[serde(default)]
    pub store_hedges: u64,
    /// Every request the attempt made, measured at its seams: its stores
    /// (Parquet, exchange, filter objects; retries and hedges included), its
    /// stop-marker looks, the GET of a payload that came through S3, and
    /// the SendMessage of this report itself.
    #[serde(default)]
    pub requests: RequestCounts,
    /// Times the exchange writer moved its output to local disk, and the
    /// bytes it moved (`squall.shuffle.spill_threshold_bytes`, memory limits).
    #[serde(default)]
    pub spills: u64,
    #[serde(default)]
    pub spill_bytes: u64,
}

impl TaskSpec {
    pub fn encode(&self) -> Result<Bytes> {
        serde_json::to_vec(self)
            .map(Bytes::from)
            .map_err(|e| SquallError::BadTaskPayload(e.to_string()))
    }

    /// Decode and check the protocol version.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let spec: TaskSpec = serde_json::from_slice(bytes)
            .map_err(|e| SquallError::BadTaskPayload(e.to_string()))?;
        if spec.protocol != PROTOCOL_VERSION {
            return Err(SquallError::ProtocolVersion {
                got: spec.protocol,
                supported: PROTOCOL_VERSION,
            });
        }
        Ok(spec)
    }
}

impl TaskReport {
    pub fn encode(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| SquallError::BadTaskPayload(e.to_string()))
    }

    pub fn decode(body: &str) -> Result<Self> {
        serde_json::from_str(body).map_err(|e| SquallError::BadTaskPayload(e.to_string()))
    }
}

/// Identity fields a worker salvages from a payload it cannot fully decode,
/// so its failure report still reaches the right query and task.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TaskIdentity {
    #[serde(default)]
    pub query_id: String,
    #[serde(default)]
    pub stage: u32,
    #[serde(default)]
    pub task: u32,
    #[serde(default)]
    pub attempt: u32,
    #[serde(default)]
    pub reply_to: String,
}

impl TaskIdentity {
    pub fn salvage(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        STANDARD
            .decode(s.as_bytes())
            .map(Bytes::from)
            .map_err(serde::de::Error::custom)
    }
}

mod opt_base64_bytes {
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Bytes>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => super::base64_bytes::serialize(b, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super::base64_bytes")] Bytes);
        Ok(Option::<Wrapped>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TaskSpec {
        TaskSpec {
            protocol: PROTOCOL_VERSION,
            query_id: "q1".into(),
            stage: 2,
            task: 3,
            attempt: 1,
            plan: Bytes::from_static(b"\x00\x01plan"),
            scans: vec![ScanAssignment {
                files: vec![FileRowGroups {
                    path: "data/lineitem/part-0.parquet".into(),
                    size: 10,
                    last_modified_ns: 1_700_000_000_000_000_000,
                    row_group_count: 4,
                    row_groups: vec![1, 3],
                    partition_values: vec![Some("1995".into()), None],
                    deleted: vec![],
                    chunk_bytes: 0,
                }],
                partitions: 2,
            }],
            inputs: vec![],
            output: ObjectLocation {
                store_url: "file://".into(),
                key: "x/q1/s2/t3/a1".into(),
            },
            reply_to: "q1".into(),
            settings: vec![("squall.scan.min_tasks".into(), "3".into())],
            filters: vec![FilterBinding {
                source_stage: 1,
                data: FilterData::Inline {
                    bytes: Bytes::from_static(b"SQKF"),
                },
                ranges: Some(Bytes::from_static(b"\x00\x00\x00\x00")),
            }],
            stop_marker: None,
        }
    }

    #[test]
    fn spec_round_trip() {
        let s = spec();
        let back = TaskSpec::decode(&s.encode().unwrap()).unwrap();
        assert_eq!(back.plan, s.plan);
        assert_eq!(back.scans, s.scans);
        assert_eq!(back.output, s.output);
        assert_eq!(back.filters, s.filters);
        assert_eq!(back.stop_marker, None);
        // A spec from a coordinator that predates stop markers still decodes.
        let mut json: serde_json::Value = serde_json::from_slice(&s.encode().unwrap()).unwrap();
        assert!(
            json.get("stop_marker").is_none(),
            "absent markers are not sent"
        );
        json["stop_marker"] = serde_json::json!({"store_url": "s3://b", "key": "state/q1/stop"});
        let with_marker = TaskSpec::decode(json.to_string().as_bytes()).unwrap();
        assert_eq!(with_marker.stop_marker.unwrap().key, "state/q1/stop");
    }

    #[test]
    fn wrong_version_is_rejected() {
        let mut s = spec();
        s.protocol = 99;
        let err = TaskSpec::decode(&s.encode().unwrap()).unwrap_err();
        assert!(
            matches!(err, SquallError::ProtocolVersion { got: 99, .. }),
            "{err}"
        );
        let id = TaskIdentity::salvage(&s.encode().unwrap()).unwrap();
        assert_eq!((id.stage, id.task, id.attempt), (2, 3, 1));
    }

    #[test]
    fn garbage_is_a_bad_payload() {
        assert!(matches!(
            TaskSpec::decode(b"{not json"),
            Err(SquallError::BadTaskPayload(_))
        ));
    }
}
