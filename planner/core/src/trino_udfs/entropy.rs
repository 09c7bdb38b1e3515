//! Trino's `entropy(c)`: the log-2 entropy of a group's counts, `sum_i c_i /
//! S * log2(S / c_i)` over its non-NULL counts `c_i` of sum `S`, which is
//! `log2(S) - sum_i c_i log2(c_i) / S`. Zero counts add nothing, a sum of 0
//! (or no count at all) is 0.0, and a negative count fails the query naming
//! it, as in Trino. Each group keeps `S` and `sum_i c_i ln(c_i)`, which
//! merge by addition across stages.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

pub(super) fn function() -> AggregateUDF {
    AggregateUDF::new_from_impl(Entropy {
        signature: Signature::uniform(1, vec![DataType::Int64], Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Entropy {
    signature: Signature,
}

impl AggregateUDFImpl for Entropy {
    fn name(&self) -> &str {
        "entropy"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(["sum", "sum_c_ln_c"]
            .map(|s| {
                Arc::new(Field::new(
                    format!("{}[{s}]", args.name),
                    DataType::Float64,
                    true,
                ))
            })
            .to_vec())
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::<Counts>::default())
    }
}

#[derive(Debug, Default)]
struct Counts {
    sum: f64,
    sum_c_ln_c: f64,
}

impl Accumulator for Counts {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let counts = cast(&values[0], &DataType::Int64)?;
        for c in counts.as_primitive::<Int64Type>().iter().flatten() {
            if c < 0 {
                return Err(DataFusionError::Execution(format!(
                    "entropy: count {c} is negative; entropy(c) takes counts, each 0 or more"
                )));
            }
            if c > 0 {
                let c = c as f64;
                self.sum += c;
                self.sum_c_ln_c += c * c.ln();
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(sums), Some(logs)) = (
            states[0].as_primitive_opt::<Float64Type>(),
            states[1].as_primitive_opt::<Float64Type>(),
        ) else {
            return Err(DataFusionError::Internal(
                "entropy: two DOUBLE state columns expected".into(),
            ));
        };
        for i in 0..sums.len() {
            if sums.is_valid(i) && logs.is_valid(i) {
                self.sum += sums.value(i);
                self.sum_c_ln_c += logs.value(i);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Float64(Some(self.sum)),
            ScalarValue::Float64(Some(self.sum_c_ln_c)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let bits = if self.sum > 0.0 {
            (self.sum.ln() - self.sum_c_ln_c / self.sum) / std::f64::consts::LN_2
        } else {
            0.0
        };
        Ok(ScalarValue::Float64(Some(bits)))
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}
