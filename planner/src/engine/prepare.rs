//! Planning a statement into a coordinator's job (`Engine::prepare`, on the
//! CPU executor, its requests counted): the physical plan cut into stages
//! with key filters placed, its scans split into tasks.

use super::*;
use crate::clustered::cluster;
use crate::plan_check::LOST_PROPERTIES;
use crate::split::{ScanUnits, Spread, text_chunk_bytes, text_units};
use crate::stages::{Stage, calls_volatile, estimated_rows, reuse_saves_scans, reuse_stages};
use datafusion::error::DataFusionError;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;
use squall_core::exchange::Compression;
use squall_core::exec::ShuffleWriteExec;
use squall_core::key_filter::KeyFilterExec;
use std::collections::HashMap;

impl Engine {
    /// The staged plan one query would run with (key filters placed), in
    /// this session, without running it.
    pub async fn plan_stages(&self, sql: &str) -> Result<StagedPlan> {
        let state = self.ctx.state();
        let plan = state.create_logical_plan(sql).await?;
        self.roots.check_plan(&plan)?;
        let (staged, _) = stages(state, &plan).await?;
        Ok(staged)
    }

    /// Plan a logical plan into a staged plan and a ready-to-run job, on
    /// the CPU executor, unless the query is cancelled first. Every request
    /// planning makes (listings, footers) is counted for the query's profile;
    /// a table listed since the statement `began` (registered when the
    /// statement named it) is not listed again.
    pub(super) async fn prepare(
        &self,
        state: SessionState,
        plan: LogicalPlan,
        options: &RunOptions,
        query_id: &str,
        began: Instant,
    ) -> Result<(StagedPlan, QueryJob)> {
        let requests = RequestCounter::new();
        let listed = self.listings.for_statement(began);
        let runtime = config::counting_runtime(&self.ctx.runtime_env(), &requests, listed)?;
        let state = SessionStateBuilder::new_from_existing(state)
            .with_runtime_env(Arc::clone(&runtime))
            .build();
        let planner = Planner {
            runtime,
            footers: Arc::clone(&self.footers),
            partitions: Arc::clone(&self.partitions),
        };
        let (options, query_id) = (options.clone(), query_id.to_string());
        let cancel = planning_cancel(&options);
        let (staged, mut job) = on_cpu(&cancel, async move {
            planner.prepare(state, &plan, &options, &query_id).await
        })
        .await?;
        job.planning_requests = requests.snapshot() + self.catalog_requests_since_charged();
        Ok((staged, job))
    }
}

/// What stops planning: the query's cancel, but nothing for a run that
/// resumes a query, which must reach its coordinator loop to end the query.
pub(super) fn planning_cancel(options: &RunOptions) -> CancellationToken {
    match options.resume {
        Some(_) => CancellationToken::new(),
        None => options.cancel.clone(),
    }
}

/// Runs planning `work` on the CPU executor ([`squall_core::executor`]),
/// away from the caller's runtime, unless `cancel` fires first (then the
/// work is aborted and the error is "cancelled").
pub(super) async fn on_cpu<T: Send + 'static>(
    cancel: &CancellationToken,
    work: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    until_cancelled(cancel, async {
        spawn_cpu(work).await.map_err(|e| {
            PlannerError::Internal(format!("planning failed: {}", join_error_text(e)))
        })?
    })
    .await
}

/// Plan a logical plan with DataFusion and cut it into stages; returns
/// them with the state they were planned in.
pub(super) async fn stages(
    state: SessionState,
    plan: &LogicalPlan,
) -> Result<(StagedPlan, SessionState)> {
    let (staged, state, _) = stages_and_plan(state, plan).await?;
    Ok((staged, state))
}

/// [`stages`], and the physical plan they were cut from.
async fn stages_and_plan(
    state: SessionState,
    plan: &LogicalPlan,
) -> Result<(StagedPlan, SessionState, Arc<dyn ExecutionPlan>)> {
    let partitions = SquallConfig::from_session(state.config()).resolved_shuffle_partitions();
    stages_and_plan_at(state, plan, partitions).await
}

