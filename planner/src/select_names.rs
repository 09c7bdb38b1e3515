//! A select list that names two columns alike: `SELECT a, a`, `SELECT
//! count(*), count(*)`, `SELECT 1, 1`. Trino, DuckDB and PostgreSQL answer
//! (BI tools write such lists); DataFusion refuses ("Projections require
//! unique expression names"). Each later unnamed item that repeats an
//! earlier one's name is given its name with `_2`, `_3`, ... (not taken by
//! another item), so the statement plans and every column keeps a readable
//! name. A scalar subquery's one unnamed item is named apart from the
//! query around it ([`name_scalar_value`]).
//!
//! `ORDER BY n` of an unnamed item that is not a column is written as the
//! item ([`ordinals_as_items`]): DataFusion 55 refused `SELECT max(x) -
//! min(x) FROM t GROUP BY k ORDER BY 1` ("Column in ORDER BY must be in
//! GROUP BY or an aggregate function"), which it plans ordered by the
//! expression.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, VisitorMut};

/// `statement` with repeated select-list names made distinct.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Distinct { every: false })
}

/// `statement` with every unnamed select item that is not a column named
/// by its own text (repeated texts numbered): for a statement whose items
/// DataFusion names alike though their text differs (`crate::replan`).
pub fn name_every_item(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Distinct { every: true })
}

/// Names repeated select-list items, or with `every` every unnamed item
/// that is not a column.
struct Distinct {
    every: bool,
}

impl VisitorMut for Distinct {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        // An item holding a scalar subquery keeps its text as its name,
        // whatever the subquery's own item is named below.
        name_by_text(&mut query.body, holds_subquery);
        name_by_text(&mut query.body, holds_window);
        name_trino_casts(&mut query.body);
        name_fields(&mut query.body);
        distinct_names(&mut query.body, self.every);
        distinct_aliases(&mut query.body);
        ordinals_as_items(query);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if let Expr::Subquery(query) = expr {
            name_scalar_value(&mut query.body);
        }
        ControlFlow::Continue(())
    }
}

/// Every unnamed item of a select list that `rewritten` picks, named by its
/// text as written: a rewrite of it keeps its name.
pub fn name_by_text(body: &mut SetExpr, rewritten: impl Fn(&Expr) -> bool) {
    let SetExpr::Select(select) = body else {
        return;
    };
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(e) = item
            && rewritten(e)
        {
            let alias = Ident::with_quote('"', e.to_string());
            *item = SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias,
            };
        }
    }
}

/// Every unnamed item holding a cast to an array, map, row or JSON, which
/// squall's parser reads as `squall_json_cast(x, 'arrow type', try)` and
/// `squall_to_json(x)` (`crate::trino_sql`), named by the casts as Trino
/// writes them (`CAST(x AS row(a integer, b varchar))`), not by those calls.
fn name_trino_casts(body: &mut SetExpr) {
    use datafusion::sql::sqlparser::ast::{
        CastKind, DataType as SqlType, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName,
        visit_expressions_mut,
    };
    use squall_core::trino_udfs::json_cast::{JSON_CAST, TO_JSON};
    let SetExpr::Select(select) = body else {
        return;
    };
    // The cast a call stands for, if it is one of them.
    let cast_of = |e: &Expr| -> Option<Expr> {
        let Expr::Function(f) = e else { return None };
        let name = f.name.to_string().to_ascii_lowercase();
        let FunctionArguments::List(list) = &f.args else {
            return None;
        };
        let args: Vec<&Expr> = list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect();
        let (value, type_name, kind) = match (name.as_str(), args.as_slice()) {
            (n, [x]) if n == TO_JSON => ((*x).clone(), "JSON".to_string(), CastKind::Cast),
            (n, [x, Expr::Value(t), Expr::Value(try_)]) if n == JSON_CAST => {
                let arrow: arrow::datatypes::DataType =
                    t.value.clone().into_string()?.parse().ok()?;
                let kind = match try_.value.to_string().as_str() {
                    "true" => CastKind::TryCast,
                    _ => CastKind::Cast,
                };
                let trino = crate::trino_types::trino_type(&arrow).display_name();
                ((*x).clone(), trino, kind)
            }
            _ => return None,
        };
        Some(Expr::Cast {
            kind,
            expr: Box::new(value),
            data_type: SqlType::Custom(ObjectName::from(vec![Ident::new(type_name)]), vec![]),
            array: false,
            format: None,
        })
    };
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(e) = item else {
            continue;
        };
        // A field of the row (`CAST(... AS row(k bigint)).k`) is named by
        // the field, as Trino names it (`crate::row_fields`).
        if matches!(e, Expr::CompoundFieldAccess { .. })
            || !crate::trino_sql::holds(e, |x| cast_of(x).is_some())
        {
            continue;
        }
        let mut named = e.clone();
        let mut found = false;
        let _ = visit_expressions_mut(&mut named, |x| {
            if let Some(cast) = cast_of(x) {
                *x = cast;
                found = true;
            }
            ControlFlow::<()>::Continue(())
        });
        if found {
            *item = SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias: Ident::with_quote('"', named.to_string()),
            };
        }
    }
}

