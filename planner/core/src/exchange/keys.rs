//! Exchange object keys. They are attempt-scoped and spread over `squall.shuffle.prefixes`
//! shards ([`map_object_key`]): S3 serves about 3,500 PUTs and 5,500 GETs
//! per second per prefix, so a query's objects under one prefix would be
//! throttled at a few hundred concurrent tasks. The shard comes before the
//! query id, so the shard prefixes outlive any one query and keep the
//! partitions S3 splits them into; a stage's tasks take consecutive shards
//! from a start that a hash of (query, stage) picks ([`shard`]). Everything
//! of a query is found by listing `{prefix}/{shard}/{query}/` for each shard
//! its stages wrote to ([`stage_shards`], [`query_prefix`]).

/// Most prefixes (shards) a query's exchange objects spread over: the
/// shard is written as two hex digits.
pub const MAX_SHARDS: u32 = 256;

/// The shard of task `task` of stage `stage` of query `query` among
/// `shards` (clamped to 1..=[`MAX_SHARDS`]): the stage starts at a shard
/// that a hash of (query, stage) picks, and its tasks take the following
/// shards in turn, so one stage's objects are spread evenly and the stages
/// (and queries) start at different shards.
pub fn shard(query: &str, stage: u32, task: u32, shards: u32) -> u32 {
    let shards = shards.clamp(1, MAX_SHARDS);
    // FNV-1a over the query id and the stage, then a splitmix64 finish: a
    // stable function (keys must not change between builds of the coordinator).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in query.bytes().chain([0xff]).chain(stage.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    ((h % u64::from(shards)) as u32 + task % shards) % shards
}

/// The shards that tasks `0..tasks` of one stage write to.
pub fn stage_shards(query: &str, stage: u32, tasks: u32, shards: u32) -> Vec<u32> {
    let shards = shards.clamp(1, MAX_SHARDS);
    (0..tasks.min(shards))
        .map(|t| shard(query, stage, t, shards))
        .collect()
}

/// Prefix under which the query's exchange objects of one shard live:
/// `{prefix}/{shard:02x}/{query}`. Listing the prefixes of every shard the
/// query wrote to ([`stage_shards`]) finds all of its objects.
pub fn query_prefix(prefix: &str, shard: u32, query: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        format!("{shard:02x}/{query}")
    } else {
        format!("{prefix}/{shard:02x}/{query}")
    }
}

/// Object key of one task attempt's output,
/// `{prefix}/{shard:02x}/{query}/s{stage}/t{task}/a{attempt}`, spread over
/// `shards` prefixes (`squall.shuffle.prefixes`) by [`shard`].
pub fn map_object_key(
    prefix: &str,
    shards: u32,
    query: &str,
    stage: u32,
    task: u32,
    attempt: u32,
) -> String {
    let shard = shard(query, stage, task, shards);
    format!(
        "{}/s{stage}/t{task}/a{attempt}",
        query_prefix(prefix, shard, query)
    )
}

/// Object key of the join-key filter stage `stage` publishes (when too big
/// to travel inline): `{prefix}/{shard:02x}/{query}/s{stage}/filter`, in the
/// shard of the stage's task 0.
pub fn filter_object_key(prefix: &str, shards: u32, query: &str, stage: u32) -> String {
    let shard = shard(query, stage, 0, shards);
    format!("{}/s{stage}/filter", query_prefix(prefix, shard, query))
}

/// Object key of stage `stage`'s map objects combined for its broadcast
/// readers: `{prefix}/{shard:02x}/{query}/s{stage}/broadcast`, in the shard
/// of the stage's task 0.
pub fn broadcast_object_key(prefix: &str, shards: u32, query: &str, stage: u32) -> String {
    let shard = shard(query, stage, 0, shards);
    format!("{}/s{stage}/broadcast", query_prefix(prefix, shard, query))
}
