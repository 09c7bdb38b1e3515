//! `ts AT TIME ZONE 'zone'` as Trino reads it: a TIMESTAMP (without a
//! zone) is an instant in the session's zone, UTC, shown in `zone`
//! (`timestamp '2020-01-01 12:00' AT TIME ZONE 'America/New_York'` is
//! `2020-01-01 07:00 -05:00`). DataFusion casts to the zone, which reads
//! the TIMESTAMP as that zone's local time (12:00 -05:00: PostgreSQL's and
//! DuckDB's meaning, and Trino's `with_timezone`). Written as
//! `(ts AT TIME ZONE 'UTC') AT TIME ZONE 'zone'`: the inner cast makes
//! the instant (a TIMESTAMP read as UTC, a TIMESTAMP WITH TIME ZONE kept),
//! the outer one shows it in `zone`. A select list's unnamed item keeps its
//! name. Trino's `at_timezone(ts, 'zone')` is the same. `with_timezone` is
//! rewritten later into DataFusion's meaning.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Query, Value, ValueWithSpan, VisitorMut};

/// `statement` with its `AT TIME ZONE` read as Trino reads it.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut FromUtc)
}

struct FromUtc;

fn is_utc(zone: &Expr) -> bool {
    matches!(zone, Expr::Value(ValueWithSpan { value: Value::SingleQuotedString(z), .. }) if z == "UTC")
}

/// Whether `expr` is already an instant: `x AT TIME ZONE 'UTC'`.
fn is_instant(expr: &Expr) -> bool {
    match expr {
        Expr::Nested(inner) => is_instant(inner),
        Expr::AtTimeZone { time_zone, .. } => is_utc(time_zone),
        _ => false,
    }
}

/// The arguments of a call `at_timezone(ts, zone)`.
fn at_timezone_call(expr: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Function(f) = expr else {
        return None;
    };
    if crate::trino_functions::plain_name(&f.name).as_deref() != Some("at_timezone") {
        return None;
    }
    let [timestamp, time_zone]: [Expr; 2] = crate::trino_functions::plain_args(&f.args)?
        .try_into()
        .ok()?;
    Some((timestamp, time_zone))
}

impl VisitorMut for FromUtc {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        crate::select_names::name_by_text(&mut query.body, |e| {
            matches!(e, Expr::AtTimeZone { .. }) || at_timezone_call(e).is_some()
        });
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if let Some((timestamp, time_zone)) = at_timezone_call(expr) {
            *expr = Expr::AtTimeZone {
                timestamp: Box::new(timestamp),
                time_zone: Box::new(time_zone),
            };
        }
        // `x AT TIME ZONE 'UTC'` is the instant already (a TIMESTAMP read
        // as UTC's local time is its UTC instant).
        if let Expr::AtTimeZone {
            timestamp,
            time_zone,
        } = expr
            && !is_utc(time_zone)
            && !is_instant(timestamp)
        {
            let inner = std::mem::replace(timestamp.as_mut(), Expr::value(Value::Null));
            **timestamp = Expr::Nested(Box::new(Expr::AtTimeZone {
                timestamp: Box::new(inner),
                time_zone: Box::new(Expr::value(Value::SingleQuotedString("UTC".into()))),
            }));
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trino_sql::rewritten_text;

    #[test]
    fn a_timestamp_is_read_as_utc_before_its_zone_is_shown() {
        assert_eq!(
            rewritten_text("select t AT TIME ZONE 'Asia/Tokyo' from x", rewrite),
            "SELECT (t AT TIME ZONE 'UTC') AT TIME ZONE 'Asia/Tokyo' AS \"t AT TIME ZONE 'Asia/Tokyo'\" FROM x"
        );
        // Already an instant: not wrapped again.
        assert_eq!(
            rewritten_text(
                "select a from x where (t AT TIME ZONE 'UTC') AT TIME ZONE 'CET' > t",
                rewrite
            ),
            "SELECT a FROM x WHERE (t AT TIME ZONE 'UTC') AT TIME ZONE 'CET' > t"
        );
    }
}
