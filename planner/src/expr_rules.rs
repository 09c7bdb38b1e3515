//! The walk the expression-level analyzer rules share: every expression of
//! every node with one input (subqueries included), with that input's
//! schema to type it.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema};
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::{NamePreserver, SavedName};
use datafusion::logical_expr::{Expr, LogicalPlan, Projection};

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
    plan.transform_up_with_subqueries(|node| {
        let [input] = node.inputs()[..] else {
            return Ok(Transformed::no(node));
        };
        let schema = Arc::clone(input.schema());
        let before = Arc::clone(node.schema());
        let names = NamePreserver::new(&node);
        let rewritten = node.map_expressions(|e| {
            let name = saved_name(&names, &e);
            e.transform_up(|e| rewrite(e, &schema))
                .map(|t| t.update_data(|e| name.restore(e)))
        })?;
        if !rewritten.transformed {
            return Ok(rewritten);
        }
        rewritten.map_data(|node| named_as_before(&before, node.recompute_schema()?))
    })
    .map(|t| t.data)
}

/// The name `e` keeps through a rewrite: its own, but for a grouping set
/// (`ROLLUP (a, CAST(b AS BIGINT))`), which takes no alias (an aliased
/// one is an aggregation of other columns); its expressions' names are
/// given back by [`named_as_before`].
pub fn saved_name(names: &NamePreserver, e: &Expr) -> SavedName {
    match e {
        Expr::GroupingSet(_) => SavedName::None,
        e => names.save(e),
    }
}

/// `node`, an aggregation whose schema was `before` until an expression
/// of its grouping sets was rewritten and so renamed, under a projection
/// naming each column as before (other nodes as they are): the nodes
/// above read its columns by name.
pub fn named_as_before(before: &DFSchema, node: LogicalPlan) -> Result<LogicalPlan> {
    let after = Arc::clone(node.schema());
    type Field<'a> = (
        Option<&'a datafusion::common::TableReference>,
        &'a Arc<arrow::datatypes::Field>,
    );
    let same = |(q, f): Field, (bq, bf): Field| q == bq && f.name() == bf.name();
    if !matches!(node, LogicalPlan::Aggregate(_))
        || after.fields().len() != before.fields().len()
        || after.iter().zip(before.iter()).all(|(a, b)| same(a, b))
    {
        return Ok(node);
    }
    let exprs = after
        .iter()
        .zip(before.iter())
        .map(|(a, b)| {
            let column = Expr::Column(Column::new(a.0.cloned(), a.1.name()));
            match same(a, b) {
                true => column,
                false => column.alias_qualified(b.0.cloned(), b.1.name()),
            }
        })
        .collect::<Vec<_>>();
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(node),
    )?))
}