/// [`stages_and_plan`] with DataFusion planning for `partitions`.
async fn stages_and_plan_at(
    mut state: SessionState,
    plan: &LogicalPlan,
    partitions: usize,
) -> Result<(StagedPlan, SessionState, Arc<dyn ExecutionPlan>)> {
    let squall = SquallConfig::from_session(state.config());
    state.config_mut().options_mut().execution.target_partitions = partitions;
    let physical = state
        .create_physical_plan(plan)
        .await
        .map_err(|e| undecorrelated(e, plan))?;
    let mut staged = match split_stages(Arc::clone(&physical), partitions) {
        Ok(staged) => staged,
        // A plan some of whose operators rely on what an exchange does not
        // keep (orderings DataFusion derived from a window's constant
        // values): its operators run whole, as DataFusion planned them.
        Err(e) if e.to_string().contains(LOST_PROPERTIES) => {
            tracing::info!(error = %e, "the plan runs as one task: it cannot be cut into stages");
            return Ok((single_stage(Arc::clone(&physical), UNCUT), state, physical));
        }
        Err(e) => return Err(e),
    };
    if squall.query.reuse_stages && !calls_volatile(plan) {
        reuse_stages(&mut staged)?;
    }
    place_key_filters(&mut staged, &squall.bloom, squall.resolved_max_build_rows())?;
    Ok((staged, state, physical))
}

/// Why a plan runs as one task when cutting it into stages would lose an
/// order one of its operators relies on.
const UNCUT: &str = "an order it relies on does not survive an exchange";

/// DataFusion's refusal of a subquery its optimizer could not turn into a
/// join ("Physical plan does not support logical expression
/// OuterReferenceColumn(...)"), said as what it is and what to write
/// instead; any other error as it is.
///
/// Where `plan` has a subquery inside another that names a column of a
/// query two levels out (which DataFusion decorrelates one level at a
/// time, failing with "No field named n.n_nationkey"), that is said
/// instead.
pub(crate) fn undecorrelated(e: DataFusionError, plan: &LogicalPlan) -> DataFusionError {
    let message = e.to_string();
    if (message.contains("No field named")
        || message.contains("Physical plan does not support logical expression"))
        && let Some(column) = crate::nested_correlation::two_levels_out(plan)
    {
        return DataFusionError::NotImplemented(format!(
            "a subquery inside another subquery refers to {column}, a column of the query two \
             levels out, which squall cannot plan as a join: a subquery may refer to the query \
             just around it; name the column through the subquery in between (join its table \
             there, or compare with that subquery's own column the condition makes equal)"
        ));
    }
    if !message.contains("Physical plan does not support logical expression") {
        return e;
    }
    let what = [
        "OuterReferenceColumn",
        "ScalarSubquery",
        "Exists",
        "InSubquery",
    ]
    .into_iter()
    .find(|w| message.contains(w));
    match what {
        Some(_) => DataFusionError::NotImplemented(
            "a correlated subquery squall cannot plan as a join: squall plans a subquery (or \
             LATERAL) that refers to the outer query as a join, on the equalities and \
             comparisons of its WHERE with the outer query's columns (an aggregate of all its \
             rows for each outer value, a LIMIT as each group's first rows), and outer columns \
             in its select list computed outside it; an outer column inside an aggregate's \
             argument, or compared below a GROUP BY or a LIMIT, is not supported; write it as a \
             join, or rank the rows with a window function (row_number() OVER (PARTITION BY \
             ... ORDER BY ...)) and keep the first"
                .into(),
        ),
        None => e,
    }
}

/// Whether `staged` is a plan that could not be cut ([`UNCUT`]).
fn uncut(staged: &StagedPlan) -> bool {
    matches!(
        staged.stages.as_slice(),
        [Stage {
            layout: TaskLayout::Single { reason: UNCUT },
            ..
        }]
    )
}

/// The whole of `physical` as one stage of one task (see
/// `squall.query.single_task_bytes`).
fn single_stage(physical: Arc<dyn ExecutionPlan>, reason: &'static str) -> StagedPlan {
    let est_rows = estimated_rows(&physical);
    StagedPlan {
        stages: vec![Stage {
            id: 1,
            plan: Arc::new(ShuffleWriteExec::new(physical, None)),
            inputs: Vec::new(),
            layout: TaskLayout::Single { reason },
            est_rows,
            filter_inputs: Vec::new(),
            clustered_on: None,
        }],
    }
}

