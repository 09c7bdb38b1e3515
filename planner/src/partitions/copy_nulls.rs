//! `COPY ... PARTITIONED BY` writes NULL partition values as Hive does.
//!
//! DataFusion 55 names a partition folder by the value's text and ignores
//! whether it is NULL: a NULL string became `p=` and a NULL integer
//! `y=0`, so the NULL was lost (read back, the row had `y = 0`). When the
//! partition columns are not also written into the files (DataFusion's
//! default), squall hands the writer each string, integer, date,
//! floating-point, decimal or boolean partition column as text with NULL as
//! `__HIVE_DEFAULT_PARTITION__` (a NULL DOUBLE became `f=0`; DataFusion
//! refused DECIMAL partitions outright): the folders are what Hive and
//! Spark write, and squall reads them back as NULL, in the column's type
//! for integers and dates, as text for the others (see
//! [`super::HiveFolderValues`]; a folder's name holds no type).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Column;
use datafusion::error::Result;
use datafusion::functions::expr_fn::coalesce;
use datafusion::logical_expr::dml::CopyTo;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{cast, lit};

use super::HIVE_NULL;

/// `copy` with its partition columns written as Hive names NULLs, when
/// `keep_partition_columns` (in the files too) is off; else as it is.
pub fn nulls_as_hive_folders(copy: CopyTo, keep_partition_columns: bool) -> Result<LogicalPlan> {
    let keep = match copy
        .options
        .get("execution.keep_partition_by_columns")
        .map(|v| v.trim())
    {
        Some("true") => true,
        Some(_) => false,
        None => keep_partition_columns,
    };
    if copy.partition_by.is_empty() || keep {
        return Ok(LogicalPlan::Copy(copy));
    }
    let input = Arc::unwrap_or_clone(copy.input);
    let columns: Vec<Expr> = input
        .schema()
        .iter()
        .map(|(qualifier, field)| {
            let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
            if !copy.partition_by.contains(field.name()) {
                return column;
            }
            let text = match field.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => column,
                ty if ty.is_integer()
                    || ty.is_floating()
                    || ty.is_decimal()
                    || matches!(ty, DataType::Date32 | DataType::Boolean) =>
                {
                    cast(column, DataType::Utf8)
                }
                _ => return column,
            };
            coalesce(vec![text, lit(HIVE_NULL)]).alias(field.name())
        })
        .collect();
    let input = LogicalPlanBuilder::from(input).project(columns)?.build()?;
    Ok(LogicalPlan::Copy(CopyTo::new(
        Arc::new(input),
        copy.output_url,
        copy.partition_by,
        copy.file_type,
        copy.options,
    )))
}
