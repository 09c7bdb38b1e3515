//! Planning a statement into a coordinator's job: the physical plan cut
//! into stages with key filters placed, its scans split into tasks.

use super::*;

/// Plan a logical plan with DataFusion and cut it into stages; returns
/// them with the state they were planned in.
pub(super) async fn stages(
    mut state: SessionState,
    plan: &LogicalPlan,
) -> Result<(StagedPlan, SessionState)> {
    let squall = SquallConfig::from_session(state.config());
    let partitions = squall.resolved_shuffle_partitions();
    state.config_mut().options_mut().execution.target_partitions = partitions;
    let physical = state.create_physical_plan(plan).await?;
    let mut staged = split_stages(physical, partitions)?;
    place_key_filters(&mut staged, &squall.bloom)?;
    Ok((staged, state))
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
        let (mut staged, state) = stages(state, plan).await?;
        let squall = SquallConfig::from_session(state.config());

        let runtime = Arc::clone(&self.runtime);
        let min_tasks = if squall.scan.min_tasks > 0 {
            squall.scan.min_tasks
        } else {
            squall.resolved_slots()
        };
        let mut scan_tasks = Vec::with_capacity(staged.stages.len());
        let mut pruned = Vec::with_capacity(staged.stages.len());
        let mut partitions = Vec::with_capacity(staged.stages.len());
        for stage in &staged.stages {
            let mut units = Vec::new();
            for leaf in leaves(&stage.plan) {
                if let Leaf::ParquetScan(scan) = leaf {
                    units.push(
                        scan_units(
                            scan,
                            &runtime,
                            &self.footers,
                            &self.partitions,
                            squall.scan.prune_row_groups,
                        )
                        .await?,
                    );
                }
            }
            pruned.push(units.iter().map(|u| u.row_groups_pruned as u64).sum());
            partitions.push(PartitionCount::sum(units.iter().map(|u| u.partitions)));
            if units.is_empty() {
                scan_tasks.push(vec![]);
            } else {
                let single = !matches!(stage.layout, TaskLayout::Scan);
                scan_tasks.push(assign_tasks(
                    &units,
                    squall.scan.target_task_bytes,
                    min_tasks,
                    single,
                ));
            }
        }
        // Combine stages go where the scan tasks say an exchange is big.
        let counts: Vec<usize> = scan_tasks.iter().map(Vec::len).collect();
        for p in place_combine_stages(&mut staged, &counts, &squall)? {
            scan_tasks.insert(p.index, Vec::new());
            pruned.insert(p.index, 0);
            partitions.insert(p.index, PartitionCount::default());
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
}
