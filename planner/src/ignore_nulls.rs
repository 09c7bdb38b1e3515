//! A window function called with `IGNORE NULLS` (`lag`, `lead`,
//! `first_value`, `last_value`, `nth_value`) is planned as squall's
//! variant of it that ignores NULLs whatever a stage plan says
//! (`squall_core::window_flags`): DataFusion drops `IGNORE NULLS` of these
//! functions from a physical plan's protobuf, so tasks answered as if NULLs
//! were respected. The call keeps its name (`lag(x) IGNORE NULLS ...`).
//! A negative offset of `lag` or `lead` is refused, as Trino refuses it.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::expr::{NullTreatment, WindowFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{Expr, LogicalPlan, WindowUDF};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;
use squall_core::window_flags::{FUNCTIONS, ignoring_nulls};

use crate::expr_rules::transform_exprs;

/// Add the rule to `ctx`'s analyzer, over the functions registered with it.
pub fn register(ctx: &SessionContext) {
    let state = ctx.state();
    let functions = FUNCTIONS
        .iter()
        .filter_map(|f| {
            let wrapped = state.window_functions().get(&ignoring_nulls(f))?;
            Some((f.to_string(), Arc::clone(wrapped)))
        })
        .collect();
    ctx.add_analyzer_rule(Arc::new(IgnoreNulls { functions }));
}

#[derive(Debug)]
struct IgnoreNulls {
    /// Each function and its form that ignores NULLs.
    functions: Vec<(String, Arc<WindowUDF>)>,
}

/// `lag` and `lead` refuse a negative offset, as Trino's do (DataFusion's
/// `lag(x, -1)` answered `lead(x, 1)`'s values, silently).
fn check_offset(function: &str, args: &[Expr]) -> Result<()> {
    use datafusion::common::ScalarValue;
    if !matches!(function, "lag" | "lead") {
        return Ok(());
    }
    let compares_to_zero = |value: &ScalarValue, sign: std::cmp::Ordering| {
        !value.is_null()
            && ScalarValue::new_zero(&value.data_type())
                .is_ok_and(|zero| value.partial_cmp(&zero) == Some(sign))
    };
    let negative = match args.get(1) {
        Some(Expr::Literal(value, _)) => compares_to_zero(value, std::cmp::Ordering::Less),
        // `-1` as the parser may leave it: the negation of a positive literal.
        Some(Expr::Negative(inner)) => matches!(
            inner.as_ref(),
            Expr::Literal(value, _) if compares_to_zero(value, std::cmp::Ordering::Greater)
        ),
        _ => false,
    };
    match negative {
        true => Err(datafusion::error::DataFusionError::Plan(format!(
            "{function}: offset must be at least 0"
        ))),
        false => Ok(()),
    }
}

impl AnalyzerRule for IgnoreNulls {
    fn name(&self) -> &str {
        "squall_ignore_nulls"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        transform_exprs(plan, |e, _| {
            let Expr::WindowFunction(w) = &e else {
                return Ok(Transformed::no(e));
            };
            let WindowFunctionDefinition::WindowUDF(fun) = &w.fun else {
                return Ok(Transformed::no(e));
            };
            check_offset(fun.name(), &w.params.args)?;
            if w.params.null_treatment != Some(NullTreatment::IgnoreNulls) {
                return Ok(Transformed::no(e));
            }
            let Some((_, wrapped)) = self.functions.iter().find(|(n, _)| n == fun.name()) else {
                return Ok(Transformed::no(e));
            };
            let Expr::WindowFunction(w) = e else {
                unreachable!("matched above");
            };
            let WindowFunction { params, .. } = *w;
            Ok(Transformed::yes(Expr::WindowFunction(Box::new(
                WindowFunction {
                    fun: WindowFunctionDefinition::WindowUDF(Arc::clone(wrapped)),
                    params,
                },
            ))))
        })
    }
}
