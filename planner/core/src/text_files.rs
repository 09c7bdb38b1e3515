//! What squall's text file sources share ([`crate::json_files`],
//! [`crate::csv_files`]): a DataFusion `FileSource` whose files one
//! [`TextKind`] opens, and which the plan codec carries as an extension
//! node the kind encodes.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::projection::ProjectionExprs;
use datafusion::physical_plan::proto::ExecutionPlanEncodeCtx;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use datafusion_datasource::file::FileSource;
use datafusion_datasource::file_compression_type::FileCompressionType;
use datafusion_datasource::file_scan_config::FileScanConfig;
use datafusion_datasource::file_stream::FileOpener;
use datafusion_datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion_datasource::table_schema::TableSchema;
use datafusion_proto::protobuf;
use object_store::ObjectStore;

/// A kind of text file: how one is opened, and how the scan is encoded.
pub trait TextKind: Clone + Send + Sync + 'static {
    /// DataFusion's name of the format (`json`, `csv`).
    const FILE_TYPE: &'static str;

    /// An opener of files whose columns read are `schema` (the table's
    /// file schema, projected), in batches of `batch_size` rows.
    fn opener(
        &self,
        schema: SchemaRef,
        batch_size: usize,
        compression: FileCompressionType,
        store: Arc<dyn ObjectStore>,
    ) -> Arc<dyn FileOpener>;

    /// The plan codec's extension node of a scan of `base_conf`'s files.
    fn node(&self, base_conf: protobuf::FileScanExecConf) -> Vec<u8>;

    /// Whether a file may be read as byte ranges.
    fn splits(&self) -> bool;

    /// What EXPLAIN says of the kind after DataFusion's scan description.
    fn fmt_extra(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result;
}

/// `Some` when `plan` scans text files of squall's (CSV, JSON): the scan
/// (whether its files may be read as byte ranges: [`text_splits`]).
pub fn as_text_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&DataSourceExec> {
    let scan = plan.downcast_ref::<DataSourceExec>()?;
    text_splits(scan).map(|_| scan)
}

/// `Some` when `scan` reads text files of squall's: whether its files may
/// be read as byte ranges (JSON lines, not compressed; a compressed file,
/// a CSV file, whose quoted values may span lines, and a JSON array are
/// read whole).
pub fn text_splits(scan: &DataSourceExec) -> Option<bool> {
    let config = scan.data_source().downcast_ref::<FileScanConfig>()?;
    Some(text_kind_splits(scan)? && !config.file_compression_type.is_compressed())
}

/// `Some` when `scan` reads text files of squall's: whether files of its
/// kind may be read as byte ranges when not compressed (JSON lines).
pub fn text_kind_splits(scan: &DataSourceExec) -> Option<bool> {
    use crate::csv_files::CsvFiles;
    use crate::json_files::JsonFiles;
    match scan.downcast_to_file_source::<CsvFiles>() {
        Some((_, source)) => Some(source.kind.splits()),
        None => Some(scan.downcast_to_file_source::<JsonFiles>()?.1.kind.splits()),
    }
}

/// The files of a table of one [`TextKind`].
#[derive(Clone)]
pub struct TextFiles<K> {
    table_schema: TableSchema,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    projection: SplitProjection,
    pub(crate) kind: K,
}

impl<K: TextKind> TextFiles<K> {
    /// The files of a table of `table_schema`, of `kind`.
    pub(crate) fn of_kind(table_schema: impl Into<TableSchema>, kind: K) -> Self {
        let table_schema = table_schema.into();
        Self {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
            kind,
        }
    }
}

impl<K: TextKind> FileSource for TextFiles<K> {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        _partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let opener = self.kind.opener(
            Arc::new(file_schema.project(&self.projection.file_indices)?),
            self.batch_size.unwrap_or(8192),
            base_config.file_compression_type,
            store,
        );
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
        K::FILE_TYPE
    }

    fn fmt_extra(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.kind.fmt_extra(f)
    }

    fn supports_repartitioning(&self) -> bool {
        self.kind.splits()
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
        let node = self.kind.node(base.try_to_proto(ctx)?);
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
