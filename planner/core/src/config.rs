//! `squall.*` configuration: one typed DataFusion config extension.
//!
//! Every knob has a default and a doc line, and can be set three ways:
//! `--config squall.scan.target_task_bytes=...` on the command line, `SET
//! squall.scan.target_task_bytes = ...` in SQL, or the environment variable
//! `SQUALL_SCAN_TARGET_TASK_BYTES`. `squall config` lists them all.

use datafusion::common::config::ConfigExtension;
use datafusion::common::{config_namespace, extensions_options};

/// `squall.query.single_task_bytes` on the aws backend when unset: one
/// worker function reads this much in well under a second.
pub const AWS_SINGLE_TASK_BYTES: usize = 32 * 1024 * 1024;

/// `squall.shuffle.coalesce_bytes` when unset: embedded, where a map task
/// writes a partition per slot, and on the aws backend, where it writes a
/// thousand and batches of a few hundred rows compress worse (at most a
/// quarter of the worker's memory there).
pub const EMBEDDED_COALESCE_BYTES: usize = 64 * 1024 * 1024;
pub const AWS_COALESCE_BYTES: usize = 256 * 1024 * 1024;

/// `squall.bloom.max_build_rows` embedded when unset: a key filter makes its
/// probe side wait for the build side, which on one machine pays only for
/// build sides of moderate size.
pub const EMBEDDED_MAX_BUILD_ROWS: usize = 16_000_000;

config_namespace! {
    /// How scan stages are split into tasks.
    pub struct ScanOptions {
        /// Target compressed Parquet bytes a scan task reads (the column
        /// chunks its scan projects). Row groups are never split; a task owns
        /// whole row groups whose read columns sum toward this size.
        pub target_task_bytes: usize, default = 32 * 1024 * 1024
        /// Minimum number of tasks per scan stage when it has enough row groups
        /// (0 = the number of worker slots), so small tables still use every slot.
        pub min_tasks: usize, default = 0
        /// With it, `min_tasks` holds only while each task still reads this
        /// many bytes: a scan of B bytes gets at least min(`min_tasks`,
        /// B / this) tasks (0 = `min_tasks` whatever the bytes). A
        /// deployment spreads a scan of a few GB over more functions than
        /// `target_task_bytes` alone would, without fanning a small one out
        /// (the scale model: 64 tasks of at least 16 MiB cut TPC-H
        /// SF1000's geomean from 15 s to under 10 s, for 3% more cost).
        pub min_task_bytes: usize, default = 0
        /// Partitions (threads) a scan task reads its row groups with (0 = the
        /// cores the task has: the worker slots embedded, the function's vCPUs
        /// on Lambda), so the last tasks of a stage still use every core.
        pub task_partitions: usize, default = 0
        /// Read-ahead: a scan partition fetches the column chunks of its next
        /// row groups in windows of up to this many bytes, one coalesced
        /// request each, while it decodes the current ones; a file's first
        /// window is its first row group alone, so decoding starts early
        /// (0 = one row group at a time, as it asks for them).
        pub read_ahead_bytes: usize, default = 8 * 1024 * 1024
        /// Read-ahead windows a scan partition keeps in flight (each holds up
        /// to `read_ahead_bytes` of memory).
        pub read_ahead_windows: usize, default = 2
        /// Prune row groups by Parquet statistics before making tasks.
        pub prune_row_groups: bool, default = true
        /// An aggregation grouped by a column whose row groups, by their
        /// statistics, follow one another in its order (a table written
        /// sorted or clustered by it) is finished where the table is scanned:
        /// scan tasks take runs of row groups in that order, cut only where
        /// no value spans the cut, and no exchange comes between the scan
        /// and the aggregation.
        pub clustered_aggregation: bool, default = true
    }
}

