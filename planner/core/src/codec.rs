//! The plan codec: datafusion-proto for everything DataFusion knows, plus
//! squall's own nodes ([`ShuffleWriteExec`], [`ShuffleReadExec`],
//! [`KeyFilterExec`], [`NullableSideExec`], scans of JSON and CSV files) as
//! extension nodes with small protobuf messages of their own.
//!
//! A stage plan is encoded once per stage by the coordinator and decoded by
//! every task of that stage in its worker. A read's message carries the
//! properties it reports ([`BoundaryProperties`]: orderings, equivalence
//! classes, constants, constraints), so the plan a worker rebuilds above it
//! is the plan the coordinator made; the planner checks that it is
//! (`squall_planner::plan_check`).

use std::sync::Arc;

use arrow::datatypes::Schema;
use datafusion::common::{Constraint, Constraints, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{AcrossPartitions, ConstExpr, LexOrdering};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::recursive_query::RecursiveQueryExec;
use datafusion::physical_plan::work_table::WorkTableExec;
use datafusion_proto::bytes::{
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use datafusion_proto::physical_plan::from_proto::{
    parse_physical_exprs, parse_physical_sort_exprs, parse_protobuf_partitioning,
};
use datafusion_proto::physical_plan::to_proto::{
    serialize_partitioning, serialize_physical_exprs, serialize_physical_sort_exprs,
};
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf;
use prost::Message;

use crate::exec::{
    BoundaryProperties, NullableSideExec, ReadMode, ShuffleReadExec, ShuffleWriteExec,
};
use crate::key_filter::KeyFilterExec;
use crate::task::{InputBinding, ObjectLocation};

mod file_scans;
pub(crate) use file_scans::{csv_files_node, json_files_node};

/// Extension codec for squall's execution nodes.
#[derive(Debug, Default, Clone, Copy)]
pub struct SquallCodec;

#[derive(Clone, PartialEq, Message)]
struct SquallNode {
    #[prost(oneof = "squall_node::Kind", tags = "1, 2, 3, 4, 5, 6, 7, 8")]
    kind: Option<squall_node::Kind>,
}

mod squall_node {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        #[prost(message, tag = "1")]
        Write(super::ShuffleWriteNode),
        #[prost(message, tag = "2")]
        Read(super::ShuffleReadNode),
        #[prost(message, tag = "3")]
        KeyFilter(super::KeyFilterNode),
        #[prost(message, tag = "4")]
        NullableSide(super::NullableSideNode),
        #[prost(message, tag = "5")]
        RecursiveQuery(super::RecursiveQueryNode),
        #[prost(message, tag = "6")]
        WorkTable(super::WorkTableNode),
        #[prost(message, tag = "7")]
        JsonFiles(super::file_scans::JsonFilesNode),
        #[prost(message, tag = "8")]
        CsvFiles(super::file_scans::CsvFilesNode),
    }
}

#[derive(Clone, PartialEq, Message)]
struct ShuffleWriteNode {
    #[prost(message, optional, tag = "1")]
    partitioning: Option<protobuf::Partitioning>,
    #[prost(string, optional, tag = "2")]
    output_store_url: Option<String>,
    #[prost(string, optional, tag = "3")]
    output_key: Option<String>,
    /// Join keys whose hashes the stage publishes (empty: none).
    #[prost(message, repeated, tag = "4")]
    publish_keys: Vec<protobuf::PhysicalExprNode>,
}

#[derive(Clone, PartialEq, Message)]
struct KeyFilterNode {
    #[prost(uint32, tag = "1")]
    source_stage: u32,
    #[prost(message, repeated, tag = "2")]
    keys: Vec<protobuf::PhysicalExprNode>,
}

/// A [`NullableSideExec`]: its input, and whether it forgets all of the
/// input's properties.
#[derive(Clone, PartialEq, Message)]
struct NullableSideNode {
    #[prost(bool, tag = "1")]
    forgets_all: bool,
}

/// A `WITH RECURSIVE` query (DataFusion's plan codec has no form for one):
/// its inputs are the static and the recursive term.
#[derive(Clone, PartialEq, Message)]
struct RecursiveQueryNode {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(bool, tag = "2")]
    is_distinct: bool,
    #[prost(message, optional, tag = "3")]
    schema: Option<datafusion_proto::protobuf::Schema>,
}

