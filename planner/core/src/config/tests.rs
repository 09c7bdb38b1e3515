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
