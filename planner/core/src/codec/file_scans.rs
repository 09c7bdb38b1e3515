//! The plan codec's nodes for squall's own file scans ([`JsonFiles`],
//! [`CsvFiles`]): DataFusion's encoding of the scan (files, columns,
//! projection) with the format's own options, decoded with DataFusion's
//! file-scan decoding.

use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_datasource::file::FileSource;
use datafusion_datasource::table_schema::TableSchema;
use datafusion_proto::physical_plan::{PhysicalPlanDecodeContext, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf;
use prost::Message;

use super::SquallNode;
use super::squall_node::Kind;
use crate::csv_files::CsvFiles;
use crate::json_files::JsonFiles;

/// A scan of JSON files ([`crate::json_files::JsonFiles`]).
#[derive(Clone, PartialEq, Message)]
pub(super) struct JsonFilesNode {
    /// A `FileScanExecConf`, encoded (the node stays small beside the others).
    #[prost(bytes = "vec", tag = "1")]
    base_conf: Vec<u8>,
    #[prost(bool, tag = "2")]
    arrays: bool,
}

/// The extension node of a scan of JSON files: its files, columns and
/// projection as DataFusion encodes a file scan, and their form.
pub(crate) fn json_files_node(base_conf: protobuf::FileScanExecConf, arrays: bool) -> Vec<u8> {
    SquallNode {
        kind: Some(Kind::JsonFiles(JsonFilesNode {
            base_conf: base_conf.encode_to_vec(),
            arrays,
        })),
    }
    .encode_to_vec()
}

/// A scan of CSV files ([`crate::csv_files::CsvFiles`]).
#[derive(Clone, PartialEq, Message)]
pub(super) struct CsvFilesNode {
    /// A `FileScanExecConf`, encoded.
    #[prost(bytes = "vec", tag = "1")]
    base_conf: Vec<u8>,
    #[prost(uint32, tag = "2")]
    delimiter: u32,
}

/// The extension node of a scan of CSV files: its files, columns and
/// projection as DataFusion encodes a file scan, and their delimiter.
pub(crate) fn csv_files_node(base_conf: protobuf::FileScanExecConf, delimiter: u8) -> Vec<u8> {
    SquallNode {
        kind: Some(Kind::CsvFiles(CsvFilesNode {
            base_conf: base_conf.encode_to_vec(),
            delimiter: u32::from(delimiter),
        })),
    }
    .encode_to_vec()
}

/// A file scan of `source` from its encoded `FileScanExecConf`.
fn file_scan(
    base_conf: &[u8],
    source: impl FnOnce(TableSchema) -> Arc<dyn FileSource>,
    ctx: &PhysicalPlanDecodeContext<'_>,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::datasource::source::DataSourceExec;
    use datafusion::physical_plan::proto::ExecutionPlanDecodeCtx;
    use datafusion_datasource::file_scan_config::FileScanConfig;
    let conf = &protobuf::FileScanExecConf::decode(base_conf)
        .map_err(|e| DataFusionError::Internal(format!("file scan: {e}")))?;
    let source = source(FileScanConfig::parse_table_schema_from_proto(conf)?);
    let decoder = Decoder {
        ctx,
        proto_converter,
    };
    let conf =
        FileScanConfig::try_from_proto(conf, &ExecutionPlanDecodeCtx::new(&decoder), source)?;
    Ok(DataSourceExec::from_data_source(conf))
}

/// A scan of JSON files from its node.
pub(super) fn json_files_scan(
    node: &JsonFilesNode,
    ctx: &PhysicalPlanDecodeContext<'_>,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    let arrays = node.arrays;
    let source = |schema| Arc::new(JsonFiles::new(schema, arrays)) as Arc<dyn FileSource>;
    file_scan(&node.base_conf, source, ctx, proto_converter)
}

/// A scan of CSV files from its node.
pub(super) fn csv_files_scan(
    node: &CsvFilesNode,
    ctx: &PhysicalPlanDecodeContext<'_>,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Result<Arc<dyn ExecutionPlan>> {
    let delimiter = u8::try_from(node.delimiter)
        .map_err(|_| DataFusionError::Internal(format!("CSV delimiter {}", node.delimiter)))?;
    let source = |schema| Arc::new(CsvFiles::new(schema, delimiter)) as Arc<dyn FileSource>;
    file_scan(&node.base_conf, source, ctx, proto_converter)
}

/// What DataFusion's decoding of a file scan needs (datafusion-proto's own
/// is private): child plans, expressions and functions decoded through the
/// plan's codec.
struct Decoder<'a, 'ctx> {
    ctx: &'a PhysicalPlanDecodeContext<'ctx>,
    proto_converter: &'a dyn PhysicalProtoConverterExtension,
}

impl datafusion::physical_plan::proto::ExecutionPlanDecode for Decoder<'_, '_> {
    fn decode_plan(&self, node: &protobuf::PhysicalPlanNode) -> Result<Arc<dyn ExecutionPlan>> {
        self.proto_converter.proto_to_execution_plan(node, self.ctx)
    }

    fn decode_plan_with_scalar_subquery_results(
        &self,
        node: &protobuf::PhysicalPlanNode,
        results: datafusion::logical_expr::physical_planning_context::ScalarSubqueryResults,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let scoped = self.ctx.with_scalar_subquery_results(results);
        self.proto_converter.proto_to_execution_plan(node, &scoped)
    }

    fn decode_expr(
        &self,
        node: &protobuf::PhysicalExprNode,
        input_schema: &Schema,
    ) -> Result<Arc<dyn datafusion::physical_expr::PhysicalExpr>> {
        self.proto_converter
            .proto_to_physical_expr(node, input_schema, self.ctx)
    }

    fn task_ctx(&self) -> &TaskContext {
        self.ctx.task_ctx()
    }

    fn decode_udf(
        &self,
        name: &str,
        payload: Option<&[u8]>,
    ) -> Result<Arc<datafusion::logical_expr::ScalarUDF>> {
        match payload {
            Some(buf) => self.ctx.codec().try_decode_udf(name, buf),
            None => datafusion::execution::FunctionRegistry::udf(self.ctx.task_ctx(), name)
                .or_else(|_| self.ctx.codec().try_decode_udf(name, &[])),
        }
    }

    fn decode_udaf(
        &self,
        name: &str,
        payload: Option<&[u8]>,
    ) -> Result<Arc<datafusion::logical_expr::AggregateUDF>> {
        match payload {
            Some(buf) => self.ctx.codec().try_decode_udaf(name, buf),
            None => datafusion::execution::FunctionRegistry::udaf(self.ctx.task_ctx(), name)
                .or_else(|_| self.ctx.codec().try_decode_udaf(name, &[])),
        }
    }

    fn decode_udwf(
        &self,
        name: &str,
        payload: Option<&[u8]>,
    ) -> Result<Arc<datafusion::logical_expr::WindowUDF>> {
        match payload {
            Some(buf) => self.ctx.codec().try_decode_udwf(name, buf),
            None => datafusion::execution::FunctionRegistry::udwf(self.ctx.task_ctx(), name)
                .or_else(|_| self.ctx.codec().try_decode_udwf(name, &[])),
        }
    }
}