/// The recursive term's read of the rows the last round produced; its
/// projection is recovered from the query's schema when the query decodes.
#[derive(Clone, PartialEq, Message)]
struct WorkTableNode {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    schema: Option<datafusion_proto::protobuf::Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct ShuffleReadNode {
    #[prost(uint32, tag = "1")]
    stage: u32,
    #[prost(string, tag = "2")]
    mode: String,
    #[prost(message, optional, tag = "3")]
    schema: Option<datafusion_proto::protobuf::Schema>,
    #[prost(message, optional, tag = "4")]
    planned: Option<protobuf::Partitioning>,
    // Tag 5 held a single ordering before reads carried all of their
    // properties (tags 7-10).
    /// JSON of an [`InputBinding`], when the node was encoded already bound.
    #[prost(string, optional, tag = "6")]
    binding: Option<String>,
    /// The read's [`BoundaryProperties`].
    #[prost(message, repeated, tag = "7")]
    orderings: Vec<OrderingNode>,
    #[prost(message, repeated, tag = "8")]
    classes: Vec<ClassNode>,
    #[prost(message, repeated, tag = "9")]
    constants: Vec<ConstantNode>,
    #[prost(message, repeated, tag = "10")]
    constraints: Vec<ConstraintNode>,
}

#[derive(Clone, PartialEq, Message)]
struct OrderingNode {
    #[prost(message, repeated, tag = "1")]
    exprs: Vec<protobuf::PhysicalSortExprNode>,
}

/// Expressions known to be equal.
#[derive(Clone, PartialEq, Message)]
struct ClassNode {
    #[prost(message, repeated, tag = "1")]
    exprs: Vec<protobuf::PhysicalExprNode>,
}

#[derive(Clone, PartialEq, Message)]
struct ConstantNode {
    #[prost(message, optional, tag = "1")]
    expr: Option<protobuf::PhysicalExprNode>,
    /// The same value in every partition (DataFusion's `AcrossPartitions::Uniform`).
    #[prost(bool, tag = "2")]
    uniform: bool,
    /// That value, when known.
    #[prost(message, optional, tag = "3")]
    value: Option<protobuf::ScalarValue>,
}

#[derive(Clone, PartialEq, Message)]
struct ConstraintNode {
    /// A primary key; otherwise a unique key.
    #[prost(bool, tag = "1")]
    primary_key: bool,
    #[prost(uint64, repeated, tag = "2")]
    columns: Vec<u64>,
}

impl PhysicalExtensionCodec for SquallCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node = SquallNode::decode(buf)
            .map_err(|e| DataFusionError::Internal(format!("squall plan node: {e}")))?;
        let decode_ctx = PhysicalPlanDecodeContext::new(ctx, self);
        match node.kind {
            Some(squall_node::Kind::Write(w)) => {
                let [input] = inputs else {
                    return Err(DataFusionError::Internal(
                        "ShuffleWriteExec must have exactly one input".into(),
                    ));
                };
                let partitioning = parse_protobuf_partitioning(
                    w.partitioning.as_ref(),
                    &decode_ctx,
                    input.schema().as_ref(),
                    proto_converter,
                )?;
                let publish = if w.publish_keys.is_empty() {
                    None
                } else {
                    Some(parse_physical_exprs(
                        &w.publish_keys,
                        &decode_ctx,
                        input.schema().as_ref(),
                        proto_converter,
                    )?)
                };
                let mut exec = ShuffleWriteExec::new(Arc::clone(input), partitioning)
                    .with_published_keys(publish);
                if let (Some(store_url), Some(key)) = (w.output_store_url, w.output_key) {
                    exec = exec.with_output(ObjectLocation { store_url, key });
                }
                Ok(Arc::new(exec))
            }
            Some(squall_node::Kind::Read(r)) => {
                let schema: Schema = r
                    .schema
                    .as_ref()
                    .ok_or_else(|| {
                        DataFusionError::Internal("ShuffleReadExec without schema".into())
                    })?
                    .try_into()?;
                let schema = Arc::new(schema);
                let planned = parse_protobuf_partitioning(
                    r.planned.as_ref(),
                    &decode_ctx,
                    &schema,
                    proto_converter,
                )?
                .ok_or_else(|| {
                    DataFusionError::Internal("ShuffleReadExec without partitioning".into())
                })?;
                let carried = decode_boundary(&r, &decode_ctx, &schema, proto_converter)?;
                let mode = ReadMode::parse(&r.mode).ok_or_else(|| {
                    DataFusionError::Internal(format!("unknown shuffle read mode {:?}", r.mode))
                })?;
                let exec = ShuffleReadExec::try_new(r.stage, mode, schema, planned, carried)?;
                Ok(match r.binding {
                    Some(json) => {
                        let binding: InputBinding = serde_json::from_str(&json)
                            .map_err(|e| DataFusionError::Internal(format!("read binding: {e}")))?;
                        Arc::new(exec.bind(binding))
                    }
                    None => Arc::new(exec),
                })
            }
            Some(squall_node::Kind::KeyFilter(k)) => {
                let [input] = inputs else {
                    return Err(DataFusionError::Internal(
                        "KeyFilterExec must have exactly one input".into(),
                    ));
                };
                let keys = parse_physical_exprs(
                    &k.keys,
                    &decode_ctx,
                    input.schema().as_ref(),
                    proto_converter,
                )?;
                Ok(Arc::new(KeyFilterExec::new(
                    Arc::clone(input),
                    k.source_stage,
                    keys,
                )))
            }
            Some(squall_node::Kind::NullableSide(n)) => {
                let [input] = inputs else {
                    return Err(DataFusionError::Internal(
                        "NullableSideExec must have exactly one input".into(),
                    ));
                };
                let input = Arc::clone(input);
                Ok(Arc::new(match n.forgets_all {
                    true => NullableSideExec::forgetting_all(input)?,
                    false => NullableSideExec::try_new(input)?,
                }))
            }
            Some(squall_node::Kind::WorkTable(w)) => {
                let schema: Schema = w
                    .schema
                    .as_ref()
                    .ok_or_else(|| {
                        DataFusionError::Internal("WorkTableExec without schema".into())
                    })?
                    .try_into()?;
                Ok(Arc::new(WorkTableExec::new(
                    w.name,
                    Arc::new(schema),
                    None,
                )?))
            }
            Some(squall_node::Kind::RecursiveQuery(r)) => {
                let [static_term, recursive_term] = inputs else {
                    return Err(DataFusionError::Internal(
                        "RecursiveQueryExec must have two inputs".into(),
                    ));
                };
                let schema: Schema = r
                    .schema
                    .as_ref()
                    .ok_or_else(|| {
                        DataFusionError::Internal("RecursiveQueryExec without schema".into())
                    })?
                    .try_into()?;
                let schema = Arc::new(schema);
                let recursive_term = project_work_tables(recursive_term, &r.name, &schema)?;
                // The query's constructor projects each term to its schema
                // again: the projection it made when planned is taken off.
                Ok(Arc::new(RecursiveQueryExec::try_new(
                    r.name,
                    Arc::clone(&schema),
                    without_schema_adapter(static_term, &schema),
                    without_schema_adapter(&recursive_term, &schema),
                    r.is_distinct,
                )?))
            }
            Some(squall_node::Kind::JsonFiles(j)) => {
                file_scans::json_files_scan(&j, &decode_ctx, proto_converter)
            }
            Some(squall_node::Kind::CsvFiles(c)) => {
                file_scans::csv_files_scan(&c, &decode_ctx, proto_converter)
            }
            None => Err(DataFusionError::Internal("empty squall plan node".into())),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let kind = if let Some(w) = node.downcast_ref::<ShuffleWriteExec>() {
            squall_node::Kind::Write(ShuffleWriteNode {
                partitioning: w
                    .partitioning()
                    .map(|p| serialize_partitioning(p, self, proto_converter))
                    .transpose()?,
                output_store_url: w.output().map(|o| o.store_url.clone()),
                output_key: w.output().map(|o| o.key.clone()),
                publish_keys: match w.published_keys() {
                    Some(keys) => serialize_physical_exprs(keys, self, proto_converter)?,
                    None => vec![],
                },
            })
        } else if let Some(k) = node.downcast_ref::<KeyFilterExec>() {
            squall_node::Kind::KeyFilter(KeyFilterNode {
                source_stage: k.source_stage(),
                keys: serialize_physical_exprs(k.keys(), self, proto_converter)?,
            })
        } else if let Some(n) = node.downcast_ref::<NullableSideExec>() {
            squall_node::Kind::NullableSide(NullableSideNode {
                forgets_all: n.forgets_all(),
            })
        } else if let Some(r) = node.downcast_ref::<RecursiveQueryExec>() {
            squall_node::Kind::RecursiveQuery(RecursiveQueryNode {
                name: r.name().to_string(),
                is_distinct: r.is_distinct(),
                schema: Some(r.schema().as_ref().try_into()?),
            })
        } else if let Some(w) = node.downcast_ref::<WorkTableExec>() {
            squall_node::Kind::WorkTable(WorkTableNode {
                name: w.name().to_string(),
                schema: Some(w.schema().as_ref().try_into()?),
            })
        } else if let Some(r) = node.downcast_ref::<ShuffleReadExec>() {
            let mut read = ShuffleReadNode {
                stage: r.stage(),
                mode: r.mode().as_str().to_string(),
                schema: Some(r.schema().as_ref().try_into()?),
                planned: Some(serialize_partitioning(
                    r.planned_partitioning(),
                    self,
                    proto_converter,
                )?),
                binding: r
                    .binding()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(|e| DataFusionError::Internal(format!("read binding: {e}")))?,
                ..Default::default()
            };
            encode_boundary(r.carried(), &mut read, self, proto_converter)?;
            squall_node::Kind::Read(read)
        } else {
            return Err(DataFusionError::Internal(format!(
                "squall codec cannot encode {}",
                node.name()
            )));
        };
        SquallNode { kind: Some(kind) }
            .encode(buf)
            .map_err(|e| DataFusionError::Internal(format!("squall plan node: {e}")))
    }
}