config_namespace! {
    /// The exchange between stages.
    pub struct ShuffleOptions {
        /// Hash partitions a map task writes per exchange (0 = the number of
        /// worker slots): the most tasks a reduce stage can have.
        pub partitions: usize, default = 0
        /// Exchange bytes (compressed, as written) a reduce task should read.
        /// Once a shuffle's map tasks are done, its reading stage's tasks are
        /// formed from the measured partition sizes: each takes a contiguous
        /// range of partitions and reads it with one GET per map object
        /// (0 = one task per partition).
        pub target_task_bytes: usize, default = 64 * 1024 * 1024
        /// At least this many tasks per reduce stage when it has that many
        /// partitions (0 = the number of worker slots: the embedded backend
        /// keeps every slot busy; a deployment sets 1).
        pub min_tasks: usize, default = 0
        /// With it, `min_tasks` holds only while each task still reads this
        /// many bytes: a stage of B bytes gets at least
        /// min(`min_tasks`, B / this) tasks (0 = `min_tasks` whatever the
        /// bytes). A deployment spreads a small reduce stage over more
        /// functions than `target_task_bytes` alone would (the scale
        /// model: 64 tasks of at least 16 MiB cut TPC-H SF1000's geomean
        /// 5% at the same cost), without fanning a tiny one out.
        pub min_task_bytes: usize, default = 0
        /// At most this many tasks per reduce stage (0 = the partitions).
        pub max_tasks: usize, default = 0
        /// A finished stage read as a broadcast by several tasks has its map
        /// objects combined into one by the coordinator (one GET per reader
        /// instead of one per map object) when they hold at most this many
        /// bytes (0 = never combine).
        pub combine_max_bytes: usize, default = 64 * 1024 * 1024
        /// Two-level exchange of hash reads: the hash reads of a stage whose
        /// estimated GETs (map tasks x reduce tasks, from the planner's row
        /// estimates and `target_task_bytes`, summed over its hash reads)
        /// reach this many each get a combine stage, whose tasks regroup the map objects into a grid of fewer
        /// objects, so the exchange costs about M x b + N x a GETs instead of
        /// M x N; at launch the grid is sized from the measured map outputs,
        /// and the combine stage passes its input through unchanged when
        /// the grid would not halve the requests (0 = never; 1 = every hash
        /// read of a partitioned stage, for tests). 20,000 by the scale model
        /// (bench/model.py predict --two-level-min, TPC-H SF1000 on 1,000
        /// workers): counted per stage, 10,000 models 1% cheaper and 3%
        /// slower, 40,000 5% dearer and 4% faster; counted per read, as
        /// before, 10,000 modelled 17% cheaper and 11% faster than 100,000.
        /// A combine stage whose grid would not pay runs no task.
        pub two_level_min_requests: u64, default = 20_000
        /// Compression of exchange objects: lz4, zstd (level 3), zstd:LEVEL
        /// (-7 to 22; lower is faster, higher smaller) or none.
        pub compression: String, default = "lz4".to_string()
        /// Compressed exchange objects hold the values of fixed-width columns
        /// (integers, decimals, dates, timestamps, floats) byte plane by byte
        /// plane: every value's first byte, then every second byte, ...
        /// (Parquet's BYTE_STREAM_SPLIT). Their zero and near-constant high
        /// bytes become long runs instead of one short match per value:
        /// zstd compresses such columns 3-5x faster, decompresses them 3-4x
        /// faster, into the same or fewer bytes.
        pub byte_split: bool, default = true
        /// Concurrent range reads per shuffle-read partition.
        pub fetch_concurrency: usize, default = 8
        /// A read whose ranges are all small keeps more than
        /// `fetch_concurrency` GETs in flight: as many as keep its largest
        /// range times their number within these bytes, up to 128 over the
        /// read's partitions (a GET in flight holds a connection). A gather of
        /// hundreds of tiny map outputs (a final aggregate's groups, a top-k)
        /// is then bound by a few round trips, not by hundreds / 32 of them;
        /// the bytes in flight stay under this budget or under what
        /// `fetch_concurrency` allows, whichever is more (0 = count only).
        pub fetch_budget_bytes: usize, default = 16 * 1024 * 1024
        /// Key prefixes (shards, 1 to 256) a query's exchange objects spread
        /// over, `{location}/{shard}/{query}/...`: S3 serves about 3,500 PUTs and
        /// 5,500 GETs per second per prefix. 16 serve 88,000 GETs/s, 88 per
        /// worker of 1,000; the scale model's SF1000 run on 1,000 workers stops
        /// gaining there (geomean 324 s at 8, 295 s at 16 and at 32), and each
        /// shard a query wrote to costs one LIST at cleanup.
        pub prefixes: u32, default = 16
        /// A map task moves its encoded output to a local temporary file (the
        /// runtime's DiskManager; on Lambda, /tmp) once it holds more than this
        /// many bytes, and whenever the memory pool refuses it more (0 = only then).
        pub spill_threshold_bytes: usize, default = 256 * 1024 * 1024
        /// Memory the per-partition batch coalescers of a map task may hold
        /// together (rows waiting to fill a batch), and at most a quarter of
        /// the task's memory limit; with many partitions each partition's
        /// batches are made smaller to fit in half of it, and all are flushed
        /// when they hold more (0 = no bound). Unset: 64 MiB embedded; on the
        /// aws backend 256 MiB, at most a quarter of `squall.worker_memory_mb`
        /// (a thousand partitions' batches of 64 MiB are a few hundred rows
        /// each, which compress worse: 6% of the modelled SF1000 cost).
        pub coalesce_bytes: Option<usize>, default = None
        /// Part size of the multipart upload of an exchange object that spilled
        /// (at least 5 MiB, S3's minimum); an object held in memory goes in one PUT.
        pub upload_part_bytes: usize, default = 8 * 1024 * 1024
        /// Parts of one exchange object uploaded at once (each holds
        /// `upload_part_bytes` of memory while in flight).
        pub upload_concurrency: usize, default = 4
    }
}

