//! The value of an uncorrelated scalar subquery, checked to be one row.
//!
//! SQL requires a scalar subquery to return at most one row: `x > (SELECT
//! c FROM t)` fails when `t` has two. squall plans such a subquery as a
//! join (DataFusion's `ScalarSubqueryToJoin`: its result is broadcast like
//! any small build side), and a join would quietly repeat every outer row
//! once per subquery row. So the planner wraps every scalar subquery that
//! may return more than one row in this aggregate
//! (`squall_planner::scalar_subquery`): it yields the one value (NULL for
//! no row) and fails the query with DataFusion's own message for a second
//! row. Workers decode it by name, so every session registers it
//! ([`register`]).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, UInt64Array};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

/// Its name in plans.
pub const NAME: &str = "squall_scalar_subquery";

/// DataFusion's message for the same mistake.
pub const TOO_MANY_ROWS: &str = "Scalar subquery returned more than one row";

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ScalarSubqueryValue {
    signature: Signature,
}

impl Default for ScalarSubqueryValue {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

/// The aggregate, as a function to call in plans.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(ScalarSubqueryValue::default())
}

/// Register the functions squall's plans use in `ctx`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(udaf());
}

impl AggregateUDFImpl for ScalarSubqueryValue {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Null))
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(OneRow::new(acc_args.return_field.data_type())?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new("rows", DataType::UInt64, false)),
            Arc::new(Field::new("value", args.return_type().clone(), true)),
        ])
    }
}

/// Rows seen (partial states merged) and the first one's value.
#[derive(Debug)]
struct OneRow {
    rows: u64,
    value: ScalarValue,
}

impl OneRow {
    fn new(data_type: &DataType) -> Result<Self> {
        Ok(Self {
            rows: 0,
            value: ScalarValue::try_from(data_type)?,
        })
    }

    fn add(&mut self, rows: u64, first: impl FnOnce() -> Result<ScalarValue>) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        if self.rows == 0 {
            self.value = first()?;
        }
        self.rows += rows;
        if self.rows > 1 {
            return exec_err!("{TOO_MANY_ROWS}");
        }
        Ok(())
    }
}

impl Accumulator for OneRow {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(v) = values.first() else {
            return Ok(());
        };
        self.add(v.len() as u64, || ScalarValue::try_from_array(v, 0))
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(rows), Some(values)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        let Some(rows) = rows.as_any().downcast_ref::<UInt64Array>() else {
            return exec_err!("{NAME}: partial state of {} rows", rows.data_type());
        };
        for i in 0..rows.len() {
            self.add(rows.value(i), || ScalarValue::try_from_array(values, i))?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::UInt64(Some(self.rows)),
            self.value.clone(),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size() - std::mem::size_of_val(&self.value)
    }
}
