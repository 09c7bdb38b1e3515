//! Tests of the `squall.*` settings: nested keys, environment names.

use datafusion::common::config::ExtensionOptions;

use super::*;

#[test]
fn nested_keys_set_and_list() {
    let mut c = SquallConfig::default();
    ExtensionOptions::set(&mut c, "scan.target_task_bytes", "1000").unwrap();
    ExtensionOptions::set(&mut c, "fault.task_crash_rate", "0.25").unwrap();
    assert_eq!(c.scan.target_task_bytes, 1000);
    assert_eq!(c.fault.task_crash_rate, 0.25);
    let keys: Vec<String> = c.entries().into_iter().map(|e| e.key).collect();
    assert!(
        keys.iter().any(|k| k.ends_with("scan.target_task_bytes")),
        "{keys:?}"
    );
    assert!(ExtensionOptions::set(&mut c, "scan.nope", "1").is_err());
}

#[test]
fn env_names() {
    assert_eq!(
        env_var_name("squall.scan.min_tasks"),
        "SQUALL_SCAN_MIN_TASKS"
    );
    assert_eq!(env_var_name("worker_slots"), "SQUALL_WORKER_SLOTS");
}

#[test]
fn the_coalescers_budget_resolves_by_backend_and_worker_memory() {
    let mut c = SquallConfig::default();
    assert_eq!(c.resolved_coalesce_bytes(), EMBEDDED_COALESCE_BYTES);
    ExtensionOptions::set(&mut c, "backend", "aws").unwrap();
    ExtensionOptions::set(&mut c, "worker_memory_mb", "1769").unwrap();
    assert_eq!(c.resolved_coalesce_bytes(), AWS_COALESCE_BYTES);
    // A small worker keeps three quarters of its memory for the rest.
    ExtensionOptions::set(&mut c, "worker_memory_mb", "512").unwrap();
    assert_eq!(c.resolved_coalesce_bytes(), 128 * 1024 * 1024);
    // Set, it is what it says on either backend (0: no bound).
    ExtensionOptions::set(&mut c, "shuffle.coalesce_bytes", "0").unwrap();
    assert_eq!(c.resolved_coalesce_bytes(), 0);
    ExtensionOptions::set(&mut c, "backend", "local").unwrap();
    ExtensionOptions::set(&mut c, "shuffle.coalesce_bytes", "1000").unwrap();
    assert_eq!(c.resolved_coalesce_bytes(), 1000);
}