/// Every unnamed item reading a row's field by name, `props.x` or
/// `t.props.x`, named by the field (`x`), as Trino names it; DataFusion
/// named it by its plan, `t.props[x]`. An item `a.b` whose `a` names a
/// table of the FROM clause is that table's column and keeps its name.
fn name_fields(body: &mut SetExpr) {
    use datafusion::sql::sqlparser::ast::{TableFactor, TableWithJoins};
    let SetExpr::Select(select) = body else {
        return;
    };
    // The names the FROM clause gives its tables; `None` when one of them
    // is of a kind read here without its name.
    fn names_of(factor: &TableFactor, out: &mut Vec<String>) -> Option<()> {
        match factor {
            TableFactor::Table { name, alias, .. } => out.push(match alias {
                Some(a) => a.name.value.to_lowercase(),
                None => name.0.last()?.as_ident()?.value.to_lowercase(),
            }),
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if let Some(a) = alias {
                    out.push(a.name.value.to_lowercase());
                }
                of_joins(table_with_joins, out)?;
            }
            TableFactor::Derived { alias, .. }
            | TableFactor::TableFunction { alias, .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. } => {
                if let Some(a) = alias {
                    out.push(a.name.value.to_lowercase());
                }
            }
            _ => return None,
        }
        Some(())
    }
    fn of_joins(t: &TableWithJoins, out: &mut Vec<String>) -> Option<()> {
        names_of(&t.relation, out)?;
        for j in &t.joins {
            names_of(&j.relation, out)?;
        }
        Some(())
    }
    let mut tables = Vec::new();
    for t in &select.from {
        if of_joins(t, &mut tables).is_none() {
            return;
        }
    }
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) = item
            && let Some(field) = parts.last()
            && !(parts.len() == 2 && tables.contains(&parts[0].value.to_lowercase()))
        {
            let alias = field.clone();
            let expr = Expr::CompoundIdentifier(std::mem::take(parts));
            *item = SelectItem::ExprWithAlias { expr, alias };
        }
    }
}

/// Whether `e` is or holds a scalar subquery.
fn holds_subquery(e: &Expr) -> bool {
    crate::trino_sql::holds(e, |x| matches!(x, Expr::Subquery(_)))
}

/// Whether `e` is or holds a window function. DataFusion names such an item
/// by its plan, the frame it infers spelled out (`sum(t.x) ORDER BY [t.y ASC
/// NULLS LAST] RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`), which
/// clients showed as the column's name; it is named as written.
fn holds_window(e: &Expr) -> bool {
    crate::trino_sql::holds(e, |x| matches!(x, Expr::Function(f) if f.over.is_some()))
}

