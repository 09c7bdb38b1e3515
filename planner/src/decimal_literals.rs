//! Literals with a decimal point are DECIMALs, as in Trino and DuckDB:
//! `0.1 + 0.2 = 0.3` is true, and TPC-H's `l_discount BETWEEN 0.06 - 0.01
//! AND 0.06 + 0.01` keeps the discounts of 0.07 on a table whose money is
//! DOUBLE (read as DOUBLEs, `0.06 + 0.01` is 0.06999999999999999 and Q6
//! answered 40% low).
//!
//! DataFusion reads such literals as decimals when asked
//! (`datafusion.sql_parser.parse_float_as_decimal`, set by squall), but
//! then makes the common type of a DOUBLE and a DECIMAL a DECIMAL(30,15),
//! which no double past 10^15 fits (`coalesce(double_column, 0.0)` failed
//! on 1e16). Trino's common type is the DOUBLE (a REAL with a REAL):
//! [`FloatsOverDecimals`] casts the decimal operands of an operator,
//! `BETWEEN`, `IN`, `CASE` and the functions that pick one of their
//! arguments (`coalesce`, `greatest`, ...) to the float type of the others,
//! and makes a VALUES or UNION column of both kinds the float type, before
//! DataFusion's type coercion.
//!
//! A literal with an exponent (`1e5`, `2.5E-3`) is a DOUBLE, as in Trino:
//! [`rewrite`] writes it as a cast of its text. An unnamed select item
//! holding either kind is named by its text (`x * 1.5`), not by
//! DataFusion's literal (`Decimal128(1.5,2,1)`).

use std::ops::ControlFlow;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::{Case, InList, ScalarFunction};
use datafusion::logical_expr::{
    Between, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, cast,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{self as ast, Query, Value, Visit, Visitor, VisitorMut};

use crate::expr_rules::transform_exprs;

/// `statement` with exponent literals as DOUBLEs and unnamed select items
/// holding a literal named by their text.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Literals)
}

struct Literals;

fn is_exponent(n: &str) -> bool {
    n.contains(['e', 'E'])
}

/// Whether `e` holds a literal: DataFusion names such an item by the
/// literal's value and type (`Int64(1) + Int64(1)`, `Utf8("a")`,
/// `IntervalMonthDayNano("IntervalMonthDayNano { months: 0, days: 1, ...
/// }")`, and a decimal literal by the type it has before this rule casts
/// it), so such an item is named by its text (`1 + 1`, `'a'`, `INTERVAL
/// '1' DAY`), as DuckDB and PostgreSQL name it.
fn has_literal(e: &ast::Expr) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_value(&mut self, _: &ast::ValueWithSpan) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            match e {
                ast::Expr::TypedString { .. } | ast::Expr::Interval(_) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    e.visit(&mut Finder).is_break()
}

impl VisitorMut for Literals {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        name_selects(&mut query.body);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<DataFusionError> {
        if let ast::Expr::TypedString(t) = expr
            && matches!(
                t.data_type,
                ast::DataType::Decimal(ast::ExactNumberInfo::None)
                    | ast::DataType::Dec(ast::ExactNumberInfo::None)
                    | ast::DataType::Numeric(ast::ExactNumberInfo::None)
            )
            && let Some(text) = t.value.value.clone().into_string()
            && let Some((precision, scale)) = decimal_digits(&text)
        {
            let sql = format!("CAST('{}' AS DECIMAL({precision}, {scale}))", text.trim());
            match crate::trino_sql::expression(&sql, "a DECIMAL literal") {
                Ok(e) => *expr = e,
                Err(e) => return ControlFlow::Break(e),
            }
        }
        // U&'...' (the parser has read its escapes): a string like any.
        if let ast::Expr::Value(v) = expr
            && let Value::UnicodeStringLiteral(text) = &v.value
        {
            v.value = Value::SingleQuotedString(text.clone());
        }
        if let ast::Expr::Interval(interval) = expr
            && interval.last_field.is_some()
        {
            match crate::interval_ranges::interval_range(interval) {
                Ok(Some(e)) => *expr = e,
                Ok(None) => {}
                Err(e) => return ControlFlow::Break(e),
            }
            return ControlFlow::Continue(());
        }
        if let ast::Expr::Value(v) = expr
            && let Value::Number(n, _) = &v.value
            && is_exponent(n)
        {
            let sql = format!("CAST('{n}' AS DOUBLE)");
            match crate::trino_sql::expression(&sql, "an exponent literal as a DOUBLE") {
                Ok(e) => *expr = e,
                Err(e) => return ControlFlow::Break(e),
            }
        }
        ControlFlow::Continue(())
    }
}

