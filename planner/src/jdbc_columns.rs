//! Trino's `system.jdbc.columns`: what the JDBC driver's
//! `DatabaseMetaData.getColumns` reads (DBeaver, DataGrip and other JDBC
//! tools browse a catalog's columns with it; squall had no such table, so
//! they showed tables without columns). One row per column of every table
//! of the catalogs, in Trino's 24 columns: the JDBC type code
//! (`java.sql.Types`), Trino's type name, sizes and digits where they
//! apply, nullability and position.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Builder, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::CatalogProviderList;
use datafusion::error::Result;

use crate::trino_types::trino_type;

/// The columns, in Trino's order: text (`true`) or BIGINT.
const COLUMNS: [(&str, bool); 24] = [
    ("table_cat", true),
    ("table_schem", true),
    ("table_name", true),
    ("column_name", true),
    ("data_type", false),
    ("type_name", true),
    ("column_size", false),
    ("buffer_length", false),
    ("decimal_digits", false),
    ("num_prec_radix", false),
    ("nullable", false),
    ("remarks", true),
    ("column_def", true),
    ("sql_data_type", false),
    ("sql_datetime_sub", false),
    ("char_octet_length", false),
    ("ordinal_position", false),
    ("is_nullable", true),
    ("scope_catalog", true),
    ("scope_schema", true),
    ("scope_table", true),
    ("source_data_type", false),
    ("is_autoincrement", true),
    ("is_generatedcolumn", true),
];

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|(name, text)| match text {
                true => Field::new(*name, DataType::Utf8, true),
                false => Field::new(*name, DataType::Int64, true),
            })
            .collect::<Vec<_>>(),
    ))
}

/// A column's JDBC description from its Trino type name: the
/// `java.sql.Types` code, its size, its digits and their radix.
fn described(type_name: &str) -> (i64, Option<i64>, Option<i64>, Option<i64>) {
    let base = type_name.split('(').next().unwrap_or(type_name);
    // The numbers in parentheses (`decimal(15,2)`, `timestamp(6)`).
    let args: Vec<i64> = type_name
        .split_once('(')
        .map(|(_, rest)| {
            rest.split(')')
                .next()
                .unwrap_or_default()
                .split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    match base {
        "boolean" => (16, Some(1), None, None),
        "tinyint" => (-6, Some(3), Some(0), Some(10)),
        "smallint" => (5, Some(5), Some(0), Some(10)),
        "integer" => (4, Some(10), Some(0), Some(10)),
        "bigint" => (-5, Some(19), Some(0), Some(10)),
        "real" => (7, Some(24), None, Some(2)),
        "double" => (8, Some(53), None, Some(2)),
        "decimal" => (3, args.first().copied(), args.get(1).copied(), Some(10)),
        "varchar" => (12, args.first().copied(), None, None),
        "char" => (1, args.first().copied(), None, None),
        "varbinary" => (-3, None, None, None),
        "date" => (91, Some(10), None, None),
        "time" if type_name.contains("with time zone") => (2013, None, args.first().copied(), None),
        "time" => (92, None, args.first().copied(), None),
        "timestamp" if type_name.contains("with time zone") => {
            (2014, None, args.first().copied(), None)
        }
        "timestamp" => (93, None, args.first().copied(), None),
        "array" => (2003, None, None, None),
        // map, row, json, interval, uuid: Trino's driver says JAVA_OBJECT.
        _ => (2000, None, None, None),
    }
}

/// Every column of every table of `list`'s catalogs.
pub async fn rows(list: &dyn CatalogProviderList) -> Result<RecordBatch> {
    let mut text: Vec<StringBuilder> = Vec::new();
    let mut numbers: Vec<Int64Builder> = Vec::new();
    for (_, is_text) in COLUMNS {
        match is_text {
            true => text.push(StringBuilder::new()),
            false => numbers.push(Int64Builder::new()),
        }
    }
    for (catalog_name, schema_name, table_name, fields) in
        crate::information_schema::tables_of(list).await
    {
        for (i, field) in fields.iter().enumerate() {
            let type_name = trino_type(field.data_type()).display_name();
            let (code, size, digits, radix) = described(&type_name);
            let nullable = field.is_nullable();
            let texts = [
                Some(catalog_name.as_str()),
                Some(schema_name.as_str()),
                Some(table_name.as_str()),
                Some(field.name().as_str()),
                Some(type_name.as_str()),
                None,
                None,
                Some(if nullable { "YES" } else { "NO" }),
                None,
                None,
                None,
                Some("NO"),
                Some("NO"),
            ];
            let ints = [
                Some(code),
                size,
                None,
                digits,
                radix,
                Some(i64::from(nullable)),
                None,
                None,
                None,
                Some(i as i64 + 1),
                None,
            ];
            for (b, v) in text.iter_mut().zip(texts) {
                b.append_option(v);
            }
            for (b, v) in numbers.iter_mut().zip(ints) {
                b.append_option(v);
            }
        }
    }
    let mut text = text
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let mut numbers = numbers
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let arrays: Vec<ArrayRef> = COLUMNS
        .iter()
        .map(|(_, is_text)| match is_text {
            true => text.next(),
            false => numbers.next(),
        })
        .collect::<Option<_>>()
        .ok_or_else(|| datafusion::error::DataFusionError::Internal("jdbc.columns".into()))?;
    Ok(RecordBatch::try_new(schema(), arrays)?)
}

#[cfg(test)]
mod tests {
    use super::described;

    #[test]
    fn types_are_described_as_trinos_driver_describes_them() {
        assert_eq!(described("bigint"), (-5, Some(19), Some(0), Some(10)));
        assert_eq!(described("decimal(15,2)"), (3, Some(15), Some(2), Some(10)));
        assert_eq!(described("varchar"), (12, None, None, None));
        assert_eq!(described("varchar(25)"), (12, Some(25), None, None));
        assert_eq!(described("timestamp(6)"), (93, None, Some(6), None));
        assert_eq!(
            described("timestamp(3) with time zone"),
            (2014, None, Some(3), None)
        );
        assert_eq!(described("array(bigint)").0, 2003);
        assert_eq!(described("map(varchar, bigint)").0, 2000);
    }
}
