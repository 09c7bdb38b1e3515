//! Functions whose values can be far larger than their arguments (`repeat`,
//! `lpad`, `rpad`, `array_repeat`, `array_resize`, `replace`) reserve the
//! bytes they are about to build from the memory pool first.
//!
//! DataFusion builds a function's output outside any pool: `select
//! cardinality(array_repeat(1, 500000000))` took 7.9 GB and
//! `length(lpad('x', 1500000000))` 5.9 GB of a process whose limit was far
//! less, so one statement could take a laptop's server, or a Lambda
//! function, down on the system's out-of-memory kill for every query it
//! ran. The bytes a call will build over its batch are known from its
//! arguments (the counts and the lengths of what is repeated), so each call
//! asks the pool for them, holds them while it builds and lets them go; a
//! call the pool cannot grant fails its query as any operator past the
//! limit does, naming the function and the bytes. The reservation is
//! checked, not kept: the built values then live like any batch.
//!
//! Workers register the same wrappers over their task's pool; the
//! engine's cover constants folded while a statement is planned.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};
use datafusion::prelude::SessionContext;

/// How a function's output size follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(text, n)`: the text n times.
    Repeat,
    /// `lpad` / `rpad(text, n[, fill])`: n characters of the text and fill.
    Pad,
    /// `array_repeat(element, n)`: n elements.
    ArrayRepeat,
    /// `array_resize(array, n[, element])`: n elements.
    ArrayResize,
    /// `replace(text, from, to)`: each `from` (as many as fit) become `to`.
    Replace,
}

const WRAPPED: [(&str, Growth); 6] = [
    ("repeat", Growth::Repeat),
    ("replace", Growth::Replace),
    ("lpad", Growth::Pad),
    ("rpad", Growth::Pad),
    ("array_repeat", Growth::ArrayRepeat),
    ("array_resize", Growth::ArrayResize),
];

/// Wrap the session's amplifying functions so each call reserves its
/// output's bytes from the session's memory pool first.
pub fn register(ctx: &SessionContext) {
    let pool = &ctx.runtime_env().memory_pool;
    for (name, growth) in WRAPPED {
        crate::guarded_udf::wrap(ctx, name, || ReservedOutput {
            growth,
            pool: Arc::clone(pool),
        });
    }
}

#[derive(Debug, Clone)]
struct ReservedOutput {
    growth: Growth,
    pool: Arc<dyn MemoryPool>,
}

impl PartialEq for ReservedOutput {
    fn eq(&self, other: &Self) -> bool {
        self.growth == other.growth && Arc::ptr_eq(&self.pool, &other.pool)
    }
}

impl Eq for ReservedOutput {}

impl Hash for ReservedOutput {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.growth.hash(state);
    }
}

impl crate::guarded_udf::BeforeCall for ReservedOutput {
    type Held = MemoryReservation;

    fn before(&self, name: &str, args: &ScalarFunctionArgs) -> Result<MemoryReservation> {
        let rows = if args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
            1
        } else {
            args.number_rows
        };
        let bytes = output_bytes(self.growth, &args.args, rows)?;
        let reservation = MemoryConsumer::new(format!("{name}(...)")).register(&self.pool);
        let wanted = usize::try_from(bytes).unwrap_or(usize::MAX);
        if let Err(e) = reservation.try_grow(wanted) {
            let limit = match e.find_root() {
                DataFusionError::ResourcesExhausted(m) => m.clone(),
                other => other.to_string(),
            };
            return Err(DataFusionError::ResourcesExhausted(format!(
                "{name}(...) would build {bytes} bytes of values over {rows} row(s), more \
                 than the memory the query may still reserve: {limit}"
            )));
        }
        Ok(reservation)
    }
}

/// One argument of a call, read row by row without expanding a constant
/// to a column (a constant of a megabyte over 8,192 rows would be the very
/// allocation this module refuses).
struct Arg<'a>(&'a ColumnarValue);

