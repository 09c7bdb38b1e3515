//! The walk the expression-level analyzer rules share: every expression of
//! every node with one input (subqueries included), with that input's
//! schema to type it.

use datafusion::common::DFSchema;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlan};

/// Calls `check` on every expression (and sub-expression) of `plan`'s
/// one-input nodes; its first error is the walk's.
pub fn check_exprs(
    plan: &LogicalPlan,
    check: impl Fn(&Expr, &DFSchema) -> Result<()>,
) -> Result<()> {
    plan.apply_with_subqueries(|node| {
        let [input] = node.inputs()[..] else {
            return Ok(TreeNodeRecursion::Continue);
        };
        let schema = input.schema();
        node.apply_expressions(|e| {
            e.apply(|e| {
                check(e, schema)?;
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    Ok(())
}

/// `plan` with every expression of its one-input nodes rewritten bottom up
/// by `rewrite`. A rewritten expression keeps the name it had (as
/// DataFusion's type coercion keeps it), so the nodes above that read it
/// by name still find it: `count(*) FILTER (WHERE d > 0.5)` of a DOUBLE
/// `d` names the aggregate's column, and a cast inside it would rename it.
pub fn transform_exprs(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    use datafusion::logical_expr::expr_rewriter::NamePreserver;
    plan.transform_up_with_subqueries(|node| {
        let [input] = node.inputs()[..] else {
            return Ok(Transformed::no(node));
        };
        let schema = std::sync::Arc::clone(input.schema());
        let names = NamePreserver::new(&node);
        let rewritten = node.map_expressions(|e| {
            let name = names.save(&e);
            e.transform_up(|e| rewrite(e, &schema))
                .map(|t| t.update_data(|e| name.restore(e)))
        })?;
        if !rewritten.transformed {
            return Ok(rewritten);
        }
        rewritten.map_data(|node| node.recompute_schema())
    })
    .map(|t| t.data)
}