config_namespace! {
    /// Task retries, deadlines and speculative duplicates.
    pub struct TaskOptions {
        /// Attempts per task before the query fails (1 = no retry). Failed,
        /// silent and speculative attempts all count.
        pub max_attempts: usize, default = 4
        /// Seconds without any completion message before the query fails,
        /// naming the tasks it still waits for (the last resort once a task's
        /// attempts are spent).
        pub silence_timeout_secs: u64, default = 900
        /// A running attempt gets a duplicate (a new attempt; the first one
        /// accepted wins) once it and its stage's progress are older than this
        /// many times the median run time of its stage's finished tasks.
        pub speculation_multiplier: f64, default = 4.0
        /// ...but never before this many milliseconds: the floor of that deadline.
        pub speculation_min_ms: u64, default = 2000
        /// Deadline of an attempt while no task of its stage has finished yet
        /// (nothing to compare it with), in milliseconds.
        pub attempt_timeout_ms: u64, default = 30_000
        /// Throttled invocations (Lambda TooManyRequests) are retried this many
        /// times with exponential backoff and jitter before the query fails;
        /// a throttle is not a failed attempt (the task never ran).
        pub invoke_retries: u32, default = 8
        /// First backoff of a throttled invocation, in milliseconds (doubles
        /// per retry, up to 5 s, with jitter).
        pub invoke_backoff_ms: u64, default = 100
        /// Milliseconds an invocation waits for the platform's answer
        /// (accepted, throttled, refused); a later answer counts as accepted
        /// and a late refusal fails the attempt (Lambda answers an event
        /// invocation in tens of milliseconds; `cargo lambda watch` only when
        /// the function returns).
        pub invoke_answer_ms: u64, default = 250
        /// Invocations in flight at once (each waits for its answer, and a
        /// throttled one for its backoff); they go out off the coordinator's
        /// event loop, which goes on receiving completions meanwhile.
        pub launch_concurrency: usize, default = 64
        /// aws: a stage starting at least this many tasks at once starts them
        /// through launcher invocations (tree invocation: the worker function
        /// invokes a batch of tasks itself), so the coordinator sends one
        /// request per batch (0 = never; needs `squall.payload_location`, where
        /// each batch's payloads go as one object).
        pub tree_min_tasks: usize, default = 1000
        /// Tasks one launcher invocation starts.
        pub tree_fanout: usize, default = 100
        /// aws: invocations still waiting for the platform's answer at once,
        /// across the coordinator's stages; a launch past it waits for an
        /// answer. Lambda answers an event invocation in tens of milliseconds,
        /// so this only bounds a stuck endpoint; `cargo lambda watch` answers
        /// when the function returns and stops dispatching altogether once
        /// 100 invocations of a function wait, so the local stack sets 48.
        pub max_unanswered_invokes: usize, default = 1024
        /// Memory one task may reserve (0 = no limit beyond the worker's).
        /// Operators that can spill do; others fail the query with a clear error.
        pub memory_limit_bytes: usize, default = 0
        /// Milliseconds between a running task's looks at its query's stop
        /// marker (aws backend: a cancel or the end of the query stops tasks
        /// that are still running); 0 = look only once, when the task starts.
        pub stop_poll_ms: u64, default = 1000
        /// Hash joins and top-k sorts filter the scans below them in the
        /// same task, by the keys they have built or the bound they have
        /// reached (DataFusion's dynamic filters, linked inside each task:
        /// an embedded one-task query's whole plan, a scan task's broadcast
        /// joins). The filter drops the scan's row groups by statistics and
        /// its rows before the join; one that removes few rows is sampled.
        pub dynamic_filters: bool, default = true
    }
}

