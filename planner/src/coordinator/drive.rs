//! The event loop of one coordinator run: launch what is ready, take
//! reports as they come, accept, relaunch the overdue, form the next
//! stages' inputs, until the final stage is done or the run hands over.

use super::*;

/// Silence after which a query logs what it waits for.
const SILENCE_LOGGED: Duration = Duration::from_secs(30);

pub(super) async fn drive(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    started: Instant,
    silent: &mut usize,
    resumed: Option<checkpoint::Checkpoint>,
) -> Result<Driven> {
    let mut runs = Vec::with_capacity(job.staged.stages.len());
    if job.stage_plans.len() != job.staged.stages.len() {
        return Err(PlannerError::Internal(format!(
            "query {}: {} encoded stage plans for {} stages",
            job.query_id,
            job.stage_plans.len(),
            job.staged.stages.len()
        ))
        .into());
    }
    for (index, stage_plan) in job.stage_plans.iter().enumerate() {
        let tasks = task_count(job, index);
        runs.push(StageRun {
            index,
            stage_plan: stage_plan.clone(),
            tasks: (0..tasks).map(|_| TaskRun::default()).collect(),
            launched: false,
            accepted: 0,
            started: None,
            progressed: None,
            finished: None,
            filter: None,
            filter_building: false,
            keys: key_filter::KeyWatch::default(),
            run_times: RunningMedian::default(),
            groups: Vec::new(),
            combined: None,
            combine_considered: false,
            grid: None,
        });
    }
    let mut profile = QueryProfile::new(&job.query_id);
    // Per stage: the requests of every attempt that reported.
    let mut requests = vec![RequestCounts::default(); runs.len()];
    job.progress
        .total_stages
        .store(runs.len(), Ordering::Relaxed);
    job.progress
        .total_tasks
        .store(runs.iter().map(|r| r.tasks.len()).sum(), Ordering::Relaxed);
    let ids: HashMap<u32, usize> = job
        .staged
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id, i))
        .collect();

    // Key filters being built, each in a task of its own (aborted if the
    // query ends first).
    let mut filters = FilterBuilds::default();
    let deadlines = Deadlines::from_options(&job.config.task);
    let mut query_times = RunningMedian::default();
    // Invocations go out from a task of their own, completions come in
    // through another: the loop never waits on either.
    let mut launcher = Launcher::start(job, Arc::clone(&backend.invoker));
    let mut completions = Completions::start(Arc::clone(&backend.queue), address);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    if let Some(c) = resumed {
        let (times, builds) = (&mut query_times, &mut filters);
        (profile, requests) =
            checkpoint::restore(c, job, backend, &mut runs, times, builds, &mut launcher)?;
    }
    launch_ready(job, backend, address, &mut runs, &mut launcher)?;
    let final_index = runs.len().saturating_sub(1);
    let mut last_message = Instant::now();
    // Reports only (the timeout above also waits while launches go out).
    let mut last_report = Instant::now();
    let mut silence_logged = false;
    let mut moved = false;
    while runs
        .get(final_index)
        .is_some_and(|r| r.accepted < r.tasks.len())
    {
        // Past this run's deadline, the query is handed over (every report
        // received so far is in the state captured or sent back to the
        // queue) once this run has taken reports: each run moves it on.
        if job.handoff.due(moved) {
            let (launches, receives, p) = (launcher, completions, &mut profile);
            let resent =
                checkpoint::quiesce(job, backend, address, &mut runs, p, launches, receives)
                    .await?;
            let c = checkpoint::capture(job, &runs, &profile, &requests, started, resent)?;
            return Ok(Driven::HandOver(Box::new(c)));
        }
        let bodies: Vec<String> = tokio::select! {
            _ = job.cancel.cancelled() => {
                return Err(PlannerError::Cancelled { query_id: Some(job.query_id.clone()) }.into());
            }
            Some(event) = filters.next() => {
                match event {
                    key_filter::FilterEvent::Built(si, built) => {
                        let (binding, fp) = built?;
                        profile.s3_get += fp.get_requests;
                        profile.s3_put += fp.put_requests;
                        profile.filters.push(fp);
                        runs[si].filter = Some(binding);
                        runs[si].filter_building = false;
                    }
                    key_filter::FilterEvent::Section(si, t, bytes, section) => {
                        filters.fetched(bytes);
                        let id = job.staged.stages[si].id;
                        let released = key_filter::section_fetched(job, &mut runs[si], id, t, section);
                        filters.pump(&mut runs);
                        let Some(fp) = released else {
                            continue;
                        };
                        profile.s3_get += fp.get_requests;
                        profile.filters.push(fp);
                    }
                }
                launch_ready(job, backend, address, &mut runs, &mut launcher)?;
                continue;
            }
            sent = launcher.next_sent() => {
                for sent in sent {
                    record_sent(job, &mut runs, &mut profile, sent)?;
                }
                launcher.top_up(job, backend, address, &runs)?;
                continue;
            }
            bodies = completions.next() => bodies?,
            _ = tick.tick() => Vec::new(),
        };
        relaunch_overdue(
            job,
            &mut runs,
            &query_times,
            &mut profile,
            &deadlines,
            &mut launcher,
        );
        launcher.top_up(job, backend, address, &runs)?;
        if bodies.is_empty() {
            // Silence while launches are still going out is not the tasks'.
            if launcher.pending() > 0 {
                last_message = Instant::now();
            }
            // A long silence is logged, once per silence, with what it
            // waits for: the operator sees a stalled query before it fails.
            let silence = last_report.elapsed();
            if silence > SILENCE_LOGGED && !silence_logged {
                silence_logged = true;
                tracing::warn!(
                    silent_s = silence.as_secs(),
                    launches_pending = launcher.pending(),
                    launches_in_flight = launcher.in_flight(),
                    waiting_for = %waiting_for(job, &runs),
                    "no task has reported for a while"
                );
            }
            if last_message.elapsed() > job.silence_timeout {
                return Err(PlannerError::Silent {
                    query_id: job.query_id.clone(),
                    silence: job.silence_timeout,
                    waiting_for: waiting_for(job, &runs),
                }
                .into());
            }
            continue;
        }
        last_message = Instant::now();
        last_report = last_message;
        silence_logged = false;
        moved = true;
        for body in bodies {
            profile.messages += 1;
            let report = match TaskReport::decode(&body) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(%e, "undecodable completion message ignored");
                    continue;
                }
            };
            if report.query_id != job.query_id {
                tracing::warn!(other = %report.query_id, "message of another query ignored");
                continue;
            }
            let Some(&si) = ids.get(&report.stage) else {
                continue;
            };
            let mut retry = None;
            // A task accepted: its key section is wanted, if its stage publishes one.
            let mut watch = false;
            let t = report.task as usize;
            {
                let run = &mut runs[si];
                let Some(task) = run.tasks.get_mut(report.task as usize) else {
                    continue;
                };
                if !task.reported.contains(&report.attempt) {
                    task.reported.push(report.attempt);
                    requests[si] += report.metrics.requests;
                }
                if task.accepted.is_some() {
                    profile.duplicates += 1;
                    continue;
                }
                match report.outcome {
                    TaskOutcome::Succeeded { output } => {
                        run.run_times.push(report.metrics.wall_ms);
                        query_times.push(report.metrics.wall_ms);
                        task.accepted = Some((report.attempt, output, report.metrics));
                        run.accepted += 1;
                        run.progressed = Some(Instant::now());
                        job.progress.done(&job.progress.completed_tasks);
                        // The first accepted attempt wins: stop the others.
                        for other in (0..task.attempts).filter(|a| !task.reported.contains(a)) {
                            if let Err(e) = backend
                                .invoker
                                .stop_attempt(&job.query_id, report.stage, report.task, other)
                                .await
                            {
                                tracing::warn!(%e, stage = report.stage, task = report.task, attempt = other, "stopping a superseded attempt failed");
                            }
                        }
                        if run.accepted == run.tasks.len() {
                            run.finished = Some(Instant::now());
                            job.progress.done(&job.progress.completed_stages);
                        }
                        watch = true;
                    }
                    TaskOutcome::Failed { error } => {
                        task.failures += 1;
                        // Only the latest attempt's failure matters; an older one was already retried.
                        if report.attempt + 1 < task.attempts {
                            continue;
                        }
                        if !error.retryable || task.attempts >= job.max_attempts {
                            return Err(PlannerError::TaskFailed {
                                stage: report.stage,
                                task: report.task,
                                attempts: task.attempts,
                                kind: error.kind,
                                message: error.message.clone(),
                            }
                            .into());
                        }
                        tracing::info!(stage = report.stage, task = report.task, attempt = task.attempts, kind = %error.kind, "retrying task");
                        retry = Some((report.task as usize, task.attempts));
                        task.attempts += 1;
                        task.sending += 1;
                    }
                }
            }
            let stage = &job.staged.stages[si];
            if watch
                && let Some(fp) =
                    key_filter::task_accepted(job, backend, &mut filters, &mut runs[si], stage, t)
            {
                profile.s3_get += fp.get_requests;
                profile.filters.push(fp);
                launch_ready(job, backend, address, &mut runs, &mut launcher)?;
            }
            if let Some((t, attempt)) = retry {
                profile.retries += 1;
                launcher.enqueue((si, t, attempt));
            } else if runs[si].finished.is_some() {
                if stage.publishes_filter()
                    && runs[si].filter.is_none()
                    && !runs[si].filter_building
                {
                    runs[si].filter_building = true;
                    let build = key_filter::FilterBuild::new(job, backend, &mut runs[si], stage.id);
                    filters.start(si, build);
                }
                if !runs[si].combine_considered {
                    runs[si].combine_considered = true;
                    runs[si].combined =
                        combine::combine_broadcast(job, backend, &runs, si, &mut profile).await;
                }
                launch_ready(job, backend, address, &mut runs, &mut launcher)?;
            }
        }
        // Sections watched for the tasks just accepted (after any build
        // started above took over its stage's).
        filters.pump(&mut runs);
        launcher.top_up(job, backend, address, &runs)?;
    }

    // Every invocation's answer in, so the query counts all its requests.
    launcher
        .settle(Duration::from_millis(job.config.task.invoke_answer_ms) + Duration::from_secs(5))
        .await;
    drop(completions);
    *silent = runs
        .iter()
        .flat_map(|r| &r.tasks)
        .map(TaskRun::silent)
        .sum();
    let final_run = &runs[final_index];
    let mut outputs = Vec::new();
    for t in &final_run.tasks {
        if let Some((_, out, _)) = &t.accepted {
            outputs.push(out.clone());
        }
    }
    let result = ResultObjects::new(
        Arc::clone(&backend.exchange_store),
        // What the final stage's writer is given (the writer's own schema
        // for a stage without one).
        job.staged
            .final_stage()
            .map(|s| {
                s.plan
                    .children()
                    .first()
                    .map(|c| c.schema())
                    .unwrap_or_else(|| s.plan.schema())
            })
            .ok_or_else(|| PlannerError::Internal("empty staged plan".into()))?,
        &outputs,
    )
    .with_byte_split(squall_core::exchange::byte_split(&job.config.shuffle));
    profile.rows = result.rows();
    profile.wall_ms = started.elapsed().as_millis() as u64;
    for run in &runs {
        let stage = &job.staged.stages[run.index];
        let mut sp = StageProfile::new(stage.id, stage.layout.to_string(), run.tasks.len());
        sp.requests = requests[run.index];
        if let crate::stages::TaskLayout::Combine { source, .. } = &stage.layout {
            sp.grid = run.grid.as_ref().map(|g| g.profile(*source));
        }
        sp.row_groups_pruned += job.row_groups_pruned.get(run.index).copied().unwrap_or(0);
        if let Some(p) = job.partitions.get(run.index) {
            sp.partitions_read = p.read as u64;
            sp.partitions_pruned = p.pruned() as u64;
        }
        for t in &run.tasks {
            sp.attempts += t.attempts as usize;
            if let Some((_, out, m)) = &t.accepted {
                sp.add_task(out, m);
                profile.store_retries += m.store_retries;
                profile.store_hedges += m.store_hedges;
            }
        }
        sp.wall_ms = match (run.started, run.finished) {
            (Some(s), Some(f)) => f.duration_since(s).as_millis() as u64,
            _ => 0,
        };
        profile.add_stage(sp, run.index == final_index);
    }
    Ok(Driven::Finished(QueryOutput { result, profile }))
}
