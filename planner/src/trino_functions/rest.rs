//! The rest of Trino's calls that DataFusion has in another shape:
//!
//! | Trino | as |
//! |---|---|
//! | `bitwise_and`, `_or`, `_xor`, `_not`, `_left_shift`, `_right_shift`, `_right_shift_arithmetic` | `&`, `\|`, `^`, `^ -1`, `<<` (0 from 64 places), `>>` masked, `>>` |
//! | `max_by(x, y, n)`, `min_by(x, y, n)` | squall's aggregate keeping a group's `n` best rows (`squall_core::trino_udfs::top_n`) |
//! | `max(x, n)`, `min(x, n)` | the same of `(x, x, n)` |
//! | `year_of_week(x)`, `yow(x)` | the ISO week's year: the year, less one in a January day of the last week of the year before, plus one in a December day of week 1 |
//! | `array_average(a)` | `array_avg(a)` (NULL elements left out) |
//! | `array_max(a)`, `array_min(a)` | DataFusion's, NULL when an element is NULL |
//! | `contains(a, x)` | `array_has(a, x)`, NULL (not FALSE) when `x` is not there but `x` or an element is NULL |
//! | `array_sum(a)` | `reduce(a, 0, (s, x) -> s + coalesce(x, 0), s -> s)`: BIGINT of integers, 0 when no element is there |
//! | `approx_percentile(x, w, p)`, `approx_percentile(x, w, ARRAY[...])` | `approx_percentile_cont_with_weight(x, w, p)`, an array of them |
//! | `approx_distinct(x, e)` | `approx_distinct(x)` (about 0.8% standard error, whatever `e`) |
//! | `set_agg(x)`, `set_union(a)` | `array_agg(DISTINCT x)`, the distinct elements of the group's arrays |
//! | `with_timezone(t, zone)` | `t AT TIME ZONE zone` (DataFusion's reads a TIMESTAMP as the zone's local time, as `with_timezone` does) |
//! | `json_value(j, 'lax $.a')`, `json_query(j, p)`, `json_exists(j, p)` (SQL/JSON, a literal path in `lax` or `strict` mode) | `json_extract_scalar(j, '$.a')`, `json_extract(j, p)`, `json_extract(j, p) IS NOT NULL` |
//! | `trim_array(a, n)` | `array_slice(a, 1, cardinality(a) - n)` |

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::ast::{Expr, Value, ValueWithSpan};
use squall_core::trino_udfs::top_n::{MAX_BY_N, MIN_BY_N};

/// The SQL a call of `name` with `args` is, if it is one of this module's.
pub(super) fn rewritten(name: &str, args: &[Expr]) -> Result<Option<String>> {
    let a = |i: usize| format!("({})", args[i]);
    Ok(Some(match (name, args.len()) {
        ("max_by" | "min_by", 3) => {
            positive(name, &args[2])?;
            let f = if name == "max_by" { MAX_BY_N } else { MIN_BY_N };
            format!("{f}({}, {}, {})", a(0), a(1), args[2])
        }
        ("max" | "min", 2) => {
            positive(name, &args[1])?;
            let f = if name == "max" { MAX_BY_N } else { MIN_BY_N };
            format!("{f}({x}, {x}, {})", args[1], x = a(0))
        }
        // Kept as written, its number of buckets checked before it runs.
        ("approx_most_frequent", 3) => {
            positive(name, &args[0])?;
            return Ok(None);
        }
        ("year_of_week" | "yow", 1) => format!(
            "CAST(CASE WHEN date_part('month', {x}) = 1 AND date_part('week', {x}) >= 52 \
             THEN date_part('year', {x}) - 1 \
             WHEN date_part('month', {x}) = 12 AND date_part('week', {x}) = 1 \
             THEN date_part('year', {x}) + 1 ELSE date_part('year', {x}) END AS BIGINT)",
            x = format!("CAST({} AS DATE)", a(0))
        ),
        ("array_average", 1) => format!("array_avg({})", a(0)),
        // NULL where an element is NULL, as Trino's (DataFusion's skip it).
        ("array_max" | "array_min", 1) => format!(
            "CASE WHEN cardinality(array_filter({a}, squall_e -> squall_e IS NULL)) = 0 \
             THEN {name}({a}) END",
            a = a(0)
        ),
        // NULL where the element is not found but a NULL might be it.
        ("contains", 2) => format!(
            "CASE WHEN {a} IS NULL THEN NULL WHEN array_has({a}, {x}) THEN TRUE \
             WHEN {x} IS NULL OR cardinality(array_filter({a}, squall_e -> squall_e IS NULL)) > 0 \
             THEN NULL ELSE FALSE END",
            a = a(0),
            x = a(1)
        ),
        // A BIGINT of integers (DataFusion's is a DOUBLE), 0 of an empty
        // array or one of NULLs (DataFusion's: NULL), overflow checked.
        ("array_sum", 1) => format!(
            "reduce({}, 0, (squall_s, squall_x) -> squall_s + coalesce(squall_x, 0), squall_s -> squall_s)",
            a(0)
        ),
        // Weighted percentiles, one or an array of them.
        ("approx_percentile", 3) => match &args[2] {
            Expr::Array(ps) => {
                let each: Vec<String> = ps
                    .elem
                    .iter()
                    .map(|p| {
                        format!(
                            "approx_percentile_cont_with_weight({}, {}, {p})",
                            a(0),
                            a(1)
                        )
                    })
                    .collect();
                format!("make_array({})", each.join(", "))
            }
            p => format!(
                "approx_percentile_cont_with_weight({}, {}, {p})",
                a(0),
                a(1)
            ),
        },
        // DataFusion's sketch has a standard error of about 0.8% whatever
        // the bound asks (Trino's default is 2.3%, its least 0.4%).
        ("approx_distinct", 2) => format!("CAST(approx_distinct({}) AS BIGINT)", a(0)),
        ("set_agg", 1) => format!("array_agg(DISTINCT {})", a(0)),
        ("set_union", 1) => format!("array_distinct(flatten(array_agg({})))", a(0)),
        ("with_timezone", 2) => format!("{} AT TIME ZONE {}", a(0), args[1]),
        ("json_value", 2) => format!(
            "json_extract_scalar({}, {})",
            a(0),
            json_path(name, &args[1])?
        ),
        ("json_query", 2) => format!("json_extract({}, {})", a(0), json_path(name, &args[1])?),
        ("json_exists", 2) => format!(
            "(json_extract({}, {}) IS NOT NULL)",
            a(0),
            json_path(name, &args[1])?
        ),
        ("trim_array", 2) => format!(
            "array_slice({x}, 1, CAST(cardinality({x}) AS BIGINT) - {})",
            a(1),
            x = a(0)
        ),
        ("bitwise_and", 2) => format!("({} & {})", a(0), a(1)),
        ("bitwise_or", 2) => format!("({} | {})", a(0), a(1)),
        ("bitwise_xor", 2) => format!("({} ^ {})", a(0), a(1)),
        ("bitwise_not", 1) => format!("({} ^ -1)", a(0)),
        // Trino's shifts of a BIGINT: 64 places or more shift every bit
        // out (Rust's, and so DataFusion's, take the count modulo 64); the
        // logical right shift fills with zeros (a mask of the 64 - s low
        // bits).
        ("bitwise_left_shift", 2) => format!(
            "(CASE WHEN {s} >= 64 THEN 0 ELSE CAST({x} AS BIGINT) << {s} END)",
            x = a(0),
            s = a(1)
        ),
        ("bitwise_right_shift", 2) => format!(
            "(CASE WHEN {s} = 0 THEN CAST({x} AS BIGINT) WHEN {s} >= 64 THEN 0 \
             ELSE (CAST({x} AS BIGINT) >> {s}) & ((-1 << (64 - {s})) ^ -1) END)",
            x = a(0),
            s = a(1)
        ),
        ("bitwise_right_shift_arithmetic", 2) => format!(
            "(CASE WHEN {s} >= 64 THEN CASE WHEN {x} < 0 THEN -1 ELSE 0 END \
             ELSE CAST({x} AS BIGINT) >> {s} END)",
            x = a(0),
            s = a(1)
        ),
        _ => return Ok(None),
    }))
}

