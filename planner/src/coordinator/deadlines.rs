//! Deadlines of running task attempts: when the coordinator stops waiting
//! for an attempt and launches another one beside it.
//!
//! A completion message can be lost, a Lambda can crash without a word, and
//! a task can straggle (a slow host, a stuck request). All three look the
//! same from the coordinator: an attempt that has not reported. Its answer
//! is the same too: a new attempt of the task, launched *beside* the silent
//! one (which may still finish); whichever is accepted first wins, and the
//! other is stopped ([`squall_core::seams::Invoker::stop_attempt`]) and its
//! objects swept with the query's.
//!
//! An attempt is overdue when both it and its stage's last progress (its
//! launch, or the last task of it accepted) are older than
//!
//! ```text
//! deadline = max(speculation_min_ms, speculation_multiplier × median run time
//!                                     of the stage's accepted tasks)
//!          | max(attempt_timeout_ms, speculation_multiplier × median run time
//!                                     of the query's accepted tasks)   (none in this stage yet)
//! ```
//!
//! Only a stage's own tasks say how long its tasks should take: a
//! one-task final aggregation or a big join can legitimately run far longer
//! than the scans before it, and duplicating it would only double its work
//! (on two cores, or on the bill). Until a task of the stage is accepted,
//! its attempts get `attempt_timeout_ms`.
//!
//! Run times are what the tasks report (`wall_ms`), so time spent waiting
//! for a worker slot or a cold start does not shrink the deadline; counting
//! from the stage's last progress keeps the tail of a stage that is still
//! moving (tasks queued behind busy slots) from being duplicated, while a
//! stage that stalls on one task gets a duplicate of it one deadline later.
//! With the defaults (×4, 2 s floor) a lost message in a stage of 100 ms
//! tasks costs about 2 s, not `silence_timeout_secs`.
//!
//! Duplicates count against `squall.task.max_attempts`; once a task's
//! attempts are spent the query waits for them up to
//! `squall.task.silence_timeout_secs` and then fails, naming the tasks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use squall_core::config::TaskOptions;

use super::launcher::Launcher;
use super::{QueryJob, StageRun};
use crate::profile::QueryProfile;

/// How long a running attempt may stay silent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deadlines {
    pub multiplier: f64,
    pub floor: Duration,
    /// The deadline while no task of the query has finished.
    pub no_reference: Duration,
}

impl Deadlines {
    pub fn from_options(o: &TaskOptions) -> Self {
        Self {
            multiplier: o.speculation_multiplier.max(1.0),
            floor: Duration::from_millis(o.speculation_min_ms),
            no_reference: Duration::from_millis(o.attempt_timeout_ms),
        }
    }

    /// The deadline of an attempt, from the median run times (ms) of its
    /// stage's and its query's accepted tasks.
    pub fn deadline(&self, stage_median_ms: Option<u64>, query_median_ms: Option<u64>) -> Duration {
        match stage_median_ms {
            Some(ms) => Duration::from_millis(ms)
                .mul_f64(self.multiplier)
                .max(self.floor),
            None => {
                let query =
                    Duration::from_millis(query_median_ms.unwrap_or(0)).mul_f64(self.multiplier);
                self.no_reference.max(self.floor).max(query)
            }
        }
    }
}

/// Queue another attempt of every task that is overdue (see `deadlines`),
/// beside the attempts still silent, while it has attempts left.
///
/// Called on every pass of the event loop, so its cost does not grow with
/// the query's task count: medians are kept as tasks are accepted
/// ([`RunningMedian`]), and a stage that progressed within its deadline has
/// no overdue task (an attempt's silence counts from the later of when it
/// was sent and its stage's last progress), so only stalled stages are
/// looked through task by task. An attempt not yet sent is never overdue.
pub(super) fn relaunch_overdue(
    job: &QueryJob,
    runs: &mut [StageRun],
    query_times: &RunningMedian,
    profile: &mut QueryProfile,
    deadlines: &Deadlines,
    launcher: &mut Launcher,
) {
    let query_median = query_times.median();
    for (si, run) in runs.iter_mut().enumerate() {
        if !run.launched || run.finished.is_some() {
            continue;
        }
        let deadline = deadlines.deadline(run.run_times.median(), query_median);
        if run.progressed.is_some_and(|p| p.elapsed() <= deadline) {
            continue;
        }
        for (t, task) in run.tasks.iter_mut().enumerate() {
            if task.accepted.is_some() || task.sending > 0 || task.attempts >= job.max_attempts {
                continue;
            }
            let since = task.launched.max(run.progressed);
            if since.is_none_or(|s| s.elapsed() <= deadline) {
                continue;
            }
            let attempt = task.attempts;
            tracing::info!(
                stage = job.staged.stages[si].id,
                task = t,
                attempt,
                deadline_ms = deadline.as_millis() as u64,
                "task overdue; launching another attempt beside it"
            );
            task.attempts += 1;
            task.sending += 1;
            profile.speculative += 1;
            launcher.enqueue((si, t, attempt));
        }
    }
}