/// The value of a scalar subquery named apart from the query around it.
/// DataFusion joins the subquery in, and its column named like one of the
/// outer query's (`HAVING avg(x) > (SELECT avg(x) FROM t)`) stopped the
/// join's planning ("qualified field name ... would be ambiguous").
fn name_scalar_value(body: &mut SetExpr) {
    if let SetExpr::Select(select) = body
        && let [item @ SelectItem::UnnamedExpr(_)] = select.projection.as_mut_slice()
        && let SelectItem::UnnamedExpr(value) = item
    {
        *item = SelectItem::ExprWithAlias {
            expr: value.clone(),
            alias: Ident::new("__squall_value"),
        };
    }
}

/// Items named alike by their aliases (`SELECT 1 AS x, 2 AS x`, which
/// Trino answers; or two items of the same text named by it, `SELECT
/// (SELECT 1), (SELECT 1)`): each later one's alias gets `_2`, `_3`, ...
/// (not taken by another item).
fn distinct_aliases(body: &mut SetExpr) {
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, right, .. } => {
            distinct_aliases(left);
            distinct_aliases(right);
            return;
        }
        _ => return,
    };
    let aliases = |select: &datafusion::sql::sqlparser::ast::Select| -> Vec<String> {
        select
            .projection
            .iter()
            .filter_map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
                _ => None,
            })
            .collect()
    };
    let all = aliases(select);
    if all.iter().collect::<HashSet<_>>().len() == all.len() {
        return;
    }
    let mut taken: HashSet<String> = all.into_iter().collect();
    let mut seen: HashSet<String> = HashSet::new();
    for item in &mut select.projection {
        let SelectItem::ExprWithAlias { alias, .. } = item else {
            continue;
        };
        if seen.insert(alias.value.to_lowercase()) {
            continue;
        }
        let renamed = (2..)
            .map(|n| format!("{}_{n}", alias.value))
            .find(|a| !taken.contains(&a.to_lowercase()))
            .unwrap_or_default();
        taken.insert(renamed.to_lowercase());
        seen.insert(renamed.to_lowercase());
        *alias = Ident::with_quote('"', renamed);
    }
}

fn distinct_names(body: &mut SetExpr, every: bool) {
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, right, .. } => {
            distinct_names(left, every);
            distinct_names(right, every);
            return;
        }
        _ => return,
    };
    let named: HashSet<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
            _ => None,
        })
        .collect();
    // The names of the items that are columns: an expression DataFusion
    // would name like one of them (`CAST(k AS VARCHAR)` is named `k`) is
    // named by its text, and the column keeps its name; so is any cast of
    // a column (DataFusion's name, `t.k`, is the column's, qualified).
    let columns: HashSet<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::UnnamedExpr(e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))) => {
                Some(name_of(e))
            }
            _ => None,
        })
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut taken = named.clone();
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        let expr = expr.clone();
        if let Some(field) = field_of(&expr)
            && !taken.contains(&field.to_lowercase())
            && seen.insert(field.to_lowercase())
        {
            taken.insert(field.to_lowercase());
            *item = SelectItem::ExprWithAlias {
                expr,
                alias: Ident::with_quote('"', field),
            };
            continue;
        }
        let name = name_of(&expr);
        let column = matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
        let like_a_column = !column && (columns.contains(&name) || is_cast_of_column(&expr));
        // A column named like another item's alias is numbered too.
        let aliased = column && named.contains(&name);
        if !like_a_column && !aliased && seen.insert(name.clone()) && (column || !every) {
            taken.insert(name);
            continue;
        }
        if every && !column && !taken.contains(&expr.to_string().to_lowercase()) {
            let alias = expr.to_string();
            taken.insert(alias.to_lowercase());
            *item = SelectItem::ExprWithAlias {
                expr,
                alias: Ident::with_quote('"', alias),
            };
            continue;
        }
        let base = match &expr {
            Expr::Identifier(i) => i.value.clone(),
            Expr::CompoundIdentifier(parts) => {
                parts.last().map(|i| i.value.clone()).unwrap_or_default()
            }
            e => e.to_string(),
        };
        // An expression's own text where no item has it, else numbered.
        let alias = (!column)
            .then(|| base.clone())
            .into_iter()
            .chain((2..).map(|k| format!("{base}_{k}")))
            .find(|a| !taken.contains(&a.to_lowercase()))
            .unwrap_or_default();
        taken.insert(alias.to_lowercase());
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', alias),
        };
    }
}

