//! Trino's functions that DataFusion does not have, or has under another
//! name or with other meaning, written before planning as the DataFusion
//! expressions that answer as Trino does. squall speaks Trino's client
//! protocol, so its clients write Trino's SQL: dbt-trino's macros
//! (`date_add`, `date_diff`, `arbitrary`, `listagg ... WITHIN GROUP`),
//! Superset's time grains (`date_add('day', -1, date_trunc('week', ...))`),
//! users' `if`, `count_if`, `year(d)`, `max_by`.
//!
//! A call is rewritten only where its name is not qualified and its
//! arguments are plain expressions (no `DISTINCT`, no named arguments);
//! functions squall does not know stay as they are, and DataFusion names
//! them if it does not have them either.
//!
//! | Trino | as |
//! |---|---|
//! | `if(c, a[, b])` | `CASE WHEN c THEN a [ELSE b] END` |
//! | `count_if(c)` | `count(CASE WHEN c THEN 1 END)` (window and FILTER kept) |
//! | `arbitrary(x)` | `any_value(x)` |
//! | `approx_percentile(x, p)`, `approx_percentile(x, ARRAY[p, q])` | `approx_percentile_cont(x, p)`, an array of them |
//! | `max_by(x, y)`, `min_by(x, y)` | `first_value(x ORDER BY y DESC|ASC) FILTER (WHERE y IS NOT NULL)` |
//! | `listagg(x, s) WITHIN GROUP (ORDER BY y)` | `string_agg(x, s ORDER BY y)` |
//! | `year`, `quarter`, `month`, `week`, `week_of_year`, `day`, `day_of_month`, `day_of_year`, `doy`, `day_of_week`, `dow`, `hour`, `minute`, `second`, `millisecond` | `date_part` as BIGINT (`day_of_week`: Monday 1 to Sunday 7, ISO) |
//! | `date_add(unit, n, x)` | `x + n units` (an interval: `'day'`, `'month'`, `'quarter'`, ...) |
//! | `date_diff(unit, a, b)` | whole units from `a` to `b`, toward zero (months as Trino counts them: a month ends on the same day of the next, or its last day) |
//! | `last_day_of_month(x)` | the month's last day |
//! | `to_utf8(s)`, `from_utf8(b)` | casts between VARCHAR and VARBINARY |
//! | `md5(b)` | `digest(b, 'md5')`: bytes, as Trino's (DataFusion's `md5` answers in hex text) |
//! | `split(s, d)`, `array_join(a, d)`, `slice(a, start, n)` | `string_to_array`, `array_to_string`, `array_slice` |
//! | `substr(s, start[, n])`, start not a literal >= 1 | a negative start counts from the end (`''` before the start); a start of 0 is `''` |
//! | `to_milliseconds(x)` | an interval's milliseconds (of a difference of two dates: its days') |
//! | `regexp_extract(s, p[, g])` | the match (or its group `g`) of `regexp_match` |
//! | `is_nan(x)`, `truncate(x[, n])`, `from_iso8601_date(s)` | `isnan`, `trunc`, `CAST(s AS DATE)` |
//! | `mod(a, b)`, `sign(x)`, `every(c)` (standard SQL too), `ceiling(x)` | `a % b`, `signum`, `bool_and`, `ceil` |
//! | `date_format(t, f)`, `date_parse(s, f)` (MySQL's letters: `%i` minutes, `%s` seconds, `%M` month name) | `to_char`, `to_timestamp` with chrono's letters |
//! | `approx_distinct(x)`, `cardinality(a)`, `row_number()`, `rank()`, `dense_rank()`, `ntile(n)` | DataFusion's, as BIGINT (not unsigned) |
//! | `array_position(a, x)` | BIGINT, 0 when not there (DataFusion: NULL) |
//! | `array_remove(a, x)`, `array_sort(a)` | `array_remove_all` (DataFusion's removes the first), NULLs last |
//! | `split_part(s, d, n)` | NULL past the last field (DataFusion: `''`) |
//! | `regexp_replace(s, p[, r])`, `replace(s, x)` | every match replaced (`'g'`), `replace(s, x, '')` |
//! | `greatest(...)`, `least(...)` | NULL when a value is NULL (DataFusion's skip NULLs) |
//! | `variance(x)`, `geometric_mean(x)` | `var_samp(x)`, `exp(avg(ln(x)))` |
//! | `element_at(a, i)`, `element_at(m, k)` | `a[i]` (from the end when negative), `m[k]`: the element or value, not a list |
//! | `transform(a, x -> e)`, `filter(a, x -> p)`, `any_match`, `all_match`, `none_match`, `zip(a, b, ...)` | `array_transform`, `array_filter`, `array_any_match` (`all_match`: none fails), `arrays_zip`; lambdas parse in squall's dialect ([`crate::trino_dialect`]); a parameter's fields (`i -> i.price`) as `get_field` |
//! | `sequence(a, b[, step])` | `generate_series` (dates step a day unless told) |
//! | `e()`, `nan()`, `infinity()`, `is_finite(x)`, `is_infinite(x)`, `width_bucket(x, lo, hi, n)` | constants and comparisons with infinity; the bucket as a `CASE` |
//! | `codepoint(s)`, `levenshtein_distance(a, b)`, `to_base64(b)`, `from_base64(s)` | `ascii`, `levenshtein` as BIGINT, `encode`/`decode` (base64 padded as Trino pads it) |
//! | `try(e)` | `e` with its casts as `TRY_CAST` and its divisions by zero NULL (other errors still fail) |
//! | `from_iso8601_timestamp(s)`, `current_timezone()`, `date(x)` | `to_timestamp(s)`, `'UTC'`, `CAST(x AS DATE)` |
//! | `strpos(s, sub, n)` | the n-th occurrence (from the end when negative), a function of squall's |
//! | `random(n)`, `random(m, n)` (`rand`) | a whole number from `[0, n)` / `[m, n)`, as BIGINT, from `random()` |
//! | `format_datetime(t, f)`, `parse_datetime(s, f)` (Java's letters: `yyyy-MM-dd HH:mm:ss.SSS`, `EEE`, `'text'`) | `to_char`, `to_timestamp` with chrono's letters |
//! | `to_char(x, f)`, `to_date(s, f)`, `to_timestamp(s, f)` (Teradata's formats: `yyyy-mm-dd hh24:mi:ss`; [`teradata`]) | the same with chrono's letters |
//! | `to_hex(b)`, `from_hex(s)` | `upper(encode(b, 'hex'))`, `decode(s, 'hex')` |
//! | `current_user`, `current_catalog`, `current_schema`, `localtimestamp`, `localtime` | the session's user, catalog and schema; `now()` without its zone |
//!
//! | `bitwise_and_agg`, `_or_agg`, `_xor_agg` | `bit_and`, `bit_or`, `bit_xor` |
//!
//! [`rest`] has `max_by(x, y, n)`, `bitwise_and(a, b)` and the like. Functions of maps and lambdas over them (`transform_values`,
//! `map_filter`, `map_concat`, `zip_with`, ...) are [`maps`]'s. JSON, URL
//! and `hamming_distance` functions are functions of their own
//! (`squall_core::trino_udfs`); `CROSS JOIN UNNEST` of a row's array and
//! `WITH ORDINALITY` are [`crate::lateral_unnest`].

