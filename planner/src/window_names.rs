//! Named windows (`WINDOW w AS (PARTITION BY k ORDER BY o)`) as every
//! window call refers to them: `OVER w`, `OVER (w)`, and `OVER (w ROWS
//! BETWEEN ...)`, which refines `w` with a frame (or an ORDER BY where `w`
//! has none), as the SQL standard, Trino, PostgreSQL and DuckDB read it.
//! DataFusion dropped the named window of `OVER (w ...)`: `sum(n) OVER (w)`
//! summed the whole table and `last_value(n) OVER (w ROWS BETWEEN CURRENT
//! ROW AND UNBOUNDED FOLLOWING)` took the table's last row, silently. Each
//! reference is written as the window it means, the definitions (which may
//! refer to one another: `WINDOW w2 AS (w1 ORDER BY o)`) resolved first; a
//! name no definition has, or a refinement the standard forbids (a
//! PARTITION BY, or an ORDER BY where the named window has one), is an
//! error naming it.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, NamedWindowExpr, Query, Select, SetExpr, VisitorMut, WindowSpec, WindowType,
    visit_expressions_mut,
};

/// `statement` with every reference to a named window written as its
/// window.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Windows)
}

struct Windows;

impl VisitorMut for Windows {
    type Break = DataFusionError;

    // After the query's subqueries (post-order): their references are
    // written by then, so a name met here is this query's.
    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        let order_by = query.order_by.as_mut();
        match resolve_body(&mut query.body, order_by) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

fn resolve_body(
    body: &mut SetExpr,
    order_by: Option<&mut datafusion::sql::sqlparser::ast::OrderBy>,
) -> Result<()> {
    match body {
        SetExpr::Select(select) => resolve_select(select, order_by),
        SetExpr::SetOperation { left, right, .. } => {
            resolve_body(left, None)?;
            resolve_body(right, None)
        }
        _ => Ok(()),
    }
}

fn resolve_select(
    select: &mut Select,
    order_by: Option<&mut datafusion::sql::sqlparser::ast::OrderBy>,
) -> Result<()> {
    if select.named_window.is_empty() {
        return Ok(());
    }
    let windows = definitions(select)?;
    let mut failed = None;
    let mut write = |e: &mut Expr| {
        if let Expr::Function(f) = e
            && let Some(over) = &mut f.over
        {
            match written(over, &windows) {
                Ok(Some(spec)) => *over = WindowType::WindowSpec(spec),
                Ok(None) => {}
                Err(err) => failed = Some(err),
            }
        }
        ControlFlow::<()>::Continue(())
    };
    for item in &mut select.projection {
        let _ = visit_expressions_mut(item, &mut write);
    }
    if let Some(having) = &mut select.having {
        let _ = visit_expressions_mut(having, &mut write);
    }
    if let Some(qualify) = &mut select.qualify {
        let _ = visit_expressions_mut(qualify, &mut write);
    }
    if let Some(order_by) = order_by {
        let _ = visit_expressions_mut(order_by, &mut write);
    }
    failed.map_or(Ok(()), Err)
}

/// The windows `select` names, each resolved to a spec without a name.
fn definitions(select: &Select) -> Result<HashMap<String, WindowSpec>> {
    let mut resolved: HashMap<String, WindowSpec> = HashMap::new();
    // A definition may name one defined before it (or after: resolved in
    // as many passes as there are definitions).
    let mut pending: Vec<_> = select.named_window.iter().collect();
    while !pending.is_empty() {
        let before = pending.len();
        let mut still = Vec::new();
        for def in pending {
            let spec = match &def.1 {
                NamedWindowExpr::NamedWindow(other) => resolved.get(&key(other)).cloned(),
                NamedWindowExpr::WindowSpec(spec) => match &spec.window_name {
                    None => Some(spec.clone()),
                    Some(base) => match resolved.get(&key(base)) {
                        Some(base_spec) => Some(refined(base, base_spec, spec)?),
                        None => None,
                    },
                },
            };
            match spec {
                Some(spec) => {
                    resolved.insert(key(&def.0), spec);
                }
                None => still.push(def),
            }
        }
        if still.len() == before {
            let names: Vec<String> = still.iter().map(|d| d.0.to_string()).collect();
            return Err(DataFusionError::Plan(format!(
                "window {} refers to a window the query does not define (or to itself)",
                names.join(", ")
            )));
        }
        pending = still;
    }
    Ok(resolved)
}

/// The window a call's `OVER` means, where it names one; `None` where it
/// is a window of its own.
fn written(over: &WindowType, windows: &HashMap<String, WindowSpec>) -> Result<Option<WindowSpec>> {
    let (name, spec) = match over {
        WindowType::NamedWindow(name) => (name, None),
        WindowType::WindowSpec(spec) => match &spec.window_name {
            Some(name) => (name, Some(spec)),
            None => return Ok(None),
        },
    };
    let Some(base) = windows.get(&key(name)) else {
        // A name the query does not define: DataFusion names it.
        return Ok(None);
    };
    match spec {
        None => Ok(Some(base.clone())),
        Some(spec) => refined(name, base, spec).map(Some),
    }
}

/// `base` (the window `name`) refined by `spec`, as the standard allows:
/// no PARTITION BY of its own, an ORDER BY only where `base` has none, and
/// its frame if it has one.
fn refined(name: &Ident, base: &WindowSpec, spec: &WindowSpec) -> Result<WindowSpec> {
    if !spec.partition_by.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "OVER ({spec}): a window refining {name} cannot have its own PARTITION BY"
        )));
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "OVER ({spec}): {name} already has an ORDER BY"
        )));
    }
    Ok(WindowSpec {
        window_name: None,
        partition_by: base.partition_by.clone(),
        order_by: if spec.order_by.is_empty() {
            base.order_by.clone()
        } else {
            spec.order_by.clone()
        },
        window_frame: spec
            .window_frame
            .clone()
            .or_else(|| base.window_frame.clone()),
    })
}

