//! Summing what a task's operators measured into its [`TaskMetrics`].

use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricValue;

use crate::task::TaskMetrics;

/// Sum what the plan's operators measured.
pub(super) fn collect_metrics(root: &dyn ExecutionPlan) -> TaskMetrics {
    let mut m = TaskMetrics::default();
    let mut compute_ns = 0u64;
    let mut stack: Vec<&dyn ExecutionPlan> = vec![root];
    while let Some(node) = stack.pop() {
        if let Some(set) = node.metrics() {
            for metric in set.iter() {
                let v = metric.value();
                match (node.name(), v) {
                    ("ShuffleReadExec", MetricValue::Count { name, count }) => {
                        match name.as_ref() {
                            "get_requests" => m.get_requests += count.value() as u64,
                            "bytes_fetched" => m.bytes_in_exchange += count.value() as u64,
                            _ => {}
                        }
                    }
                    ("ShuffleReadExec", MetricValue::OutputRows(c)) => {
                        m.rows_in_exchange += c.value() as u64
                    }
                    ("ShuffleWriteExec", MetricValue::Count { name, count }) => {
                        match name.as_ref() {
                            "put_requests" => m.put_requests += count.value() as u64,
                            "spills" => m.spills += count.value() as u64,
                            "spill_bytes" => m.spill_bytes += count.value() as u64,
                            _ => {}
                        }
                    }
                    ("DataSourceExec", MetricValue::Count { name, count })
                        if name.as_ref() == "bytes_scanned" =>
                    {
                        m.scan_bytes += count.value() as u64
                    }
                    ("DataSourceExec", MetricValue::Time { name, time })
                        if name.as_ref() == "time_elapsed_scanning_total" =>
                    {
                        m.scan_ms += (time.value() / 1_000_000) as u64
                    }
                    (
                        "DataSourceExec",
                        MetricValue::PruningMetrics {
                            name,
                            pruning_metrics,
                        },
                    ) if name.as_ref() == "row_groups_pruned_statistics" => {
                        m.row_groups_pruned += pruning_metrics.pruned() as u64
                    }
                    ("KeyFilterExec", MetricValue::Count { name, count }) => match name.as_ref() {
                        "rows_dropped" => m.bloom_rows_dropped += count.value() as u64,
                        "rows_checked" => m.bloom_rows_checked += count.value() as u64,
                        _ => {}
                    },
                    (_, MetricValue::ElapsedCompute(time)) => compute_ns += time.value() as u64,
                    _ => {}
                }
            }
        }
        stack.extend(node.children().into_iter().map(|c| c.as_ref()));
    }
    // CPU time as the operators measure it (their `elapsed_compute`), plus
    // the time the scans spent decoding; waits on I/O are not included.
    m.cpu_ms = compute_ns / 1_000_000;
    m
}