config_namespace! {
    /// How long one coordinator run drives a query.
    pub struct CoordinatorOptions {
        /// Seconds one coordinator run may drive a query (from its statement's
        /// start, planning included) before it checkpoints the query's state
        /// under the query's exchange prefix and hands it over to a fresh run
        /// of itself, which resumes without re-running finished tasks (the
        /// coordinator function invokes itself; embedded, the engine resumes in
        /// process); fractions allowed; 0 = never. Past it a run hands over at
        /// its next batch of reports, or a tenth of it later (1 to 30 s)
        /// without one. The stack sets 840 for the coordinator function's 900 s
        /// timeout. A session may lower it, never raise it.
        pub max_run_secs: f64, default = 0.0
        /// Hand-offs one query may make before it fails, naming the limit.
        pub max_handoffs: u32, default = 100
    }
}

config_namespace! {
    /// Limits of one query.
    pub struct QueryOptions {
        /// Seconds a statement may run (planning and execution, not time spent
        /// queued) before it fails with "exceeded the timeout" and its tasks
        /// stop (0 = no limit). A session may lower it, never raise it.
        pub timeout_secs: u64, default = 0
        /// Memory the tasks of one query may reserve together on one worker
        /// (0 = no limit). Embedded, the query's tasks running in the process
        /// share it; on Lambda each worker runs one task at a time, so it bounds
        /// each task. Operators that can spill (sorts, aggregations) do; others
        /// fail the query with an error naming the stage and task. A session may
        /// lower it, never raise it.
        pub memory_limit_bytes: usize, default = 0
        /// Runs of a recursive query's recursive part (`WITH RECURSIVE`) before
        /// the query fails naming it (0 = no limit): a recursion that never
        /// stops making rows ends with an error, not at the timeout. Trino's
        /// `max_recursion_depth` is 10; PostgreSQL and DuckDB have none.
        pub max_recursion_depth: usize, default = 10_000
        /// A query whose scans read at most this many bytes (the compressed
        /// column chunks it projects, after row-group pruning) runs as one
        /// task: its whole DataFusion plan, with
        /// `squall.query.single_task_partitions` partitions, no exchange and no
        /// stage barrier, unless its key filters cut an aggregation (such a
        /// query stays staged) or, with no limit, stages it plans twice run
        /// once where the copies would read a quarter of its bytes. Unset: 32 MiB on the aws backend, where below
        /// that the stages' invocations, exchanges and barriers cost more than
        /// the workers they add; no limit on the embedded backend, where one
        /// task already has every core the stages would share (0 = always
        /// stage).
        pub single_task_bytes: Option<usize>, default = None
        /// Partitions a one-task query's plan runs with (0 = two per core of
        /// the worker, [`SquallConfig::worker_cores`]: one plan's pipelines
        /// wait on reads and on each other's hash tables, and a second
        /// partition per core keeps the core busy meanwhile).
        pub single_task_partitions: usize, default = 0
        /// A stage the plan holds twice (a view, CTE or subquery the query
        /// names twice, planned identically) runs once, and both readers
        /// read its outputs; not in a query calling a volatile function.
        pub reuse_stages: bool, default = true
        /// Once no query runs in the process, the allocator's free memory goes
        /// back to the system when it holds more than this many bytes free
        /// (glibc's `malloc_trim`; elsewhere the allocator does it itself).
        /// Memory kept free is reused by the next query without the kernel
        /// zeroing it again; memory given back is no longer resident.
        pub release_free_bytes: usize, default = 256 * 1024 * 1024
    }
}

