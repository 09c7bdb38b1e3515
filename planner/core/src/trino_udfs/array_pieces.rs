//! Trino's `ngrams(array, n)`, `combinations(array, n)` and
//! `shuffle(array)`: arrays made of an array's elements, whatever their
//! type (the elements are taken from the input's values by index).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{Array, ArrayRef, AsArray, ListArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{Rows, refused};

/// Most elements one call may build in all (as `sequence`'s ceiling).
const MAX_ELEMENTS: usize = 10_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Piece {
    Ngrams,
    Combinations,
    Shuffle,
}

pub(super) fn functions() -> Vec<ScalarUDF> {
    [
        ("ngrams", Piece::Ngrams, 2, Volatility::Immutable),
        (
            "combinations",
            Piece::Combinations,
            2,
            Volatility::Immutable,
        ),
        ("shuffle", Piece::Shuffle, 1, Volatility::Volatile),
    ]
    .into_iter()
    .map(|(name, piece, arity, volatility)| {
        ScalarUDF::new_from_impl(Pieces {
            name,
            piece,
            signature: Signature::any(arity, volatility),
        })
    })
    .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Pieces {
    name: &'static str,
    piece: Piece,
    signature: Signature,
}

fn element_field(name: &str, t: &DataType) -> Result<FieldRef> {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Ok(Arc::clone(f))
        }
        other => Err(DataFusionError::Plan(format!(
            "{name}: an array expected, not {other}"
        ))),
    }
}