/// An SQL/JSON path literal (`'lax $.a[0]'`, `'strict $.a'`) as the JSON
/// path `json_extract` reads, quoted; the mode only says how a missing
/// member fails, and a missing member is NULL here.
fn json_path(name: &str, path: &Expr) -> Result<String> {
    let Expr::Value(ValueWithSpan {
        value: Value::SingleQuotedString(text),
        ..
    }) = path
    else {
        return Err(DataFusionError::Plan(format!(
            "{name}: the JSON path must be a string constant, not {path}"
        )));
    };
    let trimmed = text.trim_start();
    let lower = trimmed.to_ascii_lowercase();
    let bare = ["lax ", "strict "]
        .iter()
        .find(|mode| lower.starts_with(*mode))
        .map_or(trimmed, |mode| &trimmed[mode.len()..]);
    Ok(format!("'{}'", bare.trim().replace('\'', "''")))
}

/// `n` when it is a positive integer literal, else the error naming it.
fn positive(name: &str, n: &Expr) -> Result<u64> {
    match n {
        Expr::Value(ValueWithSpan {
            value: Value::Number(text, _),
            ..
        }) => text.parse::<u64>().ok().filter(|&n| n > 0),
        _ => None,
    }
    .ok_or_else(|| {
        DataFusionError::Plan(format!(
            "{name}: the number of values must be a positive integer constant, not {n}"
        ))
    })
}

/// `substr(s, start[, n])` as Trino reads it: a negative start counts from
/// the end of the string (`''` when that is before its start), a start of
/// 0 is `''` (PostgreSQL's, DataFusion's: the first `n - 1` characters),
/// and so is a negative length (DataFusion failed the query, "negative
/// count not allowed", as an internal error).
pub(super) fn from_the_end(string: &Expr, start: &Expr, length: Option<&Expr>) -> String {
    let len = length.map(|n| format!(", ({n})")).unwrap_or_default();
    let negative = length.map(|n| format!(" OR ({n}) < 0")).unwrap_or_default();
    format!(
        "CASE WHEN ({start}) = 0{negative} OR ({start}) < 0 AND char_length({string}) + ({start}) < 0 THEN '' \
         ELSE substr({string}, CASE WHEN ({start}) < 0 THEN char_length({string}) + ({start}) + 1 \
         ELSE ({start}) END{len}) END"
    )
}

/// A literal count of 0 or more.
pub(super) fn is_count(expr: &Expr) -> bool {
    matches!(expr, Expr::Value(ValueWithSpan { value: Value::Number(n, _), .. }) if n.parse::<i64>().is_ok_and(|c| c >= 0))
}

/// A literal position of 1 or more (a string's start as both count it).
pub(super) fn is_position(expr: &Expr) -> bool {
    matches!(expr, Expr::Value(ValueWithSpan { value: Value::Number(n, _), .. }) if n.parse::<i64>().is_ok_and(|p| p >= 1))
}
