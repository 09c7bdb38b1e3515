//! `lag`, `lead`, `first_value`, `last_value` and `nth_value` that keep
//! their `IGNORE NULLS` and their direction in a stage plan.
//!
//! DataFusion 55 writes neither into a physical plan's protobuf for these
//! window functions: a task decoding its stage plan answered as if NULLs
//! were respected (`lag(x) IGNORE NULLS OVER (ORDER BY k)` was NULL after
//! every NULL), and where the optimizer computes a window in the reverse
//! order (to share a sort with `... ORDER BY k DESC`), `lag` answered
//! `lead`'s values and `nth_value(x, 2)` the second from the end, silently.
//!
//! So the functions are registered under their own names as themselves
//! with both flags read from the function rather than from the plan
//! (false), and their variants under names of their own:
//! `squall_lag_reversed`, `squall_lag_ignore_nulls`,
//! `squall_lag_reversed_ignore_nulls`, ... A reversed function is the
//! variant (the reverse of `lag` is `squall_lag_reversed`, which DataFusion
//! writes `lag` with its direction flag), and the planner
//! (`squall_planner::ignore_nulls`) names a call with `IGNORE NULLS` by its
//! variant; a stage plan names them, and a worker finds them in its own
//! registry, as the engine registers them.

use std::sync::Arc;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::function::{
    ExpressionArgs, PartitionEvaluatorArgs, WindowFunctionSimplification, WindowUDFFieldArgs,
};
use datafusion::logical_expr::{
    Documentation, LimitEffect, PartitionEvaluator, ReversedUDWF, Signature, WindowUDF,
    WindowUDFImpl,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;

/// The window functions whose flags are kept.
pub const FUNCTIONS: [&str; 5] = ["lag", "lead", "first_value", "last_value", "nth_value"];

/// The name of `function` with NULLs ignored.
pub fn ignoring_nulls(function: &str) -> String {
    name(function, false, true)
}

fn name(function: &str, reversed: bool, ignore_nulls: bool) -> String {
    match (reversed, ignore_nulls) {
        (false, false) => function.to_string(),
        (true, false) => format!("squall_{function}_reversed"),
        (false, true) => format!("squall_{function}_ignore_nulls"),
        (true, true) => format!("squall_{function}_reversed_ignore_nulls"),
    }
}

/// Register the functions and their variants with `ctx`, over the window
/// functions DataFusion registered with it (once: a second call finds them
/// registered).
pub fn register(ctx: &SessionContext) {
    let state = ctx.state();
    let originals: Vec<_> = FUNCTIONS
        .iter()
        .filter_map(|name| state.window_functions().get(*name).cloned())
        .filter(|f| !f.inner().is::<Flagged>())
        .collect();
    for original in originals {
        for reversed in [false, true] {
            for ignore_nulls in [false, true] {
                ctx.register_udwf(flagged(Arc::clone(&original), reversed, ignore_nulls));
            }
        }
    }
}

fn flagged(original: Arc<WindowUDF>, reversed: bool, ignore_nulls: bool) -> WindowUDF {
    let name = name(original.name(), reversed, ignore_nulls);
    WindowUDF::new_from_impl(Flagged {
        original,
        name,
        reversed,
        ignore_nulls,
    })
}

/// DataFusion's window function `original` with the direction and NULL
/// treatment it has.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Flagged {
    original: Arc<WindowUDF>,
    name: String,
    reversed: bool,
    ignore_nulls: bool,
}

impl WindowUDFImpl for Flagged {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        self.original.signature()
    }

    fn expressions(&self, expr_args: ExpressionArgs) -> Vec<Arc<dyn PhysicalExpr>> {
        self.original.expressions(expr_args)
    }

    /// The evaluator of the original with this function's flags (NULLs are
    /// ignored where the plan says so too: a plan not yet encoded).
    fn partition_evaluator(
        &self,
        args: PartitionEvaluatorArgs,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        self.original
            .partition_evaluator_factory(PartitionEvaluatorArgs::new(
                args.input_exprs(),
                args.input_fields(),
                self.reversed,
                self.ignore_nulls || args.ignore_nulls(),
            ))
    }

    fn simplify(&self) -> Option<WindowFunctionSimplification> {
        self.original.simplify()
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        self.original.field(field_args)
    }

    fn sort_options(&self) -> Option<arrow::compute::SortOptions> {
        self.original.sort_options()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.original.coerce_types(arg_types)
    }

    /// The original's reverse (`lag`'s is `lag` backwards, `first_value`'s
    /// `last_value`), the other direction, NULLs treated alike.
    fn reverse_expr(&self) -> ReversedUDWF {
        match self.original.reverse_expr() {
            ReversedUDWF::Reversed(reverse) => ReversedUDWF::Reversed(Arc::new(flagged(
                reverse,
                !self.reversed,
                self.ignore_nulls,
            ))),
            other => other,
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.original.documentation()
    }

    fn limit_effect(&self, args: &[Arc<dyn PhysicalExpr>]) -> LimitEffect {
        self.original.inner().limit_effect(args)
    }
}
