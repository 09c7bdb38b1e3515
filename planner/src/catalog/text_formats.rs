//! Text files as a catalog table reads them. JSON: its schema merged
//! across files by JSON's own rules, its rows read by squall's [`JsonFiles`]
//! (a field of mixed types read as text, a file of one JSON array read as
//! its elements; see `squall_core::json_files`). CSV: DataFusion's schema
//! (the union of the files' headers), its rows read by squall's
//! [`CsvFiles`] (each file's columns by the names its header gives them;
//! `squall_core::csv_files`).

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::Statistics;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_datasource_json::utils::JsonArrayToNdjsonReader;
use object_store::{ObjectMeta, ObjectStore};
use squall_core::csv_files::CsvFiles;
use squall_core::json_files::JsonFiles;

use super::csv_records::record_chunks;

/// The fields of `a` and `b` (one file's and the earlier files'), a
/// field in both of the type [`merged_type`] gives.
fn merged_fields(a: &Fields, b: &Fields) -> std::result::Result<Fields, String> {
    let mut fields: Vec<Field> = Vec::with_capacity(a.len().max(b.len()));
    for f in a {
        let data_type = match b.find(f.name()) {
            Some((_, other)) => merged_type(f.data_type(), other.data_type()).ok_or_else(|| {
                format!(
                    "field {} is {} in some rows and {} in others",
                    f.name(),
                    f.data_type(),
                    other.data_type()
                )
            })?,
            None => f.data_type().clone(),
        };
        fields.push(Field::new(f.name(), data_type, true));
    }
    for f in b {
        if a.find(f.name()).is_none() {
            fields.push(Field::new(f.name(), f.data_type().clone(), true));
        }
    }
    Ok(fields.into())
}

/// The type of a JSON field typed `a` by some rows and `b` by others, as
/// arrow's inference merges them within a file: integers and fractions
/// DOUBLE, a value and a list of values a list, objects their fields
/// merged, other scalars text; an object and a scalar or list, `None`.
fn merged_type(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::{Float64, Int64, List, Null, Struct, Utf8};
    let list_of = |t: DataType| List(Arc::new(Field::new_list_field(t, true)));
    Some(match (a, b) {
        (a, b) if a == b => a.clone(),
        (Null, o) | (o, Null) => o.clone(),
        (Int64, Float64) | (Float64, Int64) => Float64,
        (Struct(x), Struct(y)) => Struct(merged_fields(x, y).ok()?),
        (Struct(_), _) | (_, Struct(_)) => return None,
        (List(x), List(y)) => list_of(merged_type(x.data_type(), y.data_type())?),
        (List(x), o) | (o, List(x)) => list_of(merged_type(x.data_type(), o)?),
        _ => Utf8,
    })
}

/// A text table's files as squall reads them.
#[derive(Debug)]
pub(crate) enum TextKind {
    /// JSON (`inner`'s options: compression, rows inferred from), each
    /// file one array of objects if `arrays`.
    Json { inner: JsonFormat, arrays: bool },
    /// CSV with a header row (`inner`'s options), fields separated by
    /// `delimiter`.
    Csv { inner: CsvFormat, delimiter: u8 },
}

/// DataFusion's format of a text table's files, its rows read by squall's
/// sources ([`JsonFiles`], [`CsvFiles`]).
#[derive(Debug)]
pub(crate) struct TextFilesFormat(pub(crate) TextKind);

impl TextFilesFormat {
    fn inner(&self) -> &dyn FileFormat {
        match &self.0 {
            TextKind::Json { inner, .. } => inner,
            TextKind::Csv { inner, .. } => inner,
        }
    }

