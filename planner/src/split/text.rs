//! The parts of a scan of text files (CSV, JSON) tasks are dealt: whole
//! files, or chunks of a file read as byte ranges.

use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;

use super::{RowGroupUnit, ScanUnits, listed_once, partitions_read};
use crate::error::PlannerError;
use crate::partitions::{PartitionRegistry, value_text};

/// The bytes of the chunks a text file read as byte ranges is dealt in,
/// for scan tasks of `target_task_bytes`: a quarter of a task, so that
/// tasks come out even, and at least 64 KiB (each range's reader reads
/// past its end to the next line break, and a task's consecutive chunks
/// are one range).
pub fn text_chunk_bytes(target_task_bytes: usize) -> u64 {
    (target_task_bytes as u64 / 4).max(64 * 1024)
}

/// The parts of a scan of text files (CSV, JSON) tasks are dealt: each
/// file whole, or where `splits` (its files may be read as byte ranges)
/// chunks of `chunk_bytes`, each counted by its bytes. Nothing is read:
/// the files' sizes are listed.
pub fn text_units(
    scan: &DataSourceExec,
    splits: bool,
    chunk_bytes: u64,
    registry: &PartitionRegistry,
) -> Result<ScanUnits> {
    let config = scan
        .data_source()
        .downcast_ref::<FileScanConfig>()
        .ok_or_else(|| PlannerError::Internal("not a file scan".into()))?;
    let files = listed_once(config);
    let mut out = ScanUnits {
        partitions: partitions_read(config, &files, registry),
        ..ScanUnits::default()
    };
    let chunk_bytes = chunk_bytes.max(1);
    for file in files {
        let size = file.object_meta.size;
        let chunks = match splits && size > chunk_bytes {
            true => size.div_ceil(chunk_bytes) as usize,
            false => 1,
        };
        let partition_values = file
            .partition_values
            .iter()
            .map(value_text)
            .collect::<Result<Vec<_>>>()?;
        out.row_groups_total += chunks;
        for chunk in 0..chunks {
            let start = chunk as u64 * chunk_bytes;
            out.units.push(RowGroupUnit {
                path: file.object_meta.location.to_string(),
                file_size: size,
                last_modified_ns: file
                    .object_meta
                    .last_modified
                    .timestamp_nanos_opt()
                    .unwrap_or(0),
                row_group_count: chunks,
                row_group: chunk,
                bytes: match chunks {
                    1 => size,
                    _ => (size - start).min(chunk_bytes),
                },
                rows: 0,
                partition_values: partition_values.clone(),
                deleted: None,
                chunk_bytes: if chunks > 1 { chunk_bytes } else { 0 },
            });
        }
    }
    Ok(out)
}
