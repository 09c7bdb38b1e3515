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
use datafusion::datasource::file_format::csv::CsvDecoder;
use datafusion::error::{DataFusionError, Result};
use datafusion_datasource::PartitionedFile;
use datafusion_datasource::decoder::{DecoderDeserializer, deserialize_stream};
use datafusion_datasource::file_compression_type::FileCompressionType;
use datafusion_datasource::file_stream::{FileOpenFuture, FileOpener};
use datafusion_datasource::table_schema::TableSchema;
use datafusion_proto::protobuf;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};

use crate::text_files::{TextFiles, TextKind};

/// The bytes of a file read before its header row is parsed: a header
/// (quoted names may span lines) ends well before.
const HEADER_BYTES: usize = 64 * 1024;

/// CSV files with a header row, fields separated by `delimiter`.
#[derive(Clone, Copy)]
pub struct Csv {
    delimiter: u8,
}

/// The files of a CSV table with a header row (see the module docs).
pub type CsvFiles = TextFiles<Csv>;

impl CsvFiles {
    /// The files of a table of `table_schema`, fields separated by `delimiter`.
    pub fn new(table_schema: impl Into<TableSchema>, delimiter: u8) -> Self {
        Self::of_kind(table_schema, Csv { delimiter })
    }
}

impl TextKind for Csv {
    const FILE_TYPE: &'static str = "csv";

    fn opener(
        &self,
        schema: SchemaRef,
        batch_size: usize,
        compression: FileCompressionType,
        store: Arc<dyn ObjectStore>,
    ) -> Arc<dyn FileOpener> {
        Arc::new(CsvOpener {
            batch_size,
            schema,
            compression,
            store,
            delimiter: self.delimiter,
        })
    }

    fn node(&self, base_conf: protobuf::FileScanExecConf) -> Vec<u8> {
        crate::codec::csv_files_node(base_conf, self.delimiter)
    }

    /// Files are read whole (a quoted value may span lines).
    fn splits(&self) -> bool {
        false
    }

    fn fmt_extra(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, ", has_header=true, columns by name")
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