    /// The schema of JSON `objects`' first rows (`format`'s inference
    /// limit, over all of them), each file's inferred as arrow infers one
    /// file's and merged by the same rules: where files disagree on a
    /// field's type it is text, or DOUBLE for integers and fractions
    /// (DataFusion's refused the table: "Fail to merge schema field ...
    /// Int64 does not equal Utf8").
    async fn json_schema(
        format: &JsonFormat,
        arrays: bool,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        use arrow::json::reader::{ValueIter, infer_json_schema_from_iterator};
        use bytes::Buf;
        use object_store::ObjectStoreExt;
        use std::io::{BufRead, BufReader};
        let options = format.options();
        let mut left = options.schema_infer_max_rec.unwrap_or(1000);
        let compression = FileCompressionType::from(options.compression);
        let mut merged: Option<Schema> = None;
        for object in objects {
            if left == 0 {
                break;
            }
            let named = |e: &dyn std::fmt::Display| {
                DataFusionError::Execution(format!("file {}: {e}", object.location))
            };
            let bytes = store.get(&object.location).await?.bytes().await?;
            let read = compression.convert_read(bytes.reader())?;
            let read: Box<dyn BufRead> = match arrays {
                true => Box::new(BufReader::new(JsonArrayToNdjsonReader::new(read))),
                false => Box::new(BufReader::new(read)),
            };
            let mut taken = 0;
            let values = ValueIter::new(read, None).take_while(|_| {
                let more = taken < left;
                taken += usize::from(more);
                more
            });
            let schema = infer_json_schema_from_iterator(values).map_err(|e| named(&e))?;
            left -= taken;
            merged = Some(match merged {
                None => schema,
                Some(earlier) => Schema::new(
                    merged_fields(earlier.fields(), schema.fields()).map_err(|e| named(&e))?,
                ),
            });
        }
        Ok(Arc::new(merged.unwrap_or_else(Schema::empty)))
    }

    /// The schema of CSV `objects`' first rows, as DataFusion's inference
    /// makes it (`CsvFormat::infer_schema`: each file's header and types,
    /// the files' schemas merged), from chunks of each file that end
    /// between records ([`record_chunks`]): a quoted value holding line
    /// breaks is never cut.
    async fn csv_schema(
        format: &CsvFormat,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        use futures::{StreamExt, TryStreamExt};
        use object_store::ObjectStoreExt;
        let options = format.options();
        let compression = FileCompressionType::from(options.compression);
        let mut left = options.schema_infer_max_rec.unwrap_or(1000);
        let mut schemas = Vec::new();
        for object in objects {
            let bytes = store
                .get(&object.location)
                .await?
                .into_stream()
                .map_err(DataFusionError::from)
                .boxed();
            let chunks = record_chunks(
                compression.convert_stream(bytes)?,
                options.quote,
                options.escape,
            );
            let (schema, read) = format
                .infer_schema_from_stream(state, left, chunks)
                .await
                .map_err(|e| {
                    DataFusionError::Context(
                        format!("Error when processing CSV file {}", object.location),
                        Box::new(e),
                    )
                })?;
            schemas.push(schema);
            left -= read.min(left);
            if left == 0 {
                break;
            }
        }
        Ok(Arc::new(Schema::try_merge(schemas)?))
    }
}

#[async_trait]
impl FileFormat for TextFilesFormat {
    fn get_ext(&self) -> String {
        self.inner().get_ext()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        self.inner().get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner().compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        match &self.0 {
            TextKind::Json { inner, arrays } => {
                Self::json_schema(inner, *arrays, store, objects).await
            }
            TextKind::Csv { inner, .. } => Self::csv_schema(inner, state, store, objects).await,
        }
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        self.inner()
            .infer_stats(state, store, table_schema, object)
            .await
    }

    /// The scan of `conf`'s files (whose source is squall's: DataFusion's
    /// CSV format asks for its own), decompressed as the format says.
    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        use datafusion::datasource::physical_plan::FileScanConfigBuilder;
        use datafusion::datasource::source::DataSourceExec;
        let compression = self
            .compression_type()
            .unwrap_or(FileCompressionType::UNCOMPRESSED);
        let conf = FileScanConfigBuilder::from(conf)
            .with_file_compression_type(compression)
            .build();
        Ok(DataSourceExec::from_data_source(conf))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner()
            .create_writer_physical_plan(input, state, conf, order_requirements)
            .await
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        match &self.0 {
            TextKind::Json { arrays, .. } => Arc::new(JsonFiles::new(table_schema, *arrays)),
            TextKind::Csv { delimiter, .. } => Arc::new(CsvFiles::new(table_schema, *delimiter)),
        }
    }
}