use std::ops::ControlFlow;

mod dates;
mod lambdas;
mod maps;
mod rest;
mod teradata;
mod try_errors;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Query, SelectItem, SetExpr, VisitMut, VisitorMut,
};
use dates::{
    chrono_format, completed_parse, date_diff, date_field, interval, is_date_difference,
    is_date_or_time, joda_format, unit_of,
};
use squall_core::trino_udfs::sort_by::SORT_BY;

/// Who runs a statement, as Trino's `current_user`, `current_catalog` and
/// `current_schema` answer: the client's user and session (its
/// `X-Trino-User`, `-Catalog` and `-Schema`, or `USE`), where it sent them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionIdentity {
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub catalog: Option<String>,
    #[serde(default)]
    pub schema: Option<String>,
}

/// `statement` with Trino's functions written as DataFusion's; `current_user`,
/// `current_catalog` and `current_schema` as `identity`'s values, the
/// session's catalog and schema defaulting to `catalog` and `schema`.
pub fn rewrite(
    statement: Statement,
    identity: &SessionIdentity,
    catalog: &str,
    schema: &str,
) -> Result<Statement> {
    let quoted = |v: &str| format!("'{}'", v.replace('\'', "''"));
    let mut rewriter = Rewriter {
        user: quoted(identity.user.as_deref().unwrap_or("squall")),
        catalog: quoted(identity.catalog.as_deref().unwrap_or(catalog)),
        schema: quoted(identity.schema.as_deref().unwrap_or(schema)),
    };
    crate::trino_sql::rewritten(statement, &mut rewriter)
}

