//! The methods of an `AggregateUDFImpl` that wraps DataFusion's aggregate
//! `self.inner` and answers as it does for everything but its accumulators
//! (squall's `sum` and `avg`, [`crate::checked_sum`], [`crate::rounded_avg`]):
//! its name, signature, types, display, statistics and ordering.

/// Inside an `impl AggregateUDFImpl for W`: every method above, delegated
/// to `self.inner`.
macro_rules! delegate_udaf_to_inner {
    () => {
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
            self.inner.signature()
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
            self.inner.coerce_types(arg_types)
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
