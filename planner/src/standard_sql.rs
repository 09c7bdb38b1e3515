//! Standard SQL that DataFusion 55 refuses or answers wrong, written before
//! planning as SQL it answers right.
//!
//! A row's membership in a subquery's rows, `(a, b) IN (SELECT x, y ...)`
//! and `NOT IN`, which DataFusion's SQL planner refuses ("Too many
//! columns! The subquery should only return one column"): written, before
//! planning, as the `EXISTS` DataFusion plans.
//!
//! SQL compares rows field by field: `(a, b) = (x, y)` is TRUE when every
//! field is equal, FALSE when one differs, NULL otherwise (a NULL field and
//! no difference). So `(a, b) IN (q)` is TRUE when a row of `q` equals it,
//! NULL when none does but one might (every field equal or NULL), FALSE
//! otherwise; `NOT IN` is its negation. With the subquery as a derived
//! table `(q) AS t (c0, c1)` (its own names, which nothing outside it uses,
//! so `a` and `b` keep meaning what they meant):
//!
//! - a conjunct of a WHERE or HAVING (where NULL drops the row like FALSE): `IN` is `EXISTS (SELECT 1 FROM t WHERE c0 = a AND c1 = b)`,
//!   a semi join on the fields; `NOT IN` is `NOT EXISTS (... WHERE (c0 = a
//!   OR c0 IS NULL OR a IS NULL) AND ...)`, an anti join that also drops
//!   the rows a NULL may equal (a join without equal keys: it compares every
//!   pair);
//! - anywhere else (a select list, under OR or NOT): the three values, as
//!   `CASE WHEN EXISTS (every field equal) THEN TRUE WHEN EXISTS (every
//!   field equal or NULL) THEN NULL ELSE FALSE END` (negated for `NOT IN`).

//!
//! Quantified comparisons with a subquery, `x > ALL (SELECT ...)` and `x
//! = ANY (SOME) (SELECT ...)`, which DataFusion 55 plans and answers wrong
//! (no row at all, for `c_acctbal > ALL (...)` and `> ANY (...)` alike),
//! are written the same way: in a WHERE or HAVING conjunct `ANY` is
//! `EXISTS (... WHERE x op c)` and `ALL` is `NOT EXISTS (... WHERE NOT (x op
//! c) OR c IS NULL OR x IS NULL)`; elsewhere (a select list, under OR or
//! NOT) their three values come from the subquery's count, NULLs, least
//! and greatest values (see `quantified_value`).
//! And `FETCH FIRST n ROWS ONLY`, which DataFusion refuses, is `LIMIT n`.
//!
//! `EXCEPT ALL` and `INTERSECT ALL`, which DataFusion 55 answers as
//! without ALL for one side (`EXCEPT ALL` dropped every copy of a row the
//! right side has once; `INTERSECT ALL` kept every copy of the left's),
//! count copies: each side's rows numbered within their equal rows
//! (`row_number() OVER (PARTITION BY every column)`), the set operation
//! without ALL over rows and numbers (the k-th copy stays when the right
//! side has fewer than k, or, intersecting, at least k), the numbers
//! dropped. The sides' columns are named by position, so each side must
//! say how many it has (no `*`).

use std::ops::ControlFlow;

use datafusion::error::Result;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Query, SetExpr, VisitorMut};
use datafusion::sql::sqlparser::parser::Parser;

use datafusion::error::DataFusionError;

/// `statement` with rows `IN (subquery)`, `ANY` / `ALL`, `EXCEPT` /
/// `INTERSECT ALL` and `FETCH FIRST` written as the module says.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Rewriter::default())
}

#[derive(Default)]
struct Rewriter {
    /// Derived tables named so far (each gets a name of its own).
    named: usize,
}

impl VisitorMut for Rewriter {
    type Break = DataFusionError;

