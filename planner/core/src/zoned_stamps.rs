//! `to_timestamp` (and its `_seconds`, `_millis`, `_micros`, `_nanos`
//! forms) of text in a column, with the session's zone: DataFusion 55
//! plans it as a timestamp in that zone (UTC here) but stamps a column's
//! values with none, so every such call failed its query ("Function
//! 'to_timestamp' returned value of type 'Timestamp(ns)' while ...
//! 'Timestamp(ns, "UTC")' was promised"); a literal's, folded at planning,
//! was right. Trino's `date_parse` and `parse_datetime` are such calls.
//! The wrapper gives the values it returns the type planned: the instants
//! are right (parsed in the session's zone), only the zone was missing.

use std::sync::Arc;

use arrow::array::{Array, make_array};
use arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};
use datafusion::prelude::SessionContext;

const FUNCTIONS: [&str; 5] = [
    "to_timestamp",
    "to_timestamp_seconds",
    "to_timestamp_millis",
    "to_timestamp_micros",
    "to_timestamp_nanos",
];

/// Wraps the session's `to_timestamp` functions (once).
pub fn register(ctx: &SessionContext) {
    for name in FUNCTIONS {
        crate::guarded_udf::wrap(ctx, name, || Stamped);
    }
}

/// Gives a call's timestamps the zone planned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Stamped;

impl crate::guarded_udf::BeforeCall for Stamped {
    type Held = ();

    fn before(&self, _: &str, _: &ScalarFunctionArgs) -> Result<()> {
        Ok(())
    }

    fn after(&self, out: ColumnarValue, planned: &FieldRef) -> Result<ColumnarValue> {
        match out {
            ColumnarValue::Array(values) => {
                Ok(ColumnarValue::Array(stamped(values, planned.data_type())?))
            }
            scalar => Ok(scalar),
        }
    }
}

/// `values` as the timestamps of `planned`'s zone, where they are of its
/// unit and lack only that zone.
fn stamped(values: Arc<dyn Array>, planned: &DataType) -> Result<Arc<dyn Array>> {
    match (values.data_type(), planned) {
        (DataType::Timestamp(unit, None), DataType::Timestamp(planned_unit, Some(_)))
            if unit == planned_unit =>
        {
            let data = values
                .to_data()
                .into_builder()
                .data_type(planned.clone())
                .build()?;
            Ok(make_array(data))
        }
        _ => Ok(values),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{SessionConfig, SessionContext};

    #[tokio::test]
    async fn text_of_a_column_becomes_timestamps_of_the_session_zone() {
        let mut config = SessionConfig::new();
        config.options_mut().execution.time_zone = Some("UTC".into());
        let ctx = SessionContext::new_with_config(config);
        super::register(&ctx);
        super::register(&ctx);
        let sql = "select to_timestamp(x) as a, to_timestamp(x, '%Y-%m-%d') as b, \
                   to_timestamp_seconds(x) as c, arrow_typeof(to_timestamp(x)) as t \
                   from (values ('1999-01-02'), (null)) v(x)";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        assert!(text.contains("1999-01-02T00:00:00Z"), "{text}");
        assert!(text.contains("Timestamp(ns, \"UTC\")"), "{text}");
    }
}
