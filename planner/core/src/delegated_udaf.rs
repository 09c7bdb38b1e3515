//! The methods of an `AggregateUDFImpl` that wraps DataFusion's aggregate
//! `self.inner` and answers as it does for everything but its accumulators
//! (squall's `sum` and `avg`, [`crate::checked_sum`], [`crate::rounded_avg`]):
//! its name, types, display, statistics and ordering. One difference: an
//! argument that is NULL by its type (`sum(x)` over `SELECT NULL AS x`, a
//! `VALUES` column of NULLs only) is taken as the type given, so the
//! aggregate answers NULL as in Trino, where DataFusion's `sum` failed the
//! query ("SUM not supported for Null") and its `avg` failed at execution
//! ("AvgAccumulator for (Null --> Float64)"). A column typed NULL is only
//! known from its input's schema, so this is the aggregate's own coercion
//! (its signature is user-defined, every other type coerced as the
//! wrapped aggregate's signature does).

use arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{AggregateUDF, AggregateUDFImpl, Signature, Volatility};

/// The signature of a wrapper: user-defined, so [`coerce`] decides.
pub(crate) fn signature() -> &'static Signature {
    static SIGNATURE: std::sync::LazyLock<Signature> =
        std::sync::LazyLock::new(|| Signature::user_defined(Volatility::Immutable));
    &SIGNATURE
}

/// The types a wrapper of `inner` coerces `arg_types` to: `nulls_as` for
/// an argument typed NULL, and what `inner`'s own signature gives for the
/// others.
pub(crate) fn coerce<I: AggregateUDFImpl + Default + 'static>(
    inner: &I,
    arg_types: &[DataType],
    nulls_as: DataType,
) -> Result<Vec<DataType>> {
    let typed: Vec<DataType> = arg_types
        .iter()
        .map(|t| match t {
            DataType::Null => nulls_as.clone(),
            t => t.clone(),
        })
        .collect();
    // DataFusion's coercion by the wrapped aggregate's signature (which
    // asks its `coerce_types` where that signature is user-defined).
    let coerced = crate::trino_udfs::coerced_as(&AggregateUDF::new_from_impl(I::default()), &typed);
    // Refused: the refusal names the wrapped aggregate's candidates (this
    // wrapper's own signature would list only `sum(UserDefined)`).
    coerced.map_err(|_| {
        #[expect(deprecated, reason = "DataFusion's own wording of a refused call")]
        let said = datafusion::logical_expr::utils::generate_signature_error_msg(
            inner.name(),
            inner.signature().clone(),
            arg_types,
        );
        datafusion::error::DataFusionError::Plan(said)
    })
}

/// Inside an `impl AggregateUDFImpl for W`: every method above, delegated
/// to `self.inner`; an argument typed NULL is taken as `$nulls_as`.
macro_rules! delegate_udaf_to_inner {
    ($nulls_as:expr) => {
        fn name(&self) -> &str {
            self.inner.name()
        }

        fn aliases(&self) -> &[String] {
            self.inner.aliases()
        }

        fn schema_name(
            &self,
            params: &::datafusion::logical_expr::expr::AggregateFunctionParams,
        ) -> ::datafusion::error::Result<String> {
            self.inner.schema_name(params)
        }

        fn human_display(
            &self,
            params: &::datafusion::logical_expr::expr::AggregateFunctionParams,
        ) -> ::datafusion::error::Result<String> {
            self.inner.human_display(params)
        }

        fn display_name(
            &self,
            params: &::datafusion::logical_expr::expr::AggregateFunctionParams,
        ) -> ::datafusion::error::Result<String> {
            self.inner.display_name(params)
        }

        fn signature(&self) -> &::datafusion::logical_expr::Signature {
            $crate::delegated_udaf::signature()
        }

        fn return_type(
            &self,
            arg_types: &[::arrow::datatypes::DataType],
        ) -> ::datafusion::error::Result<::arrow::datatypes::DataType> {
            self.inner.return_type(arg_types)
        }

        fn return_field(
            &self,
            arg_fields: &[::arrow::datatypes::FieldRef],
        ) -> ::datafusion::error::Result<::arrow::datatypes::FieldRef> {
            self.inner.return_field(arg_fields)
        }

        fn is_nullable(&self) -> bool {
            self.inner.is_nullable()
        }

        fn coerce_types(
            &self,
            arg_types: &[::arrow::datatypes::DataType],
        ) -> ::datafusion::error::Result<Vec<::arrow::datatypes::DataType>> {
            $crate::delegated_udaf::coerce(&self.inner, arg_types, $nulls_as)
        }

        fn groups_accumulator_supported(
            &self,
            args: ::datafusion::logical_expr::function::AccumulatorArgs,
        ) -> bool {
            self.inner.groups_accumulator_supported(args)
        }

        fn order_sensitivity(
            &self,
        ) -> ::datafusion::logical_expr::utils::AggregateOrderSensitivity {
            self.inner.order_sensitivity()
        }

        fn simplify_expr_op_literal(
            &self,
            agg_function: &::datafusion::logical_expr::expr::AggregateFunction,
            arg: &::datafusion::logical_expr::Expr,
            op: ::datafusion::logical_expr::Operator,
            lit: &::datafusion::logical_expr::Expr,
            arg_is_left: bool,
        ) -> ::datafusion::error::Result<Option<::datafusion::logical_expr::Expr>> {
            self.inner
                .simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
        }

        fn reverse_expr(&self) -> ::datafusion::logical_expr::ReversedUDAF {
            self.inner.reverse_expr()
        }

        fn value_from_stats(
            &self,
            statistics_args: &::datafusion::logical_expr::StatisticsArgs,
        ) -> Option<::datafusion::common::ScalarValue> {
            self.inner.value_from_stats(statistics_args)
        }

        fn default_value(
            &self,
            data_type: &::arrow::datatypes::DataType,
        ) -> ::datafusion::error::Result<::datafusion::common::ScalarValue> {
            self.inner.default_value(data_type)
        }

        fn documentation(&self) -> Option<&::datafusion::logical_expr::Documentation> {
            self.inner.documentation()
        }

        fn set_monotonicity(
            &self,
            data_type: &::arrow::datatypes::DataType,
        ) -> ::datafusion::logical_expr::SetMonotonicity {
            self.inner.set_monotonicity(data_type)
        }
    };
}

pub(crate) use delegate_udaf_to_inner;
