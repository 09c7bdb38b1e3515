//! Trino's `checksum(x)`: an order-insensitive checksum of a group's values
//! (NULLs included), as 8 bytes of VARBINARY; NULL for a group of no rows.
//! Two groups of the same values in any order, split over any tasks, have
//! the same checksum. Each value is hashed (xxhash64) by its row encoding,
//! so the bytes are squall's own, not Trino's: compare checksums squall
//! computed with each other.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use arrow::row::{RowConverter, SortField};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

/// Trino's multiplier of each value's hash (a 64-bit prime).
const PRIME64: u64 = 0x9E37_79B1_85EB_CA87;

pub(super) fn function() -> AggregateUDF {
    AggregateUDF::new_from_impl(Checksum {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Checksum {
    signature: Signature,
}

impl AggregateUDFImpl for Checksum {
    fn name(&self) -> &str {
        "checksum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[sum]", args.name),
                DataType::Int64,
                true,
            )),
            Arc::new(Field::new(
                format!("{}[rows]", args.name),
                DataType::Int64,
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let key = args.expr_fields[0].data_type().clone();
        Ok(Box::new(Sum {
            converter: RowConverter::new(vec![SortField::new(key)])?,
            sum: 0,
            rows: 0,
        }))
    }
}

#[derive(Debug)]
struct Sum {
    converter: RowConverter,
    sum: u64,
    rows: i64,
}

impl Accumulator for Sum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let rows = self.converter.convert_columns(&[Arc::clone(&values[0])])?;
        for row in rows.iter() {
            let hash = twox_hash::XxHash64::oneshot(0, row.as_ref());
            self.sum = self.sum.wrapping_add(hash.wrapping_mul(PRIME64));
        }
        self.rows += values[0].len() as i64;
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(sums), Some(rows)) = (
            states[0].as_primitive_opt::<Int64Type>(),
            states[1].as_primitive_opt::<Int64Type>(),
        ) else {
            return Err(DataFusionError::Internal(
                "checksum: two BIGINT state columns expected".into(),
            ));
        };
        for i in 0..sums.len() {
            if sums.is_valid(i) && rows.is_valid(i) {
                self.sum = self.sum.wrapping_add(sums.value(i) as u64);
                self.rows += rows.value(i);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Int64(Some(self.sum as i64)),
            ScalarValue::Int64(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Binary(
            (self.rows > 0).then(|| self.sum.to_le_bytes().to_vec()),
        ))
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.converter.size()
    }
}
