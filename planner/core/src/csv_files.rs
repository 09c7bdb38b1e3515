//! CSV files as squall reads them: each file's columns found by the names
//! its header row gives them, so the files of one table may hold columns
//! in different orders, and a column only some files have (added over
//! time, as exports grow) is NULL in the others' rows.
//!
//! A table's columns are the union, by name, of its files' headers
//! (DataFusion's inference merges them so). DataFusion's reader then read
//! every file by position: a file with fewer columns failed its query
//! ("incorrect number of fields for line 1, expected 3 got 2"), and one
//! with the same count in another order read each value into the wrong
//! column, silently. Here a file's header is read first and each of the
//! table's columns taken from the position it names. Files are read whole
//! (a quoted value may span lines, so a file is never split at a byte
//! offset). The plan codec carries this source ([`crate::codec`]).

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, new_null_array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use bytes::{Bytes, BytesMut};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::file_format::csv::CsvDecoder;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::DisplayFormatType;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::projection::ProjectionExprs;
use datafusion::physical_plan::proto::ExecutionPlanEncodeCtx;
use datafusion_datasource::PartitionedFile;
use datafusion_datasource::decoder::{DecoderDeserializer, deserialize_stream};
use datafusion_datasource::file::FileSource;
use datafusion_datasource::file_compression_type::FileCompressionType;
use datafusion_datasource::file_scan_config::FileScanConfig;
use datafusion_datasource::file_stream::{FileOpenFuture, FileOpener};
use datafusion_datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion_datasource::table_schema::TableSchema;
use datafusion_proto::protobuf;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};

/// The bytes of a file read before its header row is parsed: a header
/// (quoted names may span lines) ends well before.
const HEADER_BYTES: usize = 64 * 1024;

/// The files of a CSV table with a header row (see the module docs).
#[derive(Clone)]
pub struct CsvFiles {
    table_schema: TableSchema,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    projection: SplitProjection,
    delimiter: u8,
}

impl CsvFiles {
    /// The files of a table of `table_schema`, fields separated by `delimiter`.
    pub fn new(table_schema: impl Into<TableSchema>, delimiter: u8) -> Self {
        let table_schema = table_schema.into();
        Self {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
            delimiter,
        }
    }
}

impl FileSource for CsvFiles {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        _partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let opener = Arc::new(CsvOpener {
            batch_size: self.batch_size.unwrap_or(8192),
            schema: Arc::new(file_schema.project(&self.projection.file_indices)?),
            compression: base_config.file_compression_type,
            store,
            delimiter: self.delimiter,
        });
        ProjectionOpener::try_new(self.projection.clone(), opener, file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        let mut source = self.clone();
        source.batch_size = Some(batch_size);
        Arc::new(source)
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        let merged = self.projection.source.try_merge(projection)?;
        source.projection = SplitProjection::new(self.table_schema.file_schema(), &merged);
        Ok(Some(Arc::new(source)))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "csv"
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, ", has_header=true, columns by name")
    }

    /// Files are read whole (a quoted value may span lines).
    fn supports_repartitioning(&self) -> bool {
        false
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }

    fn try_to_proto(
        &self,
        base: &FileScanConfig,
        ctx: &ExecutionPlanEncodeCtx<'_>,
    ) -> Result<Option<protobuf::PhysicalPlanNode>> {
        let node = crate::codec::csv_files_node(base.try_to_proto(ctx)?, self.delimiter);
        Ok(Some(protobuf::PhysicalPlanNode {
            physical_plan_type: Some(protobuf::physical_plan_node::PhysicalPlanType::Extension(
                protobuf::PhysicalExtensionNode {
                    node,
                    inputs: vec![],
                },
            )),
        }))
    }
}

/// Opens one file.
struct CsvOpener {
    batch_size: usize,
    /// The table's columns read, as its file schema types them.
    schema: SchemaRef,
    compression: FileCompressionType,
    store: Arc<dyn ObjectStore>,
    delimiter: u8,
}

