//! Trino's own session properties, as Trino clients send them
//! (`X-Trino-Session`, `SET SESSION`, a dbt profile's or a BI tool's
//! `session_properties`): those with a squall counterpart are read as it,
//! and the knobs of Trino's optimizer, scheduler and connectors, which have
//! no meaning here, are accepted and left out, where they failed every
//! statement ("could not find config namespace for key
//! query_max_run_time"). A name that is neither squall's, DataFusion's nor
//! Trino's is still refused.
//!
//! | Trino | squall |
//! |---|---|
//! | `query_max_run_time`, `query_max_execution_time` (`1h`, `30m`, `90s`) | `squall.query.timeout_secs` (whole seconds, rounded up) |
//! | `query_max_memory`, `query_max_memory_per_node`, `query_max_total_memory`, `query_max_total_memory_per_node` (`1GB`, `512MB`) | `squall.query.memory_limit_bytes` |
//! | `max_recursion_depth` | `squall.query.max_recursion_depth` |

use datafusion::error::{DataFusionError, Result};

/// Trino's system session properties squall accepts and leaves out.
const WITHOUT_MEANING: &[&str] = &[
    "join_distribution_type",
    "join_max_broadcast_table_size",
    "join_reordering_strategy",
    "max_reordered_joins",
    "enable_dynamic_filtering",
    "optimize_hash_generation",
    "task_concurrency",
    "task_writer_count",
    "task_scale_writers_enabled",
    "redistribute_writes",
    "scale_writers",
    "hash_partition_count",
    "query_priority",
    "resource_overcommit",
    "spill_enabled",
    "distributed_sort",
    "use_preferred_write_partitioning",
    "dictionary_aggregation",
    "push_aggregation_through_outer_join",
    "push_partial_aggregation_through_join",
    "optimize_metadata_queries",
    "prefer_partial_aggregation",
    "optimize_top_n_ranking",
    "use_mark_distinct",
    "required_workers_count",
    "required_workers_max_wait_time",
    "exchange_compression",
    "exchange_compression_codec",
    "retry_policy",
    "query_retry_attempts",
    "task_retry_attempts_per_task",
    "enable_intermediate_aggregations",
    "collect_plan_statistics_for_all_queries",
    "ignore_stats_calculator_failures",
    "late_materialization",
    "omit_datetime_type_precision",
    "legacy_timestamp",
    "parse_decimal_literals_as_double",
    "query_max_cpu_time",
    "query_max_scan_physical_bytes",
    "query_max_stage_count",
    "max_drivers_per_task",
    "mark_distinct_strategy",
    "pushdown_subfields_enabled",
];

/// How `name = value` of a session applies: `Some((key, value))`, a
/// setting of squall's or DataFusion's, or `None`, a Trino property
/// without meaning here. An unknown name without a namespace is refused.
pub fn as_setting(name: &str, value: &str) -> Result<Option<(String, String)>> {
    let key = name.trim().to_ascii_lowercase();
    let value = value.trim().trim_matches('\'');
    if key.starts_with("squall.") || key.starts_with("datafusion.") {
        return Ok(Some((name.to_string(), value.to_string())));
    }
    let mapped = |to: &str, v: String| Ok(Some((to.to_string(), v)));
    match key.as_str() {
        "query_max_run_time" | "query_max_execution_time" => {
            let secs = duration_secs(value)
                .ok_or_else(|| refused(name, value, "a duration such as 30m"))?;
            mapped("squall.query.timeout_secs", secs.to_string())
        }
        "query_max_memory"
        | "query_max_memory_per_node"
        | "query_max_total_memory"
        | "query_max_total_memory_per_node" => {
            let bytes =
                data_size(value).ok_or_else(|| refused(name, value, "a size such as 1GB"))?;
            mapped("squall.query.memory_limit_bytes", bytes.to_string())
        }
        "max_recursion_depth" => mapped("squall.query.max_recursion_depth", value.to_string()),
        k if WITHOUT_MEANING.contains(&k)
            || k.starts_with("fault_tolerant_execution_")
            || k.starts_with("dynamic_filtering_")
            // A catalog's property (`hive.parquet_use_column_names`).
            || k.contains('.') =>
        {
            tracing::debug!(
                property = name,
                "a Trino session property without meaning in squall: left out"
            );
            Ok(None)
        }
        _ => Err(DataFusionError::Configuration(format!(
            "unknown session property {name}: squall reads its own (squall.*, see `squall config`), \
             DataFusion's (datafusion.*) and Trino's limits (query_max_run_time, \
             query_max_memory, max_recursion_depth)"
        ))),
    }
}

fn refused(name: &str, value: &str, expected: &str) -> DataFusionError {
    DataFusionError::Configuration(format!(
        "session property {name} = {value:?}: not {expected}"
    ))
}

/// Whole seconds (rounded up) of Trino's duration text: a number and a
/// unit, `ns`, `us`, `ms`, `s`, `m`, `h` or `d`.
fn duration_secs(text: &str) -> Option<u64> {
    let (number, unit) = split_unit(text)?;
    let per: f64 = match unit {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    };
    let secs = (number * per).ceil();
    (secs.is_finite() && secs >= 0.0).then_some(secs as u64)
}

/// Bytes of Trino's data size text: a number and `B`, `kB`, `MB`, `GB`,
/// `TB` or `PB` (powers of 1,024, as Trino counts them).
fn data_size(text: &str) -> Option<u64> {
    let (number, unit) = split_unit(text)?;
    let power = match unit.to_ascii_uppercase().as_str() {
        "B" => 0,
        "KB" => 1,
        "MB" => 2,
        "GB" => 3,
        "TB" => 4,
        "PB" => 5,
        _ => return None,
    };
    let bytes = (number * 1024_f64.powi(power)).ceil();
    (bytes.is_finite() && bytes >= 0.0).then_some(bytes as u64)
}

fn split_unit(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let at = text.find(|c: char| c.is_ascii_alphabetic())?;
    let number = text[..at].trim().parse().ok()?;
    Some((number, text[at..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trino_properties_map_to_squall_limits_or_are_left_out() {
        let set = |k: &str, v: &str| as_setting(k, v).unwrap();
        assert_eq!(
            set("query_max_run_time", "1h"),
            Some(("squall.query.timeout_secs".into(), "3600".into()))
        );
        assert_eq!(
            set("query_max_execution_time", "'2.5s'"),
            Some(("squall.query.timeout_secs".into(), "3".into()))
        );
        assert_eq!(
            set("query_max_memory", "1GB"),
            Some((
                "squall.query.memory_limit_bytes".into(),
                "1073741824".into()
            ))
        );
        assert_eq!(
            set("max_recursion_depth", "20"),
            Some(("squall.query.max_recursion_depth".into(), "20".into()))
        );
        assert_eq!(
            set("squall.shuffle.partitions", "8"),
            Some(("squall.shuffle.partitions".into(), "8".into()))
        );
        assert_eq!(set("join_distribution_type", "BROADCAST"), None);
        assert_eq!(set("hive.parquet_use_column_names", "true"), None);
        for (k, v, says) in [
            ("query_max_run_time", "soon", "a duration"),
            ("query_max_memory", "12 apples", "a size"),
            (
                "no_such_property",
                "1",
                "unknown session property no_such_property",
            ),
        ] {
            let e = as_setting(k, v).unwrap_err().to_string();
            assert!(e.contains(says), "{k}: {e}");
        }
    }
}