impl Arg<'_> {
    fn count(&self, row: usize) -> Option<i64> {
        match self.0 {
            ColumnarValue::Scalar(s) => match s {
                ScalarValue::Int64(v) => *v,
                ScalarValue::Int32(v) => v.map(i64::from),
                _ => None,
            },
            ColumnarValue::Array(a) => {
                let ints = a.as_primitive_opt::<Int64Type>()?;
                ints.is_valid(row).then(|| ints.value(row))
            }
        }
    }

    /// `f` of a text argument at `row`.
    fn with_text<T>(&self, row: usize, f: impl Fn(&str) -> T) -> Option<T> {
        match self.0 {
            ColumnarValue::Scalar(s) => match s {
                ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
                    v.as_deref().map(f)
                }
                _ => None,
            },
            ColumnarValue::Array(a) => {
                if a.is_null(row) {
                    return None;
                }
                match a.data_type() {
                    DataType::Utf8 => Some(f(a.as_string::<i32>().value(row))),
                    DataType::LargeUtf8 => Some(f(a.as_string::<i64>().value(row))),
                    DataType::Utf8View => Some(f(a.as_string_view().value(row))),
                    _ => None,
                }
            }
        }
    }

    /// Bytes of a text argument at `row`.
    fn bytes(&self, row: usize) -> Option<usize> {
        self.with_text(row, str::len)
    }

    /// Bytes and characters of a text argument at `row` (the characters
    /// cost a pass over the text: only where they are needed).
    fn text(&self, row: usize) -> Option<(usize, usize)> {
        self.with_text(row, |s| (s.len(), s.chars().count()))
    }

    /// Bytes one value at `row` takes (its buffers' share, at least 1).
    fn value_bytes(&self, row: usize) -> usize {
        let bytes = match self.0 {
            ColumnarValue::Scalar(s) => s.size().saturating_sub(size_of::<ScalarValue>()),
            ColumnarValue::Array(a) => slice_bytes(a, row, 1),
        };
        bytes.max(1)
    }

    /// Bytes per element of the array at `row` (at least 1) and its length.
    fn element_bytes(&self, row: usize) -> (usize, usize) {
        let list = match self.0 {
            ColumnarValue::Scalar(s) => match s.to_array_of_size(1) {
                Ok(a) => a,
                Err(_) => return (1, 0),
            },
            ColumnarValue::Array(a) => a.slice(row, 1),
        };
        let len = match list.data_type() {
            DataType::List(_) => list.as_list::<i32>().value_length(0) as usize,
            DataType::LargeList(_) => list.as_list::<i64>().value_length(0) as usize,
            DataType::FixedSizeList(_, n) => *n as usize,
            _ => 0,
        };
        let bytes = slice_bytes(&list, 0, 1);
        ((bytes / len.max(1)).max(1), len)
    }
}

fn slice_bytes(array: &ArrayRef, row: usize, len: usize) -> usize {
    array
        .slice(row, len)
        .to_data()
        .get_slice_memory_size()
        .unwrap_or(0)
}