impl FileOpener for CsvOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let (store, compression) = (Arc::clone(&self.store), self.compression);
        let (schema, batch_size, delimiter) =
            (Arc::clone(&self.schema), self.batch_size, self.delimiter);
        let location = file.object_meta.location.clone();
        Ok(Box::pin(async move {
            let bytes = store
                .get(&location)
                .await?
                .into_stream()
                .map_err(DataFusionError::from)
                .boxed();
            let mut input = compression.convert_stream(bytes)?.fuse();
            // The file's start, up to its header's end and beyond.
            let mut head = BytesMut::new();
            while head.len() < HEADER_BYTES {
                match input.next().await.transpose()? {
                    Some(chunk) => head.extend_from_slice(&chunk),
                    None => break,
                }
            }
            let (names, header_len) = header(&head, delimiter)
                .map_err(|e| DataFusionError::Execution(format!("file {location}: {e}")))?;
            let columns = Columns::new(&schema, &names);
            let decoder = arrow::csv::ReaderBuilder::new(columns.read_schema())
                .with_header(false)
                .with_delimiter(delimiter)
                .with_quote(b'"')
                .with_batch_size(batch_size)
                .with_projection(columns.read.clone())
                .build_decoder();
            let rest = Bytes::from(head).slice(header_len..);
            let input = futures::stream::iter([Ok(rest)]).chain(input);
            let batches =
                deserialize_stream(input, DecoderDeserializer::new(CsvDecoder::new(decoder)))
                    .map_err(DataFusionError::from)
                    .and_then(move |batch| std::future::ready(columns.table_batch(&batch)));
            Ok(batches.boxed())
        }))
    }
}

/// A file's header row (the first record of `head`): its column names, and
/// the bytes it takes.
fn header(head: &[u8], delimiter: u8) -> std::result::Result<(Vec<String>, usize), String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(head);
    let mut record = csv::ByteRecord::new();
    match reader.read_byte_record(&mut record) {
        Ok(true) => {}
        Ok(false) => return Ok((Vec::new(), head.len())),
        Err(e) => return Err(format!("its header row does not read: {e}")),
    }
    let names = record
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let name = String::from_utf8_lossy(name);
            // Excel writes a byte order mark before a UTF-8 file's text.
            match i {
                0 => name.trim_start_matches('\u{feff}').to_string(),
                _ => name.into_owned(),
            }
        })
        .collect();
    Ok((names, reader.position().byte() as usize))
}

/// Where the table's columns read are in one file.
struct Columns {
    /// The table's columns read (the scan's file schema, projected).
    table: SchemaRef,
    /// The file's columns, by position: named in its header, typed as the
    /// table column of that name (text where the table reads none).
    file: Vec<Field>,
    /// The file's positions read, ascending.
    read: Vec<usize>,
    /// For each table column, its place among `read`, if the file has it.
    place: Vec<Option<usize>>,
}

impl Columns {
    fn new(table: &SchemaRef, names: &[String]) -> Self {
        let position = |name: &str| names.iter().position(|n| n == name);
        let mut read: Vec<usize> = table
            .fields()
            .iter()
            .filter_map(|f| position(f.name()))
            .collect();
        read.sort_unstable();
        read.dedup();
        let file = names
            .iter()
            .map(|n| match table.field_with_name(n) {
                Ok(f) => f.as_ref().clone().with_nullable(true),
                Err(_) => Field::new(n, DataType::Utf8, true),
            })
            .collect();
        let place = table
            .fields()
            .iter()
            .map(|f| position(f.name()).and_then(|p| read.iter().position(|r| *r == p)))
            .collect();
        Self {
            table: Arc::clone(table),
            file,
            read,
            place,
        }
    }

    /// The schema the file is decoded with (every column it names).
    fn read_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.file.clone()))
    }

    /// `batch` (the file's columns `read`) as the table's columns read: a
    /// column the file does not have is NULL.
    fn table_batch(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = self
            .table
            .fields()
            .iter()
            .zip(&self.place)
            .map(|(f, place)| match place {
                Some(i) => Arc::clone(batch.column(*i)),
                None => new_null_array(f.data_type(), batch.num_rows()),
            })
            .collect();
        let options =
            arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.table),
            columns,
            &options,
        )?)
    }
}
