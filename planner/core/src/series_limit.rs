//! A ceiling on the arrays `range(...)` and `generate_series(...)` build as
//! values (the functions of a select list, not the tables of a FROM).
//!
//! DataFusion builds such an array whole, in memory no pool accounts for:
//! `select unnest(range(1, 3000000000))` asks for 24 GB in one allocation,
//! and with less it takes the process down or fails on the allocator's
//! word, after seconds of work no cancel can interrupt (the constant is
//! folded while the query is planned, in one synchronous call). An array of
//! more than [`MAX_SERIES_ELEMENTS`] elements is refused before it is
//! built, naming the function and the table form, which streams its rows
//! in batches (and is split between workers): `SELECT value FROM
//! range(1, 3000000000)`.
//!
//! The count is an upper bound taken from the arguments: for dates and
//! timestamps a step's months count 28 days and its days 23 hours (a day
//! across a change of clocks), so a series of dates is never refused below
//! the ceiling. Workers register the same functions: a series with
//! per-row arguments is checked where it is built.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Date32Type, Int64Type, IntervalMonthDayNanoType, TimeUnit, TimestampNanosecondType,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};
use datafusion::prelude::SessionContext;

/// Most elements one array of `range` / `generate_series` may hold (80 MB
/// of BIGINT or timestamps); Trino's `sequence` holds at most 10,000.
pub const MAX_SERIES_ELEMENTS: u128 = 10_000_000;

const NANOS_PER_DAY: i128 = 86_400_000_000_000;

