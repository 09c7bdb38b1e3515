//! The compression of CSV and JSON scans in a decoded stage plan.
//! DataFusion's plan encoding leaves it out (a decoded CSV or JSON scan
//! reads its files as uncompressed), so a task reading `part-0.csv.gz`
//! would parse gzip bytes as text. The catalog tells a text table's
//! compression by its files' names (`.gz`, `.bz2`, `.xz`, `.zst` last), so
//! the decoded scan is given it back from the same names.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;

/// The compression a text file named `name` is read with.
pub fn compression_of(name: &str) -> FileCompressionType {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".gz") {
        FileCompressionType::GZIP
    } else if lower.ends_with(".bz2") {
        FileCompressionType::BZIP2
    } else if lower.ends_with(".xz") {
        FileCompressionType::XZ
    } else if lower.ends_with(".zst") {
        FileCompressionType::ZSTD
    } else {
        FileCompressionType::UNCOMPRESSED
    }
}

/// `plan` with each CSV and JSON scan reading its files with the
/// compression their names give. The files of one scan are compressed
/// alike (the catalog refuses a table that mixes them); a scan that does
/// mix them fails naming two of its files.
pub fn restore(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(exec) = node.downcast_ref::<DataSourceExec>() else {
            return Ok(Transformed::no(node));
        };
        let Some(config) = exec.data_source().downcast_ref::<FileScanConfig>() else {
            return Ok(Transformed::no(node));
        };
        if !matches!(config.file_source().file_type(), "csv" | "json") {
            return Ok(Transformed::no(node));
        }
        let mut files = config.file_groups.iter().flat_map(|g| g.files());
        let Some(first) = files.next() else {
            return Ok(Transformed::no(node));
        };
        let compression = compression_of(first.object_meta.location.as_ref());
        if let Some(other) =
            files.find(|f| compression_of(f.object_meta.location.as_ref()) != compression)
        {
            return Err(DataFusionError::Plan(format!(
                "a scan reads files compressed differently: {} and {}",
                first.object_meta.location, other.object_meta.location
            )));
        }
        if compression == config.file_compression_type {
            return Ok(Transformed::no(node));
        }
        let config = FileScanConfigBuilder::from(config.clone())
            .with_file_compression_type(compression)
            .build();
        Ok(Transformed::yes(DataSourceExec::from_data_source(config)))
    })
    .map(|t| t.data)
}
