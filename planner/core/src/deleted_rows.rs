//! Rows of a Parquet file deleted without rewriting it (a Delta deletion
//! vector, Iceberg position deletes): as a scan task carries them, per row
//! group, and as the Parquet reader skips them.
//!
//! The coordinator reads the deletions once, when it plans the scan, and
//! gives each task the deleted positions of the row groups it reads, so a
//! task makes no request for them: a RoaringBitmap of positions within the
//! row group (a run of deleted rows costs a few bytes, a scattered tenth of
//! a million-row group about 128 KiB), base64 in the task's JSON.

use base64::Engine as _;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SquallError};

/// The deleted rows of one row group.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeletedRows {
    pub row_group: usize,
    /// The row group's rows, deleted or not.
    pub rows: u64,
    /// The deleted rows' positions within the row group: a RoaringBitmap in
    /// its portable serialization, base64.
    pub positions: String,
}

impl DeletedRows {
    /// `deleted` (positions within a row group of `rows` rows) as a task
    /// carries them.
    pub fn new(row_group: usize, rows: u64, deleted: &RoaringBitmap) -> Result<Self> {
        let mut bytes = Vec::with_capacity(deleted.serialized_size());
        deleted
            .serialize_into(&mut bytes)
            .map_err(|e| SquallError::BadTaskPayload(format!("deleted rows not encoded: {e}")))?;
        Ok(Self {
            row_group,
            rows,
            positions: base64::engine::general_purpose::STANDARD.encode(bytes),
        })
    }

    /// The deleted positions; an error names what is wrong with them.
    pub fn positions(&self) -> std::result::Result<RoaringBitmap, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.positions)
            .map_err(|e| format!("deleted rows of row group {}: {e}", self.row_group))?;
        let bitmap = RoaringBitmap::deserialize_from(bytes.as_slice())
            .map_err(|e| format!("deleted rows of row group {}: {e}", self.row_group))?;
        match bitmap.max() {
            Some(last) if u64::from(last) >= self.rows => Err(format!(
                "row {last} of row group {} deleted, which has {} rows",
                self.row_group, self.rows
            )),
            _ => Ok(bitmap),
        }
    }

    /// The rows the reader keeps: every row of the group but the deleted.
    pub fn selection(&self) -> std::result::Result<RowSelection, String> {
        Ok(selection(&self.positions()?, self.rows))
    }
}

/// The rows of a group of `rows` rows a reader keeps when `deleted` (each
/// below `rows`) are gone: alternate runs of rows read and skipped.
pub fn selection(deleted: &RoaringBitmap, rows: u64) -> RowSelection {
    let mut selectors = Vec::new();
    let mut at = 0u64;
    let mut run_start: Option<u64> = None;
    let mut run_end = 0u64;
    fn flush(start: u64, end: u64, at: &mut u64, selectors: &mut Vec<RowSelector>) {
        if start > *at {
            selectors.push(RowSelector::select((start - *at) as usize));
        }
        selectors.push(RowSelector::skip((end - start) as usize));
        *at = end;
    }
    for position in deleted.iter().map(u64::from).take_while(|&p| p < rows) {
        match run_start {
            Some(_) if position == run_end => run_end += 1,
            Some(start) => {
                flush(start, run_end, &mut at, &mut selectors);
                run_start = Some(position);
                run_end = position + 1;
            }
            None => {
                run_start = Some(position);
                run_end = position + 1;
            }
        }
    }
    if let Some(start) = run_start {
        flush(start, run_end, &mut at, &mut selectors);
    }
    if rows > at {
        selectors.push(RowSelector::select((rows - at) as usize));
    }
    RowSelection::from(selectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(deleted: &[u32], rows: u64) -> Vec<(bool, usize)> {
        let bitmap: RoaringBitmap = deleted.iter().copied().collect();
        selection(&bitmap, rows)
            .iter()
            .map(|s| (s.skip, s.row_count))
            .collect()
    }

    #[test]
    fn runs_of_deleted_rows_become_skips() {
        assert_eq!(kept(&[], 5), vec![(false, 5)]);
        assert_eq!(kept(&[0, 1], 5), vec![(true, 2), (false, 3)]);
        assert_eq!(kept(&[4], 5), vec![(false, 4), (true, 1)]);
        assert_eq!(
            kept(&[1, 2, 5, 7, 8], 10),
            vec![
                (false, 1),
                (true, 2),
                (false, 2),
                (true, 1),
                (false, 1),
                (true, 2),
                (false, 1)
            ]
        );
        assert_eq!(kept(&[0, 1, 2], 3), vec![(true, 3)]);
    }

    #[test]
    fn a_task_carries_them_and_refuses_positions_past_the_group() {
        let bitmap: RoaringBitmap = [3u32, 4, 900].into_iter().collect();
        let rows = DeletedRows::new(2, 1000, &bitmap).unwrap();
        let json = serde_json::to_string(&rows).unwrap();
        let back: DeletedRows = serde_json::from_str(&json).unwrap();
        assert_eq!(back.positions().unwrap(), bitmap);
        assert_eq!(back.selection().unwrap().row_count(), 997);
        let short = DeletedRows {
            rows: 900,
            ..back.clone()
        };
        assert!(
            short
                .positions()
                .unwrap_err()
                .contains("row 900 of row group 2")
        );
        let garbled = DeletedRows {
            positions: "AAAA".into(),
            ..back
        };
        assert!(garbled.positions().is_err());
    }
}
