//! The rest of Trino's calls that DataFusion has in another shape:
//!
//! | Trino | as |
//! |---|---|
//! | `bitwise_and`, `_or`, `_xor`, `_not`, `_left_shift`, `_right_shift_arithmetic` | `&`, `\|`, `^`, `^ -1`, `<<`, `>>` |
//! | `max_by(x, y, n)`, `min_by(x, y, n)` | the first `n` of `array_agg(x ORDER BY y DESC\|ASC)` over the rows whose `y` is not NULL |
//! | `max(x, n)`, `min(x, n)` | the first `n` of `array_agg(x ORDER BY x DESC\|ASC)` over the non-NULL `x` |
//! | `year_of_week(x)`, `yow(x)` | the ISO week's year: the year, less one in a January day of the last week of the year before, plus one in a December day of week 1 |
//! | `array_average(a)` | `array_avg(a)` (NULL elements left out) |
//! | `with_timezone(t, zone)` | `t AT TIME ZONE zone` (DataFusion's reads a TIMESTAMP as the zone's local time, as `with_timezone` does) |
//!
//! The `n` forms hold their groups' values until the group ends (the
//! ordered `array_agg`), not only the `n` kept.

use datafusion::sql::sqlparser::ast::Expr;

/// The SQL a call of `name` with `args` is, if it is one of this module's.
pub(super) fn rewritten(name: &str, args: &[Expr]) -> Option<String> {
    let a = |i: usize| format!("({})", args[i]);
    Some(match (name, args.len()) {
        ("max_by" | "min_by", 3) => format!(
            "array_slice(array_agg({} ORDER BY {} {}) FILTER (WHERE {} IS NOT NULL), 1, {})",
            a(0),
            a(1),
            if name == "max_by" { "DESC" } else { "ASC" },
            a(1),
            a(2)
        ),
        ("max" | "min", 2) => format!(
            "array_slice(array_agg({x} ORDER BY {x} {}) FILTER (WHERE {x} IS NOT NULL), 1, {})",
            if name == "max" { "DESC" } else { "ASC" },
            a(1),
            x = a(0)
        ),
        ("year_of_week" | "yow", 1) => format!(
            "CAST(CASE WHEN date_part('month', {x}) = 1 AND date_part('week', {x}) >= 52 \
             THEN date_part('year', {x}) - 1 \
             WHEN date_part('month', {x}) = 12 AND date_part('week', {x}) = 1 \
             THEN date_part('year', {x}) + 1 ELSE date_part('year', {x}) END AS BIGINT)",
            x = a(0)
        ),
        ("array_average", 1) => format!("array_avg({})", a(0)),
        ("with_timezone", 2) => format!("{} AT TIME ZONE {}", a(0), args[1]),
        ("bitwise_and", 2) => format!("({} & {})", a(0), a(1)),
        ("bitwise_or", 2) => format!("({} | {})", a(0), a(1)),
        ("bitwise_xor", 2) => format!("({} ^ {})", a(0), a(1)),
        ("bitwise_not", 1) => format!("({} ^ -1)", a(0)),
        ("bitwise_left_shift", 2) => format!("({} << {})", a(0), a(1)),
        ("bitwise_right_shift_arithmetic", 2) => format!("({} >> {})", a(0), a(1)),
        _ => return None,
    })
}