/// The precision and scale of a `DECIMAL 'text'` literal, as Trino types
/// it: its digits (leading zeros left out, at least one) and those after
/// its point (`DECIMAL '-001.250'` is DECIMAL(4,3), `DECIMAL '.5'`
/// DECIMAL(1,1)); DataFusion made every such literal a DECIMAL(38,10), so
/// a Trino client's decimal parameter came back as `1.2500000000`. `None`
/// for text that is not such a number (the cast then names it) or has more
/// than 38 digits.
fn decimal_digits(text: &str) -> Option<(usize, usize)> {
    let t = text.trim();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (whole, fraction) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || whole.len() + fraction.len() == 0 {
        return None;
    }
    let whole = whole.trim_start_matches('0').len();
    let precision = (whole + fraction.len()).max(1);
    (precision <= 38).then_some((precision, fraction.len()))
}

/// The unnamed items holding such literals in each SELECT of `body` (both
/// sides of a UNION: the first names the columns) named by their text.
fn name_selects(body: &mut ast::SetExpr) {
    match body {
        ast::SetExpr::SetOperation { left, right, .. } => {
            name_selects(left);
            name_selects(right);
        }
        body => crate::select_names::name_by_text(body, has_literal),
    }
}

fn is_decimal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The float type DECIMALs among `types` become: DOUBLE beside a DOUBLE,
/// REAL beside REALs only; None without both kinds.
fn float_of(types: &[Option<DataType>]) -> Option<DataType> {
    let types: Vec<&DataType> = types.iter().flatten().collect();
    if !types.iter().any(|t| is_decimal(t)) {
        return None;
    }
    if types
        .iter()
        .any(|t| matches!(t, DataType::Float64 | DataType::Float16))
    {
        Some(DataType::Float64)
    } else if types.iter().any(|t| matches!(t, DataType::Float32)) {
        Some(DataType::Float32)
    } else {
        None
    }
}

/// Whether `op`'s operands meet in one type: arithmetic and comparisons.
fn meets_in_one_type(op: Operator) -> bool {
    use Operator::*;
    matches!(
        op,
        Plus | Minus
            | Multiply
            | Divide
            | Modulo
            | Eq
            | NotEq
            | Lt
            | LtEq
            | Gt
            | GtEq
            | IsDistinctFrom
            | IsNotDistinctFrom
    )
}

/// The functions whose arguments meet in one type (the value is one of
/// them, or an array of them).
const PEER_ARGUMENTS: &[&str] = &[
    "coalesce",
    "nullif",
    "greatest",
    "least",
    "nvl",
    "ifnull",
    "nvl2",
    "make_array",
];

/// Before type coercion: see the module docs.
#[derive(Debug, Default)]
pub struct FloatsOverDecimals;

impl AnalyzerRule for FloatsOverDecimals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = values_over_floats(plan)?;
        let plan = joins_over_floats(plan)?;
        transform_exprs(plan, over_floats)
    }

    fn name(&self) -> &str {
        "squall_floats_over_decimals"
    }
}

