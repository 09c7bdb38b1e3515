//! A file's row-group statistics as planning's pruning reads them.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, UInt64Array};
use arrow::datatypes::Schema;
use datafusion::common::Column;
use datafusion::common::pruning::PruningStatistics;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::file::metadata::ParquetMetaData;

/// One file's row-group statistics of the table's columns (`table`, the
/// columns the table's files hold): each column found in the file as a
/// scan reads it (by name, in another case, or as the table's metadata
/// maps it: `squall_core::case_blind`), wherever the file puts it, and its
/// bounds cast to the table's type.
pub(super) struct RowGroupStatistics<'a> {
    metadata: &'a ParquetMetaData,
    table: &'a Schema,
    /// The file's own columns, in its order.
    file: Schema,
    /// The table's columns the file names otherwise.
    renames: HashMap<String, String>,
}

impl<'a> RowGroupStatistics<'a> {
    pub(super) fn new(metadata: &'a ParquetMetaData, table: &'a Schema) -> Self {
        let meta = metadata.file_metadata();
        let file =
            parquet::arrow::parquet_to_arrow_schema(meta.schema_descr(), meta.key_value_metadata())
                .unwrap_or_else(|_| Schema::empty());
        let renames = squall_core::case_blind::file_names(table, &file);
        Self {
            metadata,
            table,
            file,
            renames,
        }
    }

    /// The converter of `column`'s statistics in this file: none when the
    /// file lacks it (or it is nested).
    fn converter(&self, column: &Column) -> Option<StatisticsConverter<'_>> {
        let name = self
            .renames
            .get(column.name())
            .map_or(column.name(), String::as_str);
        let converter = StatisticsConverter::try_new(
            name,
            &self.file,
            self.metadata.file_metadata().schema_descr(),
        )
        .ok()?;
        converter.parquet_column_index().map(|_| converter)
    }

    /// `values` (a file's bounds of `column`) in the table's type of it.
    fn typed(&self, column: &Column, values: ArrayRef) -> Option<ArrayRef> {
        let ty = self.table.field_with_name(column.name()).ok()?.data_type();
        match values.data_type() == ty {
            true => Some(values),
            false => arrow::compute::cast(&values, ty).ok(),
        }
    }
}

impl PruningStatistics for RowGroupStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        let values = self
            .converter(column)?
            .row_group_mins(self.metadata.row_groups().iter())
            .ok()?;
        self.typed(column, values)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        let values = self
            .converter(column)?
            .row_group_maxes(self.metadata.row_groups().iter())
            .ok()?;
        self.typed(column, values)
    }

    fn num_containers(&self) -> usize {
        self.metadata.num_row_groups()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.converter(column)?
            .row_group_null_counts(self.metadata.row_groups().iter())
            .ok()
            .map(|a| Arc::new(a) as ArrayRef)
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let counts: UInt64Array = self
            .metadata
            .row_groups()
            .iter()
            .map(|rg| Some(rg.num_rows().max(0) as u64))
            .collect();
        Some(Arc::new(counts))
    }

    fn contained(
        &self,
        _column: &Column,
        _values: &std::collections::HashSet<datafusion::common::ScalarValue>,
    ) -> Option<arrow::array::BooleanArray> {
        None
    }
}
