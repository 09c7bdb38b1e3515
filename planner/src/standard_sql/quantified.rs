//! `x op ANY|ALL (subquery)`: as a semi or anti join where it is a
//! conjunct of a WHERE or HAVING, else as its three values from aggregates
//! of the subquery.

use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::ast::{Expr, Query, SetExpr};

use super::{Rewriter, columns_of, parse};

impl Rewriter {
    /// `x op ANY|ALL (subquery)`, a conjunct: `EXISTS` (ANY) or `NOT
    /// EXISTS` (ALL) of the subquery's rows that decide it.
    pub(super) fn quantified_conjunct(&mut self, q: &Quantified) -> Result<Expr, DataFusionError> {
        let (x, op, subquery, all) = q.parts();
        let exists = if all { "NOT EXISTS" } else { "EXISTS" };
        match flat(subquery) {
            Some((select, c)) if stays_outer(x, &select) => {
                // The subquery's own rows, its correlation beside the
                // comparison: DataFusion decorrelates no outer
                // column inside a derived table.
                let inner = with_select(select, "1", Some(&deciding(x, op, &c, all)))?;
                return parse(&format!("{exists} ({inner})"));
            }
            // `x` would be read inside the subquery's rows (an
            // unqualified column it also has): its three values
            // from aggregates of the subquery, outside it.
            Some(_) => return self.quantified_value(q),
            None => {}
        }
        let table = self.single_column(subquery)?;
        let c = format!("{}.c", self.last_name());
        parse(&format!(
            "{exists} (SELECT 1 FROM {table} WHERE {})",
            deciding(x, op, &c, all)
        ))
    }

    /// `x op ANY|ALL (q)` where it may be NULL (a select list, under OR or
    /// NOT): its three values from aggregates of the subquery, which need
    /// no outer column (DataFusion decorrelates no comparison but equality
    /// inside a value): the subquery's rows `n`, its NULLs `nn`, its least
    /// and greatest values, which decide every comparison but equality;
    /// `= ANY` is `IN`, `<> ALL` is `NOT IN`. Over no row ANY is FALSE and
    /// ALL TRUE, whatever `x`.
    /// TRUE, FALSE or NULL as SQL says (ANY: TRUE when a comparison is,
    /// else NULL when one is NULL; ALL: FALSE when a comparison is, else
    /// NULL when one is NULL).
    pub(super) fn quantified_value(&mut self, q: &Quantified) -> Result<Expr, DataFusionError> {
        let (x, op, subquery, all) = q.parts();
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

    pub(super) fn last_name(&self) -> String {
        format!("__squall_row_in{}", self.named)
    }
}

/// `x op ANY (q)` / `x op ALL (q)` of a subquery: x's SQL, the operator,
/// the subquery, whether ALL.
/// `x op ANY|ALL (subquery)`, its parts as text (the subquery as it is).
pub(super) struct Quantified {
    x: String,
    op: String,
    subquery: Query,
    all: bool,
}

impl Quantified {
    /// `x`, the operator, the subquery and whether it is ALL.
    fn parts(&self) -> (&str, &str, &Query, bool) {
        (&self.x, &self.op, &self.subquery, self.all)
    }
}

/// The condition on a subquery row's value `c` that decides `x op ANY|ALL`:
/// for ANY a row passing the comparison, for ALL one failing it or NULL.
fn deciding(x: &str, op: &str, c: &str, all: bool) -> String {
    if all {
        format!("NOT (({x}) {op} ({c})) OR ({c}) IS NULL OR ({x}) IS NULL")
    } else {
        format!("({x}) {op} ({c})")
    }
}

pub(super) fn quantified(expr: &Expr) -> Option<Quantified> {
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
    Some(Quantified {
        x: left.to_string(),
        op: op.to_string(),
        subquery: query.as_ref().clone(),
        all,
    })
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
    let calls = crate::trino_sql::holds(value, |e| {
        matches!(e, Expr::Function(_) | Expr::Subquery(_))
    });
    (plain && !calls).then(|| (select.as_ref().clone(), value.to_string()))
}

/// Whether the columns of `x` (a comparison's outer side, as text) name
/// the same columns when read inside `select`: each qualified by a name
/// none of `select`'s tables has. An unqualified column could be one of
/// theirs.
fn stays_outer(x: &str, select: &datafusion::sql::sqlparser::ast::Select) -> bool {
    use datafusion::sql::sqlparser::ast::TableFactor;
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
    !crate::trino_sql::holds(&x, |e| match e {
        Expr::Identifier(_) | Expr::Subquery(_) => true,
        Expr::CompoundIdentifier(parts) => {
            parts.len() < 2 || inner.contains(&parts[parts.len() - 2].value.to_lowercase())
        }
        _ => false,
    })
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
