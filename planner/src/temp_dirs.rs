//! Temporary folders a process owns (the embedded exchange, result files),
//! and sweeping the ones a killed process left behind.
//!
//! A folder is removed when its owner drops it; a process killed outright
//! (SIGKILL, the out-of-memory killer, a power cut) never does, and on a
//! laptop or a long-lived server its exchange objects would pile up in the
//! temporary folder run after run. So each folder's name carries its
//! owner's process id, `{prefix}{pid}-{random}`, and creating one first
//! removes the folders of the same prefix whose owner is no longer running
//! and which were last modified over [`STALE_AFTER`] ago (so a folder just
//! made by a process this one cannot see, in another pid namespace sharing
//! the temporary folder, is left alone).
//!
//! Whether a process runs is read from `/proc`; where there is none, no
//! folder is swept.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A dead owner's folder is swept once untouched for this long.
pub const STALE_AFTER: Duration = Duration::from_secs(10 * 60);

/// A new folder `{prefix}{pid}-{random}` in `parent`, removed when dropped;
/// stale folders of the same prefix in `parent` are swept first.
pub fn owned_temp_dir(parent: &Path, prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let swept = sweep_stale(parent, prefix, SystemTime::now(), process_running);
    if !swept.is_empty() {
        tracing::info!(
            folders = swept.len(),
            parent = %parent.display(),
            prefix,
            "removed temporary folders left by processes no longer running"
        );
    }
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir_in(parent)
}

/// Remove the folders `{prefix}{pid}-*` in `parent` whose owner `running`
/// says is gone and which were last modified over [`STALE_AFTER`] before
/// `now`; returns the folders removed. Failures are logged, never raised:
/// a folder that cannot be removed is left as it was.
pub fn sweep_stale(
    parent: &Path,
    prefix: &str,
    now: SystemTime,
    running: impl Fn(u32) -> Option<bool>,
) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || running(pid) != Some(false) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let untouched = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if !meta.is_dir() || !untouched {
            continue;
        }
        let path = entry.path();
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(e) => {
                tracing::warn!(folder = %path.display(), %e, "could not remove a stale temporary folder")
            }
        }
    }
    removed
}

/// Whether process `pid` runs (`None`: this system cannot tell).
pub fn process_running(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return None;
    }
    Some(proc.join(pid.to_string()).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(parent: &Path, name: &str) -> PathBuf {
        let p = parent.join(name);
        std::fs::create_dir_all(p.join("query/s1")).unwrap();
        std::fs::write(p.join("query/s1/t0.arrow"), b"x").unwrap();
        p
    }

    #[test]
    fn only_old_folders_of_dead_owners_with_the_prefix_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let dead = folder(parent.path(), "squall-exchange-4000001-abc");
        let alive = folder(parent.path(), "squall-exchange-4000002-abc");
        let unknown = folder(parent.path(), "squall-exchange-4000003-abc");
        let other = folder(parent.path(), "squall-results-4000001-abc");
        let no_pid = folder(parent.path(), "squall-exchange-abc");
        let running = |pid: u32| match pid {
            4_000_001 => Some(false),
            4_000_002 => Some(true),
            _ => None,
        };
        // Fresh folders are left even when their owner is gone.
        let now = SystemTime::now();
        assert!(sweep_stale(parent.path(), "squall-exchange-", now, running).is_empty());
        let later = now + STALE_AFTER + Duration::from_secs(1);
        let swept = sweep_stale(parent.path(), "squall-exchange-", later, running);
        assert_eq!(swept, vec![dead.clone()]);
        assert!(!dead.exists());
        for kept in [alive, unknown, other, no_pid] {
            assert!(
                kept.join("query/s1/t0.arrow").exists(),
                "{}",
                kept.display()
            );
        }
    }

    #[test]
    fn a_new_folder_names_its_owner_and_is_removed_when_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let dir = owned_temp_dir(parent.path(), "squall-exchange-").unwrap();
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            name.starts_with(&format!("squall-exchange-{}-", std::process::id())),
            "{name}"
        );
        // Its own folder is never swept, whatever its age.
        let later = SystemTime::now() + STALE_AFTER * 2;
        assert!(sweep_stale(parent.path(), "squall-exchange-", later, |_| Some(false)).is_empty());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_runs_and_an_unused_pid_does_not() {
        assert_eq!(process_running(std::process::id()), Some(true));
        assert_eq!(process_running(u32::MAX - 1), Some(false));
    }
}
