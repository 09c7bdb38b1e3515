//! `count(DISTINCT x)` of a row, array or map (`count(DISTINCT (a, b))`,
//! `count(DISTINCT tags)`) counts `squall_distinct_key(x)`, the value as
//! bytes equal exactly when the values are
//! (`squall_core::trino_udfs::distinct_key`). DataFusion counts nested
//! values in a set of scalars whose reported size counts, for each value,
//! the whole batch it was cut from: `count(*), count(DISTINCT (l_orderkey,
//! l_linenumber))` over 60,000 rows asked for 43 GB and failed its query
//! on the memory budget. The aggregate keeps its name.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

use crate::expr_rules::transform_exprs;

pub fn register(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(DistinctKeys));
}

#[derive(Debug, Default)]
struct DistinctKeys;

impl AnalyzerRule for DistinctKeys {
    fn name(&self) -> &str {
        "squall_distinct_keys"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let key = Arc::new(squall_core::trino_udfs::distinct_key::function());
        transform_exprs(plan, |e, schema| {
            let Expr::AggregateFunction(AggregateFunction { func, params }) = &e else {
                return Ok(Transformed::no(e));
            };
            let nested = |arg: &Expr| {
                matches!(
                    arg.get_type(schema),
                    Ok(DataType::Struct(_)
                        | DataType::List(_)
                        | DataType::LargeList(_)
                        | DataType::FixedSizeList(..)
                        | DataType::Map(..))
                )
            };
            if func.name() != "count"
                || !params.distinct
                || params.args.len() != 1
                || !nested(&params.args[0])
            {
                return Ok(Transformed::no(e));
            }
            let Expr::AggregateFunction(AggregateFunction { func, mut params }) = e else {
                unreachable!("matched above")
            };
            let arg = params.args.remove(0);
            params.args.push(key.call(vec![arg]));
            Ok(Transformed::yes(Expr::AggregateFunction(
                AggregateFunction { func, params },
            )))
        })
    }
}
