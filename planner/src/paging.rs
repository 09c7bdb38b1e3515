//! Cutting a result into pages bounded by rows and by bytes: the pages the
//! HTTP API serves, cut in memory by the embedded service and ahead of time
//! by the coordinator function, which stores them for the API to read one at
//! a time.
//!
//! A page holds at most [`PageLimits::rows`] rows and, once it has a row,
//! stops growing when its in-memory size reaches [`PageLimits::bytes`] (the
//! JSON a page becomes is of the same order). A row is never split, so a
//! single huge row still makes a page of its own. Pages are zero-copy slices
//! where they fall inside one batch and concatenated where they span
//! batches. An empty result is one empty page, so a client always sees the
//! columns.

use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;

/// Bounds of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    pub rows: usize,
    pub bytes: usize,
}

impl Default for PageLimits {
    /// 1,000 rows or about 1 MiB, whichever comes first.
    fn default() -> Self {
        Self {
            rows: 1_000,
            bytes: 1 << 20,
        }
    }
}

/// Cuts `batches` into pages (at least one).
pub fn paginate(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    limits: PageLimits,
) -> Result<Vec<RecordBatch>, ArrowError> {
    let max_rows = limits.rows.max(1);
    let mut pages = Vec::new();
    let mut current: Vec<RecordBatch> = Vec::new();
    let (mut rows, mut bytes) = (0usize, 0usize);
    for batch in batches {
        let n = batch.num_rows();
        if n == 0 {
            continue;
        }
        let row_bytes = (batch.get_array_memory_size() / n).max(1);
        let mut offset = 0;
        while offset < n {
            let room_rows = max_rows - rows;
            let room_bytes = limits.bytes.saturating_sub(bytes) / row_bytes;
            // A page always takes at least one row.
            let take = room_rows
                .min(room_bytes.max(usize::from(rows == 0)))
                .min(n - offset);
            if take > 0 {
                current.push(batch.slice(offset, take));
                offset += take;
                rows += take;
                bytes += take * row_bytes;
            }
            if rows >= max_rows || take == 0 || bytes >= limits.bytes {
                pages.push(merge(schema, &current)?);
                current.clear();
                rows = 0;
                bytes = 0;
            }
        }
    }
    if !current.is_empty() || pages.is_empty() {
        pages.push(merge(schema, &current)?);
    }
    Ok(pages)
}

fn merge(schema: &SchemaRef, parts: &[RecordBatch]) -> Result<RecordBatch, ArrowError> {
    match parts {
        [] => Ok(RecordBatch::new_empty(schema.clone())),
        [one] => Ok(one.clone()),
        many => concat_batches(schema, many),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(schema: &SchemaRef, from: i64, n: usize) -> RecordBatch {
        let ids: Vec<i64> = (from..from + n as i64).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("row-{i}")).collect();
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]))
    }

    fn ids(pages: &[RecordBatch]) -> Vec<i64> {
        pages
            .iter()
            .flat_map(|p| {
                let a = p.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    }

    #[test]
    fn pages_by_rows_across_batches() {
        let s = schema();
        let batches = vec![batch(&s, 0, 250), batch(&s, 250, 0), batch(&s, 250, 900)];
        let limits = PageLimits {
            rows: 400,
            bytes: usize::MAX,
        };
        let pages = paginate(&s, &batches, limits).unwrap();
        let sizes: Vec<usize> = pages.iter().map(|p| p.num_rows()).collect();
        assert_eq!(sizes, vec![400, 400, 350]);
        assert_eq!(ids(&pages), (0..1150).collect::<Vec<_>>());
    }

    #[test]
    fn pages_by_bytes_and_never_empty() {
        let s = schema();
        let batches = vec![batch(&s, 0, 1000)];
        let pages = paginate(
            &s,
            &batches,
            PageLimits {
                rows: 1000,
                bytes: 1,
            },
        )
        .unwrap();
        assert_eq!(
            pages.len(),
            1000,
            "one row per page when a row exceeds the byte bound"
        );
        assert_eq!(ids(&pages), (0..1000).collect::<Vec<_>>());

        let empty = paginate(&s, &[], PageLimits::default()).unwrap();
        assert_eq!(empty.len(), 1);
        assert_eq!(empty[0].num_rows(), 0);
        assert_eq!(empty[0].schema(), s);
    }
}
