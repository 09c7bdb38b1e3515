//! Statements DataFusion refuses to plan, planned again as SQL it takes
//! and that means the same; only when the first plan fails, so statements
//! that plan keep DataFusion's plan and names.
//!
//! - Two select items named alike though their text differs (DataFusion
//!   names a cast by what it casts, so `x / 7` and `CAST(x AS DOUBLE) / 7`
//!   are one name to it, and `position('A' IN s)` is its `strpos(s, 'A')`):
//!   every unnamed item is named by its own text (`crate::select_names`);
//!   so is a scalar subquery's item named as a column beside it. A `*`
//!   beside an item naming one of its columns again is written as its
//!   columns first (`crate::set_stars`).
//! - A correlated scalar subquery that is not an aggregate, `(SELECT r_name
//!   FROM region WHERE r_regionkey = n_regionkey)`: DataFusion plans only
//!   aggregates ("Correlated scalar subquery must be aggregated", found
//!   when the plan is analyzed, so squall looks for one in the plan), Trino
//!   and DuckDB take any and fail a query whose subquery finds two rows. Its
//!   one item becomes `squall_scalar_subquery(item)`, the aggregate that
//!   yields the one value (NULL for none) and fails with a second row; with
//!   `ORDER BY ... LIMIT 1` (the first row of each), `first_value(item ORDER
//!   BY ...)` (`correlated_scalar`).

use datafusion::error::Result;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement;

use crate::trino_functions::SessionIdentity;

/// `statement`'s plan as Trino would read it: SHOW statements squall
/// answers as queries, Trino's SQL written as DataFusion's, then [`plan`];
/// if that fails, once more with its quoted names in lowercase
/// (`crate::quoted_names`), the first error standing if that fails too.
pub async fn plan_as_trino(
    ctx: &SessionContext,
    state: &SessionState,
    statement: Statement,
    identity: &SessionIdentity,
) -> Result<LogicalPlan> {
    match rewritten_and_planned(ctx, state, statement.clone(), identity).await {
        Err(e) => match crate::quoted_names::lowercased(&statement)? {
            Some(lowered) => rewritten_and_planned(ctx, state, lowered, identity)
                .await
                .map_err(|_| e),
            None => Err(e),
        },
        planned => planned,
    }
}

/// `statement`'s plan: SHOW statements squall answers as queries, Trino's
/// SQL written as DataFusion's, then DataFusion's plan.
async fn rewritten_and_planned(
    ctx: &SessionContext,
    state: &SessionState,
    statement: Statement,
    identity: &SessionIdentity,
) -> Result<LogicalPlan> {
    let statement = crate::engine::show_as_query(ctx, statement).await?;
    let statement = crate::empty_select::check(statement)?;
    let statement = crate::set_stars::expand(state, statement).await?;
    let statement = crate::standard_sql::rewrite(statement)?;
    let statement = crate::at_time_zone::rewrite(statement)?;
    let statement = crate::table_sample::rewrite(statement)?;
    let statement = crate::varchar_length::rewrite(statement)?;
    let statement = crate::window_names::rewrite(statement)?;
    let statement = crate::window_filter::rewrite(statement)?;
    let statement = crate::like_escape::rewrite(statement)?;
    let statement = crate::grouping_repeats::rewrite(statement)?;
    let statement = crate::using_joins::rewrite(statement)?;
    let statement = crate::lateral_unnest::rewrite(statement)?;
    let statement = crate::select_names::rewrite(statement)?;
    let statement = crate::timestamp_literals::rewrite(statement)?;
    let statement = crate::decimal_literals::rewrite(statement)?;
    let catalog = &state.config_options().catalog;
    let existing = ctx
        .catalog(&catalog.default_catalog)
        .map(|c| c.schema_names())
        .unwrap_or_default();
    let statement = crate::session_schema::rewrite(
        statement,
        &catalog.default_schema,
        crate::session_schema::renamed(identity.schema.as_deref(), &existing),
    )?;
    let statement = crate::trino_functions::rewrite(
        statement,
        identity,
        &catalog.default_catalog,
        &catalog.default_schema,
    )?;
    plan(state, statement).await
}

/// `statement`'s plan, planned again as above where DataFusion refused it.
pub async fn plan(state: &SessionState, statement: Statement) -> Result<LogicalPlan> {
    let (statement, plan) = match state.statement_to_plan(statement.clone()).await {
        Err(e) if names_clash(&e.to_string()) => {
            let named = crate::select_names::name_every_item(statement.clone())?;
            match state.statement_to_plan(named.clone()).await {
                Ok(plan) => (named, plan),
                // A `*` and an item naming one of its columns again.
                Err(e) if names_clash(&e.to_string()) => {
                    let expanded = crate::set_stars::expand_beside_items(state, statement).await?;
                    let named = crate::select_names::name_every_item(expanded)?;
                    let plan = state.statement_to_plan(named.clone()).await?;
                    (named, plan)
                }
                Err(e) => return Err(e),
            }
        }
        planned => (statement, planned?),
    };
    if !has_correlated_scalar(&plan) {
        return Ok(plan);
    }
    let rewritten = crate::correlated_scalar::rewrite(statement, &|name| {
        state.aggregate_functions().contains_key(name)
            || state.window_functions().contains_key(name)
    })?;
    // Where there was nothing to rewrite (TPC-H's correlated subqueries are
    // aggregates), or the rewritten statement does not plan, the first plan
    // goes on (to fail with DataFusion's own message if it must).
    match rewritten {
        Some(rewritten) => Ok(state.statement_to_plan(rewritten).await.unwrap_or(plan)),
        None => Ok(plan),
    }
}

/// Whether DataFusion refused a statement for names it gave two select
/// items: alike, or a column's and a scalar subquery's (`SELECT t.x,
/// (SELECT u.x ...)`, which it names `x`: "qualified field name t.x and
/// unqualified field name x").
fn names_clash(error: &str) -> bool {
    error.contains("Projections require unique expression names")
        || (error.contains("Schema contains qualified field name")
            && error.contains("would be ambiguous"))
}

/// Whether a scalar subquery of `plan` (at any depth) refers to the rows
/// around it.
fn has_correlated_scalar(plan: &LogicalPlan) -> bool {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::Expr;
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarSubquery(s) = e
                    && !s.outer_ref_columns.is_empty()
                {
                    found = true;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(match found {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    });
    found
}
