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
use futures::StreamExt;
use futures::stream::BoxStream;

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
    let mut pager = Paginator::new(schema, limits);
    let mut pages = Vec::new();
    for batch in batches {
        pages.extend(pager.push(batch)?);
    }
    pages.extend(pager.finish()?);
    Ok(pages)
}

/// Cuts a stream of batches into a stream of pages (at least one), holding
/// no more than one page and the batch being cut.
pub fn paginate_stream(
    schema: &SchemaRef,
    batches: BoxStream<'static, datafusion::error::Result<RecordBatch>>,
    limits: PageLimits,
) -> BoxStream<'static, datafusion::error::Result<RecordBatch>> {
    let pager = Some(Paginator::new(schema, limits));
    futures::stream::unfold((batches, pager), |(mut batches, mut pager)| async move {
        let p = pager.as_mut()?;
        let step = match batches.next().await {
            Some(Ok(batch)) => p.push(&batch).map_err(Into::into),
            Some(Err(e)) => Err(e),
            None => pager
                .take()?
                .finish()
                .map(|last| last.into_iter().collect())
                .map_err(Into::into),
        };
        let items: Vec<datafusion::error::Result<RecordBatch>> = match step {
            Ok(pages) => pages.into_iter().map(Ok).collect(),
            Err(e) => {
                pager = None;
                vec![Err(e)]
            }
        };
        Some((futures::stream::iter(items), (batches, pager)))
    })
    .flatten()
    .boxed()
}

/// Pages cut as batches come: [`Paginator::push`] returns the pages a
/// batch completes, [`Paginator::finish`] the last one.
pub struct Paginator {
    schema: SchemaRef,
    limits: PageLimits,
    current: Vec<RecordBatch>,
    rows: usize,
    bytes: usize,
    pages: usize,
}

impl Paginator {
    pub fn new(schema: &SchemaRef, limits: PageLimits) -> Self {
        Self {
            schema: schema.clone(),
            limits: PageLimits {
                rows: limits.rows.max(1),
                bytes: limits.bytes,
            },
            current: Vec::new(),
            rows: 0,
            bytes: 0,
            pages: 0,
        }
    }

    /// The pages `batch` completes (none, one or several).
    pub fn push(&mut self, batch: &RecordBatch) -> Result<Vec<RecordBatch>, ArrowError> {
        let mut pages = Vec::new();
        let n = batch.num_rows();
        if n == 0 {
            return Ok(pages);
        }
        let (max_rows, max_bytes) = (self.limits.rows, self.limits.bytes);
        let row_bytes = (batch.get_array_memory_size() / n).max(1);
        let mut offset = 0;
        while offset < n {
            let room_rows = max_rows - self.rows;
            let room_bytes = max_bytes.saturating_sub(self.bytes) / row_bytes;
            // A page always takes at least one row.
            let take = room_rows
                .min(room_bytes.max(usize::from(self.rows == 0)))
                .min(n - offset);
            if take > 0 {
                self.current.push(batch.slice(offset, take));
                offset += take;
                self.rows += take;
                self.bytes += take * row_bytes;
            }
            if self.rows >= max_rows || take == 0 || self.bytes >= max_bytes {
                pages.push(self.cut()?);
            }
        }
        Ok(pages)
    }

    /// The last page: what is left, or an empty page when no page was cut.
    pub fn finish(mut self) -> Result<Option<RecordBatch>, ArrowError> {
        if !self.current.is_empty() || self.pages == 0 {
            return self.cut().map(Some);
        }
        Ok(None)
    }

    fn cut(&mut self) -> Result<RecordBatch, ArrowError> {
        let page = merge(&self.schema, &self.current)?;
        self.current.clear();
        self.rows = 0;
        self.bytes = 0;
        self.pages += 1;
        Ok(page)
    }
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

    #[tokio::test]
    async fn a_stream_of_batches_pages_as_the_batches_do() {
        let s = schema();
        let batches = vec![batch(&s, 0, 250), batch(&s, 250, 0), batch(&s, 250, 900)];
        for limits in [
            PageLimits {
                rows: 400,
                bytes: usize::MAX,
            },
            PageLimits {
                rows: 1000,
                bytes: 1,
            },
            PageLimits::default(),
        ] {
            let want = paginate(&s, &batches, limits).unwrap();
            let stream = futures::stream::iter(batches.clone().into_iter().map(Ok)).boxed();
            let got: Vec<RecordBatch> = paginate_stream(&s, stream, limits)
                .map(|p| p.unwrap())
                .collect()
                .await;
            assert_eq!(got, want);
        }
        let empty = futures::stream::iter(Vec::new()).boxed();
        let pages: Vec<_> = paginate_stream(&s, empty, PageLimits::default())
            .collect()
            .await;
        assert_eq!(pages.len(), 1);
        assert_eq!(pages[0].as_ref().unwrap().num_rows(), 0);
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
