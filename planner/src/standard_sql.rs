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
        // A select item written here is named by what the user wrote
        // (`x > ALL (SELECT ...)`), not by the SQL it becomes.
        crate::select_names::name_by_text(&mut query.body, holds_rewritten);
        if let Err(e) = fetch_as_limit(query).and_then(|()| counted_copies(&mut query.body)) {
            return ControlFlow::Break(e);
        }
        match self.filters_of(&mut query.body) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }

    /// A subquery that is a VALUES query, `x IN (VALUES 1, 2)` or `(VALUES
    /// 5)`, as a SELECT from it: DataFusion's decorrelation takes a
    /// subquery's value from its projection, which a VALUES plan lacks
    /// ("single expression required").
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        let query = match expr {
            Expr::Subquery(q)
            | Expr::InSubquery { subquery: q, .. }
            | Expr::Exists { subquery: q, .. } => q,
            Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } => match right.as_mut() {
                Expr::Subquery(q) => q,
                _ => return ControlFlow::Continue(()),
            },
            _ => return ControlFlow::Continue(()),
        };
        if !matches!(query.body.as_ref(), SetExpr::Values(_)) {
            return ControlFlow::Continue(());
        }
        let sql = format!("SELECT * FROM ({query}) AS __squall_values");
        match Parser::new(&crate::trino_dialect::TrinoDialect)
            .try_with_sql(&sql)
            .and_then(|mut p| p.parse_query())
        {
            Ok(select) => *query = select,
            Err(e) => {
                return ControlFlow::Break(DataFusionError::Internal(format!(
                    "writing a VALUES subquery: {e}: {sql}"
                )));
            }
        }
        ControlFlow::Continue(())
    }

    /// Any other place: the three values.
    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        field_names_as_text(expr);
        if let Err(e) = crate::interval_times::rewrite(expr) {
            return ControlFlow::Break(e);
        }
        if let Some(q) = quantified(expr) {
            match self.quantified_value(&q) {
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

/// Whether `x` is a subquery of a VALUES query (`(VALUES 5)`, `k IN
/// (VALUES 1, 2)`, `EXISTS`, `ANY`/`ALL`), which this module writes as a
/// SELECT from it.
fn of_values(x: &Expr) -> bool {
    let query = match x {
        Expr::Subquery(q)
        | Expr::InSubquery { subquery: q, .. }
        | Expr::Exists { subquery: q, .. } => q,
        Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } => match right.as_ref() {
            Expr::Subquery(q) => q,
            _ => return false,
        },
        _ => return false,
    };
    matches!(query.body.as_ref(), SetExpr::Values(_))
}

/// Whether `e` holds a quantified comparison, a row's `IN (subquery)` or a
/// subquery of a VALUES query, which this module writes as other SQL.
fn holds_rewritten(e: &Expr) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(e, |x| {
        let row_in =
            matches!(x, Expr::InSubquery { expr, .. } if matches!(expr.as_ref(), Expr::Tuple(_)));
        if row_in || quantified(x).is_some() || of_values(x) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
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
            Expr::AnyOp { .. } | Expr::AllOp { .. } => {
                if let Some(q) = quantified(expr) {
                    *expr = self.quantified_conjunct(&q)?;
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
        let name = self.last_name();
        let columns: Vec<String> = (0..fields.len()).map(|i| format!("{name}_{i}")).collect();
        Ok(format!("({subquery}) AS {name} ({})", columns.join(", ")))
    }

    /// `c0 = (a) AND c1 = (b)` over the derived table named last; with
    /// `maybe`, each field equal or NULL on either side (its comparison is
    /// not FALSE: written so, DataFusion decorrelates it).
    fn fields(&self, fields: &[Expr], maybe: bool) -> String {
        let name = self.last_name();
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

/// What [`each_counting_copies`] does with each operation: its operator
/// and sides in, what replaces it (if anything) out.
pub(crate) type CountingCopies<'a> = dyn FnMut(
        &datafusion::sql::sqlparser::ast::SetOperator,
        &mut SetExpr,
        &mut SetExpr,
    ) -> Result<Option<SetExpr>, DataFusionError>
    + 'a;

/// Each `EXCEPT ALL` and `INTERSECT ALL` of `body` (its set operations
/// inner first), which count each row's copies: `visit(op, left, right)`,
/// whose answer (`Some`) replaces the operation.
pub(crate) fn each_counting_copies(
    body: &mut SetExpr,
    visit: &mut CountingCopies<'_>,
) -> Result<(), DataFusionError> {
    use datafusion::sql::sqlparser::ast::{SetOperator, SetQuantifier};
    let SetExpr::SetOperation {
        left,
        op,
        set_quantifier,
        right,
    } = body
    else {
        return Ok(());
    };
    each_counting_copies(left, visit)?;
    each_counting_copies(right, visit)?;
    let counts = matches!(
        (&*op, &*set_quantifier),
        (
            SetOperator::Except | SetOperator::Intersect,
            SetQuantifier::All
        )
    );
    if counts && let Some(written) = visit(op, left, right)? {
        *body = written;
    }
    Ok(())
}

/// `EXCEPT ALL` and `INTERSECT ALL` in `body` (and its set operations)
/// as set operations over rows numbered within their copies.
fn counted_copies(body: &mut SetExpr) -> Result<(), DataFusionError> {
    each_counting_copies(body, &mut |op, left, right| {
        counted(op, left, right).map(Some)
    })
}

/// `left op ALL right` over rows numbered within their copies.
fn counted(
    op: &datafusion::sql::sqlparser::ast::SetOperator,
    left: &SetExpr,
    right: &SetExpr,
) -> Result<SetExpr, DataFusionError> {
    use datafusion::sql::sqlparser::ast::SelectItem;
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
    let names: Vec<String> = match left {
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
    Ok(SetExpr::Query(query))
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

mod quantified;
use quantified::quantified;

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
        // A select item is named by what was written, not by the SQL it became.
        assert!(
            value.ends_with(r#"END AS "(a, b) IN (SELECT x, y FROM u)" FROM t"#),
            "{value}"
        );
        let all =
            rewritten("select k > all (select x from u), k < any (select x from u) as lo from t");
        assert!(
            all.contains(r#"END AS "k > ALL(SELECT x FROM u)","#)
                && all.contains("END AS lo FROM t"),
            "{all}"
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
