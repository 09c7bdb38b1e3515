//! Trino's `skewness(x)` and `kurtosis(x)`: the third and fourth central
//! moments of a group's non-NULL values, as Trino writes them (skewness
//! `sqrt(n) * M3 / M2^1.5`, NULL below 3 values; kurtosis the sample excess
//! kurtosis, NULL below 4). Each group keeps its count, mean and central
//! moment sums, updated one value at a time and merged across stages with
//! the pairwise formulas (Pébay, 2008), so no sum of fourth powers loses the
//! moments to cancellation.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

pub(super) fn functions() -> [AggregateUDF; 2] {
    [Moment::Skewness, Moment::Kurtosis].map(|moment| {
        AggregateUDF::new_from_impl(Moments {
            moment,
            signature: Signature::numeric(1, Volatility::Immutable),
        })
    })
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
enum Moment {
    #[default]
    Skewness,
    Kurtosis,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Moments {
    moment: Moment,
    signature: Signature,
}

const STATE: [&str; 5] = ["count", "mean", "m2", "m3", "m4"];

impl AggregateUDFImpl for Moments {
    fn name(&self) -> &str {
        match self.moment {
            Moment::Skewness => "skewness",
            Moment::Kurtosis => "kurtosis",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(STATE
            .iter()
            .map(|s| {
                Arc::new(Field::new(
                    format!("{}[{s}]", args.name),
                    DataType::Float64,
                    true,
                ))
            })
            .collect())
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Sums {
            moment: self.moment,
            ..Sums::default()
        }))
    }
}

/// A group's count, mean and sums of the 2nd, 3rd and 4th powers of the
/// differences from the mean.
#[derive(Debug, Default)]
struct Sums {
    moment: Moment,
    n: f64,
    mean: f64,
    m2: f64,
    m3: f64,
    m4: f64,
}

impl Sums {
    /// This group and another's (`n`, `mean`, `m2`, `m3`, `m4`) as one.
    fn merge(&mut self, b: [f64; 5]) {
        let [nb, mb, m2b, m3b, m4b] = b;
        if nb == 0.0 {
            return;
        }
        let na = self.n;
        let n = na + nb;
        let d = mb - self.mean;
        let (d2, d3, d4) = (d * d, d * d * d, d * d * d * d);
        let (m2a, m3a) = (self.m2, self.m3);
        self.m4 += m4b
            + d4 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n)
            + 6.0 * d2 * (na * na * m2b + nb * nb * m2a) / (n * n)
            + 4.0 * d * (na * m3b - nb * m3a) / n;
        self.m3 += m3b + d3 * na * nb * (na - nb) / (n * n) + 3.0 * d * (na * m2b - nb * m2a) / n;
        self.m2 += m2b + d2 * na * nb / n;
        self.mean += d * nb / n;
        self.n = n;
    }
}

fn float64(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(cast(array, &DataType::Float64)?)
}

impl Accumulator for Sums {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = float64(&values[0])?;
        for x in values.as_primitive::<Float64Type>().iter().flatten() {
            self.merge([1.0, x, 0.0, 0.0, 0.0]);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let columns = states.iter().map(float64).collect::<Result<Vec<_>>>()?;
        let columns: Vec<_> = columns
            .iter()
            .map(|c| c.as_primitive::<Float64Type>())
            .collect();
        if columns.len() != STATE.len() {
            return Err(DataFusionError::Internal(
                "moments: five state columns expected".into(),
            ));
        }
        for row in 0..columns[0].len() {
            if columns[0].is_null(row) {
                continue;
            }
            self.merge(std::array::from_fn(|i| columns[i].value(row)));
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok([self.n, self.mean, self.m2, self.m3, self.m4]
            .map(|v| ScalarValue::Float64(Some(v)))
            .to_vec())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let (n, m2) = (self.n, self.m2);
        let value = match self.moment {
            Moment::Skewness if n >= 3.0 => Some(n.sqrt() * self.m3 / m2.powf(1.5)),
            Moment::Kurtosis if n >= 4.0 => Some(
                (n - 1.0) * n * (n + 1.0) / ((n - 2.0) * (n - 3.0)) * self.m4 / (m2 * m2)
                    - 3.0 * (n - 1.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0)),
            ),
            _ => None,
        };
        Ok(ScalarValue::Float64(value))
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}
