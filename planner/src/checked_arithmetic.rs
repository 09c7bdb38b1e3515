//! Integer arithmetic that fails on overflow, as Trino's and DuckDB's does.
//!
//! DataFusion's `+`, `-` and `*` of integers wrap around:
//! `9223372036854775807 + 1` answered -9223372036854775808, and the product of two INTEGER
//! columns past 2^31 a wrong number, silently. Once the plan is typed (after
//! DataFusion's type coercion), every such operation of two integers of one
//! type is written as squall's checked function of the operator
//! (`squall_core::trino_udfs::checked`), which fails the query with
//! `NUMERIC_VALUE_OUT_OF_RANGE` naming the values; its column keeps the
//! operator's name (`a + b`); a unary minus is `0 - x` (the negation of the
//! type's least value overflows). A DECIMAL operation whose type DataFusion
//! caps at 38 digits (`DECIMAL(38, s) + 1`, products of wide decimals) is
//! wrapped in a check of its digits (`squall_decimal_fits`): Arrow fails only
//! past 128 bits, so such results could pass 38 digits, which no client reads
//! back right. Floats, dates and intervals are left as they are. A constant operation folds while planning as before, or,
//! when it overflows, fails when the query runs.

use std::sync::Arc;

use arrow::datatypes::{DECIMAL128_MAX_PRECISION, DataType};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::Operator;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;
use squall_core::trino_udfs::checked::{DECIMAL_FITS, is_checked_type, name_of};

/// Add the rule to `ctx`'s analyzer, after its type coercion.
pub fn register(ctx: &datafusion::prelude::SessionContext) -> Result<()> {
    ctx.add_analyzer_rule(Arc::new(CheckedArithmetic::new(ctx)?));
    Ok(())
}

/// The analyzer rule; `functions` are the session's checked functions,
/// found by name.
#[derive(Debug)]
pub struct CheckedArithmetic {
    functions: Vec<Arc<ScalarUDF>>,
    decimal_fits: Arc<ScalarUDF>,
}

impl CheckedArithmetic {
    /// The rule over the checked functions registered with `ctx`.
    pub fn new(ctx: &datafusion::prelude::SessionContext) -> Result<Self> {
        let state = ctx.state();
        let functions = [
            datafusion::logical_expr::Operator::Plus,
            datafusion::logical_expr::Operator::Minus,
            datafusion::logical_expr::Operator::Multiply,
        ]
        .iter()
        .filter_map(|op| name_of(*op))
        .map(|name| {
            state.scalar_functions().get(name).cloned().ok_or_else(|| {
                datafusion::error::DataFusionError::Internal(format!("{name} is not registered"))
            })
        })
        .collect::<Result<_>>()?;
        let decimal_fits = state
            .scalar_functions()
            .get(DECIMAL_FITS)
            .cloned()
            .ok_or_else(|| {
                datafusion::error::DataFusionError::Internal(format!(
                    "{DECIMAL_FITS} is not registered"
                ))
            })?;
        Ok(Self {
            functions,
            decimal_fits,
        })
    }

    fn function(&self, op: datafusion::logical_expr::Operator) -> Option<&Arc<ScalarUDF>> {
        let name = name_of(op)?;
        self.functions.iter().find(|f| f.name() == name)
    }
}

impl AnalyzerRule for CheckedArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            // The columns the node's expressions read: its inputs' (a join's
            // two sides together).
            let inputs = node.inputs();
            let mut schema = DFSchema::empty();
            for input in &inputs {
                schema.merge(input.schema());
            }
            let names = NamePreserver::new(&node);
            let mut changed = false;
            let rewritten = node.map_expressions(|e| {
                let name = names.save(&e);
                let (out, _) = self.rewrite(e, &schema, &mut changed)?;
                Ok(Transformed::new_transformed(name.restore(out), changed))
            })?;
            if rewritten.transformed {
                rewritten.data.recompute_schema().map(Transformed::yes)
            } else {
                Ok(rewritten)
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_checked_arithmetic"
    }
}

impl CheckedArithmetic {
    /// `e` with its integer operations checked, and its type where it was
    /// found on the way. Types are worked out bottom-up, once per node: a
    /// chain of 5,000 operators (the nesting ceiling) is one pass, where
    /// asking each node its type anew walked the chain below it again.
    fn rewrite(
        &self,
        e: Expr,
        schema: &DFSchema,
        changed: &mut bool,
    ) -> Result<(Expr, Option<DataType>)> {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let (left, lt) = self.rewrite(*left, schema, changed)?;
                let (right, rt) = self.rewrite(*right, schema, changed)?;
                let lt = lt.or_else(|| left.get_type(schema).ok());
                let rt = rt.or_else(|| right.get_type(schema).ok());
                let (Some(lt), Some(rt)) = (lt, rt) else {
                    return Ok((
                        Expr::BinaryExpr(BinaryExpr::new(Box::new(left), op, Box::new(right))),
                        None,
                    ));
                };
                if let Some(func) = self
                    .function(op)
                    .filter(|_| lt == rt && is_checked_type(&lt))
                {
                    *changed = true;
                    let call = ScalarFunction::new_udf(Arc::clone(func), vec![left, right]);
                    return Ok((Expr::ScalarFunction(call), Some(lt)));
                }
                let t = BinaryTypeCoercer::new(&lt, &op, &rt).get_result_type().ok();
                let e = Expr::BinaryExpr(BinaryExpr::new(Box::new(left), op, Box::new(right)));
                if let Some(DataType::Decimal128(DECIMAL128_MAX_PRECISION, _)) = t
                    && matches!(
                        op,
                        Operator::Plus
                            | Operator::Minus
                            | Operator::Multiply
                            | Operator::Divide
                            | Operator::Modulo
                    )
                {
                    *changed = true;
                    let call = ScalarFunction::new_udf(Arc::clone(&self.decimal_fits), vec![e]);
                    return Ok((Expr::ScalarFunction(call), t));
                }
                Ok((e, t))
            }
            // `-x` is `0 - x`: the negation of the type's least value overflows.
            Expr::Negative(inner) => {
                let (inner, t) = self.rewrite(*inner, schema, changed)?;
                let t = t.or_else(|| inner.get_type(schema).ok());
                let func = self.function(datafusion::logical_expr::Operator::Minus);
                match (t, func) {
                    (Some(t), Some(func)) if is_checked_type(&t) => {
                        *changed = true;
                        let zero = Expr::Literal(ScalarValue::new_zero(&t)?, None);
                        let call = ScalarFunction::new_udf(Arc::clone(func), vec![zero, inner]);
                        Ok((Expr::ScalarFunction(call), Some(t)))
                    }
                    (t, _) => Ok((Expr::Negative(Box::new(inner)), t)),
                }
            }
            other => {
                let out = other.map_children(|c| {
                    let (c, _) = self.rewrite(c, schema, changed)?;
                    Ok(Transformed::no(c))
                })?;
                Ok((out.data, None))
            }
        }
    }
}
