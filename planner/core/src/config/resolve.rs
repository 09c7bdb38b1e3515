//! How `squall.*` settings are read (the environment, a session) and how
//! the ones whose default depends on the backend or the machine resolve
//! (`0` or unset: cores, slots, the backend's thresholds).

use datafusion::common::config::ExtensionOptions;
use datafusion::prelude::SessionConfig;

use super::{
    AWS_COALESCE_BYTES, AWS_SINGLE_TASK_BYTES, EMBEDDED_COALESCE_BYTES, EMBEDDED_MAX_BUILD_ROWS,
    SquallConfig,
};

impl SquallConfig {
    /// The defaults overridden by `SQUALL_*` environment variables.
    pub fn from_env() -> datafusion::error::Result<Self> {
        let mut config = Self::default();
        for entry in config.entries() {
            let var = env_var_name(&entry.key);
            if let Ok(value) = std::env::var(&var) {
                ExtensionOptions::set(&mut config, strip_prefix(&entry.key), &value).map_err(
                    |e| datafusion::error::DataFusionError::Configuration(format!("{var}: {e}")),
                )?;
            }
        }
        Ok(config)
    }

    /// The config attached to a session, or the defaults.
    pub fn from_session(config: &SessionConfig) -> Self {
        config
            .options()
            .extensions
            .get::<SquallConfig>()
            .cloned()
            .unwrap_or_default()
    }

    /// Number of worker slots, resolving 0 to the available cores.
    pub fn resolved_slots(&self) -> usize {
        if self.worker_slots > 0 {
            self.worker_slots
        } else {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }
    }

    /// Cores one task can use: a Lambda worker's vCPUs follow its memory
    /// (a full vCPU per 1,769 MB, AWS's documented ratio, so 3,008 MB has
    /// two), an embedded task may use every worker slot.
    pub fn worker_cores(&self) -> usize {
        if self.backend == "aws" {
            (self.worker_memory_mb as usize).div_ceil(1769).max(1)
        } else {
            self.resolved_slots()
        }
    }

    /// Largest estimated build side that publishes a key filter
    /// (`squall.bloom.max_build_rows`, resolved for the backend).
    pub fn resolved_max_build_rows(&self) -> usize {
        match self.bloom.max_build_rows {
            Some(rows) => rows,
            None if self.backend == "aws" => usize::MAX,
            None => EMBEDDED_MAX_BUILD_ROWS,
        }
    }

    /// Memory of a map task's batch coalescers together
    /// (`squall.shuffle.coalesce_bytes`, resolved for the backend).
    pub fn resolved_coalesce_bytes(&self) -> usize {
        match self.shuffle.coalesce_bytes {
            Some(bytes) => bytes,
            None if self.backend == "aws" => {
                AWS_COALESCE_BYTES.min((self.worker_memory_mb as usize * 1024 * 1024 / 4).max(1))
            }
            None => EMBEDDED_COALESCE_BYTES,
        }
    }

    /// Bytes a query's scans may read for it to run as one task
    /// (`squall.query.single_task_bytes`, resolved for the backend).
    pub fn resolved_single_task_bytes(&self) -> u64 {
        match self.query.single_task_bytes {
            Some(bytes) => bytes as u64,
            None if self.backend == "aws" => AWS_SINGLE_TASK_BYTES as u64,
            None => u64::MAX,
        }
    }

    /// Partitions of a one-task query's plan, resolving 0 to two per core.
    pub fn resolved_single_task_partitions(&self) -> usize {
        match self.query.single_task_partitions {
            0 => self.worker_cores() * 2,
            n => n,
        }
    }

    /// Partitions a scan task reads with, resolving 0 to the cores this
    /// process gives a task: the slots embedded, the machine's cores in a
    /// worker function (a Lambda's vCPUs).
    pub fn resolved_task_partitions(&self) -> usize {
        match self.scan.task_partitions {
            0 if self.backend == "aws" => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            0 => self.resolved_slots(),
            n => n,
        }
    }

    /// Hash partitions per exchange, resolving 0 to the slot count (at least 2,
    /// so the planner always cuts at exchanges).
    pub fn resolved_shuffle_partitions(&self) -> usize {
        if self.shuffle.partitions > 0 {
            self.shuffle.partitions
        } else {
            self.resolved_slots().max(2)
        }
    }
}

/// `squall.scan.min_tasks` -> `SQUALL_SCAN_MIN_TASKS`.
pub fn env_var_name(key: &str) -> String {
    let key = strip_prefix(key);
    format!("SQUALL_{}", key.replace('.', "_").to_ascii_uppercase())
}

fn strip_prefix(key: &str) -> &str {
    key.strip_prefix("squall.").unwrap_or(key)
}