/// Put the ceiling on the session's `range` and `generate_series`.
pub fn register(ctx: &SessionContext) {
    for name in ["range", "generate_series"] {
        crate::guarded_udf::wrap(ctx, name, || SeriesCeiling {
            inclusive: name == "generate_series",
        });
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesCeiling {
    /// `generate_series` includes its stop value, `range` does not.
    inclusive: bool,
}

impl crate::guarded_udf::BeforeCall for SeriesCeiling {
    type Held = ();

    fn before(&self, name: &str, args: &ScalarFunctionArgs) -> Result<()> {
        let elements = longest_series(&args.args, args.number_rows, self.inclusive)?;
        if elements > MAX_SERIES_ELEMENTS {
            return Err(DataFusionError::Execution(format!(
                "{name}(...) would build an array of {elements} elements, more than the \
                 {MAX_SERIES_ELEMENTS} squall builds as one value; a series this long is a \
                 table, whose rows stream: SELECT * FROM {name}(start, stop[, step])"
            )));
        }
        Ok(())
    }
}

/// An upper bound of the elements of the longest array the call builds
/// over its `rows` rows.
fn longest_series(args: &[ColumnarValue], rows: usize, inclusive: bool) -> Result<u128> {
    if args.is_empty() || args.iter().any(|a| a.data_type().is_null()) {
        return Ok(0);
    }
    let arrays: Vec<ArrayRef> = args
        .iter()
        .map(|a| a.to_array(rows))
        .collect::<Result<_>>()?;
    let mut longest: u128 = 0;
    match arrays[0].data_type() {
        DataType::Int64 => {
            let ints: Vec<_> = arrays
                .iter()
                .map(|a| cast(a, &DataType::Int64).map(|a| a.as_primitive::<Int64Type>().clone()))
                .collect::<std::result::Result<_, _>>()?;
            for row in 0..rows {
                let value = |i: usize| ints[i].is_valid(row).then(|| ints[i].value(row) as i128);
                let (start, stop, step) = match ints.len() {
                    1 => (Some(0), value(0), Some(1)),
                    2 => (value(0), value(1), Some(1)),
                    _ => (value(0), value(1), value(2)),
                };
                if let (Some(start), Some(stop), Some(step)) = (start, stop, step) {
                    longest = longest.max(count(stop - start, step, inclusive));
                }
            }
        }
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _) if arrays.len() == 3 => {
            let instants = |a: &ArrayRef| -> Result<Vec<Option<i128>>> {
                Ok(match a.data_type() {
                    DataType::Timestamp(_, tz) => {
                        let ns = cast(a, &DataType::Timestamp(TimeUnit::Nanosecond, tz.clone()))?;
                        ns.as_primitive::<TimestampNanosecondType>()
                            .iter()
                            .map(|v| v.map(i128::from))
                            .collect()
                    }
                    _ => cast(a, &DataType::Date32)?
                        .as_primitive::<Date32Type>()
                        .iter()
                        .map(|v| v.map(|d| i128::from(d) * NANOS_PER_DAY))
                        .collect(),
                })
            };
            let (starts, stops) = (instants(&arrays[0])?, instants(&arrays[1])?);
            let Some(steps) = arrays[2].as_primitive_opt::<IntervalMonthDayNanoType>() else {
                return Ok(0);
            };
            for row in 0..rows {
                if let (Some(start), Some(stop), true) =
                    (starts[row], stops[row], steps.is_valid(row))
                {
                    let (months, days, nanos) =
                        IntervalMonthDayNanoType::to_parts(steps.value(row));
                    // The least time the step can advance: a month is at least
                    // 28 days, a day at least 23 hours.
                    let least = i128::from(months).abs() * 28 * NANOS_PER_DAY
                        + i128::from(days).abs() * (NANOS_PER_DAY / 24 * 23)
                        + i128::from(nanos).abs();
                    let direction =
                        i128::from(months.signum() + days.signum()) + i128::from(nanos.signum());
                    if least > 0 {
                        longest =
                            longest.max(count(stop - start, direction.signum() * least, inclusive));
                    }
                }
            }
        }
        _ => {}
    }
    Ok(longest)
}

/// Elements from 0 toward `span` by `step` (the stop included or not); 0
/// for a step of 0 or away from the stop, which DataFusion answers itself.
fn count(span: i128, step: i128, inclusive: bool) -> u128 {
    if step == 0 || span.signum() * step.signum() < 0 {
        return u128::from(inclusive && span == 0);
    }
    let (span, step) = (span.unsigned_abs(), step.unsigned_abs());
    if inclusive {
        span / step + 1
    } else {
        span.div_ceil(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_series_lengths() {
        assert_eq!(count(3, 1, false), 3); // range(0, 3): 0 1 2
        assert_eq!(count(6, 2, false), 3); // range(1, 7, 2): 1 3 5
        assert_eq!(count(6, 2, true), 4); // generate_series(1, 7, 2): 1 3 5 7
        assert_eq!(count(-6, -2, true), 4);
        assert_eq!(count(-6, 2, true), 0);
        assert_eq!(count(0, 1, true), 1);
        assert_eq!(count(0, 1, false), 0);
        assert_eq!(count(5, 0, true), 0);
    }

    #[tokio::test]
    async fn a_series_beyond_the_ceiling_is_refused_and_one_below_is_built() {
        let ctx = SessionContext::new();
        register(&ctx);
        for (sql, ok) in [
            ("select cardinality(range(1, 3000000000))", false),
            ("select cardinality(generate_series(1, 10000000))", true),
            ("select cardinality(generate_series(1, 10000001))", false),
            ("select cardinality(range(0, 10000000000, 1000))", true),
            (
                "select cardinality(generate_series(date '1970-01-01', date '9999-12-31', interval '1' day))",
                true,
            ),
            (
                "select cardinality(generate_series(timestamp '2020-01-01', timestamp '2021-01-01', interval '1' second))",
                false,
            ),
            (
                "select count(*) from (select unnest(range(0, x)) from (values (3000000), (3000000)) t(x))",
                true,
            ),
            (
                "select count(*) from (select unnest(range(0, x)) from (values (3), (10000001)) t(x))",
                false,
            ),
        ] {
            let result = ctx.sql(sql).await.unwrap().collect().await;
            match (ok, result) {
                (true, Ok(_)) => {}
                (false, Err(e)) => {
                    let text = e.to_string();
                    assert!(text.contains("more than the 10000000"), "{sql}: {text}");
                    assert!(text.contains("SELECT * FROM"), "{sql}: {text}");
                }
                (true, Err(e)) => panic!("{sql}: {e}"),
                (false, Ok(_)) => panic!("{sql}: not refused"),
            }
        }
        let out = ctx
            .sql("select cardinality(generate_series(date '2020-01-31', date '2021-01-31', interval '1' month))")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(
            out[0]
                .column(0)
                .as_primitive::<arrow::datatypes::UInt64Type>()
                .value(0),
            13
        );
    }
}
