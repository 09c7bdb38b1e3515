//! Giving freed memory back to the system once no query runs.
//!
//! glibc's allocator keeps what a program frees in its arenas for reuse: a
//! process whose query peaked at 4 GB stays resident near 4 GB after the
//! query, and every later query's peak includes what the earlier one left.
//! `malloc_trim(0)` returns every whole free page of every arena to the
//! kernel (`madvise(MADV_DONTNEED)`), leaving live allocations untouched.
//!
//! The engine holds a [`QueryMemory`] guard while a query runs; when the
//! last guard of the process drops and the allocator holds more free bytes
//! than `squall.query.release_free_bytes`, the free pages are released on a
//! blocking thread (the walk locks each arena in turn, so it is done only
//! when no query is running, and never on a thread that serves requests).
//! A worker function does not trim: Lambda bills the memory configured, not
//! the memory resident, and the next task reuses the free pages.
//!
//! Other allocators (musl, macOS) return large blocks themselves and have
//! no such call: there [`release_free_memory`] does nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// Free bytes the allocator may keep (`squall.query.release_free_bytes`).
static KEEP_FREE: AtomicUsize = AtomicUsize::new(0);

/// Marks a query as running in this process until dropped; the last one
/// dropped releases the free memory.
#[derive(Debug)]
pub struct QueryMemory(());

impl QueryMemory {
    /// `keep_free`: free bytes the allocator may keep once no query runs
    /// (the last query to start sets it for the process).
    pub fn enter(keep_free: usize) -> Self {
        KEEP_FREE.store(keep_free, Ordering::SeqCst);
        RUNNING.fetch_add(1, Ordering::SeqCst);
        Self(())
    }

    /// Marks one task of a query as running in this process (the embedded
    /// backend's tasks): a task reports its end before its plan is dropped,
    /// so the query's own guard may drop first, with the task's memory
    /// still live. The task's guard drops after everything it held.
    pub fn task() -> Self {
        RUNNING.fetch_add(1, Ordering::SeqCst);
        Self(())
    }
}

impl Drop for QueryMemory {
    fn drop(&mut self) {
        if RUNNING.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn_blocking(release_when_idle);
            }
            Err(_) => release_when_idle(),
        }
    }
}

/// Queries running in this process now (those holding a [`QueryMemory`]).
pub fn running_queries() -> usize {
    RUNNING.load(Ordering::SeqCst)
}

fn release_when_idle() {
    // A query that started meanwhile releases at its own end.
    if running_queries() > 0 {
        return;
    }
    let free = resident_free_bytes();
    if free.is_some_and(|free| free <= KEEP_FREE.load(Ordering::SeqCst)) {
        return;
    }
    let started = Instant::now();
    let released = release_free_memory();
    tracing::debug!(
        released,
        free,
        elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
        "free memory given back to the system"
    );
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[repr(C)]
#[allow(dead_code)] // glibc's layout: every field is read by position
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

/// glibc's `mallinfo2`: the allocator's counts over every arena.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn mallinfo() -> Option<MallInfo2> {
    unsafe extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY: mallinfo2 takes nothing and returns a struct by value, laid
    // out as glibc's `struct mallinfo2` (ten size_t fields, in this order).
    Some(unsafe { mallinfo2() })
}

/// Bytes the allocator holds free (glibc's `mallinfo2`: free chunks of every
/// arena, resident or not); `None` where it cannot tell.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn free_bytes() -> Option<usize> {
    mallinfo().map(|info| info.fordblks + info.fsmblks)
}

/// Bytes the allocator holds free; nothing to tell off glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn free_bytes() -> Option<usize> {
    None
}

/// Free bytes the allocator holds in resident pages: the process's
/// resident anonymous memory less the bytes allocated. `mallinfo2`'s free
/// count also holds the pages already given back (glibc keeps their chunks
/// on its free lists), so after one big query it stays high and would
/// release again, walking gigabytes of free chunks, after every small one.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn resident_free_bytes() -> Option<usize> {
    let info = mallinfo()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let anon_kb: usize = status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((anon_kb << 10).saturating_sub(info.uordblks + info.hblkhd))
}

/// Free resident bytes; nothing to tell off glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn resident_free_bytes() -> Option<usize> {
    None
}

/// Returns the allocator's free pages to the kernel; whether any came back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release_free_memory() -> bool {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: malloc_trim takes no pointer and touches only glibc's own free
    // lists, under the locks every allocator call takes.
    unsafe { malloc_trim(0) == 1 }
}

/// Returns the allocator's free pages to the kernel; whether any came back.
/// Nothing to do off glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures are the process's, and other tests of this binary
    /// allocate and free beside this one: a scenario another thread's
    /// allocations blur is run again (up to eight times, half a second
    /// apart); one clean run of it must pass.
    #[test]
    fn freed_memory_goes_back_to_the_system() {
        let mut failures = Vec::new();
        for _ in 0..8 {
            match freed_and_released() {
                Ok(()) => return,
                Err(why) => failures.push(why),
            }
            // Past the other tests' burst of allocations.
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        panic!("every attempt failed: {failures:#?}");
    }

    fn freed_and_released() -> Result<(), String> {
        // Many mid-sized blocks (below glibc's mmap threshold, so they live
        // in an arena), each followed by a small block that stays live: the
        // freed ones are holes no arena can give back on its own (a
        // thread's arena is heaps of 64 MiB that shrink from their tops,
        // and the main arena's top shrinks likewise), until released.
        let mut blocks = Vec::with_capacity(4096);
        let mut fences = Vec::with_capacity(4096);
        for i in 0..4096 {
            blocks.push(vec![i as u8; 64 << 10]);
            fences.push(vec![1u8; 64]);
        }
        let held = resident_kb();
        let free_before = free_bytes();
        drop(blocks);
        if let (Some(before), Some(after)) = (free_before, free_bytes())
            && after < before + (128 << 20)
        {
            return Err(format!(
                "the allocator counts the 256 MiB freed as free: {before} then {after} bytes"
            ));
        }
        let resident_free = resident_free_bytes();
        release_free_memory();
        let after = resident_kb();
        if let (Some(before), Some(after)) = (resident_free, resident_free_bytes())
            && !(before >= 128 << 20 && after + (100 << 20) < before)
        {
            return Err(format!(
                "resident free bytes: {before} with 256 MiB freed, {after} once released"
            ));
        }
        assert_eq!(fences.len(), 4096);
        if let (Some(held), Some(after)) = (held, after)
            && after + 100_000 >= held
        {
            return Err(format!(
                "resident {held} kB with 256 MiB live, {after} kB after freeing and releasing"
            ));
        }
        Ok(())
    }

    #[test]
    fn guards_count_running_queries_and_their_tasks() {
        let a = QueryMemory::enter(0);
        let task = QueryMemory::task();
        assert!(running_queries() >= 2);
        drop(a);
        // The query's guard is gone, its task still holds memory: nothing
        // is released until the task's guard drops too.
        assert!(running_queries() >= 1);
        drop(task);
    }

    fn resident_kb() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}
