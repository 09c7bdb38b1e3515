//! `DELETE` and `UPDATE` whose WHERE holds a subquery (`DELETE FROM t
//! WHERE k IN (SELECT k FROM staged)`, dbt's delete+insert), on a table
//! created in this process.
//!
//! DataFusion 55 hands a table's delete and update only the plain filters
//! above its scan: a subquery, planned as a join, is left out, and the
//! statement changed every row (a `DELETE ... WHERE k IN (SELECT ...)`
//! emptied the table). squall computes such a statement itself: each row
//! with the WHERE clause's value as a column (`CASE WHEN p THEN 1 ELSE 0
//! END`, which DataFusion plans with subqueries, see
//! [`crate::exists_value`]) and the new values of the assigned columns,
//! then keeps the rows it does not delete, and puts them in the table's
//! place. A statement without a subquery is DataFusion's.

use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow::compute::{filter_record_batch, kernels::cmp::eq};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::planner::object_name_to_table_reference;
use datafusion::sql::sqlparser::ast::{
    AssignmentTarget, Expr, FromTable, ObjectName, Statement as Sql, TableFactor, TableWithJoins,
    Visit, Visitor,
};

use datafusion::prelude::SessionContext;

use super::Outcome;
use crate::result_stream::StreamedResult;

/// The column holding whether a row matches the WHERE clause.
const HIT: &str = "__squall_dml_hit";

/// What a DELETE or UPDATE asks, when its WHERE holds a subquery.
struct Change<'a> {
    table: &'a ObjectName,
    alias: Option<String>,
    selection: &'a Expr,
    /// `None` for DELETE; the assignments of UPDATE.
    assignments: Option<Vec<(String, String)>>,
}

/// A DELETE or UPDATE whose WHERE holds a subquery, done here; `None`
/// for any other statement.
pub(super) async fn change_with_subquery(
    ctx: &SessionContext,
    statement: &Statement,
) -> Option<Result<Outcome>> {
    let Statement::Statement(sql) = statement else {
        return None;
    };
    let change = match sql.as_ref() {
        Sql::Delete(delete) => {
            let tables = match &delete.from {
                FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
            };
            let ([from], Some(selection), None, true) = (
                tables.as_slice(),
                delete.selection.as_ref(),
                delete.using.as_ref(),
                delete.tables.is_empty(),
            ) else {
                return None;
            };
            let (table, alias) = named(from)?;
            Change {
                table,
                alias,
                selection,
                assignments: None,
            }
        }
        Sql::Update(update) => {
            let (Some(selection), None) = (update.selection.as_ref(), update.from.as_ref()) else {
                return None;
            };
            let (table, alias) = named(&update.table)?;
            let mut assignments = Vec::new();
            for a in &update.assignments {
                let AssignmentTarget::ColumnName(column) = &a.target else {
                    return None;
                };
                let column = column.0.last()?.as_ident()?.value.clone();
                assignments.push((column, a.value.to_string()));
            }
            Change {
                table,
                alias,
                selection,
                assignments: Some(assignments),
            }
        }
        _ => return None,
    };
    if !has_subquery(change.selection) {
        return None;
    }
    Some(change_rows(ctx, change).await)
}

async fn change_rows(ctx: &SessionContext, change: Change<'_>) -> Result<Outcome> {
    let reference = object_name_to_table_reference(change.table.clone(), true)?;
    let table = ctx.table_provider(reference.clone()).await?;
    if !(table.as_ref() as &dyn std::any::Any).is::<MemTable>() {
        return Err(DataFusionError::Plan(format!(
            "{} of '{reference}' with a subquery in its WHERE: squall changes only the \
                 tables created with CREATE TABLE in this process",
            if change.assignments.is_some() {
                "UPDATE"
            } else {
                "DELETE"
            }
        )));
    }
    let schema = table.schema();
    let quoted = |c: &str| format!("\"{}\"", c.replace('"', "\"\""));
    let name = change.alias.clone().unwrap_or_else(|| {
        change
            .table
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.to_string())
            .unwrap_or_default()
    });
    let columns: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| {
                let column = quoted(f.name());
                let assigned = change
                    .assignments
                    .iter()
                    .flatten()
                    .find(|(c, _)| c.eq_ignore_ascii_case(f.name()));
                match assigned {
                    Some((_, value)) => format!(
                        "CASE WHEN {HIT} = 1 THEN arrow_cast(({value}), '{}') ELSE {column} END AS {column}",
                        f.data_type()
                    ),
                    None => column,
                }
            })
            .collect();
    let alias = change
        .alias
        .as_ref()
        .map(|a| format!(" AS {a}"))
        .unwrap_or_default();
    let sql = format!(
        "SELECT {}, {HIT} FROM (SELECT *, CASE WHEN {} THEN 1 ELSE 0 END AS {HIT} \
             FROM {}{alias}) AS {name}",
        columns.join(", "),
        change.selection,
        change.table,
    );
    // Parsed as squall parses the statement itself: the condition and the
    // values are the user's expressions written back as text.
    let statement = crate::trino_sql::statements(&sql)?
        .pop_front()
        .ok_or_else(|| DataFusionError::Internal(format!("rewriting a change: {sql}")))?;
    let plan = ctx.state().statement_to_plan(statement).await?;
    let frame = ctx.execute_logical_plan(plan).await?;
    let (_, batches) = super::here::collect_paced(frame).await?;
    let (mut kept, mut changed) = (Vec::new(), 0u64);
    for batch in batches {
        let hit = batch.column(batch.num_columns() - 1);
        let hit = hit
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or_else(|| DataFusionError::Internal("the WHERE's value is not BIGINT".into()))?;
        let matched = eq(hit, &Int64Array::new_scalar(1))?;
        changed += matched.true_count() as u64;
        let data = batch.project(&(0..batch.num_columns() - 1).collect::<Vec<_>>())?;
        let data = if change.assignments.is_some() {
            data
        } else {
            filter_record_batch(&data, &arrow::compute::not(&matched)?)?
        };
        let columns: Vec<ArrayRef> = data.columns().to_vec();
        kept.push(RecordBatch::try_new(Arc::clone(&schema), columns)?);
    }
    let replacement = MemTable::try_new(Arc::clone(&schema), vec![kept])?;
    ctx.deregister_table(reference.clone())?;
    ctx.register_table(reference, Arc::new(replacement))?;
    // Trino's answer to a change, as the engine gives DataFusion's own.
    let count = Arc::new(Schema::new(vec![Field::new(
        "rows",
        DataType::Int64,
        false,
    )]));
    let batch = RecordBatch::try_new(
        Arc::clone(&count),
        vec![Arc::new(Int64Array::from(vec![changed as i64]))],
    )?;
    Ok(Outcome::Finished(StreamedResult::memory(
        count,
        vec![batch],
    )))
}

/// The table a DELETE or UPDATE names (no join), and its alias.
fn named(from: &TableWithJoins) -> Option<(&ObjectName, Option<String>)> {
    match (&from.relation, from.joins.is_empty()) {
        (TableFactor::Table { name, alias, .. }, true) => {
            Some((name, alias.as_ref().map(|a| a.name.to_string())))
        }
        _ => None,
    }
}

fn has_subquery(expr: &Expr) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    expr.visit(&mut Finder).is_break()
}