    /// Conjuncts of each SELECT's WHERE and HAVING first, where a
    /// semi or anti join answers; the query's subqueries are visited after.
    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        if let Err(e) = fetch_as_limit(query).and_then(|()| counted_copies(&mut query.body)) {
            return ControlFlow::Break(e);
        }
        match self.filters_of(&mut query.body) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }

    /// Any other place: the three values.
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        field_names_as_text(expr);
        if let Err(e) = crate::interval_times::rewrite(expr) {
            return ControlFlow::Break(e);
        }
        if let Some((x, op, subquery, all)) = quantified(expr) {
            match self.quantified_value(&x, &op, &subquery, all) {
                Ok(value) => *expr = value,
                Err(e) => return ControlFlow::Break(e),
            }
            return ControlFlow::Continue(());
        }
        if let Expr::InSubquery {
            expr: row,
            subquery,
            negated,
        } = expr
            && let Expr::Tuple(fields) = row.as_ref()
        {
            match self.three_valued(fields, subquery, *negated) {
                Ok(value) => *expr = value,
                Err(e) => return ControlFlow::Break(e),
            }
        }
        ControlFlow::Continue(())
    }
}

/// A field of a row named after an expression, `(CAST(... AS ROW(x
/// INTEGER))).x` or `items[1].name`: DataFusion's planner takes such a
/// name only as a string (`items[1]['name']`), and refused the name.
/// Unquoted, it is lowercase, as every name squall presents.
fn field_names_as_text(expr: &mut Expr) {
    use datafusion::sql::sqlparser::ast::{AccessExpr, Value};
    let Expr::CompoundFieldAccess { access_chain, .. } = expr else {
        return;
    };
    for access in access_chain {
        if let AccessExpr::Dot(Expr::Identifier(name)) = access {
            let text = match name.quote_style {
                Some(_) => name.value.clone(),
                None => name.value.to_lowercase(),
            };
            *access = AccessExpr::Dot(Expr::value(Value::SingleQuotedString(text)));
        }
    }
}

impl Rewriter {
    fn filters_of(&mut self, body: &mut SetExpr) -> Result<(), DataFusionError> {
        match body {
            SetExpr::Select(select) => {
                if let Some(selection) = &mut select.selection {
                    self.conjuncts(selection)?;
                }
                if let Some(having) = &mut select.having {
                    self.conjuncts(having)?;
                }
                Ok(())
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.filters_of(left)?;
                self.filters_of(right)
            }
            // A parenthesised query is a query of its own (visited as one).
            _ => Ok(()),
        }
    }

