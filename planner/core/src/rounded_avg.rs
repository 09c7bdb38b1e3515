//! `avg` of DECIMALs rounds its last digit (half away from zero), as
//! Trino's, PostgreSQL's and DuckDB's do: DataFusion's divides the sum by
//! the count and truncates, so the average of 17, 36, 8, 28, 24 and 32 was
//! `24.166666` where DuckDB answers 24.166667, a unit low in the last
//! place about half the time.
//!
//! [`register`] puts this `avg` in DataFusion's place, under the same name,
//! in the engine and in the workers (a stage plan names its aggregates, and
//! a worker decodes them with its own registry). It is DataFusion's `avg`
//! asked for one decimal more than its type (the digit past the last is
//! exact: the sum and count are), then cast back to the type, which rounds
//! half away from zero. The type, the state a partial average sends to its
//! final one, and every other input type are DataFusion's, unchanged.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray};
use arrow::compute::cast;
use arrow::datatypes::{DECIMAL128_MAX_PRECISION, DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::functions_aggregate::average::Avg;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator,
};
use datafusion::prelude::SessionContext;

/// Register this `avg` with `ctx`, in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::new_from_impl(RoundedAvg::default()));
}

#[derive(Debug, Default, PartialEq, Eq, Hash)]
struct RoundedAvg {
    inner: Avg,
}

/// The type one decimal finer than a DECIMAL average's `t`, if it has one.
fn finer(t: &DataType) -> Option<DataType> {
    match *t {
        DataType::Decimal128(p, s)
            if p < DECIMAL128_MAX_PRECISION && s < DECIMAL128_MAX_PRECISION as i8 =>
        {
            Some(DataType::Decimal128(p + 1, s + 1))
        }
        _ => None,
    }
}

/// `args` asking for the finer type, and the type to round back to.
fn finer_args<'a>(args: &AccumulatorArgs<'a>) -> Option<(AccumulatorArgs<'a>, DataType)> {
    let to = args.return_field.data_type().clone();
    let finer = finer(&to)?;
    let field = Field::new(
        args.return_field.name(),
        finer,
        args.return_field.is_nullable(),
    );
    Some((
        AccumulatorArgs {
            return_field: Arc::new(field),
            ..args.clone()
        },
        to,
    ))
}

impl AggregateUDFImpl for RoundedAvg {
    crate::delegated_udaf::delegate_udaf_to_inner!(DataType::Float64);

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match finer_args(&args) {
            Some((finer, to)) => Ok(Box::new(Rounded {
                inner: self.inner.accumulator(finer)?,
                to,
            })),
            None => self.inner.accumulator(args),
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        match finer_args(&args) {
            Some((finer, to)) => Ok(Box::new(RoundedGroups {
                inner: self.inner.create_groups_accumulator(finer)?,
                to,
            })),
            None => self.inner.create_groups_accumulator(args),
        }
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        match finer_args(&args) {
            Some((finer, to)) => Ok(Box::new(Rounded {
                inner: self.inner.create_sliding_accumulator(finer)?,
                to,
            })),
            None => self.inner.create_sliding_accumulator(args),
        }
    }
}

/// An ungrouped (or window frame's) average one decimal finer, rounded
/// back as it is read.
#[derive(Debug)]
struct Rounded {
    inner: Box<dyn Accumulator>,
    to: DataType,
}

impl Accumulator for Rounded {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.inner.evaluate()?.cast_to(&self.to)
    }

    fn size(&self) -> usize {
        self.inner.size() + size_of::<Self>()
    }
}

/// Grouped averages one decimal finer, rounded back as they are emitted.
struct RoundedGroups {
    inner: Box<dyn GroupsAccumulator>,
    to: DataType,
}

impl std::fmt::Debug for RoundedGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundedGroups")
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl GroupsAccumulator for RoundedGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(cast(&self.inner.evaluate(emit_to)?, &self.to)?)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}
