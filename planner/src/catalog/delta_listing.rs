//! A Delta log's folder listed: its commits and checkpoints by version.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use super::LogError;

/// What the log's folder holds.
#[derive(Debug, Default)]
pub(super) struct LogObjects {
    pub(super) commits: BTreeMap<u64, ObjectMeta>,
    /// Complete classic checkpoints (one file, or every part of one).
    pub(super) checkpoints: BTreeMap<u64, Vec<ObjectMeta>>,
}

impl LogObjects {
    pub(super) fn from_listing(objects: impl IntoIterator<Item = ObjectMeta>, log: &Path) -> Self {
        let depth = log.parts().count();
        let mut found = Self::default();
        let mut parts: BTreeMap<(u64, u32), Vec<(u32, ObjectMeta)>> = BTreeMap::new();
        for meta in objects {
            let segments: Vec<_> = meta.location.parts().skip(depth).collect();
            let [name] = segments.as_slice() else {
                continue;
            };
            let name = name.as_ref().to_string();
            let Some((digits, rest)) = name.split_at_checked(20) else {
                continue;
            };
            let Ok(version) = digits.parse::<u64>() else {
                continue;
            };
            if rest == ".json" {
                found.commits.insert(version, meta);
            } else if rest == ".checkpoint.parquet" {
                found.checkpoints.insert(version, vec![meta]);
            } else if let Some(uuid) = rest.strip_prefix(".checkpoint.").and_then(|r| {
                r.strip_suffix(".json")
                    .or_else(|| r.strip_suffix(".parquet"))
            }) && uuid::Uuid::parse_str(uuid).is_ok()
            {
                // A V2 checkpoint: its actions, and the sidecar files
                // holding its files' actions.
                found
                    .checkpoints
                    .entry(version)
                    .or_insert_with(|| vec![meta]);
            } else if let Some(numbers) = rest
                .strip_prefix(".checkpoint.")
                .and_then(|r| r.strip_suffix(".parquet"))
                && let Some((part, of)) = numbers.split_once('.')
                && let (Ok(part), Ok(of)) = (part.parse::<u32>(), of.parse::<u32>())
                && numbers.len() == 21
            {
                parts.entry((version, of)).or_default().push((part, meta));
            }
        }
        for ((version, of), mut metas) in parts {
            metas.sort_by_key(|(p, _)| *p);
            let numbered: Vec<u32> = metas.iter().map(|(p, _)| *p).collect();
            if numbered == (1..=of).collect::<Vec<_>>() {
                found
                    .checkpoints
                    .entry(version)
                    .or_insert_with(|| metas.into_iter().map(|(_, m)| m).collect());
            }
        }
        found
    }

    pub(super) fn latest(&self) -> Option<u64> {
        let commit = self.commits.keys().next_back().copied();
        let checkpoint = self.checkpoints.keys().next_back().copied();
        commit.max(checkpoint)
    }

    /// The commits `from..=to`, if every one of them is here.
    pub(super) fn commits_between(&self, from: u64, to: u64) -> Option<Vec<&ObjectMeta>> {
        (from..=to).map(|v| self.commits.get(&v)).collect()
    }
}

/// The objects of the log folder `log` (after `offset`, if given). A store
/// that lists keys in order (`sorted`: S3) is listed up to the first name
/// starting with `_`: the numbered commits and checkpoints sort before
/// `_commits/`, `_last_checkpoint` and `_sidecars/`, which a table with V2
/// checkpoints fills with thousands of files, and the listing stops there,
/// asking for no further page.
pub(super) async fn list_numbered(
    store: &dyn ObjectStore,
    log: &Path,
    offset: Option<&Path>,
    sorted: bool,
) -> Result<Vec<ObjectMeta>, LogError> {
    let depth = log.parts().count();
    let listing = match offset {
        Some(offset) => store.list_with_offset(Some(log), offset),
        None => store.list(Some(log)),
    };
    listing
        .try_take_while(|meta| {
            let numbered = !sorted
                || meta
                    .location
                    .parts()
                    .nth(depth)
                    .is_none_or(|name| !name.as_ref().starts_with('_'));
            futures::future::ready(Ok(numbered))
        })
        .try_collect()
        .await
        .map_err(|e| format!("cannot list its Delta log: {e}"))
}