/// `term` without the projection a recursive query puts on a term whose
/// schema is not its own (DataFusion's `project_plan_to_schema`: column `i`
/// as field `i`, cast where only the nullability differs), when it is one.
fn without_schema_adapter(
    term: &Arc<dyn ExecutionPlan>,
    schema: &arrow::datatypes::SchemaRef,
) -> Arc<dyn ExecutionPlan> {
    use datafusion::physical_expr::expressions::{CastExpr, Column};
    use datafusion::physical_plan::projection::ProjectionExec;
    let Some(p) = term.downcast_ref::<ProjectionExec>() else {
        return Arc::clone(term);
    };
    let input = p.input().schema();
    let adapter = input.fields().len() == schema.fields().len()
        && p.expr().len() == schema.fields().len()
        && p.expr().iter().enumerate().all(|(i, e)| {
            let column = e.expr.downcast_ref::<Column>().or_else(|| {
                e.expr
                    .downcast_ref::<CastExpr>()?
                    .expr()
                    .downcast_ref::<Column>()
            });
            column.is_some_and(|c| c.index() == i)
                && e.alias == *schema.field(i).name()
                && input.field(i).data_type() == schema.field(i).data_type()
        });
    if adapter {
        Arc::clone(p.input())
    } else {
        Arc::clone(term)
    }
}