/// Whether the staged plan's key filters do what one task's plan cannot: cut
/// the rows an aggregation groups (a filter below an aggregation in its
/// stage: the aggregation then hashes only the keys a later join keeps), or
/// filter a scan by keys that exist only once an aggregation has finished (a
/// filter published from an aggregation's output, as `k IN (SELECT k ...
/// GROUP BY k HAVING ...)` plans, applied where a stage scans). A single
/// DataFusion plan meets such keys only where its joins probe, after every
/// row was aggregated or built into a hash table; a staged plan drops the
/// rows at the scans. Such a query stays staged whatever it reads.
fn key_filters_cut_aggregation(staged: &StagedPlan) -> bool {
    let aggregated: Vec<u32> = staged
        .stages
        .iter()
        .filter(|s| publishes_aggregated_keys(&s.plan))
        .map(|s| s.id)
        .collect();
    staged.stages.iter().any(|s| {
        let mut cut = false;
        visit_key_filters(&s.plan, false, &mut |filter, below_aggregation| {
            cut |= below_aggregation
                || (matches!(s.layout, TaskLayout::Scan)
                    && aggregated.contains(&filter.source_stage()));
        });
        cut
    })
}

/// Calls `f` on every key filter in a stage's plan, with whether an
/// aggregation sits above it.
fn visit_key_filters(
    plan: &Arc<dyn ExecutionPlan>,
    below_aggregation: bool,
    f: &mut impl FnMut(&KeyFilterExec, bool),
) {
    if let Some(filter) = plan.downcast_ref::<KeyFilterExec>() {
        f(filter, below_aggregation);
    }
    let below = below_aggregation || plan.is::<AggregateExec>();
    for child in plan.children() {
        visit_key_filters(child, below, f);
    }
}

/// A stage root that publishes a key filter of keys an aggregation produced
/// (through filters, projections and repartitions only).
fn publishes_aggregated_keys(plan: &Arc<dyn ExecutionPlan>) -> bool {
    use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
    use datafusion::physical_plan::filter::FilterExec;
    use datafusion::physical_plan::projection::ProjectionExec;
    use datafusion::physical_plan::repartition::RepartitionExec;
    let Some(write) = plan.downcast_ref::<ShuffleWriteExec>() else {
        return false;
    };
    if write.published_keys().is_none() {
        return false;
    }
    let mut node = Arc::clone(write.input());
    loop {
        if node.is::<AggregateExec>() {
            return true;
        }
        let passes = node.is::<FilterExec>()
            || node.is::<ProjectionExec>()
            || node.is::<CoalescePartitionsExec>()
            || node.is::<RepartitionExec>();
        let next = match node.children().as_slice() {
            [only] if passes => Arc::clone(only),
            _ => return false,
        };
        node = next;
    }
}

/// What the leaves of `plan` other than Parquet scans read: the sizes of
/// other files (CSV, JSON, ...), the memory of in-memory tables, nothing for
/// empty and one-row sources; `u64::MAX` for a source of unknown size, so a
/// query over it is never made one task.
fn other_source_bytes(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::datasource::physical_plan::FileScanConfig;
    use datafusion::datasource::source::DataSourceExec;
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
    let children = plan.children();
    if !children.is_empty() {
        return children
            .into_iter()
            .map(other_source_bytes)
            .fold(0, u64::saturating_add);
    }
    // File scans' parts are counted with their units (`scan_units`).
    if squall_core::scan::as_parquet_scan(plan).is_some()
        || squall_core::scan::as_text_scan(plan).is_some()
        || plan.is::<EmptyExec>()
        || plan.is::<PlaceholderRowExec>()
    {
        return 0;
    }
    let Some(source) = plan.downcast_ref::<DataSourceExec>() else {
        return u64::MAX;
    };
    if let Some(files) = source.data_source().downcast_ref::<FileScanConfig>() {
        return crate::split::listed_bytes(files);
    }
    if let Some(memory) = source.data_source().downcast_ref::<MemorySourceConfig>() {
        return memory
            .partitions()
            .iter()
            .flatten()
            .map(|b| b.get_array_memory_size() as u64)
            .sum();
    }
    u64::MAX
}

/// What planning needs of an engine, owned, so that it can run on the CPU executor.
pub(super) struct Planner {
    pub(super) runtime: Arc<RuntimeEnv>,
    pub(super) footers: Arc<FooterCache>,
    pub(super) partitions: Arc<PartitionRegistry>,
}