config_namespace! {
    /// Admission of queries into the HTTP API (`squall serve`, embedded).
    pub struct ServerOptions {
        /// Queries running at once; later ones wait in a FIFO queue (state QUEUED).
        pub max_running_queries: usize, default = 4
        /// Queries waiting at most; beyond, a query fails at once with
        /// QUERY_QUEUE_FULL (0 = no queue: a query that cannot run at once fails).
        pub max_queued_queries: usize, default = 64
        /// A query whose client has not polled it for this many seconds is
        /// cancelled as abandoned (`ABANDONED_QUERY`), as Trino's
        /// `query.client.timeout` (5 minutes); 0 = never.
        pub client_timeout_secs: u64, default = 300
    }
}

config_namespace! {
    /// Where SQL may read and write.
    pub struct CatalogOptions {
        /// Comma-separated locations (folders, `s3://bucket/prefix`) that SQL may
        /// name in CREATE EXTERNAL TABLE ... LOCATION and COPY ... TO. Empty = the
        /// engine's catalog location only (nothing, without a catalog); `*` = any
        /// location (only for a trusted, single-user engine).
        pub allowed_roots: String, default = String::new()
    }
}

config_namespace! {
    /// Object-store requests: bounded retries and hedged reads, for the
    /// coordinator and every task, on every backend.
    pub struct StoreOptions {
        /// Retries of a request that failed with a transient error (a 503
        /// SlowDown, a timeout, an I/O error); 0 = none. Errors an HTTP
        /// client has already retried (S3 through object_store) are not
        /// retried again.
        pub max_retries: u32, default = 3
        /// First backoff in milliseconds; doubles per retry, with jitter.
        pub retry_backoff_ms: u64, default = 50
        /// Largest backoff in milliseconds.
        pub retry_max_backoff_ms: u64, default = 2000
        /// A read (GET, ranged GET, HEAD) with no answer after this many
        /// milliseconds is sent again and the first answer wins (hedged
        /// requests, as Starling does against S3's latency tail); 0 = never.
        pub hedge_after_ms: u64, default = 500
    }
}