    /// Each conjunct of `expr` that is a row `IN (subquery)`, as a semi or
    /// anti join's `EXISTS`.
    fn conjuncts(&mut self, expr: &mut Expr) -> Result<(), DataFusionError> {
        match expr {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                self.conjuncts(left)?;
                self.conjuncts(right)
            }
            Expr::Nested(inner) => self.conjuncts(inner),
            _ if quantified(expr).is_some() => {
                if let Some((x, op, subquery, all)) = quantified(expr) {
                    if let Some((select, c)) = flat(&subquery).filter(|(s, _)| stays_outer(&x, s)) {
                        // The subquery's own rows, its correlation beside the
                        // comparison: DataFusion decorrelates no outer
                        // column inside a derived table.
                        let test = if all {
                            format!("NOT (({x}) {op} ({c})) OR ({c}) IS NULL OR ({x}) IS NULL")
                        } else {
                            format!("({x}) {op} ({c})")
                        };
                        let inner = with_select(select, "1", Some(&test))?;
                        let exists = if all { "NOT EXISTS" } else { "EXISTS" };
                        *expr = parse(&format!("{exists} ({inner})"))?;
                        return Ok(());
                    }
                    if flat(&subquery).is_some() {
                        // `x` would be read inside the subquery's rows (an
                        // unqualified column it also has): its three values
                        // from aggregates of the subquery, outside it.
                        *expr = self.quantified_value(&x, &op, &subquery, all)?;
                        return Ok(());
                    }
                    let table = self.single_column(&subquery)?;
                    let c = format!("{}.c", self.last_name());
                    *expr = if all {
                        parse(&format!(
                            "NOT EXISTS (SELECT 1 FROM {table} WHERE NOT (({x}) {op} {c}) \
                             OR {c} IS NULL OR ({x}) IS NULL)"
                        ))?
                    } else {
                        parse(&format!(
                            "EXISTS (SELECT 1 FROM {table} WHERE ({x}) {op} {c})"
                        ))?
                    };
                }
                Ok(())
            }
            Expr::InSubquery {
                expr: row,
                subquery,
                negated,
            } => {
                if let Expr::Tuple(fields) = row.as_ref() {
                    let table = self.derived_table(fields, subquery)?;
                    *expr = if *negated {
                        parse(&format!(
                            "NOT EXISTS (SELECT 1 FROM {table} WHERE {})",
                            self.fields(fields, true)
                        ))?
                    } else {
                        parse(&format!(
                            "EXISTS (SELECT 1 FROM {table} WHERE {})",
                            self.fields(fields, false)
                        ))?
                    };
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// `x op ANY|ALL (q)` where it may be NULL: TRUE, FALSE or NULL as SQL
    /// says (ANY: TRUE when a comparison is, else NULL when one is NULL;
    /// ALL: FALSE when a comparison is, else NULL when one is NULL).
    /// `x op ANY|ALL (q)` where it may be NULL (a select list, under OR or
    /// NOT): its three values from aggregates of the subquery, which need
    /// no outer column (DataFusion decorrelates no comparison but equality
    /// inside a value): the subquery's rows `n`, its NULLs `nn`, its least
    /// and greatest values, which decide every comparison but equality;
    /// `= ANY` is `IN`, `<> ALL` is `NOT IN`. Over no row ANY is FALSE and
    /// ALL TRUE, whatever `x`.
    fn quantified_value(
        &mut self,
        x: &str,
        op: &str,
        subquery: &Query,
        all: bool,
    ) -> Result<Expr, DataFusionError> {
        match (op, all) {
            ("=", false) => return parse(&format!("({x}) IN ({subquery})")),
            ("<>", true) => return parse(&format!("({x}) NOT IN ({subquery})")),
            _ => {}
        }
        let flat = flat(subquery);
        let mut of = |aggregate: &str| -> Result<String, DataFusionError> {
            if let Some((select, c)) = &flat {
                let value = aggregate.replace("{c}", &format!("({c})"));
                return Ok(format!("({})", with_select(select.clone(), &value, None)?));
            }
            let table = self.single_column(subquery)?;
            let c = format!("{}.c", self.last_name());
            Ok(format!(
                "(SELECT {} FROM {table})",
                aggregate.replace("{c}", &c)
            ))
        };
        let (n, nulls) = (of("count(*)")?, of("count(*) - count({c})")?);
        let (least, greatest) = (of("min({c})")?, of("max({c})")?);
        // What decides it by a non-NULL value: for ANY a value passing the
        // comparison (the least for > and >=, the greatest for < and <=,
        // any other for <>); for ALL one failing it (the greatest for > and
        // >=, the least for < and <=, any other for =).
        // (Each aggregate is named once: each is a join. A NULL one, of a
        // subquery of NULLs, leaves the condition NULL, not TRUE.)
        let passes = |v: &str| format!("({x}) {op} {v}");
        let fails = |v: &str| format!("NOT (({x}) {op} {v})");
        let other = format!("({least} <> ({x}) OR {greatest} <> ({x}))");
        let decided = match (op, all) {
            (">" | ">=", false) => passes(&least),
            ("<" | "<=", false) => passes(&greatest),
            (">" | ">=", true) => fails(&greatest),
            ("<" | "<=", true) => fails(&least),
            ("<>", false) | ("=", true) => other,
            _ => {
                return Err(DataFusionError::NotImplemented(format!(
                    "{x} {op} {} (subquery): squall compares with ANY or ALL by =, <>, <, <=, >, >=",
                    if all { "ALL" } else { "ANY" }
                )));
            }
        };
        let (empty, hit, miss) = if all {
            ("TRUE", "FALSE", "TRUE")
        } else {
            ("FALSE", "TRUE", "FALSE")
        };
        parse(&format!(
            "CASE WHEN {n} = 0 THEN {empty} WHEN ({x}) IS NULL THEN CAST(NULL AS BOOLEAN) \
             WHEN {decided} THEN {hit} WHEN {nulls} > 0 THEN CAST(NULL AS BOOLEAN) ELSE {miss} END"
        ))
    }

    /// `(subquery) AS __squall_row_inN (c)`, the subquery of one column.
    fn single_column(&mut self, subquery: &Query) -> Result<String, DataFusionError> {
        if let Some(columns) = columns_of(&subquery.body)
            && columns != 1
        {
            return Err(DataFusionError::Plan(format!(
                "a comparison with ANY or ALL of a subquery of {columns} columns (it takes one): ({subquery})"
            )));
        }
        self.named += 1;
        Ok(format!("({subquery}) AS {} (c)", self.last_name()))
    }

    fn last_name(&self) -> String {
        format!("__squall_row_in{}", self.named)
    }

    fn three_valued(
        &mut self,
        fields: &[Expr],
        subquery: &Query,
        negated: bool,
    ) -> Result<Expr, DataFusionError> {
        let table = self.derived_table(fields, subquery)?;
        let equal = self.fields(fields, false);
        let table2 = self.derived_table(fields, subquery)?;
        let maybe = self.fields(fields, true);
        let (yes, no) = if negated {
            ("FALSE", "TRUE")
        } else {
            ("TRUE", "FALSE")
        };
        parse(&format!(
            "CASE WHEN EXISTS (SELECT 1 FROM {table} WHERE {equal}) THEN {yes} \
             WHEN EXISTS (SELECT 1 FROM {table2} WHERE {maybe}) THEN CAST(NULL AS BOOLEAN) \
             ELSE {no} END"
        ))
    }

    /// `(subquery) AS __squall_row_inN (__squall_row_inN_0, ...)`, after
    /// checking the subquery gives as many columns as the row has fields
    /// (where its select list says so).
    fn derived_table(
        &mut self,
        fields: &[Expr],
        subquery: &Query,
    ) -> Result<String, DataFusionError> {
        if let Some(columns) = columns_of(&subquery.body)
            && columns != fields.len()
        {
            return Err(DataFusionError::Plan(format!(
                "a row of {} fields IN a subquery of {columns} column(s): {} IN ({subquery})",
                fields.len(),
                Expr::Tuple(fields.to_vec()),
            )));
        }
        self.named += 1;
        let name = format!("__squall_row_in{}", self.named);
        let columns: Vec<String> = (0..fields.len()).map(|i| format!("{name}_{i}")).collect();
        Ok(format!("({subquery}) AS {name} ({})", columns.join(", ")))
    }

    /// `c0 = (a) AND c1 = (b)` over the derived table named last; with
    /// `maybe`, each field equal or NULL on either side (its comparison is
    /// not FALSE: written so, DataFusion decorrelates it).
    fn fields(&self, fields: &[Expr], maybe: bool) -> String {
        let name = format!("__squall_row_in{}", self.named);
        fields
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let column = format!("{name}.{name}_{i}");
                if maybe {
                    format!("({column} = ({field}) OR {column} IS NULL OR ({field}) IS NULL)")
                } else {
                    format!("{column} = ({field})")
                }
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }
}

/// `x op ANY (q)` / `x op ALL (q)` of a subquery: x's SQL, the operator,
/// the subquery, whether ALL.
fn quantified(expr: &Expr) -> Option<(String, String, Query, bool)> {
    let (left, op, right, all) = match expr {
        Expr::AnyOp {
            left,
            compare_op,
            right,
            ..
        } => (left, compare_op, right, false),
        Expr::AllOp {
            left,
            compare_op,
            right,
        } => (left, compare_op, right, true),
        _ => return None,
    };
    let Expr::Subquery(query) = right.as_ref() else {
        return None;
    };
    Some((
        left.to_string(),
        op.to_string(),
        query.as_ref().clone(),
        all,
    ))
}

/// A subquery of one plain SELECT of one value over its FROM and WHERE (no
/// grouping, aggregate, function, DISTINCT, LIMIT or WITH): its SELECT and
/// the value's text, to be asked for other values over the same rows.
/// `None` for any other subquery.
fn flat(subquery: &Query) -> Option<(datafusion::sql::sqlparser::ast::Select, String)> {
    use datafusion::sql::sqlparser::ast::{GroupByExpr, SelectItem};
    if subquery.with.is_some() || subquery.limit_clause.is_some() || subquery.fetch.is_some() {
        return None;
    }
    let SetExpr::Select(select) = subquery.body.as_ref() else {
        return None;
    };
    let value = match select.projection.as_slice() {
        [SelectItem::UnnamedExpr(e)] | [SelectItem::ExprWithAlias { expr: e, .. }] => e,
        _ => return None,
    };
    let plain = select.distinct.is_none()
        && matches!(&select.group_by, GroupByExpr::Expressions(g, m) if g.is_empty() && m.is_empty())
        && select.having.is_none()
        && select.qualify.is_none()
        && select.named_window.is_empty()
        && select.top.is_none()
        && select.into.is_none()
        && select.lateral_views.is_empty()
        && !select.from.is_empty();
    // A function may be an aggregate (then the subquery is one row).
    let calls = datafusion::sql::sqlparser::ast::visit_expressions(value, |e| match e {
        Expr::Function(_) | Expr::Subquery(_) => std::ops::ControlFlow::Break(()),
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break();
    (plain && !calls).then(|| (select.as_ref().clone(), value.to_string()))
}

/// Whether the columns of `x` (a comparison's outer side, as text) name
/// the same columns when read inside `select`: each qualified by a name
/// none of `select`'s tables has. An unqualified column could be one of
/// theirs.
fn stays_outer(x: &str, select: &datafusion::sql::sqlparser::ast::Select) -> bool {
    use datafusion::sql::sqlparser::ast::TableFactor;
    use std::ops::ControlFlow;
    let Ok(x) = parse(x) else {
        return false;
    };
    let mut inner: Vec<String> = Vec::new();
    let mut name = |factor: &TableFactor| match factor {
        TableFactor::Table { name, alias, .. } => inner.push(match alias {
            Some(a) => a.name.value.to_lowercase(),
            None => name
                .0
                .last()
                .map(|p| p.to_string().to_lowercase())
                .unwrap_or_default(),
        }),
        other => {
            if let TableFactor::Derived { alias: Some(a), .. } = other {
                inner.push(a.name.value.to_lowercase());
            }
        }
    };
    for table in &select.from {
        name(&table.relation);
        for join in &table.joins {
            name(&join.relation);
        }
    }
    !datafusion::sql::sqlparser::ast::visit_expressions(&x, |e| match e {
        Expr::Identifier(_) | Expr::Subquery(_) => ControlFlow::Break(()),
        Expr::CompoundIdentifier(parts)
            if parts.len() < 2 || inner.contains(&parts[parts.len() - 2].value.to_lowercase()) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// `select` asking for `value` instead of its own, its WHERE and `test`
/// both holding.
fn with_select(
    mut select: datafusion::sql::sqlparser::ast::Select,
    value: &str,
    test: Option<&str>,
) -> Result<datafusion::sql::sqlparser::ast::Select, DataFusionError> {
    use datafusion::sql::sqlparser::ast::SelectItem;
    select.projection = vec![SelectItem::UnnamedExpr(parse(value)?)];
    if let Some(test) = test {
        select.selection = Some(match select.selection.take() {
            Some(w) => parse(&format!("({w}) AND ({test})"))?,
            None => parse(test)?,
        });
    }
    Ok(select)
}

/// Whether a set operation is `EXCEPT ALL` or `INTERSECT ALL`, which
/// count each row's copies.
pub(crate) fn counts_copies(
    op: &datafusion::sql::sqlparser::ast::SetOperator,
    quantifier: &datafusion::sql::sqlparser::ast::SetQuantifier,
) -> bool {
    use datafusion::sql::sqlparser::ast::{SetOperator, SetQuantifier};
    matches!(
        (op, quantifier),
        (
            SetOperator::Except | SetOperator::Intersect,
            SetQuantifier::All
        )
    )
}

/// `EXCEPT ALL` and `INTERSECT ALL` in `body` (and its set operations)
/// as set operations over rows numbered within their copies.
fn counted_copies(body: &mut SetExpr) -> Result<(), DataFusionError> {
    use datafusion::sql::sqlparser::ast::SelectItem;
    let SetExpr::SetOperation {
        left,
        op,
        set_quantifier,
        right,
    } = body
    else {
        return Ok(());
    };
    counted_copies(left)?;
    counted_copies(right)?;
    if !counts_copies(op, set_quantifier) {
        return Ok(());
    }
    let (Some(n), Some(m)) = (columns_of(left), columns_of(right)) else {
        return Err(DataFusionError::NotImplemented(format!(
            "{op} ALL of a side whose columns squall cannot count (a `*`): name the columns"
        )));
    };
    if n != m {
        return Err(DataFusionError::Plan(format!(
            "{op} ALL of sides of {n} and {m} columns"
        )));
    }
    // The left side's names, as the result's.
    let names: Vec<String> = match left.as_ref() {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => alias.to_string(),
                SelectItem::UnnamedExpr(Expr::Identifier(i)) => i.to_string(),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                    parts.last().map(|i| i.to_string()).unwrap_or_default()
                }
                other => format!("\"{}\"", other.to_string().replace('"', "\"\"")),
            })
            .collect(),
        _ => (1..=n).map(|i| format!("__squall_c{i}")).collect(),
    };
    let columns: Vec<String> = (1..=n).map(|i| format!("__squall_c{i}")).collect();
    let list = columns.join(", ");
    let side = |body: &SetExpr, name: &str| {
        format!(
            "SELECT {list}, row_number() OVER (PARTITION BY {list}) AS __squall_copy \
             FROM ({body}) AS {name} ({list})"
        )
    };
    let outer: Vec<String> = columns
        .iter()
        .zip(&names)
        .map(|(c, name)| format!("{c} AS {name}"))
        .collect();
    let sql = format!(
        "SELECT {} FROM ({} {op} {}) AS __squall_copies",
        outer.join(", "),
        side(left, "__squall_left"),
        side(right, "__squall_right"),
    );
    let query = Parser::new(&crate::trino_dialect::TrinoDialect)
        .try_with_sql(&sql)
        .and_then(|mut p| p.parse_query())
        .map_err(|e| DataFusionError::Internal(format!("writing {op} ALL: {e}: {sql}")))?;
    *body = SetExpr::Query(query);
    Ok(())
}

/// `FETCH FIRST n ROWS ONLY` as `LIMIT n`, and `FETCH FIRST n ROWS WITH
/// TIES` as `LIMIT squall_with_ties(n)`, which an analyzer rule plans
/// (`with_ties.rs`); PERCENT is named as not supported.
fn fetch_as_limit(query: &mut Query) -> Result<(), DataFusionError> {
    use datafusion::sql::sqlparser::ast::LimitClause;
    let Some(fetch) = query.fetch.take() else {
        return Ok(());
    };
    if fetch.percent {
        return Err(DataFusionError::NotImplemented(format!(
            "{fetch}: squall takes FETCH FIRST n ROWS (or LIMIT n), not a PERCENT of the rows"
        )));
    }
    let ordered = query.order_by.as_ref().is_some_and(|o| match &o.kind {
        datafusion::sql::sqlparser::ast::OrderByKind::Expressions(e) => !e.is_empty(),
        datafusion::sql::sqlparser::ast::OrderByKind::All(_) => true,
    });
    if fetch.with_ties && !ordered {
        return Err(DataFusionError::Plan(format!(
            "{fetch} needs an ORDER BY: the rows it adds are those tied with the last on its keys"
        )));
    }
    let quantity = fetch.quantity.unwrap_or_else(|| {
        parse("1").unwrap_or(Expr::Value(
            datafusion::sql::sqlparser::ast::Value::Number("1".into(), false).into(),
        ))
    });
    let quantity = if fetch.with_ties {
        parse(&format!("{}({quantity})", crate::with_ties::WITH_TIES))?
    } else {
        quantity
    };
    match &mut query.limit_clause {
        None => {
            query.limit_clause = Some(LimitClause::LimitOffset {
                limit: Some(quantity),
                offset: None,
                limit_by: Vec::new(),
            })
        }
        Some(LimitClause::LimitOffset { limit, .. }) if limit.is_none() => *limit = Some(quantity),
        Some(_) => {
            return Err(DataFusionError::Plan(
                "a query with both LIMIT and FETCH FIRST: give one".into(),
            ));
        }
    }
    Ok(())
}

/// The number of columns a query body gives, where its select list says
/// (no wildcard); `None` when it does not.
fn columns_of(body: &SetExpr) -> Option<usize> {
    use datafusion::sql::sqlparser::ast::SelectItem;
    match body {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .all(|item| {
                matches!(
                    item,
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }
                )
            })
            .then_some(select.projection.len()),
        SetExpr::Query(query) => columns_of(&query.body),
        SetExpr::SetOperation { left, .. } => columns_of(left),
        SetExpr::Values(values) => values.rows.first().map(|row| row.content.len()),
        _ => None,
    }
}

fn parse(sql: &str) -> Result<Expr, DataFusionError> {
    crate::trino_sql::expression(sql, "writing a subquery comparison as EXISTS")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;

    fn rewritten(sql: &str) -> String {
        crate::trino_sql::rewritten_text(sql, rewrite)
    }

    #[test]
    fn a_conjunct_becomes_a_semi_or_anti_join_and_a_value_three_valued() {
        let semi = rewritten("select * from t where k > 1 and (a, b) in (select x, y from u)");
        assert!(
            semi.contains(
                "k > 1 AND EXISTS (SELECT 1 FROM (SELECT x, y FROM u) AS __squall_row_in1"
            ) && semi.contains("__squall_row_in1.__squall_row_in1_1 = (b)"),
            "{semi}"
        );
        let anti = rewritten("select * from t where (a, b) not in (select x, y from u)");
        assert!(
            anti.contains("NOT EXISTS") && anti.contains("IS NULL OR (a) IS NULL)"),
            "{anti}"
        );
        let value = rewritten("select (a, b) in (select x, y from u) from t");
        assert!(
            value.contains("CASE WHEN EXISTS") && value.contains("THEN CAST(NULL AS BOOLEAN)"),
            "{value}"
        );
        let either = rewritten("select * from t where k = 1 or (a, b) in (select x, y from u)");
        assert!(either.contains("k = 1 OR CASE WHEN EXISTS"), "{either}");
        // Nested: the subquery's own row IN too.
        let nested = rewritten(
            "select * from t where (a, b) in (select x, y from u where (x, y) in (select p, q from v))",
        );
        assert_eq!(nested.matches("EXISTS").count(), 2, "{nested}");
        // One value and other statements stay as they are.
        let plain = "SELECT * FROM t WHERE a IN (SELECT x FROM u)";
        assert_eq!(rewritten(plain), plain);
    }

    #[test]
    fn a_row_and_a_subquery_of_other_widths_are_named() {
        let statement = DFParser::parse_sql("select * from t where (a, b) in (select x from u)")
            .unwrap()
            .pop_front()
            .unwrap();
        let err = rewrite(statement).unwrap_err().to_string();
        assert!(
            err.contains("a row of 2 fields IN a subquery of 1 column(s)"),
            "{err}"
        );
    }
}
