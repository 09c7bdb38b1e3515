//! Directories that live as long as the process that made them.
//!
//! Test binaries keep their generated data sets in statics, which Rust
//! never drops, so a `tempfile::TempDir` held there is never removed: every
//! run of the suite left its data sets (tens of MB each) in the temporary
//! directory until the disk filled. A process directory carries its
//! process's id in its name, and the next process to make one with the same
//! prefix removes those whose process has ended.

use std::io;
use std::path::{Path, PathBuf};

/// A new directory under the system's temporary directory, named
/// `{prefix}{pid}-{random}`, left in place when this process ends and
/// removed by the next call with the same prefix from any process.
pub fn process_dir(prefix: &str) -> io::Result<PathBuf> {
    let parent = std::env::temp_dir();
    remove_orphans(&parent, prefix);
    let dir = tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir_in(&parent)?;
    Ok(dir.keep())
}

/// Removes `{prefix}{pid}-*` directories under `parent` whose process has
/// ended. Where processes cannot be looked up (no `/proc`), removes nothing.
fn remove_orphans(parent: &Path, prefix: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = owner(&name.to_string_lossy(), prefix) else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            // Another process may be removing it too: either may win.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The process id in a name `{prefix}{pid}-{random}`.
fn owner(name: &str, prefix: &str) -> Option<u32> {
    let (pid, _) = name.strip_prefix(prefix)?.split_once('-')?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_process() {
        assert_eq!(owner("squall-x-123-abc", "squall-x-"), Some(123));
        assert_eq!(owner("squall-x-abc", "squall-x-"), None);
        assert_eq!(owner("squall-y-123-abc", "squall-x-"), None);
    }

    #[test]
    fn directories_of_ended_processes_are_removed_and_live_ones_kept() {
        let prefix = format!("squall-scratch-test-{}-", std::process::id());
        // No process has id u32::MAX - 1 (Linux caps ids at 2^22).
        let orphan = std::env::temp_dir().join(format!("{prefix}{}-gone", u32::MAX - 1));
        std::fs::create_dir_all(orphan.join("sub")).unwrap();
        let mine = process_dir(&prefix).unwrap();
        let second = process_dir(&prefix).unwrap();
        if Path::new("/proc/self").exists() {
            assert!(!orphan.exists(), "{} left in place", orphan.display());
        }
        assert!(
            mine.exists() && second.exists(),
            "a live process's directory was removed"
        );
        for dir in [mine, second, orphan] {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