config_namespace! {
    /// Seeded fault injection, off by default (rates are probabilities in 0..1).
    /// Every backend applies it at the same seams: the worker, the object
    /// store, the completion queue and the invoker.
    pub struct FaultOptions {
        /// Seed that makes injected faults reproducible.
        pub seed: u64, default = 0
        /// Probability that a task attempt fails (before or after writing its output).
        pub task_crash_rate: f64, default = 0.0
        /// Probability that a task attempt kills its own worker process
        /// (before or after writing its output, never reporting): a Lambda
        /// that dies without a word, as one out of memory does. Only a worker
        /// with a process of its own (the worker function) dies; an embedded
        /// worker, sharing the engine's process, fails the attempt instead.
        pub task_abort_rate: f64, default = 0.0
        /// Every task attempt waits this many milliseconds before it runs (a slow
        /// worker); a stop marker still stops it while it waits.
        pub task_delay_ms: u64, default = 0
        /// Probability that a task attempt hangs (a straggler) for
        /// `task_hang_ms` before it runs, unless it is stopped.
        pub task_hang_rate: f64, default = 0.0
        /// How long a hanging attempt hangs, in milliseconds.
        pub task_hang_ms: u64, default = 300_000
        /// Probability that an object-store request (GET, ranged GET, HEAD,
        /// PUT) fails with a 503 SlowDown (a PUT half the time after it was stored).
        pub store_error_rate: f64, default = 0.0
        /// Probability that an object-store request takes `store_slow_ms` longer.
        pub store_slow_rate: f64, default = 0.0
        /// Extra latency of a slow object-store request, in milliseconds.
        pub store_slow_ms: u64, default = 2000
        /// Probability that a completion message is delivered twice (the second
        /// copy late, so it arrives out of order).
        pub message_duplicate_rate: f64, default = 0.0
        /// Probability that a completion message is lost.
        pub message_loss_rate: f64, default = 0.0
        /// Probability that a completion message arrives `message_delay_ms` late
        /// (behind later ones).
        pub message_delay_rate: f64, default = 0.0
        /// Delay of a late completion message, in milliseconds.
        pub message_delay_ms: u64, default = 1000
        /// Probability that an invocation is throttled (Lambda TooManyRequests).
        pub invoke_throttle_rate: f64, default = 0.0
        /// Probability that the coordinator sends a task payload whose plan the
        /// worker cannot decode (its identity fields stay readable, so the
        /// worker still reports the failure to the right query and task).
        pub corrupt_payload_rate: f64, default = 0.0
    }
}

config_namespace! {
    /// Join-key filters ("Bloom filters"): a hash join's smaller side publishes
    /// its keys, and the other side's tasks drop rows that cannot match before
    /// they shuffle. The filtered side's stage then starts after the filtering
    /// side's stage has finished.
    pub struct BloomOptions {
        /// Publish join-key filters.
        pub enabled: bool, default = true
        /// Filter a side only when its estimated rows are at least this many
        /// times the estimated rows of the side publishing the filter (1.0
        /// measured 2-3% faster than 2.0 over TPC-H SF1: estimates of filtered
        /// build sides run high, e.g. Q12's lineitem side).
        pub min_size_ratio: f64, default = 1.0
        /// No filter from a side estimated above this many rows; unset, 16
        /// million embedded and no limit on the aws backend (there a probe
        /// stage waits only until its filter's keys are known to be too
        /// many, see `early_release`, and most of the key filters worth
        /// having at scale come from sides estimated large).
        pub max_build_rows: Option<usize>, default = None
        /// Filter only from a side estimated at most this fraction of the rows
        /// of the largest table it derives from (a side that is a whole table
        /// holds every key and filters nothing).
        pub max_source_fraction: f64, default = 0.5
        /// No filter when the publishing side has more distinct keys than this
        /// (each build task collects at most this many, in its memory pool;
        /// the coordinator merges them into a Bloom filter sized for this
        /// many past its first million, 32 MiB at 16 M, then folds it to
        /// the keys' size).
        pub max_keys: usize, default = 16_000_000
        /// Up to this many distinct keys the filter is an exact set of key
        /// hashes; above, a Bloom filter.
        pub exact_max_keys: usize, default = 16_384
        /// False-positive rate of a Bloom filter.
        pub fpp: f64, default = 0.01
        /// Filters up to this many bytes travel inside the task payload; larger
        /// ones as one object that each task reads.
        pub inline_max_bytes: usize, default = 128 * 1024
        /// Release a filter's probe stage as soon as the filter is known to
        /// be skipped (a build task saw more than `max_keys` keys, the
        /// sections merged so far hold more, or, sharing no keys, project
        /// past twice as many for the stage), not when the build stage
        /// ends. The probe then goes without the keys' value range too.
        pub early_release: bool, default = true
        /// A task stops applying a filter that, after its first 100,000 rows,
        /// drops less than this fraction of them.
        pub min_drop_ratio: f64, default = 0.05
    }
}