impl Planner {
    pub(super) async fn prepare(
        &self,
        state: SessionState,
        plan: &LogicalPlan,
        options: &RunOptions,
        query_id: &str,
    ) -> Result<(StagedPlan, QueryJob)> {
        let squall = SquallConfig::from_session(state.config());
        // A codec every task would refuse fails the query before any runs.
        squall.shuffle.compression.parse::<Compression>()?;
        // Embedded (no limit), a query runs as one task unless its key
        // filters cut an aggregation or its stages run once for copies that
        // would read a quarter of its bytes again (`reuse_saves_scans`):
        // plan it once, for the one task's partitions, and cut that plan
        // into stages only to look at them. Only a query that stays staged
        // is planned again, for the shuffle's partitions.
        let one_task_partitions = squall.resolved_single_task_partitions();
        if squall.resolved_single_task_bytes() == u64::MAX
            && one_task_partitions != squall.resolved_shuffle_partitions()
        {
            let (staged, one_task_state, physical) =
                Box::pin(stages_and_plan_at(state.clone(), plan, one_task_partitions)).await?;
            if uncut(&staged)
                || staged.stages.len() > 1
                    && !key_filters_cut_aggregation(&staged)
                    && !reuse_saves_scans(&staged)
            {
                let staged = single_stage(physical, "one process");
                return Box::pin(self.job(staged, one_task_state, true, None, options, query_id))
                    .await;
            }
        }
        // Boxed: DataFusion's planning futures are large, and this one's
        // state would otherwise hold two of them inline.
        let (mut staged, mut state, physical) = Box::pin(stages_and_plan(state, plan)).await?;
        if uncut(&staged) {
            return Box::pin(self.job(staged, state, true, None, options, query_id)).await;
        }

        // A query reading little runs as one task: its whole plan, planned
        // again for the one task's partitions when they differ from the
        // shuffle's. Without a limit (embedded) what it reads is not needed.
        let limit = squall.resolved_single_task_bytes();
        let mut units = None;
        let single = limit > 0
            && staged.stages.len() > 1
            && !key_filters_cut_aggregation(&staged)
            && !(limit == u64::MAX && reuse_saves_scans(&staged))
            && (limit == u64::MAX || {
                let staged_units = self.scan_units(&staged, &squall).await?;
                let read = staged_units
                    .iter()
                    .flatten()
                    .flat_map(|s| &s.units)
                    .map(|u| u.bytes)
                    .sum::<u64>()
                    .saturating_add(other_source_bytes(&physical));
                units = Some(staged_units);
                read <= limit
            });
        if single {
            let partitions = squall.resolved_single_task_partitions();
            let physical = if partitions == squall.resolved_shuffle_partitions() {
                physical
            } else {
                state.config_mut().options_mut().execution.target_partitions = partitions;
                Box::pin(state.create_physical_plan(plan))
                    .await
                    .map_err(|e| undecorrelated(e, plan))?
            };
            let reason = if limit == u64::MAX {
                "one process"
            } else {
                "small query"
            };
            staged = single_stage(physical, reason);
            units = None;
        }
        Box::pin(self.job(staged, state, single, units, options, query_id)).await
    }