/// The session's values as SQL literals.
struct Rewriter {
    user: String,
    catalog: String,
    schema: String,
}

impl Rewriter {
    /// What a special value written without parentheses is (`current_user`,
    /// `localtimestamp`, ...), if it is one squall writes itself.
    fn special_value(&self, expr: &Expr) -> Option<String> {
        let name = match expr {
            Expr::Function(f) if matches!(f.args, FunctionArguments::None) => plain_name(&f.name)?,
            Expr::Identifier(ident) if ident.quote_style.is_none() => {
                ident.value.to_ascii_lowercase()
            }
            _ => return None,
        };
        Some(match name.as_str() {
            "current_user" => self.user.clone(),
            "current_catalog" => self.catalog.clone(),
            "current_schema" => self.schema.clone(),
            "localtimestamp" => "CAST(now() AS TIMESTAMP)".to_string(),
            "localtime" => "CAST(now() AS TIME)".to_string(),
            _ => return None,
        })
    }
}

impl VisitorMut for Rewriter {
    type Break = DataFusionError;

    /// A select list's unnamed expression keeps the name it was written
    /// with (`year(d)`, not the expression it became).
    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        let SetExpr::Select(select) = query.body.as_mut() else {
            return ControlFlow::Continue(());
        };
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(expr) = item {
                let mut new = expr.clone();
                new.visit(self)?;
                if new != *expr {
                    let name = Ident::with_quote('"', expr.to_string());
                    *item = SelectItem::ExprWithAlias {
                        expr: new,
                        alias: name,
                    };
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if let Expr::Lambda(lambda) = expr {
            lambdas::fields_of_parameters(lambda);
            return ControlFlow::Continue(());
        }
        // A JSON value cast to text is its scalar's text (`CAST(json_extract(d,
        // '$.name') AS VARCHAR)` is `n1`, not `"n1"`): squall's JSON is text,
        // so a cast of a JSON function's value reads its scalar.
        if let Expr::Cast {
            expr: inner,
            data_type,
            ..
        } = expr
            && is_text_type(data_type)
            && JSON_VALUED.iter().any(|f| is_call_of(inner, f))
        {
            match parse(&format!("json_extract_scalar({inner}, '$')")) {
                Ok(new) => *expr = new,
                Err(e) => return ControlFlow::Break(e),
            }
            return ControlFlow::Continue(());
        }
        if let Some(value) = self.special_value(expr) {
            match parse(&value) {
                Ok(new) => *expr = new,
                Err(e) => return ControlFlow::Break(e),
            }
            return ControlFlow::Continue(());
        }
        if let Expr::Substring {
            expr: string,
            substring_from: Some(start),
            substring_for,
            ..
        } = expr
            && (!rest::is_position(start)
                || substring_for.as_deref().is_some_and(|n| !rest::is_count(n)))
        {
            match parse(&rest::from_the_end(string, start, substring_for.as_deref())) {
                Ok(new) => *expr = new,
                Err(e) => return ControlFlow::Break(e),
            }
            return ControlFlow::Continue(());
        }
        // EXTRACT of Trino's fields is Trino's function of that field
        // (BIGINT; DOW is Monday 1 to Sunday 7; SECOND whole seconds).
        if let Expr::Extract {
            field, expr: inner, ..
        } = expr
            && let Some(name) = dates::extract_function(field)
        {
            let mut new = match parse(&format!("{name}({inner})")) {
                Ok(new) => new,
                Err(e) => return ControlFlow::Break(e),
            };
            if let Expr::Function(function) = &mut new {
                match rewritten(function) {
                    Ok(Some(call)) => new = call,
                    Ok(None) => {}
                    Err(e) => return ControlFlow::Break(e),
                }
            }
            *expr = new;
            return ControlFlow::Continue(());
        }
        if let Expr::Function(function) = expr {
            match rewritten(function) {
                Ok(Some(new)) => *expr = new,
                Ok(None) => {}
                Err(e) => return ControlFlow::Break(e),
            }
        }
        ControlFlow::Continue(())
    }
}

/// The expression a call of a Trino function is, or `None` to keep it.
fn rewritten(function: &mut Function) -> Result<Option<Expr>> {
    let Some(name) = plain_name(&function.name) else {
        return Ok(None);
    };
    let Some(args) = plain_args(&function.args) else {
        return Ok(None);
    };
    let plain = function.over.is_none()
        && function.filter.is_none()
        && function.within_group.is_empty()
        && function.null_treatment.is_none();
    let a = |i: usize| format!("({})", args[i]);
    let n = args.len();
    let sql = match (name.as_str(), n) {
        // Window functions whose numbers DataFusion gives unsigned (a
        // client reads decimal(20,0)): BIGINT, as Trino's.
        ("row_number" | "rank" | "dense_rank" | "ntile", _) if function.over.is_some() => {
            return Ok(Some(Expr::Cast {
                kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                expr: Box::new(Expr::Function(function.clone())),
                data_type: datafusion::sql::sqlparser::ast::DataType::BigInt(None),
                array: false,
                format: None,
            }));
        }
        // Aggregates that keep their window, FILTER and so on.
        ("arbitrary", 1) => return rename(function, "any_value"),
        // Several percentiles at once: an array of them.
        ("approx_percentile", 2) if plain && matches!(args[1], Expr::Array(_)) => {
            let Expr::Array(ps) = &args[1] else {
                return Ok(None);
            };
            let each: Vec<String> = ps
                .elem
                .iter()
                .map(|p| format!("approx_percentile_cont({}, {p})", a(0)))
                .collect();
            format!("make_array({})", each.join(", "))
        }
        ("approx_percentile", 2) => return rename(function, "approx_percentile_cont"),
        ("every", 1) => return rename(function, "bool_and"),
        ("ceiling", 1) => return rename(function, "ceil"),
        ("bitwise_and_agg", 1) => return rename(function, "bit_and"),
        ("bitwise_or_agg", 1) => return rename(function, "bit_or"),
        ("bitwise_xor_agg", 1) => return rename(function, "bit_xor"),
        ("count_if", 1) => {
            set_args(function, &[format!("CASE WHEN {} THEN 1 END", a(0))])?;
            return rename(function, "count");
        }
        ("listagg", 2) if function.over.is_none() && !function.within_group.is_empty() => {
            let order: Vec<String> = function
                .within_group
                .iter()
                .map(|o| o.to_string())
                .collect();
            let filter = function
                .filter
                .as_ref()
                .map(|f| format!(" FILTER (WHERE {f})"))
                .unwrap_or_default();
            format!(
                "string_agg({}, {} ORDER BY {}){filter}",
                a(0),
                a(1),
                order.join(", ")
            )
        }
        ("max_by" | "min_by", 2) if plain => format!(
            "first_value({} ORDER BY {} {}) FILTER (WHERE {} IS NOT NULL)",
            a(0),
            a(1),
            if name == "max_by" { "DESC" } else { "ASC" },
            a(1)
        ),
        ("variance", 1) => return rename(function, "var_samp"),
        // BIGINT, as Trino's (DataFusion's count is unsigned, which a
        // client reads as decimal(20,0)).
        ("approx_distinct", 1) if plain => format!("CAST(approx_distinct({}) AS BIGINT)", a(0)),
        ("geometric_mean", 1) if plain => format!("exp(avg(ln({})))", a(0)),
        _ if !plain => return Ok(None),
        ("if", 2) => format!("CASE WHEN {} THEN {} END", a(0), a(1)),
        ("if", 3) => format!("CASE WHEN {} THEN {} ELSE {} END", a(0), a(1), a(2)),
        ("day_of_week" | "dow", 1) => format!("CAST(date_part('isodow', {}) AS BIGINT)", a(0)),
        ("millisecond", 1) => {
            format!("CAST(date_part('millisecond', {}) AS BIGINT) % 1000", a(0))
        }
        (field, 1) if date_field(field).is_some() => format!(
            "CAST(date_part('{}', {}) AS BIGINT)",
            date_field(field).unwrap_or(field),
            a(0)
        ),
        ("date_add", 3) => {
            let unit = unit_of(&args[0], "date_add")?;
            format!("{} + {}", a(2), interval(&unit, &a(1))?)
        }
        ("date_diff", 3) => {
            let unit = unit_of(&args[0], "date_diff")?;
            date_diff(&unit, &a(1), &a(2))?
        }
        ("last_day_of_month", 1) => format!(
            "CAST(date_trunc('month', {}) + INTERVAL '1' MONTH - INTERVAL '1' DAY AS DATE)",
            a(0)
        ),
        ("to_utf8", 1) => format!("CAST({} AS BYTEA)", a(0)),
        ("from_utf8", 1) => format!("CAST({} AS VARCHAR)", a(0)),
        // VARBINARY, as Trino's (DataFusion's md5 answers in hex text).
        ("md5", 1) => format!("digest({}, 'md5')", a(0)),
        ("split", 2) => format!("string_to_array({}, {})", a(0), a(1)),
        ("regexp_extract", 2) => format!("regexp_match({}, concat('(', {}, ')'))[1]", a(0), a(1)),
        ("regexp_extract", 3) => format!(
            "regexp_match({}, concat('(', {}, ')'))[{} + 1]",
            a(0),
            a(1),
            a(2)
        ),
        // The first match's position from 1, -1 when none (DataFusion: 0).
        ("regexp_position", 2) => format!(
            "CASE WHEN regexp_instr({s}, {p}) = 0 THEN -1 ELSE regexp_instr({s}, {p}) END",
            s = a(0),
            p = a(1)
        ),
        ("array_join", 2) => format!("array_to_string({}, {})", a(0), a(1)),
        ("slice", 3) => format!("array_slice({}, {}, {} + {} - 1)", a(0), a(1), a(1), a(2)),
        // A difference of two dates is days in DataFusion (an interval in Trino).
        ("to_milliseconds", 1) if is_date_difference(&args[0]) => {
            format!("CAST({} AS BIGINT) * 86400000", a(0))
        }
        ("to_milliseconds", 1) => format!("CAST(date_part('epoch', {}) * 1000 AS BIGINT)", a(0)),
        // Trino's (MySQL's) format letters, as chrono's: `%i` minutes,
        // `%s` seconds, `%M` the month's name (chrono's `%M` is minutes).
        ("date_format", 2) => format!("to_char({}, {})", a(0), chrono_format(&args[1])?),
        // A TIMESTAMP without a zone, as Trino's (`to_timestamp` gives the
        // session's zone).
        ("date_parse", 2) => {
            let (value, format) = completed_parse(&a(0), &chrono_format(&args[1])?);
            format!("CAST(to_timestamp({value}, {format}) AS TIMESTAMP)")
        }
        ("format_datetime", 2) => format!(
            "to_char({}, {})",
            a(0),
            joda_format(&args[1], "format_datetime")?
        ),
        ("parse_datetime", 2) => {
            let format = joda_format(&args[1], "parse_datetime")?;
            let (value, format) = completed_parse(&a(0), &format);
            format!("to_timestamp({value}, {format})")
        }
        ("date", 1) => format!("CAST({} AS DATE)", a(0)),
        ("try", 1) => return Ok(Some(try_errors::without_errors(args[0].clone()))),
        ("to_hex", 1) => format!("upper(encode({}, 'hex'))", a(0)),
        ("from_hex", 1) => format!("decode({}, 'hex')", a(0)),
        ("is_nan", 1) => format!("isnan({})", a(0)),
        ("mod", 2) => format!("{} % {}", a(0), a(1)),
        ("sign", 1) => format!("signum({})", a(0)),
        ("truncate", 1) => format!("trunc({})", a(0)),
        ("truncate", 2) => format!("trunc({}, {})", a(0), a(1)),
        ("from_iso8601_date", 1) => format!("CAST({} AS DATE)", a(0)),
        ("from_iso8601_timestamp", 1) => format!("to_timestamp({})", a(0)),
        ("current_timezone", 0) => "'UTC'".to_string(),
        ("strpos", 3) => format!("squall_strpos_instance({}, {}, {})", a(0), a(1), a(2)),
        // Trino's whole random numbers: 0 <= r < n, m <= r < n.
        ("random" | "rand", 1) => {
            format!("CAST(floor(random() * CAST({} AS DOUBLE)) AS BIGINT)", a(0))
        }
        ("random" | "rand", 2) => format!(
            "CAST({} + floor(random() * CAST(({}) - ({}) AS DOUBLE)) AS BIGINT)",
            a(0),
            a(1),
            a(0)
        ),
        // A value of a map or an element of an array (from the end when
        // negative), not DataFusion's list of a map's values.
        ("element_at", 2) => format!("{}[{}]", a(0), a(1)),
        // Trino's functions of a lambda, DataFusion's names.
        ("transform", 2) => return rename(function, "array_transform"),
        ("filter", 2) => return rename(function, "array_filter"),
        ("any_match", 2) => return rename(function, "array_any_match"),
        ("all_match", 2) => format!(
            "NOT array_any_match({}, {})",
            a(0),
            lambdas::negated_lambda(&args[1])?
        ),
        ("none_match", 2) => format!("NOT array_any_match({}, {})", a(0), args[1]),
        ("zip", _) if n >= 2 => return rename(function, "arrays_zip"),
        // All of them (DataFusion's removes the first).
        ("array_remove", 2) => format!("array_remove_all({}, {})", a(0), a(1)),
        // NULLs last, as Trino sorts; by a comparator, squall's.
        ("array_sort", 1) => format!("array_sort({}, 'ASC', 'NULLS LAST')", a(0)),
        ("array_sort", 2) if matches!(args[1], Expr::Lambda(_)) => {
            return rename(function, SORT_BY);
        }
        // Every match (DataFusion's replaces the first unless told 'g').
        ("regexp_replace", 2) => format!("regexp_replace({}, {}, '', 'g')", a(0), a(1)),
        ("regexp_replace", 3) => format!("regexp_replace({}, {}, {}, 'g')", a(0), a(1), a(2)),
        ("replace", 2) => format!("replace({}, {}, '')", a(0), a(1)),
        // NULL past the last field (DataFusion: '').
        ("split_part", 3) => format!(
            "CASE WHEN {n} > cardinality(string_to_array({s}, {d})) THEN NULL \
             ELSE split_part({s}, {d}, {n}) END",
            s = a(0),
            d = a(1),
            n = a(2)
        ),
        // NULL when any value is (DataFusion's skip NULLs).
        ("greatest" | "least", _) if n >= 2 => {
            let nulls: Vec<String> = (0..n).map(|i| format!("{} IS NULL", a(i))).collect();
            let values: Vec<String> = (0..n).map(a).collect();
            format!(
                "CASE WHEN {} THEN NULL ELSE {name}({}) END",
                nulls.join(" OR "),
                values.join(", ")
            )
        }
        // The array's own elements, not those of the arrays it holds.
        ("cardinality", 1) => {
            return rename(function, squall_core::trino_udfs::cardinality::CARDINALITY);
        }
        // 0 when the element is not there (DataFusion: NULL).
        ("array_position", 2) => format!(
            "CASE WHEN {a} IS NULL THEN NULL ELSE CAST(coalesce(array_position({a}, {x}), 0) AS BIGINT) END",
            a = a(0),
            x = a(1)
        ),
        // A series of dates steps a day unless told otherwise.
        ("sequence", 2) if args.iter().any(is_date_or_time) => {
            format!("generate_series({}, {}, INTERVAL '1' DAY)", a(0), a(1))
        }
        ("sequence", 2) => format!("generate_series({}, {})", a(0), a(1)),
        ("sequence", 3) => format!("generate_series({}, {}, {})", a(0), a(1), a(2)),
        ("e", 0) => "exp(CAST(1 AS DOUBLE))".to_string(),
        ("nan", 0) => "CAST('NaN' AS DOUBLE)".to_string(),
        ("infinity", 0) => "CAST('Infinity' AS DOUBLE)".to_string(),
        // NaN is neither finite nor infinite (it orders above infinity).
        ("is_finite", 1) => format!("abs(CAST({} AS DOUBLE)) < CAST('Infinity' AS DOUBLE)", a(0)),
        ("is_infinite", 1) => format!("abs(CAST({} AS DOUBLE)) = CAST('Infinity' AS DOUBLE)", a(0)),
        ("width_bucket", 4) => format!(
            "CASE WHEN {x} < {lo} THEN CAST(0 AS BIGINT) WHEN {x} >= {hi} THEN CAST({n} + 1 AS BIGINT) \
             ELSE CAST(floor(({x} - {lo}) * {n} / ({hi} - {lo})) AS BIGINT) + 1 END",
            x = a(0),
            lo = a(1),
            hi = a(2),
            n = a(3)
        ),
        ("codepoint", 1) => format!("CAST(ascii({}) AS INTEGER)", a(0)),
        ("levenshtein_distance", 2) => format!("CAST(levenshtein({}, {}) AS BIGINT)", a(0), a(1)),
        // DataFusion's base64 leaves the padding out; Trino's keeps it.
        ("to_base64", 1) => format!(
            "concat(encode({b}, 'base64'), \
             repeat('=', CAST((4 - length(encode({b}, 'base64')) % 4) % 4 AS INT)))",
            b = a(0)
        ),
        ("from_base64", 1) => format!("decode({}, 'base64')", a(0)),
        _ => match maps::rewritten(&name, &args)?
            .or(rest::rewritten(&name, &args)?)
            .or(teradata::rewritten(&name, &args)?)
        {
            Some(sql) => sql,
            None => return Ok(None),
        },
    };
    parse(&sql).map(Some)
}

fn rename(function: &mut Function, to: &str) -> Result<Option<Expr>> {
    function.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(to))]);
    Ok(Some(Expr::Function(function.clone())))
}