/// The median of a growing set of run times, kept as values arrive: the
/// lower half in a max-heap, the upper half (one more on an odd count) in a
/// min-heap, so adding is O(log n) and the median O(1). The median of an
/// even count is the upper one, as [`median`] gives.
#[derive(Debug, Default)]
pub struct RunningMedian {
    lower: BinaryHeap<u64>,
    upper: BinaryHeap<Reverse<u64>>,
}

impl RunningMedian {
    pub fn push(&mut self, v: u64) {
        match self.upper.peek() {
            Some(&Reverse(m)) if v < m => self.lower.push(v),
            _ => self.upper.push(Reverse(v)),
        }
        // Keep upper.len() == lower.len() or lower.len() + 1.
        if self.upper.len() > self.lower.len() + 1 {
            if let Some(Reverse(m)) = self.upper.pop() {
                self.lower.push(m);
            }
        } else if self.lower.len() > self.upper.len()
            && let Some(m) = self.lower.pop()
        {
            self.upper.push(Reverse(m));
        }
    }

    pub fn median(&self) -> Option<u64> {
        self.upper.peek().map(|&Reverse(m)| m)
    }
}

/// What a query still waits for, for an error message: the tasks of its
/// launched stages that have not succeeded (their attempts, those still
/// being sent, those that reported), and the stages whose inputs are done
/// but whose key filters are not.
pub(super) fn waiting_for(job: &QueryJob, runs: &[StageRun]) -> String {
    let id = |i: usize| job.staged.stages[i].id;
    let mut waiting = Vec::new();
    for run in runs {
        if !run.launched {
            let stage = &job.staged.stages[run.index];
            let inputs_done = stage.inputs.iter().all(|i| {
                job.staged
                    .index(*i)
                    .is_some_and(|j| runs[j].accepted == runs[j].tasks.len())
            });
            let filters: Vec<String> = stage
                .filter_inputs
                .iter()
                .filter_map(|i| job.staged.index(*i))
                .filter(|&j| runs[j].filter.is_none())
                .map(|j| {
                    let state = if runs[j].filter_building {
                        "being built"
                    } else {
                        "not started"
                    };
                    format!("s{}'s key filter ({state})", id(j))
                })
                .collect();
            if inputs_done && !filters.is_empty() {
                waiting.push(format!(
                    "stage s{}, not launched: {}",
                    id(run.index),
                    filters.join(", ")
                ));
            }
            continue;
        }
        for (t, task) in run.tasks.iter().enumerate() {
            if task.accepted.is_none() {
                waiting.push(format!(
                    "stage s{}, task {t} ({} attempt(s), {} being sent, attempts {:?} reported, none succeeded)",
                    id(run.index),
                    task.attempts,
                    task.sending,
                    task.reported
                ));
            }
        }
    }
    if waiting.is_empty() {
        return "nothing: every launched task succeeded and no stage waits for a key filter".into();
    }
    let more = waiting.len().saturating_sub(5);
    waiting.truncate(5);
    let mut said = waiting.join("; ");
    if more > 0 {
        said.push_str(&format!("; and {more} more"));
    }
    said
}

/// The median of some values (the upper one of an even count): what
/// [`RunningMedian`] keeps, computed from scratch.
#[cfg(test)]
fn median(values: impl IntoIterator<Item = u64>) -> Option<u64> {
    let mut v: Vec<u64> = values.into_iter().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_follow_the_stage_else_the_attempt_timeout() {
        let d = Deadlines {
            multiplier: 4.0,
            floor: Duration::from_millis(2000),
            no_reference: Duration::from_millis(30_000),
        };
        assert_eq!(
            d.deadline(Some(1000), Some(10)),
            Duration::from_millis(4000)
        );
        assert_eq!(
            d.deadline(None, Some(1500)),
            Duration::from_millis(30_000),
            "no task of the stage accepted yet"
        );
        assert_eq!(d.deadline(None, Some(9000)), Duration::from_millis(36_000));
        assert_eq!(
            d.deadline(Some(100), None),
            Duration::from_millis(2000),
            "the floor"
        );
        assert_eq!(d.deadline(None, None), Duration::from_millis(30_000));
        assert_eq!(median([5, 1, 3]), Some(3));
        assert_eq!(median([4, 1]), Some(4));
        assert_eq!(median(Vec::<u64>::new()), None);
    }

    #[test]
    fn the_running_median_is_the_median_of_everything_pushed() {
        let mut state = 7u64;
        let mut values = Vec::new();
        let mut running = RunningMedian::default();
        assert_eq!(running.median(), None);
        for _ in 0..2000 {
            // A small LCG: repeats, runs up and down, and ties.
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (state >> 33) % 97;
            values.push(v);
            running.push(v);
            assert_eq!(running.median(), median(values.iter().copied()));
        }
    }
}
