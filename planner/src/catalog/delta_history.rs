//! A Delta table's history read for time travel by time: which version was
//! current at a moment.

use object_store::{ObjectMeta, ObjectStore};
use serde_json::Value;

use super::{LogError, LogObjects, read_whole};

/// The last version of the log's commits (`objects`) committed at or
/// before `ms` (milliseconds since the epoch): by each commit's in-commit
/// timestamp where the table writes them (`commitInfo.inCommitTimestamp`,
/// Databricks' default: found by a binary search, a GET per commit
/// probed), else by its file's modification time.
pub(super) async fn committed_by(
    store: &dyn ObjectStore,
    objects: &LogObjects,
    ms: i64,
) -> Result<Option<u64>, LogError> {
    let commits: Vec<(&u64, &ObjectMeta)> = objects.commits.iter().collect();
    let by_file = |m: &ObjectMeta| m.last_modified.timestamp_millis();
    let Some((_, newest)) = commits.last() else {
        return Ok(None);
    };
    if in_commit_timestamp(store, newest).await?.is_none() {
        return Ok(commits
            .iter()
            .filter(|(_, m)| by_file(m) <= ms)
            .map(|(v, _)| **v)
            .max());
    }
    // Commits before in-commit timestamps were enabled have none: their
    // files' times order them.
    let (mut lo, mut hi) = (0, commits.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let meta = commits[mid].1;
        let at = in_commit_timestamp(store, meta)
            .await?
            .unwrap_or_else(|| by_file(meta));
        match at <= ms {
            true => lo = mid + 1,
            false => hi = mid,
        }
    }
    Ok(lo.checked_sub(1).map(|i| *commits[i].0))
}

/// A commit's `commitInfo.inCommitTimestamp`, if it has one.
async fn in_commit_timestamp(
    store: &dyn ObjectStore,
    commit: &ObjectMeta,
) -> Result<Option<i64>, LogError> {
    let bytes = read_whole(store, &commit.location).await?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|a| a.get("commitInfo")?.get("inCommitTimestamp")?.as_i64()))
}