/// `plan` (a recursive term) with each read of the work table `name` that
/// has fewer columns than the query's `schema` given them as a projection
/// of it, by name (a work table holds the query's whole rows; the codec
/// carries only the columns a read outputs).
fn project_work_tables(
    plan: &Arc<dyn ExecutionPlan>,
    name: &str,
    schema: &arrow::datatypes::SchemaRef,
) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
    Arc::clone(plan)
        .transform_up(|node| {
            let Some(w) = node.downcast_ref::<WorkTableExec>() else {
                return Ok(Transformed::no(node));
            };
            if w.name() != name || w.schema().fields().len() == schema.fields().len() {
                return Ok(Transformed::no(node));
            }
            let projection = w
                .schema()
                .fields()
                .iter()
                .map(|f| {
                    schema.index_of(f.name()).map_err(|_| {
                        DataFusionError::Internal(format!(
                            "work table {name} has no column {}",
                            f.name()
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let projected: Arc<dyn ExecutionPlan> = Arc::new(WorkTableExec::new(
                name.to_string(),
                Arc::clone(schema),
                Some(projection),
            )?);
            Ok(Transformed::yes(projected))
        })
        .data()
}

/// Put a read's carried properties into its message.
fn encode_boundary(
    carried: &BoundaryProperties,
    node: &mut ShuffleReadNode,
    codec: &dyn PhysicalExtensionCodec,
    converter: &dyn PhysicalProtoConverterExtension,
) -> Result<()> {
    for ordering in &carried.orderings {
        node.orderings.push(OrderingNode {
            exprs: serialize_physical_sort_exprs(ordering.iter().cloned(), codec, converter)?,
        });
    }
    for class in &carried.classes {
        node.classes.push(ClassNode {
            exprs: serialize_physical_exprs(class, codec, converter)?,
        });
    }
    for constant in &carried.constants {
        let (uniform, value) = match &constant.across_partitions {
            AcrossPartitions::Heterogeneous => (false, None),
            AcrossPartitions::Uniform(value) => (
                true,
                value
                    .as_ref()
                    .map(protobuf::ScalarValue::try_from)
                    .transpose()
                    .map_err(|e| DataFusionError::Internal(format!("read constant: {e}")))?,
            ),
        };
        node.constants.push(ConstantNode {
            expr: Some(converter.physical_expr_to_proto(&constant.expr, codec)?),
            uniform,
            value,
        });
    }
    for constraint in carried.constraints.iter() {
        let (primary_key, columns) = match constraint {
            Constraint::PrimaryKey(c) => (true, c),
            Constraint::Unique(c) => (false, c),
        };
        node.constraints.push(ConstraintNode {
            primary_key,
            columns: columns.iter().map(|&c| c as u64).collect(),
        });
    }
    Ok(())
}

/// A read's carried properties from its message.
fn decode_boundary(
    node: &ShuffleReadNode,
    ctx: &PhysicalPlanDecodeContext<'_>,
    schema: &Schema,
    converter: &dyn PhysicalProtoConverterExtension,
) -> Result<BoundaryProperties> {
    let mut carried = BoundaryProperties::default();
    for ordering in &node.orderings {
        let exprs = parse_physical_sort_exprs(&ordering.exprs, ctx, schema, converter)?;
        carried.orderings.extend(LexOrdering::new(exprs));
    }
    for class in &node.classes {
        carried
            .classes
            .push(parse_physical_exprs(&class.exprs, ctx, schema, converter)?);
    }
    for constant in &node.constants {
        let expr = constant.expr.as_ref().ok_or_else(|| {
            DataFusionError::Internal("ShuffleReadExec constant without expression".into())
        })?;
        let across = if constant.uniform {
            let value = constant
                .value
                .as_ref()
                .map(ScalarValue::try_from)
                .transpose()
                .map_err(|e| DataFusionError::Internal(format!("read constant: {e}")))?;
            AcrossPartitions::Uniform(value)
        } else {
            AcrossPartitions::Heterogeneous
        };
        carried.constants.push(ConstExpr::new(
            converter.proto_to_physical_expr(expr, schema, ctx)?,
            across,
        ));
    }
    let constraints = node
        .constraints
        .iter()
        .map(|c| {
            let columns = c.columns.iter().map(|&i| i as usize).collect();
            if c.primary_key {
                Constraint::PrimaryKey(columns)
            } else {
                Constraint::Unique(columns)
            }
        })
        .collect();
    carried.constraints = Constraints::new_unverified(constraints);
    Ok(carried)
}

/// Encode a stage plan.
pub fn encode_plan(plan: Arc<dyn ExecutionPlan>) -> Result<bytes::Bytes> {
    physical_plan_to_bytes_with_extension_codec(plan, &SquallCodec)
}

/// Decode a stage plan (its text scans given back the compression the
/// encoding leaves out: `text_compression`).
pub fn decode_plan(bytes: &[u8], ctx: &TaskContext) -> Result<Arc<dyn ExecutionPlan>> {
    let plan = physical_plan_from_bytes_with_extension_codec(bytes, ctx, &SquallCodec)?;
    crate::text_compression::restore(plan)
}
