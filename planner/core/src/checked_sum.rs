//! `sum` of integers that fails on overflow, as Trino's does
//! (`NUMERIC_VALUE_OUT_OF_RANGE`: its bigint sum adds with `addExact`).
//! DataFusion's wraps: the sum of a column's squares past 2^63 answered a
//! wrong number, silently. [`register`] puts this `sum` in DataFusion's
//! place, under the same name, in the engine and in the workers (a stage
//! plan names its aggregates, and a worker decodes them with its own
//! registry): for BIGINT (every integer type is summed as one) it adds
//! with a check, grouped, ungrouped and over window frames; for DECIMAL it
//! adds with a check and fails where the sum has more digits than its type
//! (Trino's `Decimal overflow`: DataFusion's wrapped past 128 bits, so two
//! sums of 38 nines answered a negative number, and answered sums of more
//! than 38 digits no client could read); for DOUBLE it
//! carries a compensation, so the order of the values does not change the
//! sum (`crate::float_sum`); for every other type, and for `sum(DISTINCT
//! ...)`, it is DataFusion's, unchanged.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::datatypes::{
    ArrowNativeTypeOp, ArrowPrimitiveType, DataType, Decimal128Type, DecimalType, FieldRef,
    Int64Type,
};
use arrow::error::ArrowError;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::sum::Sum;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator,
};
use datafusion::prelude::SessionContext;
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::prim_op::PrimitiveGroupsAccumulator;

use crate::float_sum;

/// Register this `sum` with `ctx`, in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::new_from_impl(CheckedSum::default()));
}

/// The error of a sum past BIGINT's range: an arithmetic overflow, a data
/// error tasks do not retry.
fn overflow() -> DataFusionError {
    DataFusionError::ArrowError(
        Box::new(ArrowError::ArithmeticOverflow(
            "bigint sum overflow: a sum is out of the type's range \
             (NUMERIC_VALUE_OUT_OF_RANGE; sum a cast to DECIMAL or DOUBLE for more)"
                .into(),
        )),
        None,
    )
}

/// The error of a DECIMAL sum with more digits than its type holds.
fn decimal_overflow(precision: u8) -> DataFusionError {
    DataFusionError::ArrowError(
        Box::new(ArrowError::ArithmeticOverflow(format!(
            "decimal sum overflow: a sum has more than the {precision} digits of its type \
             (NUMERIC_VALUE_OUT_OF_RANGE; sum a cast to DOUBLE for more)"
        ))),
        None,
    )
}

/// The precision and scale of a DECIMAL sum added with a check.
fn decimal(is_distinct: bool, return_type: &DataType) -> Option<(u8, i8)> {
    match return_type {
        DataType::Decimal128(p, s) if !is_distinct => Some((*p, *s)),
        _ => None,
    }
}

#[derive(Debug, Default, PartialEq, Eq, Hash)]
struct CheckedSum {
    inner: Sum,
}

/// Whether the call sums BIGINTs with a check (DISTINCT sums are DataFusion's).
fn checked(args: &AccumulatorArgs) -> bool {
    !args.is_distinct && args.return_field.data_type() == &DataType::Int64
}

/// Whether the call sums DOUBLEs with a compensation (`crate::float_sum`).
fn compensated(is_distinct: bool, return_type: &DataType) -> bool {
    !is_distinct && return_type == &DataType::Float64
}

impl AggregateUDFImpl for CheckedSum {
    crate::delegated_udaf::delegate_udaf_to_inner!(DataType::Int64);

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if checked(&args) {
            Ok(Box::new(ScalarSum::<Int64Type>::new(DataType::Int64)))
        } else if let Some((p, s)) = decimal(args.is_distinct, args.return_field.data_type()) {
            Ok(Box::new(ScalarSum::<Decimal128Type>::new(
                DataType::Decimal128(p, s),
            )))
        } else if compensated(args.is_distinct, args.return_field.data_type()) {
            Ok(Box::<float_sum::SumAccumulator>::default())
        } else {
            self.inner.accumulator(args)
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if compensated(args.is_distinct, args.return_field.data_type()) {
            return Ok(float_sum::state_fields(&args));
        }
        self.inner.state_fields(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        if compensated(args.is_distinct, args.return_field.data_type()) {
            return Ok(Box::new(float_sum::GroupSums::new()));
        }
        let overflowed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&overflowed);
        if let Some((p, s)) = decimal(args.is_distinct, args.return_field.data_type()) {
            let inner = PrimitiveGroupsAccumulator::<Decimal128Type, _>::new(
                &DataType::Decimal128(p, s),
                move |x: &mut i128, y: i128| match x.checked_add(y) {
                    Some(v) => *x = v,
                    None => flag.store(true, Ordering::Relaxed),
                },
            );
            return Ok(Box::new(GroupSums {
                inner: Box::new(inner),
                overflowed,
                precision: Some(p),
            }));
        }
        if !checked(&args) {
            return self.inner.create_groups_accumulator(args);
        }
        let inner = PrimitiveGroupsAccumulator::<Int64Type, _>::new(
            &DataType::Int64,
            move |x: &mut i64, y: i64| match x.checked_add(y) {
                Some(v) => *x = v,
                None => flag.store(true, Ordering::Relaxed),
            },
        );
        Ok(Box::new(GroupSums {
            inner: Box::new(inner),
            overflowed,
            precision: None,
        }))
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if checked(&args) {
            Ok(Box::new(ScalarSum::<Int64Type>::new(DataType::Int64)))
        } else if let Some((p, s)) = decimal(args.is_distinct, args.return_field.data_type()) {
            Ok(Box::new(ScalarSum::<Decimal128Type>::new(
                DataType::Decimal128(p, s),
            )))
        } else if compensated(args.is_distinct, args.return_field.data_type()) {
            Ok(Box::<float_sum::SumAccumulator>::default())
        } else {
            self.inner.create_sliding_accumulator(args)
        }
    }
}