    /// The job that runs `staged`: its scans split into tasks (`units`, the
    /// scans' row groups, when already listed), combine stages placed, its
    /// stage plans encoded. `single`: the whole query as one task.
    async fn job(
        &self,
        mut staged: StagedPlan,
        state: SessionState,
        single: bool,
        units: Option<Vec<Vec<ScanUnits>>>,
        options: &RunOptions,
        query_id: &str,
    ) -> Result<(StagedPlan, QueryJob)> {
        let squall = SquallConfig::from_session(state.config());
        let mut units = match units {
            Some(units) => units,
            None => self.scan_units(&staged, &squall).await?,
        };
        let spread = Spread {
            min_tasks: if squall.scan.min_tasks > 0 {
                squall.scan.min_tasks
            } else {
                squall.resolved_slots()
            },
            min_task_bytes: squall.scan.min_task_bytes,
        };
        let mut clustered = match single || !squall.scan.clustered_aggregation {
            true => HashMap::new(),
            false => {
                let (runtime, footers) = (&self.runtime, &self.footers);
                cluster(&mut staged, &mut units, &squall, spread, runtime, footers).await?
            }
        };
        let mut scan_tasks = Vec::with_capacity(staged.stages.len());
        let mut pruned = Vec::with_capacity(staged.stages.len());
        let mut partitions = Vec::with_capacity(staged.stages.len());
        let mut scan_bytes = Vec::with_capacity(staged.stages.len());
        for (stage, units) in staged.stages.iter().zip(&units) {
            scan_bytes.push(units.iter().flat_map(|s| &s.units).map(|u| u.bytes).sum());
            pruned.push(units.iter().map(|u| u.row_groups_pruned as u64).sum());
            partitions.push(PartitionCount::sum(units.iter().map(|u| u.partitions)));
            if units.is_empty() {
                scan_tasks.push(vec![]);
                continue;
            }
            let mut tasks = match clustered.remove(&stage.id) {
                Some(tasks) => tasks,
                None => assign_tasks(
                    units,
                    squall.scan.target_task_bytes,
                    spread,
                    !matches!(stage.layout, TaskLayout::Scan),
                ),
            };
            if single {
                // The one task's scans keep the partitions they were planned
                // with: its plan's operators were planned for them.
                let planned: Vec<usize> = leaves(&stage.plan)
                    .into_iter()
                    .filter_map(|leaf| match leaf {
                        Leaf::ParquetScan(scan) | Leaf::TextScan(scan) => Some(
                            ExecutionPlan::properties(scan)
                                .partitioning
                                .partition_count(),
                        ),
                        _ => None,
                    })
                    .collect();
                for task in &mut tasks {
                    for (scan, n) in task.iter_mut().zip(&planned) {
                        scan.partitions = *n;
                    }
                }
            }
            scan_tasks.push(tasks);
        }
        // Combine stages go where the scan tasks say an exchange is big.
        let counts: Vec<usize> = scan_tasks.iter().map(Vec::len).collect();
        for p in place_combine_stages(&mut staged, &counts, &squall)? {
            scan_tasks.insert(p.index, Vec::new());
            pruned.insert(p.index, 0);
            partitions.insert(p.index, PartitionCount::default());
            scan_bytes.insert(p.index, 0);
        }
        // What the workers will decode must be what was planned (plan_check).
        let stage_plans = encode_checked(&staged, &TaskContext::from(&state))?;
        let job = QueryJob {
            query_id: query_id.to_string(),
            staged: staged.clone(),
            stage_plans,
            scan_tasks,
            settings: changed_settings(state.config()),
            max_attempts: squall.task.max_attempts.max(1) as u32,
            silence_timeout: Duration::from_secs(squall.task.silence_timeout_secs.max(1)),
            row_groups_pruned: pruned,
            partitions,
            scan_bytes,
            cancel: options.cancel.clone(),
            progress: Arc::clone(&options.progress),
            filters: FilterShipping::from_options(&squall.bloom),
            faults: squall.fault.clone(),
            config: squall.clone(),
            planning_requests: Default::default(),
            handoff: Handoff::default(),
        };
        Ok((staged, job))
    }

    /// The parts every file scan of every stage reads, per stage: a
    /// Parquet scan's row groups, a text scan's files or chunks of them.
    async fn scan_units(
        &self,
        staged: &StagedPlan,
        squall: &SquallConfig,
    ) -> Result<Vec<Vec<ScanUnits>>> {
        let mut out = Vec::with_capacity(staged.stages.len());
        for stage in &staged.stages {
            let mut units = Vec::new();
            for leaf in leaves(&stage.plan) {
                match leaf {
                    Leaf::ParquetScan(scan) => units.push(
                        scan_units(
                            scan,
                            &self.runtime,
                            &self.footers,
                            &self.partitions,
                            squall.scan.prune_row_groups,
                        )
                        .await?,
                    ),
                    Leaf::TextScan(scan) => units.push(text_units(
                        scan,
                        squall_core::text_files::text_splits(scan).unwrap_or(false),
                        text_chunk_bytes(squall.scan.target_task_bytes),
                        &self.partitions,
                    )?),
                    Leaf::ShuffleRead(_) | Leaf::Other(_) => {}
                }
            }
            out.push(units);
        }
        Ok(out)
    }
}
