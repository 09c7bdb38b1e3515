//! The settings a query's tasks run with: the session's settings that differ
//! from the defaults (DataFusion's and squall's), sent in every task payload
//! so each worker builds the same session the coordinator planned with.

use std::collections::BTreeMap;

/// Settings of a session that differ from the defaults, to send to tasks.
pub fn changed_settings(config: &datafusion::prelude::SessionConfig) -> Vec<(String, String)> {
    use datafusion::common::config::ExtensionOptions;
    use squall_core::config::SquallConfig;
    let datafusion_defaults: BTreeMap<String, Option<String>> =
        datafusion::prelude::SessionConfig::new()
            .options()
            .entries()
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect();
    let mut out: Vec<(String, String)> = config
        .options()
        .entries()
        .into_iter()
        .filter(|e| e.key.starts_with("datafusion."))
        .filter(|e| datafusion_defaults.get(&e.key) != Some(&e.value))
        .filter_map(|e| e.value.map(|v| (e.key, v)))
        .collect();
    let squall_defaults: BTreeMap<String, Option<String>> = SquallConfig::default()
        .entries()
        .into_iter()
        .map(|e| (e.key, e.value))
        .collect();
    for e in SquallConfig::from_session(config).entries() {
        if squall_defaults.get(&e.key) != Some(&e.value)
            && let Some(v) = e.value
        {
            out.push((format!("squall.{}", e.key.trim_start_matches("squall.")), v));
        }
    }
    out
}