impl ScalarUDFImpl for Pieces {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let element = element_field(self.name, &arg_types[0])?;
        let list = DataType::List(element);
        Ok(match self.piece {
            Piece::Shuffle => list,
            _ => DataType::List(Arc::new(Field::new("item", list, true))),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let rows = call.count;
        let element = element_field(self.name, &args.args[0].data_type())?;
        let lists = args.args[0].to_array(rows)?;
        let lists = arrow::compute::cast(&lists, &DataType::List(Arc::clone(&element)))?;
        let lists = lists.as_list::<i32>();
        let counts = match args.args.get(1) {
            Some(n) => Some(arrow::compute::cast(&n.to_array(rows)?, &DataType::Int64)?),
            None => None,
        };
        let counts = counts.as_ref().map(|c| c.as_primitive::<Int64Type>());
        // Indices into the input's values; offsets of the inner arrays (of
        // the one level of `shuffle`); offsets of the outer arrays.
        let mut indices: Vec<u32> = Vec::new();
        let mut inner = vec![0_i32];
        let mut outer = vec![0_i32];
        let mut valid = Vec::with_capacity(rows);
        let offsets = lists.value_offsets();
        for row in 0..rows {
            let n = counts.map(|c| c.is_valid(row).then(|| c.value(row)));
            if lists.is_null(row) || n == Some(None) {
                valid.push(false);
                outer.push(inner.len() as i32 - 1);
                continue;
            }
            valid.push(true);
            let (start, end) = (offsets[row] as u32, offsets[row + 1] as u32);
            let len = (end - start) as usize;
            let mut push = |piece: &mut dyn Iterator<Item = u32>| -> Result<()> {
                indices.extend(piece.map(|i| start + i));
                if indices.len() > MAX_ELEMENTS {
                    return Err(refused(
                        self.name,
                        format!("the result would hold more than {MAX_ELEMENTS} elements"),
                    ));
                }
                inner.push(indices.len() as i32);
                Ok(())
            };
            match self.piece {
                Piece::Shuffle => {
                    let mut order: Vec<u32> = (0..len as u32).collect();
                    shuffle(&mut order);
                    push(&mut order.into_iter())?;
                }
                Piece::Ngrams => {
                    let n = n.flatten().unwrap_or(0);
                    if n <= 0 {
                        return Err(refused(self.name, "N must be positive"));
                    }
                    let n = (n as usize).min(len.max(1));
                    let windows = if len <= n { 1 } else { len - n + 1 };
                    for w in 0..windows {
                        let piece = (w as u32)..((w + n.min(len)) as u32);
                        push(&mut piece.into_iter())?;
                    }
                }
                Piece::Combinations => {
                    let k = n.flatten().unwrap_or(0);
                    if !(0..=5).contains(&k) {
                        return Err(refused(
                            self.name,
                            format!("combination size must be between 0 and 5, not {k}"),
                        ));
                    }
                    let k = k as usize;
                    if k <= len {
                        // Index sets in lexicographic order.
                        let mut pick: Vec<u32> = (0..k as u32).collect();
                        loop {
                            push(&mut pick.iter().copied())?;
                            let Some(i) = (0..k).rev().find(|&i| pick[i] < (len - k + i) as u32)
                            else {
                                break;
                            };
                            pick[i] += 1;
                            for j in i + 1..k {
                                pick[j] = pick[j - 1] + 1;
                            }
                        }
                    }
                }
            }
            outer.push(inner.len() as i32 - 1);
        }
        let values = take(lists.values().as_ref(), &UInt32Array::from(indices), None)?;
        let nulls = Some(NullBuffer::from(valid));
        let out: ArrayRef = match self.piece {
            Piece::Shuffle => {
                let offsets: Vec<i32> = outer.iter().map(|&o| inner[o as usize]).collect();
                Arc::new(ListArray::try_new(
                    element,
                    OffsetBuffer::new(offsets.into()),
                    values,
                    nulls,
                )?)
            }
            _ => {
                let pieces = ListArray::try_new(
                    Arc::clone(&element),
                    OffsetBuffer::new(inner.into()),
                    values,
                    None,
                )?;
                let field = Arc::new(Field::new("item", DataType::List(element), true));
                Arc::new(ListArray::try_new(
                    field,
                    OffsetBuffer::new(outer.into()),
                    Arc::new(pieces),
                    nulls,
                )?)
            }
        };
        call.answer(out)
    }
}

/// Fisher-Yates with a xorshift generator seeded from the clock and a
/// counter (a shuffle needs no cryptographic randomness).
fn shuffle(order: &mut [u32]) {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut state = nanos
        ^ CALLS
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    state |= 1;
    for i in (1..order.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    async fn answer(sql: &str) -> String {
        let ctx = SessionContext::new();
        for f in super::functions() {
            ctx.register_udf(f);
        }
        ctx.register_udf(super::super::cardinality::function());
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let column = batches[0].column(0);
        arrow::util::display::ArrayFormatter::try_new(column.as_ref(), &Default::default())
            .unwrap()
            .value(0)
            .to_string()
    }

    #[tokio::test]
    async fn pieces_of_arrays_as_trino_makes_them() {
        for (sql, expected) in [
            (
                "select ngrams(['foo', 'bar', 'baz', 'foo'], 2)",
                "[[foo, bar], [bar, baz], [baz, foo]]",
            ),
            (
                "select ngrams(['foo', 'bar', 'baz', 'foo'], 5)",
                "[[foo, bar, baz, foo]]",
            ),
            ("select ngrams([1, 2, 3], 1)", "[[1], [2], [3]]"),
            (
                "select combinations(['foo', 'bar', 'baz'], 2)",
                "[[foo, bar], [foo, baz], [bar, baz]]",
            ),
            (
                "select combinations([1, 2, 3, 4], 3)",
                "[[1, 2, 3], [1, 2, 4], [1, 3, 4], [2, 3, 4]]",
            ),
            ("select combinations([1, 2], 3)", "[]"),
            ("select combinations([1, 2], 0)", "[[]]"),
            (
                "select squall_cardinality(combinations(range(0, 30), 5))",
                "142506",
            ),
            (
                "select array_sort(shuffle([3, 1, 2, 5, 4]))",
                "[1, 2, 3, 4, 5]",
            ),
            ("select squall_cardinality(shuffle(range(0, 1000)))", "1000"),
            ("select squall_cardinality([[1, 2], [3]])", "2"),
            ("select ngrams(cast(null as bigint[]), 2) is null", "true"),
        ] {
            assert_eq!(answer(sql).await, expected, "{sql}");
        }
        let ctx = SessionContext::new();
        for f in super::functions() {
            ctx.register_udf(f);
        }
        for (sql, says) in [
            ("select ngrams([1], 0)", "N must be positive"),
            ("select combinations([1], 6)", "between 0 and 5"),
        ] {
            let e = match ctx.sql(sql).await {
                Ok(df) => df.collect().await.unwrap_err().to_string(),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(says), "{sql}: {e}");
        }
    }
}