/// DataFusion's grouped sum of BIGINTs or DECIMALs, adding with a check:
/// an overflow is noted by the add and reported after the batch; a DECIMAL
/// sum's digits are checked against its precision as it is emitted.
struct GroupSums {
    inner: Box<dyn GroupsAccumulator>,
    overflowed: Arc<AtomicBool>,
    /// A DECIMAL sum's precision.
    precision: Option<u8>,
}

impl std::fmt::Debug for GroupSums {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupSums").finish_non_exhaustive()
    }
}

impl GroupSums {
    fn check(&self) -> Result<()> {
        match (self.overflowed.load(Ordering::Relaxed), self.precision) {
            (false, _) => Ok(()),
            (true, None) => Err(overflow()),
            (true, Some(p)) => Err(decimal_overflow(p)),
        }
    }
}

impl GroupsAccumulator for GroupSums {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update_batch(values, group_indices, opt_filter, total_num_groups)?;
        self.check()
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.check()?;
        let sums = self.inner.evaluate(emit_to)?;
        if let Some(p) = self.precision
            && let Some(sums) = sums.as_primitive_opt::<Decimal128Type>()
            && crate::trino_udfs::checked::too_long(sums, p).is_some()
        {
            return Err(decimal_overflow(p));
        }
        Ok(sums)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.check()?;
        self.inner.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge_batch(values, group_indices, total_num_groups)?;
        self.check()
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        // Each row's state is its own value: nothing is added.
        self.inner.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}

/// An ungrouped (or window frame's) sum of BIGINTs or DECIMALs: NULL
/// until a value comes, then their sum, added with a check; a DECIMAL sum
/// is checked against its type's digits when it is read (a frame's sum may
/// pass them and come back as values leave it).
#[derive(Debug)]
struct ScalarSum<T: ArrowPrimitiveType> {
    sum: T::Native,
    count: u64,
    data_type: DataType,
}

impl<T: ArrowPrimitiveType> ScalarSum<T> {
    fn new(data_type: DataType) -> Self {
        Self {
            sum: T::Native::ZERO,
            count: 0,
            data_type,
        }
    }

    fn overflow(&self) -> DataFusionError {
        match self.data_type {
            DataType::Decimal128(p, _) => decimal_overflow(p),
            _ => overflow(),
        }
    }

    fn add(&mut self, values: &ArrayRef, sign: i64) -> Result<()> {
        let values = values.as_primitive_opt::<T>().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "sum: {} values expected, not {}",
                self.data_type,
                values.data_type()
            ))
        })?;
        for v in values.iter().flatten() {
            let v = if sign < 0 {
                self.sum.sub_checked(v)
            } else {
                self.sum.add_checked(v)
            };
            self.sum = v.map_err(|_| self.overflow())?;
        }
        let n = (values.len() - values.null_count()) as u64;
        self.count = if sign < 0 {
            self.count.saturating_sub(n)
        } else {
            self.count + n
        };
        Ok(())
    }

    fn value(&self) -> Result<ScalarValue> {
        ScalarValue::new_primitive::<T>((self.count > 0).then_some(self.sum), &self.data_type)
    }
}

impl<T: ArrowPrimitiveType + std::fmt::Debug> Accumulator for ScalarSum<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], 1)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.add(&states[0], 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.value()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let value = self.value()?;
        if let ScalarValue::Decimal128(Some(v), p, _) = value
            && !Decimal128Type::is_valid_decimal_precision(v, p)
        {
            return Err(decimal_overflow(p));
        }
        Ok(value)
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}