/// `e` with its decimal operands cast where they meet floats (see the
/// module docs), its columns typed by `schema`.
fn over_floats(e: Expr, schema: &datafusion::common::DFSchema) -> Result<Transformed<Expr>> {
    let type_of = |e: &Expr| e.get_type(schema).ok();
    // `exprs` cast to `float` where they are decimals.
    let floats = |exprs: Vec<Expr>, float: &DataType| -> Vec<Expr> {
        exprs
            .into_iter()
            .map(|e| match type_of(&e) {
                Some(t) if is_decimal(&t) => cast(e, float.clone()),
                _ => e,
            })
            .collect()
    };
    let text_beside = |literal: &Expr, other: &Expr| {
        matches!(literal, Expr::Literal(..))
            && type_of(literal).as_ref().is_some_and(is_decimal)
            && type_of(other).as_ref().is_some_and(is_text)
    };
    Ok(match e {
        // A decimal literal beside text (`code > 0.5` of a VARCHAR column)
        // is a DOUBLE, as such literals were: DataFusion would read the
        // text as the literal's own narrow DECIMAL, and '25' failed as
        // DECIMAL(2,1).
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if meets_in_one_type(op)
                && (text_beside(&left, &right) || text_beside(&right, &left)) =>
        {
            let double = |e: Expr| match type_of(&e) {
                Some(t) if is_decimal(&t) => cast(e, DataType::Float64),
                _ => e,
            };
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(double(*left)),
                op,
                Box::new(double(*right)),
            )))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if meets_in_one_type(op) => {
            let Some(float) = float_of(&[type_of(&left), type_of(&right)]) else {
                return Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                    left,
                    op,
                    right,
                })));
            };
            let [l, r]: [Expr; 2] = floats(vec![*left, *right], &float)
                .try_into()
                .map_err(|_| DataFusionError::Internal("two operands".into()))?;
            Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(l),
                op,
                Box::new(r),
            )))
        }
        Expr::Between(b) => {
            let types = [type_of(&b.expr), type_of(&b.low), type_of(&b.high)];
            let Some(float) = float_of(&types) else {
                return Ok(Transformed::no(Expr::Between(b)));
            };
            let [x, low, high]: [Expr; 3] = floats(vec![*b.expr, *b.low, *b.high], &float)
                .try_into()
                .map_err(|_| DataFusionError::Internal("three operands".into()))?;
            Transformed::yes(Expr::Between(Between::new(
                Box::new(x),
                b.negated,
                Box::new(low),
                Box::new(high),
            )))
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let types: Vec<_> = std::iter::once(&*expr).chain(&list).map(type_of).collect();
            let Some(float) = float_of(&types) else {
                return Ok(Transformed::no(Expr::InList(InList {
                    expr,
                    list,
                    negated,
                })));
            };
            let mut all = floats(std::iter::once(*expr).chain(list).collect(), &float);
            let x = all.remove(0);
            Transformed::yes(Expr::InList(InList::new(Box::new(x), all, negated)))
        }
        Expr::Case(case) => case_over_floats(case, &type_of, &floats)?,
        Expr::ScalarFunction(f) if PEER_ARGUMENTS.contains(&f.func.name()) && f.args.len() > 1 => {
            let types: Vec<_> = f.args.iter().map(type_of).collect();
            match float_of(&types) {
                Some(float) => Transformed::yes(Expr::ScalarFunction(ScalarFunction {
                    func: f.func,
                    args: floats(f.args, &float),
                })),
                None => Transformed::no(Expr::ScalarFunction(f)),
            }
        }
        e => Transformed::no(e),
    })
}

/// `plan` with each join's keys and condition over floats: a DECIMAL key
/// beside a DOUBLE one, or compared with one in the condition, cast.
fn joins_over_floats(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::common::tree_node::TreeNode;
    plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Join(mut join) = node else {
            return Ok(Transformed::no(node));
        };
        let schema = join.left.schema().join(join.right.schema())?;
        let mut changed = false;
        for (left, right) in join.on.iter_mut() {
            let types = [left.get_type(&schema).ok(), right.get_type(&schema).ok()];
            let Some(float) = float_of(&types) else {
                continue;
            };
            for (side, t) in [left, right].into_iter().zip(types) {
                if t.as_ref().is_some_and(is_decimal) {
                    *side = cast(side.clone(), float.clone());
                    changed = true;
                }
            }
        }
        if let Some(filter) = join.filter.take() {
            let filter = filter.transform_up(|e| over_floats(e, &schema))?;
            changed |= filter.transformed;
            join.filter = Some(filter.data);
        }
        Ok(Transformed::new_transformed(
            LogicalPlan::Join(join),
            changed,
        ))
    })
    .map(|t| t.data)
}

/// `plan` with each VALUES column that DataFusion typed a DECIMAL though
/// it holds floats (`VALUES (CAST(NULL AS DOUBLE)), (1.5)`) made the float
/// type, its decimals cast; the plan's schemas are worked out again above
/// such a list.
fn values_over_floats(plan: LogicalPlan) -> Result<LogicalPlan> {
    let mut changed = false;
    let plan = plan
        .transform_up_with_subqueries(|node| {
            let values = match node {
                LogicalPlan::Values(values) => values,
                LogicalPlan::Union(union) => {
                    let out = union_over_floats(union)?;
                    changed |= out.transformed;
                    return Ok(out);
                }
                node => return Ok(Transformed::no(node)),
            };
            let empty = datafusion::common::DFSchema::empty();
            let mut rows = values.values;
            let mut fields = Vec::with_capacity(values.schema.fields().len());
            let mut any = false;
            for (j, (qualifier, field)) in values.schema.iter().enumerate() {
                // DataFusion cast every value to the column's type: the
                // value's own type is under that cast.
                let own = |e: &Expr| match e {
                    Expr::Cast(c) if c.field.data_type() == field.data_type() => {
                        c.expr.as_ref().clone()
                    }
                    e => e.clone(),
                };
                let types: Vec<Option<DataType>> = rows
                    .iter()
                    .map(|r| own(&r[j]).get_type(&empty).ok())
                    .collect();
                let float = float_of(&types).filter(|_| is_decimal(field.data_type()));
                let Some(float) = float else {
                    fields.push((qualifier.cloned(), std::sync::Arc::clone(field)));
                    continue;
                };
                any = true;
                for row in rows.iter_mut() {
                    row[j] = cast(own(&row[j]), float.clone());
                }
                let field = field.as_ref().clone().with_data_type(float);
                fields.push((qualifier.cloned(), std::sync::Arc::new(field)));
            }
            if !any {
                return Ok(Transformed::no(LogicalPlan::Values(
                    datafusion::logical_expr::Values {
                        schema: values.schema,
                        values: rows,
                    },
                )));
            }
            changed = true;
            let schema = datafusion::common::DFSchema::new_with_metadata(
                fields,
                values.schema.metadata().clone(),
            )?;
            Ok(Transformed::yes(LogicalPlan::Values(
                datafusion::logical_expr::Values {
                    schema: std::sync::Arc::new(schema),
                    values: rows,
                },
            )))
        })?
        .data;
    if !changed {
        return Ok(plan);
    }
    plan.transform_up_with_subqueries(|node| node.recompute_schema().map(Transformed::yes))
        .map(|t| t.data)
}