fn set_args(function: &mut Function, args: &[String]) -> Result<()> {
    if let FunctionArguments::List(list) = &mut function.args {
        list.args = args
            .iter()
            .map(|a| parse(a).map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e))))
            .collect::<Result<_>>()?;
    }
    Ok(())
}

/// The function's name, lower case, when it is one unqualified name.
pub(crate) fn plain_name(name: &ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(ident)] => Some(ident.value.to_ascii_lowercase()),
        _ => None,
    }
}

/// The arguments, when they are all plain expressions.
pub(crate) fn plain_args(args: &FunctionArguments) -> Option<Vec<Expr>> {
    let FunctionArguments::List(list) = args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    list.args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// The functions whose value is JSON (Trino's `json` type).
const JSON_VALUED: [&str; 4] = [
    "json_extract",
    "json_parse",
    "json_array_get",
    "squall_to_json",
];

fn is_text_type(t: &datafusion::sql::sqlparser::ast::DataType) -> bool {
    use datafusion::sql::sqlparser::ast::DataType;
    matches!(
        t,
        DataType::Varchar(_) | DataType::Text | DataType::String(_) | DataType::CharVarying(_)
    )
}

fn is_call_of(expr: &Expr, name: &str) -> bool {
    matches!(expr, Expr::Function(f) if plain_name(&f.name).as_deref() == Some(name))
}

fn parse(sql: &str) -> Result<Expr> {
    crate::trino_sql::expression(sql, "writing a Trino function")
}

#[cfg(test)]
mod tests;