/// An upper bound of the bytes the call builds over `rows` rows.
fn output_bytes(growth: Growth, args: &[ColumnarValue], rows: usize) -> Result<u128> {
    let args: Vec<Arg> = args.iter().map(Arg).collect();
    let count = |row: usize| -> u128 {
        args.get(1)
            .and_then(|a| a.count(row))
            .map_or(0, |n| n.max(0) as u128)
    };
    // A `replace` of constants that cannot lengthen the text (most of
    // them) costs no pass over the rows.
    if growth == Growth::Replace
        && let [_, from, to] = &args[..]
        && matches!(
            (from.0, to.0),
            (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_))
        )
        && let (Some(from), Some(to)) = (from.bytes(0), to.bytes(0))
        && (from == 0 || to <= from)
    {
        return Ok(0);
    }
    let mut total: u128 = 0;
    for row in 0..rows {
        if growth == Growth::Replace {
            // Only a `to` longer than `from` makes the text longer.
            let bytes = |i: usize| args.get(i).and_then(|a| a.bytes(row)).map(|b| b as u128);
            if let (Some(text), Some(from), Some(to)) = (bytes(0), bytes(1), bytes(2))
                && from > 0
                && to > from
            {
                total += text + text / from * (to - from);
            }
            continue;
        }
        let n = count(row);
        if n == 0 {
            continue;
        }
        total += match growth {
            Growth::Repeat => args[0].bytes(row).map_or(0, |bytes| bytes as u128 * n),
            Growth::Pad => {
                // n characters, each as wide as the widest of text and fill.
                let width = |a: Option<&Arg>| {
                    a.and_then(|a| a.text(row))
                        .map_or(1, |(bytes, chars)| bytes.div_ceil(chars.max(1)))
                };
                let fill = if args.len() > 2 {
                    width(args.get(2))
                } else {
                    1
                };
                n * width(args.first()).max(fill).max(1) as u128
            }
            Growth::ArrayRepeat => n * (args[0].value_bytes(row) as u128 + 8),
            Growth::ArrayResize => {
                let (element, _) = args[0].element_bytes(row);
                let fill = args.get(2).map_or(0, |a| a.value_bytes(row));
                n * (element.max(fill) as u128 + 8)
            }
            Growth::Replace => 0,
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::BoundedPool;
    use datafusion::execution::memory_pool::UnboundedMemoryPool;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::prelude::SessionConfig;

    fn limited(bytes: usize) -> SessionContext {
        let pool = BoundedPool::greedy(
            Arc::new(UnboundedMemoryPool::default()),
            bytes,
            "this test's memory limit".into(),
        );
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(pool))
            .build_arc()
            .unwrap();
        let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), runtime);
        register(&ctx);
        ctx
    }

    async fn run(ctx: &SessionContext, sql: &str) -> Result<String> {
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(arrow::util::pretty::pretty_format_batches(&batches)?.to_string())
    }

    #[tokio::test]
    async fn values_past_the_pool_are_refused_and_those_within_it_are_built() {
        let ctx = limited(64 << 20);
        for sql in [
            "select length(repeat('ab', 40000000))",
            "select length(lpad('x', 100000000, 'y'))",
            "select length(rpad('x', 70000000))",
            "select cardinality(array_repeat(1, 10000000))",
            "select cardinality(array_resize([1, 2], 10000000))",
            "select max(length(repeat(s, 20000000))) from (values ('abc'), ('de')) t(s)",
            "select length(replace(repeat('a', 1000000), 'a', repeat('b', 100)))",
        ] {
            let e = run(&ctx, sql).await.expect_err(sql).to_string();
            assert!(
                e.contains("would build") && e.contains("this test's memory limit"),
                "{sql}: {e}"
            );
        }
        for (sql, answer) in [
            ("select length(repeat('ab', 1000000)) n", "2000000"),
            ("select length(lpad('x', 1000000, 'é')) n", "1000000"),
            (
                "select cardinality(array_repeat('abc', 100000)) n",
                "100000",
            ),
            (
                "select cardinality(array_resize([1, 2], 100000, 7)) n",
                "100000",
            ),
            (
                "select max(length(repeat(s, 1000))) n from (values ('abc'), ('de')) t(s)",
                "3000",
            ),
            (
                "select repeat(s, n) is null n from (values ('a', null)) t(s, n)",
                "true",
            ),
        ] {
            let out = run(&ctx, sql).await.unwrap();
            assert!(out.contains(&format!("| {answer}")), "{sql}: {out}");
        }
    }

    #[test]
    fn the_bound_covers_what_is_built() {
        let text = |s: &str| ColumnarValue::Scalar(ScalarValue::Utf8(Some(s.into())));
        let int = |n: i64| ColumnarValue::Scalar(ScalarValue::Int64(Some(n)));
        let rows = |a: ArrayRef| ColumnarValue::Array(a);
        assert_eq!(
            output_bytes(Growth::Repeat, &[text("abc"), int(10)], 1).unwrap(),
            30
        );
        assert_eq!(
            output_bytes(Growth::Repeat, &[text("abc"), int(-1)], 1).unwrap(),
            0
        );
        assert_eq!(
            output_bytes(Growth::Pad, &[text("x"), int(10), text("é")], 1).unwrap(),
            20
        );
        let texts = Arc::new(arrow::array::StringArray::from(vec![
            Some("ab"),
            None,
            Some("c"),
        ]));
        assert_eq!(
            output_bytes(Growth::Repeat, &[rows(texts), int(4)], 3).unwrap(),
            12
        );
        let counts = Arc::new(arrow::array::Int64Array::from(vec![Some(2), Some(3), None]));
        assert_eq!(
            output_bytes(Growth::Repeat, &[text("xy"), rows(counts)], 3).unwrap(),
            10
        );
        // 4 of "ab" in 8 bytes, each 2 bytes longer; a shorter `to` adds none.
        let replace = |from: &str, to: &str| {
            output_bytes(
                Growth::Replace,
                &[text("abababab"), text(from), text(to)],
                1,
            )
            .unwrap()
        };
        assert_eq!(replace("ab", "abcd"), 16);
        assert_eq!(replace("ab", "a"), 0);
        assert_eq!(replace("", "xyz"), 0);
    }
}