/// A window's name as the planner compares names (unquoted: any case).
fn key(name: &Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    fn rewritten(sql: &str) -> String {
        crate::trino_sql::rewritten_text(sql, rewrite)
    }

    #[test]
    fn references_are_written_as_their_windows() {
        assert_eq!(
            rewritten(
                "select sum(n) over (w), last_value(n) over (w rows between current row and \
                 unbounded following), rank() over w, count(*) over (w2) from t \
                 window w as (partition by k order by n), w2 as (W2base), w2base as (partition by k) \
                 order by sum(n) over (w)"
            ),
            "SELECT sum(n) OVER (PARTITION BY k ORDER BY n), last_value(n) OVER (PARTITION BY k \
             ORDER BY n ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), rank() OVER \
             (PARTITION BY k ORDER BY n), count(*) OVER (PARTITION BY k) FROM t WINDOW w AS \
             (PARTITION BY k ORDER BY n), w2 AS (W2base), w2base AS (PARTITION BY k) \
             ORDER BY sum(n) OVER (PARTITION BY k ORDER BY n)"
        );
        // A subquery's own windows are its own.
        assert_eq!(
            rewritten(
                "select (select max(x) over (w) from u window w as (partition by y)) from t \
                 window w as (partition by k)"
            ),
            "SELECT (SELECT max(x) OVER (PARTITION BY y) FROM u WINDOW w AS (PARTITION BY y)) \
             FROM t WINDOW w AS (PARTITION BY k)"
        );
    }

    #[test]
    fn refinements_the_standard_forbids_are_named() {
        for (sql, says) in [
            (
                "select sum(n) over (w order by m) from t window w as (order by n)",
                "already has an ORDER BY",
            ),
            (
                "select sum(n) over (w partition by m) from t window w as (order by n)",
                "PARTITION BY",
            ),
            (
                "select sum(n) over w from t window w as (v), v as (w)",
                "does not define",
            ),
        ] {
            let statement = crate::trino_sql::parse(sql).unwrap().pop_front().unwrap();
            let e = rewrite(statement).unwrap_err().to_string();
            assert!(e.contains(says), "{sql}: {e}");
        }
    }
}
