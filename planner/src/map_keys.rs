//! A map's value looked up by a key of another string type: `m['k']`
//! (`get_field`) and `map_extract(m, 'k')` over a map built from a string
//! column, whose keys are `Utf8View` while the literal is `Utf8`.
//! DataFusion compares them as they are and fails at run time ("Invalid
//! comparison operation: Utf8 == Utf8View"); this rule casts the key to the
//! map's key type when both are strings (`map_agg(name, n)['CHINA']`).
//! And `m[k]` (`element_at(m, k)`) of a key that is not a constant, a
//! column or an expression of the row, which DataFusion's `get_field`
//! refuses ("requires all field_name arguments to be scalars", after four
//! attempts of the task): the first of `map_extract(m, k)`, NULL where the
//! map has no such key, as Trino's `element_at`.

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::functions_nested::expr_fn::{array_element, map_extract};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, cast, lit};
use datafusion::optimizer::AnalyzerRule;

#[derive(Debug, Default)]
pub struct MapKeyTypes;

impl AnalyzerRule for MapKeyTypes {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::expr_rules::transform_exprs(plan, |e, schema| match e {
            Expr::ScalarFunction(mut f)
                if matches!(f.func.name(), "get_field" | "map_extract") && f.args.len() == 2 =>
            {
                let (Ok(DataType::Map(entries, _)), Ok(given)) =
                    (f.args[0].get_type(schema), f.args[1].get_type(schema))
                else {
                    return Ok(Transformed::no(Expr::ScalarFunction(f)));
                };
                let key = match entries.data_type() {
                    DataType::Struct(fields) => fields.first().map(|k| k.data_type().clone()),
                    _ => None,
                };
                let recast = matches!(&key, Some(key) if *key != given && is_string(key) && is_string(&given));
                let by_value =
                    f.func.name() == "get_field" && !matches!(f.args[1], Expr::Literal(..));
                if !recast && !by_value {
                    return Ok(Transformed::no(Expr::ScalarFunction(f)));
                }
                if let (true, Some(key)) = (recast, key) {
                    let k = f.args.pop().map(|k| cast(k, key));
                    f.args.extend(k);
                }
                if by_value {
                    // `m[k]` of a key per row: its value in the map
                    // (`get_field` takes a constant name only).
                    let mut args = f.args.into_iter();
                    let (m, k) = (args.next(), args.next());
                    if let (Some(m), Some(k)) = (m, k) {
                        return Ok(Transformed::yes(array_element(
                            map_extract(m, k),
                            lit(1_i64),
                        )));
                    }
                    return Err(datafusion::error::DataFusionError::Internal(
                        "a map lookup of two arguments".into(),
                    ));
                }
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(f.func, f.args),
                )))
            }
            e => Ok(Transformed::no(e)),
        })
    }

    fn name(&self) -> &str {
        "squall_map_key_types"
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}
