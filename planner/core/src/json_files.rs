//! JSON files as squall reads them: a file of JSON lines (one object per
//! line) or of one JSON array of objects, and a field whose values mix
//! types read as text where the table's column is text.
//!
//! DataFusion's JSON reader failed a whole query on a field holding
//! numbers in some rows and text in others (`{"v": 10}`, `{"v": "n/a"}`):
//! its inference types such a field VARCHAR, and its decoder then refused
//! the numbers ("expected string got 2.5"). Log and event data is full of
//! such fields; Trino's JSON tables, DuckDB and Spark read the numbers and
//! booleans as their text, and so does this reader (arrow's
//! `coerce_primitive`). A file of one JSON array (what many tools export)
//! is read as its elements; its rows cannot be found without reading it
//! from its start, so it is read whole, never as byte ranges. DataFusion's
//! plan codec does not carry the array form, so this source encodes
//! itself ([`crate::codec`]).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::json::ReaderBuilder;
use bytes::Buf;
use datafusion::datasource::file_format::json::JsonDecoder;
use datafusion::error::{DataFusionError, Result};
use datafusion_datasource::PartitionedFile;
use datafusion_datasource::boundary_stream::AlignedBoundaryStream;
use datafusion_datasource::decoder::{DecoderDeserializer, deserialize_stream};
use datafusion_datasource::file_compression_type::FileCompressionType;
use datafusion_datasource::file_stream::{FileOpenFuture, FileOpener};
use datafusion_datasource::table_schema::TableSchema;
use datafusion_datasource_json::utils::JsonArrayToNdjsonReader;
use datafusion_proto::protobuf;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};

use crate::text_files::{TextFiles, TextKind};

/// JSON files, each one JSON array of objects if `arrays`, else JSON lines.
#[derive(Clone, Copy)]
pub struct Json {
    arrays: bool,
}

/// The files of a JSON table (see the module documentation).
pub type JsonFiles = TextFiles<Json>;

impl JsonFiles {
    /// The files of a table of `table_schema`, each one JSON array of
    /// objects if `arrays`, else JSON lines.
    pub fn new(table_schema: impl Into<TableSchema>, arrays: bool) -> Self {
        Self::of_kind(table_schema, Json { arrays })
    }

    /// Whether each file is one JSON array.
    pub fn arrays(&self) -> bool {
        self.kind.arrays
    }
}

impl TextKind for Json {
    const FILE_TYPE: &'static str = "json";

    fn opener(
        &self,
        schema: SchemaRef,
        batch_size: usize,
        compression: FileCompressionType,
        store: Arc<dyn ObjectStore>,
    ) -> Arc<dyn FileOpener> {
        Arc::new(JsonOpener {
            batch_size,
            schema,
            compression,
            store,
            arrays: self.arrays,
        })
    }

    fn node(&self, base_conf: protobuf::FileScanExecConf) -> Vec<u8> {
        crate::codec::json_files_node(base_conf, self.arrays)
    }

    /// JSON lines split at line breaks; a JSON array only whole.
    fn splits(&self) -> bool {
        !self.arrays
    }

    fn fmt_extra(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.arrays {
            true => write!(f, ", arrays=true"),
            false => Ok(()),
        }
    }
}

/// Opens one file (or a byte range of a file of JSON lines).
struct JsonOpener {
    batch_size: usize,
    /// The columns read, as the file schema types them.
    schema: SchemaRef,
    compression: FileCompressionType,
    store: Arc<dyn ObjectStore>,
    arrays: bool,
}

impl JsonOpener {
    fn reader(&self) -> ReaderBuilder {
        ReaderBuilder::new(Arc::clone(&self.schema))
            .with_batch_size(self.batch_size)
            .with_coerce_primitive(true)
    }
}

impl FileOpener for JsonOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let (store, compression, arrays) = (Arc::clone(&self.store), self.compression, self.arrays);
        let reader = self.reader();
        let location = file.object_meta.location.clone();
        let size = file.object_meta.size;
        let range = file.range.clone();
        Ok(Box::pin(async move {
            if arrays {
                if range.is_some() {
                    return Err(DataFusionError::Internal(format!(
                        "file {location}: a JSON array is read whole, not as a byte range"
                    )));
                }
                let bytes = store.get(&location).await?.bytes().await?;
                let read = compression.convert_read(bytes.reader())?;
                let rows = reader.build(JsonArrayToNdjsonReader::new(read))?;
                return Ok(futures::stream::iter(rows)
                    .map(|r| r.map_err(DataFusionError::from))
                    .boxed());
            }
            let bytes = match range {
                Some(range) => {
                    let (start, end) = (range.start as u64, range.end as u64);
                    AlignedBoundaryStream::new(
                        Arc::clone(&store),
                        location,
                        start,
                        end,
                        size,
                        b'\n',
                    )
                    .await?
                    .map_err(DataFusionError::from)
                    .boxed()
                }
                None => store
                    .get(&location)
                    .await?
                    .into_stream()
                    .map_err(DataFusionError::from)
                    .boxed(),
            };
            let input = compression.convert_stream(bytes)?.fuse();
            let decoder = JsonDecoder::new(reader.build_decoder()?);
            Ok(deserialize_stream(input, DecoderDeserializer::new(decoder))
                .map_err(DataFusionError::from)
                .boxed())
        }))
    }
}
