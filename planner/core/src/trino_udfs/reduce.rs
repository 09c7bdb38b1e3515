//! Trino's `reduce(array, initial, (s, x) -> merge, s -> finish)`: a fold
//! of each row's array from `initial`, then `finish` of the result. NULL for
//! a NULL array; an empty array gives `finish(initial)`. The state takes the
//! type `merge` answers (`reduce(a, 0, (s, x) -> s + x * 1.5, s -> s)` sums
//! decimals, at their widest precision), `initial` cast to it.
//!
//! Evaluated a position at a time over the batch: step `j` evaluates `merge`
//! once, over the rows whose arrays have a `j`-th element (their states and
//! those elements), so a batch costs as many evaluations as its longest
//! array, not one per element; the lambdas' captured columns follow the rows.

use std::sync::Arc;

use arrow::array::{Array, AsArray, UInt32Array, new_null_array};
use arrow::compute::{cast, interleave, take, take_arrays};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaParametersProgress, ValueOrLambda, Volatility,
};

const NAME: &str = "reduce";

pub(super) fn function() -> HigherOrderUDF {
    use ValueOrLambda::{Lambda, Value};
    HigherOrderUDF::new_from_impl(Reduce {
        signature: HigherOrderSignature::exact(
            vec![Value(()), Value(()), Lambda(()), Lambda(())],
            Volatility::Immutable,
        ),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Reduce {
    signature: HigherOrderSignature,
}

fn fail(message: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Plan(format!("{NAME}: {message}"))
}

/// The element field of an array type.
pub(super) fn element(list: &DataType) -> Result<FieldRef> {
    match list {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Ok(Arc::clone(f))
        }
        DataType::Null => Ok(Arc::new(Field::new_list_field(DataType::Null, true))),
        other => Err(fail(format!(
            "its first argument must be an array, not {other}"
        ))),
    }
}

impl HigherOrderUDFImpl for Reduce {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &HigherOrderSignature {
        &self.signature
    }

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [list, initial] = arg_types else {
            return Err(fail("takes an array, an initial state and two lambdas"));
        };
        Ok(vec![DataType::List(element(list)?), initial.clone()])
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        use ValueOrLambda::{Lambda, Value};
        let [Value(list), Value(initial), Lambda(merged), Lambda(_)] = fields else {
            return Err(fail("takes an array, an initial state and two lambdas"));
        };
        let x = element(list.data_type())?;
        Ok(match merged {
            // The state's type is what `merge` answers for a state of the
            // initial value's type.
            None => {
                LambdaParametersProgress::Partial(vec![Some(vec![state_field(initial), x]), None])
            }
            Some(merged) => LambdaParametersProgress::Complete(vec![
                vec![state_field(merged), x],
                vec![state_field(merged)],
            ]),
        })
    }

    fn coerce_values_for_lambdas(
        &self,
        fields: &[ValueOrLambda<DataType, DataType>],
    ) -> Result<Option<Vec<DataType>>> {
        use ValueOrLambda::{Lambda, Value};
        let [Value(list), Value(_), Lambda(merged), Lambda(_)] = fields else {
            return Err(fail("takes an array, an initial state and two lambdas"));
        };
        Ok(Some(vec![list.clone(), merged.clone()]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs) -> Result<FieldRef> {
        let Some(ValueOrLambda::Lambda(finish)) = args.arg_fields.get(3) else {
            return Err(fail("takes an array, an initial state and two lambdas"));
        };
        Ok(Arc::new(Field::new(NAME, finish.data_type().clone(), true)))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        use ValueOrLambda::{Lambda, Value};
        let rows = args.number_rows;
        let [Value(list), Value(initial), Lambda(merge), Lambda(finish)] = args.args.as_slice()
        else {
            return Err(fail("takes an array, an initial state and two lambdas"));
        };
        let list = list.to_array(rows)?;
        let list = cast(&list, &DataType::List(element(list.data_type())?))?;
        let list = list.as_list::<i32>();
        let mut state = initial.to_array(rows)?;
        let elements = list.values();
        let offsets = list.value_offsets();
        let longest = (0..rows)
            .filter(|&i| list.is_valid(i))
            .map(|i| list.value_length(i) as usize)
            .max()
            .unwrap_or(0);
        for j in 0..longest {
            let active: Vec<u32> = (0..rows)
                .filter(|&i| list.is_valid(i) && list.value_length(i) as usize > j)
                .map(|i| i as u32)
                .collect();
            let at: Vec<u32> = active
                .iter()
                .map(|&i| (offsets[i as usize] as usize + j) as u32)
                .collect();
            let active = UInt32Array::from(active);
            let s = take(&state, &active, None)?;
            let x = take(elements, &UInt32Array::from(at), None)?;
            let merged = merge
                .evaluate(
                    &[&|| Ok(Arc::clone(&s)), &|| Ok(Arc::clone(&x))],
                    |captured| Ok(take_arrays(captured, &active, None)?),
                )?
                .into_array(active.len())?;
            let merged = cast(&merged, state.data_type())?;
            // The active rows' states replaced by what `merge` answered.
            let mut next = Vec::with_capacity(rows);
            let mut k = 0;
            for i in 0..rows {
                if k < active.len() && active.value(k) as usize == i {
                    next.push((1, k));
                    k += 1;
                } else {
                    next.push((0, i));
                }
            }
            state = interleave(&[state.as_ref(), merged.as_ref()], &next)?;
        }
        let result = finish
            .evaluate(&[&|| Ok(Arc::clone(&state))], |captured| {
                Ok(captured.to_vec())
            })?
            .into_array(rows)?;
        if list.null_count() == 0 {
            return Ok(ColumnarValue::Array(result));
        }
        let null = new_null_array(result.data_type(), 1);
        let pick: Vec<(usize, usize)> = (0..rows)
            .map(|i| if list.is_valid(i) { (0, i) } else { (1, 0) })
            .collect();
        Ok(ColumnarValue::Array(interleave(
            &[result.as_ref(), null.as_ref()],
            &pick,
        )?))
    }
}

/// The state's field; a DECIMAL state at the widest precision of its
/// scale, so `merge` of it answers its own type (`s + x * 1.5` widens a
/// decimal's precision at each step).
fn state_field(field: &FieldRef) -> FieldRef {
    let t = match field.data_type() {
        DataType::Decimal32(_, s) | DataType::Decimal64(_, s) | DataType::Decimal128(_, s) => {
            DataType::Decimal128(38, *s)
        }
        other => other.clone(),
    };
    Arc::new(Field::new("s", t, true))
}