extensions_options! {
    /// squall's configuration, under the `squall.` prefix.
    pub struct SquallConfig {
        /// Tasks of one query running at once on the embedded backend (0 =
        /// available cores); each query has slots of its own, and the tasks of
        /// every query share the CPU executor's threads.
        pub worker_slots: usize, default = 0
        /// Where exchange objects go: a folder, or an `s3://bucket/prefix` for the
        /// aws backend (empty = a temporary folder of the embedded backend).
        pub exchange_location: String, default = String::new()
        /// Memory the queries of this process may reserve together: sorts,
        /// aggregations and the exchange writer spill to stay under it, other
        /// operators fail their query naming it, so a heavy query ends with
        /// an error rather than the process on the system's out-of-memory
        /// kill (0 = three quarters of the memory this process may use: the
        /// machine's, its cgroup's limit, a Lambda function's size, whichever
        /// is least). Read when the process starts its engine or worker.
        pub process_memory_bytes: usize, default = 0
        /// Backend: `local` (embedded) or `aws` (S3, SQS, Lambda).
        pub backend: String, default = "local".to_string()
        /// aws: name or ARN of the worker Lambda function.
        pub worker_function: String, default = "squall-worker".to_string()
        /// aws: name or ARN of the coordinator Lambda function (started by the API).
        pub coordinator_function: String, default = "squall-coordinator".to_string()
        /// aws: name prefix of the per-query SQS completion queues.
        pub queue_prefix: String, default = "squall-q-".to_string()
        /// aws: `s3://bucket/prefix` where task payloads over the inline limit go.
        pub payload_location: String, default = String::new()
        /// aws: task payloads larger than this many bytes travel through S3.
        pub inline_payload_bytes: usize, default = 200 * 1024
        /// aws: `s3://bucket/prefix` where query state and results are kept (and
        /// the markers that cancel a query and stop its running tasks).
        pub state_location: String, default = String::new()
        /// aws: memory of the worker function in MB, as deployed (vCPUs scale with
        /// it: one full vCPU at 1,769 MB, the SAM default); sets the Lambda
        /// GB-seconds of the modelled cost of a query.
        pub worker_memory_mb: u64, default = 1769
        /// aws: memory of the coordinator function in MB, as deployed; the
        /// coordinator runs for a query's whole wall time in the modelled cost.
        pub coordinator_memory_mb: u64, default = 1024
        /// aws: milliseconds the API waits for the coordinator function's
        /// invocation to be accepted before it answers the client. Lambda accepts
        /// an event invocation at once; `cargo lambda watch` answers only when the
        /// function returns, so the invocation then goes on in the background.
        pub coordinator_start_wait_ms: u64, default = 1000
        /// aws: milliseconds between the coordinator function's looks for a
        /// cancel request (it also records progress then), and between the
        /// API's reads of a query's state while a client long-polls.
        pub state_poll_ms: u64, default = 500
        /// Scan splitting.
        pub scan: ScanOptions, default = ScanOptions::default()
        /// Exchange.
        pub shuffle: ShuffleOptions, default = ShuffleOptions::default()
        /// Retries, deadlines and speculative duplicates.
        pub task: TaskOptions, default = TaskOptions::default()
        /// How long one coordinator run drives a query (hand-offs).
        pub coordinator: CoordinatorOptions, default = CoordinatorOptions::default()
        /// Limits of one query (timeout, memory).
        pub query: QueryOptions, default = QueryOptions::default()
        /// Admission of queries into the HTTP API.
        pub server: ServerOptions, default = ServerOptions::default()
        /// Where SQL may read and write.
        pub catalog: CatalogOptions, default = CatalogOptions::default()
        /// Object-store request retries and hedging.
        pub store: StoreOptions, default = StoreOptions::default()
        /// Join-key filters.
        pub bloom: BloomOptions, default = BloomOptions::default()
        /// Fault injection.
        pub fault: FaultOptions, default = FaultOptions::default()
    }
}

impl ConfigExtension for SquallConfig {
    const PREFIX: &'static str = "squall";
}

mod resolve;
pub use resolve::env_var_name;

#[cfg(test)]
mod tests;