/// A row's field named after an expression (`(CAST(... AS ROW(k
/// BIGINT))).k`, `items[1].name`) is named by its field, as Trino names it
/// (DataFusion's name would be the whole expression's text).
fn field_of(e: &Expr) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{AccessExpr, Value};
    let Expr::CompoundFieldAccess { access_chain, .. } = e else {
        return None;
    };
    match access_chain.last()? {
        AccessExpr::Dot(Expr::Identifier(name)) => Some(name.value.clone()),
        AccessExpr::Dot(Expr::Value(v)) => match &v.value {
            Value::SingleQuotedString(name) => Some(name.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A cast of a column (`CAST(t.k AS VARCHAR)`), which DataFusion names by
/// the column, qualified (`t.k`): a client read a column named `t.k`.
fn is_cast_of_column(e: &Expr) -> bool {
    match e {
        Expr::Cast { expr, .. } | Expr::Nested(expr) => {
            matches!(
                expr.as_ref(),
                Expr::Identifier(_) | Expr::CompoundIdentifier(_)
            ) || is_cast_of_column(expr)
        }
        _ => false,
    }
}

/// The name DataFusion gives an unnamed select item, as far as text tells:
/// a column's own name, a cast's or a parenthesis' inner expression's.
fn name_of(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => i.value.to_lowercase(),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .map(|i| i.value.to_lowercase())
            .unwrap_or_default(),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => name_of(expr),
        e => e.to_string().to_lowercase().replace(' ', ""),
    }
}

/// `ORDER BY n` of a plain SELECT's n-th item, when that item is an
/// unnamed expression other than a column, as that expression (not under
/// DISTINCT, whose ORDER BY DataFusion then finds outside the select list).
fn ordinals_as_items(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::{OrderByKind, Value};
    let SetExpr::Select(select) = query.body.as_ref() else {
        return;
    };
    if select.distinct.is_some() {
        return;
    }
    let Some(order_by) = query.order_by.as_mut() else {
        return;
    };
    let OrderByKind::Expressions(keys) = &mut order_by.kind else {
        return;
    };
    for key in keys {
        let Expr::Value(v) = &key.expr else { continue };
        let Value::Number(n, _) = &v.value else {
            continue;
        };
        let Some(i) = n.parse::<usize>().ok().and_then(|n| n.checked_sub(1)) else {
            continue;
        };
        if let Some(SelectItem::UnnamedExpr(e)) = select.projection.get(i)
            && !matches!(
                e,
                Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Value(_)
            )
        {
            key.expr = e.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    fn rewritten(sql: &str) -> String {
        crate::trino_sql::rewritten_text(sql, rewrite)
    }

    #[test]
    fn fields_of_rows_are_named_by_the_field() {
        assert_eq!(
            rewritten("select t.k, props.x, t.props.y, props.inner.z from t"),
            "SELECT t.k, props.x AS x, t.props.y AS y, props.inner.z AS z FROM t"
        );
        assert_eq!(
            rewritten(
                "select a.k, b.k, n.props.x from t a join u as b on a.k = b.k join (v n cross join w) on true"
            ),
            "SELECT a.k, b.k AS \"k_2\", n.props.x AS x FROM t a JOIN u AS b ON a.k = b.k JOIN (v n CROSS JOIN w) ON true"
        );
    }

    #[test]
    fn window_functions_are_named_as_written() {
        assert_eq!(
            rewritten(
                "select k, sum(x) over (order by y), x - lag(x) over w, rank() over (partition by k order by y) r from t"
            ),
            "SELECT k, sum(x) OVER (ORDER BY y) AS \"sum(x) OVER (ORDER BY y)\", \
             x - lag(x) OVER w AS \"x - lag(x) OVER w\", \
             rank() OVER (PARTITION BY k ORDER BY y) AS r FROM t"
        );
    }

    #[test]
    fn repeated_names_get_a_number() {
        assert_eq!(
            rewritten("select a, t.a, count(*), COUNT(*), 1, 1, a as a_2 from t"),
            "SELECT a, t.a AS \"a_3\", count(*), COUNT(*) AS \"COUNT(*)_2\", 1, 1 AS \"1_2\", a AS a_2 FROM t"
        );
        assert_eq!(
            rewritten("select cast(1 as tinyint), cast(1 as smallint), (b), b from t"),
            "SELECT CAST(1 AS TINYINT), CAST(1 AS SMALLINT) AS \"CAST(1 AS SMALLINT)\", (b) AS \"(b)\", b FROM t"
        );
        // A column keeps its name; a cast of a column (DataFusion: `k`,
        // or `t.k`) is named by its text, beside the column or alone.
        assert_eq!(
            rewritten("select cast(k as varchar), cast(t.k as double), k from t"),
            "SELECT CAST(k AS VARCHAR) AS \"CAST(k AS VARCHAR)\", \
             CAST(t.k AS DOUBLE) AS \"CAST(t.k AS DOUBLE)\", k FROM t"
        );
        assert_eq!(
            rewritten("select cast(t.k as varchar), x + 1 from t"),
            "SELECT CAST(t.k AS VARCHAR) AS \"CAST(t.k AS VARCHAR)\", x + 1 FROM t"
        );
        let kept = "SELECT a, b, c AS d FROM t UNION ALL SELECT x, y, z FROM u";
        assert_eq!(rewritten(kept), kept);
        // A column named like an alias (DataFusion: "ambiguous").
        assert_eq!(
            rewritten("SELECT a, b, c AS a FROM t UNION ALL SELECT x, y, z FROM u"),
            "SELECT a AS \"a_2\", b, c AS a FROM t UNION ALL SELECT x, y, z FROM u"
        );
        assert_eq!(
            rewritten("select 1 as x, 2 as X, 3 as x_2, (select 4), (select 4) from t"),
            "SELECT 1 AS x, 2 AS \"X_3\", 3 AS x_2, (SELECT 4 AS __squall_value) AS \"(SELECT 4)\", \
             (SELECT 4 AS __squall_value) AS \"(SELECT 4)_2\" FROM t"
        );
    }

    #[test]
    fn casts_to_nested_types_are_named_as_written() {
        assert_eq!(
            rewritten(
                "select cast(r as row(x int, y varchar)), try_cast(j as array(bigint)), \
                 cast(m as json) as named, cardinality(cast(a as array(int))) from t"
            ),
            "SELECT squall_json_cast(r, 'Struct(\"x\": Int32, \"y\": Utf8)', false) \
             AS \"CAST(r AS row(x integer, y varchar))\", \
             squall_json_cast(j, 'List(Int64)', true) AS \"TRY_CAST(j AS array(bigint))\", \
             squall_to_json(m) AS named, \
             cardinality(squall_json_cast(a, 'List(Int32)', false)) \
             AS \"cardinality(CAST(a AS array(integer)))\" FROM t"
        );
    }

    #[tokio::test]
    async fn items_datafusion_would_name_alike_are_named_by_their_text() {
        let state = datafusion::prelude::SessionContext::new().state();
        let sql = "select 7 / 2, cast(7 as double) / 2, 7 / 2 as x, strpos('ab', 'b'), position('b' in 'ab')";
        let statement = crate::trino_sql::parse(sql).unwrap().pop_front().unwrap();
        let plan = crate::replan::plan(&state, rewrite(statement).unwrap())
            .await
            .unwrap();
        let names: Vec<_> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            names,
            [
                "7 / 2",
                "CAST(7 AS DOUBLE) / 2",
                "x",
                "strpos('ab', 'b')",
                "POSITION('b' IN 'ab')"
            ]
        );
        // A statement that plans keeps DataFusion's names.
        let statement = crate::trino_sql::parse("select 7 / 2")
            .unwrap()
            .pop_front()
            .unwrap();
        let plan = crate::replan::plan(&state, statement).await.unwrap();
        assert_eq!(plan.schema().field(0).name(), "Int64(7) / Int64(2)");
    }
}
