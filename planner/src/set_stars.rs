//! `SELECT *` (or `t.*`) as a side of `EXCEPT ALL` / `INTERSECT ALL`,
//! written as the columns it stands for.
//!
//! squall counts the copies of each row on both sides of those operations
//! (`crate::standard_sql`, as DataFusion's drop every copy), which names
//! the sides' columns; a `*` names none, and such a statement was refused
//! ("name the columns"). Each such side is planned on its own, with the
//! WITH clauses of the queries around it, for the columns of its plan, and its select list
//! is written as them (`"t"."x", "t"."y"`). A side that does not plan on
//! its own (a function DataFusion does not know) is left as it is, and
//! the statement is refused as before.
//!
//! A `*` beside other items of a select list naming one of its columns
//! again (`SELECT *, n_name FROM nation`, `SELECT t.*, CAST(t.x AS DOUBLE)
//! FROM t`), which DataFusion refuses ("Projections require unique
//! expression names") and Trino answers, is written as its columns the
//! same way, planned over the select's FROM, when the statement did not
//! plan ([`expand_beside_items`]): the later item is then named apart
//! (`n_name_2`, `crate::select_names`).

use std::collections::VecDeque;
use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Cte, Query, SelectItem, SetExpr, VisitorMut, With};

/// `statement` with the `*` sides of its `EXCEPT ALL` and `INTERSECT ALL`
/// written as their columns, where they plan on their own.
pub async fn expand(state: &SessionState, statement: Statement) -> Result<Statement> {
    expanded(state, statement, false).await
}

/// `statement` with each `*` of a select list holding other items too
/// written as its columns, where it plans on its own.
pub async fn expand_beside_items(state: &SessionState, statement: Statement) -> Result<Statement> {
    expanded(state, statement, true).await
}

async fn expanded(state: &SessionState, statement: Statement, beside: bool) -> Result<Statement> {
    let mut found = Sides {
        texts: Vec::new(),
        columns: None,
        withs: Vec::new(),
        beside,
    };
    let statement = crate::trino_sql::rewritten(statement, &mut found)?;
    if found.texts.is_empty() {
        return Ok(statement);
    }
    let mut columns = VecDeque::new();
    for text in &found.texts {
        columns.push_back(columns_of(state, text).await);
    }
    let mut replace = Sides {
        texts: Vec::new(),
        columns: Some(columns),
        withs: Vec::new(),
        beside,
    };
    crate::trino_sql::rewritten(statement, &mut replace)
}

/// The columns of the query `text` as select items, or None where it does
/// not plan on its own.
async fn columns_of(state: &SessionState, text: &str) -> Option<Vec<SelectItem>> {
    let mut statements = crate::trino_sql::statements(text).ok()?;
    let plan = state
        .statement_to_plan(statements.pop_front()?)
        .await
        .ok()?;
    plan.schema()
        .iter()
        .map(|(qualifier, field)| {
            let name = format!("\"{}\"", field.name().replace('"', "\"\""));
            let column = match qualifier {
                Some(q) => format!("{}.{name}", q.to_quoted_string()),
                None => name,
            };
            crate::trino_sql::expression(&column, "a column of a `*`")
                .ok()
                .map(SelectItem::UnnamedExpr)
        })
        .collect()
}

/// Finds the `*` sides (without `columns`), or writes them as the columns
/// found for them, in the same order (with).
struct Sides {
    texts: Vec<String>,
    columns: Option<VecDeque<Option<Vec<SelectItem>>>>,
    /// The WITH clauses of the queries being visited, outermost first.
    withs: Vec<Option<With>>,
    /// The `*` items beside other items of select lists, rather than the
    /// sides of EXCEPT / INTERSECT ALL.
    beside: bool,
}

impl Sides {
    /// Each `*` of a select list (of `body` or of its set operations'
    /// sides) that has other items too.
    fn visit_beside(&mut self, body: &mut SetExpr, with: &str) {
        let select = match body {
            SetExpr::Select(select) => select,
            SetExpr::SetOperation { left, right, .. } => {
                self.visit_beside(left, with);
                self.visit_beside(right, with);
                return;
            }
            _ => return,
        };
        let star = |item: &SelectItem| {
            matches!(
                item,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        };
        if select.from.is_empty()
            || select.projection.iter().all(star)
            || !select.projection.iter().any(star)
        {
            return;
        }
        let from: Vec<String> = select.from.iter().map(|t| t.to_string()).collect();
        let from = from.join(", ");
        let mut items = Vec::new();
        for item in std::mem::take(&mut select.projection) {
            if !star(&item) {
                items.push(item);
                continue;
            }
            match &mut self.columns {
                None => {
                    self.texts.push(format!("{with}SELECT {item} FROM {from}"));
                    items.push(item);
                }
                Some(columns) => match columns.pop_front() {
                    Some(Some(found)) => items.extend(found),
                    _ => items.push(item),
                },
            }
        }
        select.projection = items;
    }

    fn visit_sides(&mut self, body: &mut SetExpr, with: &str) {
        // Never fails: the sides are only read or given their columns.
        let _ = crate::standard_sql::each_counting_copies(body, &mut |_, left, right| {
            for side in [left, right] {
                let SetExpr::Select(select) = side else {
                    continue;
                };
                let only_stars = !select.projection.is_empty()
                    && select.projection.iter().all(|item| {
                        matches!(
                            item,
                            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
                        )
                    });
                if !only_stars {
                    continue;
                }
                match &mut self.columns {
                    None => self.texts.push(format!("{with}{select}")),
                    Some(columns) => {
                        if let Some(Some(items)) = columns.pop_front() {
                            select.projection = items;
                        }
                    }
                }
            }
            Ok(None)
        });
    }
}

impl Sides {
    /// The WITH clause the enclosing queries give a side: their common
    /// table expressions, an inner one over an outer one of its name.
    fn with_clause(&self) -> String {
        let mut ctes: Vec<&Cte> = Vec::new();
        let mut recursive = false;
        for with in self.withs.iter().flatten() {
            recursive |= with.recursive;
            for cte in &with.cte_tables {
                ctes.retain(|c| c.alias.name != cte.alias.name);
                ctes.push(cte);
            }
        }
        if ctes.is_empty() {
            return String::new();
        }
        let list: Vec<String> = ctes.iter().map(|c| c.to_string()).collect();
        let recursive = if recursive { "RECURSIVE " } else { "" };
        format!("WITH {recursive}{} ", list.join(", "))
    }
}

impl VisitorMut for Sides {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        self.withs.push(query.with.clone());
        let with = self.with_clause();
        if self.beside {
            self.visit_beside(&mut query.body, &with);
        } else {
            self.visit_sides(&mut query.body, &with);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<DataFusionError> {
        self.withs.pop();
        ControlFlow::Continue(())
    }
}