/// A UNION whose columns DataFusion typed DECIMAL though some of its inputs
/// give floats: those columns are the float type, each input's decimals
/// cast in a projection above it.
fn union_over_floats(union: datafusion::logical_expr::Union) -> Result<Transformed<LogicalPlan>> {
    use datafusion::logical_expr::LogicalPlanBuilder;
    let fields = union.schema.fields();
    let floats: Vec<Option<DataType>> = (0..fields.len())
        .map(|j| {
            let types: Vec<Option<DataType>> = union
                .inputs
                .iter()
                .map(|input| Some(input.schema().field(j).data_type().clone()))
                .collect();
            float_of(&types).filter(|_| is_decimal(fields[j].data_type()))
        })
        .collect();
    if floats.iter().all(Option::is_none) {
        return Ok(Transformed::no(LogicalPlan::Union(union)));
    }
    let inputs = union
        .inputs
        .into_iter()
        .map(|input| {
            let exprs: Vec<Expr> = input
                .schema()
                .iter()
                .zip(&floats)
                .map(|((qualifier, field), float)| {
                    let column = Expr::Column(datafusion::common::Column::from((
                        qualifier,
                        field.as_ref(),
                    )));
                    match float {
                        Some(float) if is_decimal(field.data_type()) => {
                            cast(column, float.clone()).alias(field.name())
                        }
                        _ => column,
                    }
                })
                .collect();
            LogicalPlanBuilder::from(input.as_ref().clone())
                .project(exprs)?
                .build()
                .map(std::sync::Arc::new)
        })
        .collect::<Result<Vec<_>>>()?;
    let union = datafusion::logical_expr::Union::try_new_with_loose_types(inputs)?;
    Ok(Transformed::yes(LogicalPlan::Union(union)))
}

/// A CASE whose results (or whose operand and WHEN values) mix floats and
/// decimals, with the decimals cast.
fn case_over_floats(
    case: Case,
    type_of: &dyn Fn(&Expr) -> Option<DataType>,
    floats: &dyn Fn(Vec<Expr>, &DataType) -> Vec<Expr>,
) -> Result<Transformed<Expr>> {
    let Case {
        expr,
        when_then_expr,
        else_expr,
    } = case;
    let (whens, thens): (Vec<Expr>, Vec<Expr>) =
        when_then_expr.into_iter().map(|(w, t)| (*w, *t)).unzip();
    let mut changed = false;
    let mut results: Vec<Expr> = thens.into_iter().chain(else_expr.map(|e| *e)).collect();
    let has_else = results.len() > whens.len();
    if let Some(float) = float_of(&results.iter().map(type_of).collect::<Vec<_>>()) {
        results = floats(results, &float);
        changed = true;
    }
    let (expr, whens) = match expr {
        Some(operand) => {
            let mut all: Vec<Expr> = std::iter::once(*operand).chain(whens).collect();
            if let Some(float) = float_of(&all.iter().map(type_of).collect::<Vec<_>>()) {
                all = floats(all, &float);
                changed = true;
            }
            let operand = all.remove(0);
            (Some(Box::new(operand)), all)
        }
        None => (None, whens),
    };
    let else_expr = if has_else {
        results.pop().map(Box::new)
    } else {
        None
    };
    let case = Expr::Case(Case {
        expr,
        when_then_expr: whens
            .into_iter()
            .zip(results)
            .map(|(w, t)| (Box::new(w), Box::new(t)))
            .collect(),
        else_expr,
    });
    Ok(Transformed::new_transformed(case, changed))
}

#[cfg(test)]
#[path = "decimal_literals_tests.rs"]
mod tests;
