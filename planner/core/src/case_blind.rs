//! Parquet columns found by name whatever its case, where a file has no
//! column of the exact name: the files of one table written by different
//! tools (`UserId` in one, `userid` in another) are one column, as Trino,
//! Hive and Spark read them. DataFusion matched names exactly: the table
//! had two columns, and a query of either read NULL for the other files'
//! rows, silently.
//!
//! [`CaseBlindAdapterFactory`] wraps DataFusion's own adaptation of a
//! table's expressions to each file (casts, missing columns as NULL): a
//! column of the table that the file lacks under its exact name, and that
//! exactly one of the file's columns names in another case, is read from
//! that column. A file with the exact name is read as before.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapterFactory, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct CaseBlindAdapterFactory;

impl PhysicalExprAdapterFactory for CaseBlindAdapterFactory {
    fn create(
        &self,
        logical_file_schema: SchemaRef,
        physical_file_schema: SchemaRef,
    ) -> Result<Arc<dyn PhysicalExprAdapter>> {
        let renames = file_names(&logical_file_schema, &physical_file_schema);
        // Nested columns whose fields the file names otherwise: read as the
        // file names them, then named as the table does.
        let retyped: HashMap<String, (DataType, DataType)> = logical_file_schema
            .fields()
            .iter()
            .filter(|f| f.data_type().is_nested())
            .filter_map(|f| {
                let in_file = renames.get(f.name()).unwrap_or(f.name());
                let file = physical_file_schema.field_with_name(in_file).ok()?;
                let named = crate::nested_names::file_named(f.data_type(), file.data_type())?;
                Some((f.name().clone(), (f.data_type().clone(), named)))
            })
            .collect();
        let logical = match renames.is_empty() && retyped.is_empty() {
            true => logical_file_schema,
            false => Arc::new(Schema::new_with_metadata(
                logical_file_schema
                    .fields()
                    .iter()
                    .map(|f| {
                        let mut f = f.as_ref().clone();
                        if let Some((_, named)) = retyped.get(f.name()) {
                            f = f.with_data_type(named.clone());
                        }
                        match renames.get(f.name()) {
                            Some(name) => Arc::new(f.with_name(name)),
                            None => Arc::new(f),
                        }
                    })
                    .collect::<Vec<_>>(),
                logical_file_schema.metadata().clone(),
            )),
        };
        let inner = DefaultPhysicalExprAdapterFactory.create(logical, physical_file_schema)?;
        Ok(Arc::new(CaseBlindAdapter {
            renames,
            retyped: retyped.into_iter().map(|(k, (ty, _))| (k, ty)).collect(),
            inner,
        }))
    }
}

/// A table column's metadata naming the file column it is read from
/// (Delta column mapping's physical name), whatever the file's columns'
/// names: absent from a file, the column is NULL in its rows.
pub const FILE_COLUMN: &str = "squall.file_column";

/// A table column's metadata giving the Parquet field id it is read from
/// (Delta column mapping's id mode): a file with field ids is read by id,
/// one without by [`FILE_COLUMN`].
pub const FILE_FIELD_ID: &str = "squall.file_field_id";

/// The Parquet field id of a file's column, as the Parquet reader gives it.
pub(crate) const PARQUET_FIELD_ID: &str = "PARQUET:field_id";

/// The table's columns the file names otherwise: table name to the file's.
/// A column whose metadata maps it ([`FILE_FIELD_ID`], [`FILE_COLUMN`]) is
/// the file column it names (a name the file lacks when it has none);
/// otherwise, where the file has no column of the exact name and exactly
/// one of its columns matches whatever the case, that one.
pub fn file_names(logical: &Schema, physical: &Schema) -> HashMap<String, String> {
    // Each file open asks: sets, not a search per column, for wide tables.
    let in_file: HashSet<&str> = physical
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let mapped = |f: &Field| {
        f.metadata().contains_key(FILE_COLUMN) || f.metadata().contains_key(FILE_FIELD_ID)
    };
    if logical
        .fields()
        .iter()
        .all(|f| in_file.contains(f.name().as_str()) && !mapped(f))
    {
        return HashMap::new();
    }
    let by_id: HashMap<&str, &str> = physical
        .fields()
        .iter()
        .filter_map(|f| {
            Some((
                f.metadata().get(PARQUET_FIELD_ID)?.as_str(),
                f.name().as_str(),
            ))
        })
        .collect();
    let mut names: HashMap<String, String> = logical
        .fields()
        .iter()
        .filter(|f| mapped(f))
        .map(|f| {
            let id = f
                .metadata()
                .get(FILE_FIELD_ID)
                .filter(|_| !by_id.is_empty());
            let column = match id {
                Some(id) => by_id.get(id.as_str()).map(|c| c.to_string()),
                None => f
                    .metadata()
                    .get(FILE_COLUMN)
                    .filter(|c| in_file.contains(c.as_str()))
                    .cloned(),
            };
            // A name no file column has: NULL in this file's rows.
            let column = column.unwrap_or_else(|| format!("\u{1}absent {}", f.name()));
            (f.name().clone(), column)
        })
        .filter(|(table, file)| table != file)
        .collect();
    let case_blind: Vec<(String, String)> = logical
        .fields()
        .iter()
        .filter(|f| !mapped(f))
        .filter(|f| !in_file.contains(f.name().as_str()))
        .filter_map(|f| {
            let mut matching = physical
                .fields()
                .iter()
                .filter(|p| p.name().eq_ignore_ascii_case(f.name()));
            match (matching.next(), matching.next()) {
                (Some(p), None) if logical.field_with_name(p.name()).is_err() => {
                    Some((f.name().clone(), p.name().clone()))
                }
                _ => None,
            }
        })
        .collect();
    names.extend(case_blind);
    names
}

/// DataFusion's adapter, given the file's names for the table's columns
/// and for the nested fields of some.
#[derive(Debug)]
struct CaseBlindAdapter {
    renames: HashMap<String, String>,
    /// Nested columns read as the file names their fields, by name: the
    /// table's type of each.
    retyped: HashMap<String, DataType>,
    inner: Arc<dyn PhysicalExprAdapter>,
}

impl PhysicalExprAdapter for CaseBlindAdapter {
    fn rewrite(&self, expr: Arc<dyn PhysicalExpr>) -> Result<Arc<dyn PhysicalExpr>> {
        if self.renames.is_empty() && self.retyped.is_empty() {
            return self.inner.rewrite(expr);
        }
        let renamed = expr
            .transform(|e| {
                let Some(column) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                let named: Arc<dyn PhysicalExpr> = match self.renames.get(column.name()) {
                    Some(name) => Arc::new(Column::new(name, column.index())),
                    None => Arc::clone(&e),
                };
                match self.retyped.get(column.name()) {
                    Some(ty) => Ok(Transformed::yes(Arc::new(
                        crate::nested_names::Renamed::new(named, ty.clone()),
                    ))),
                    None if self.renames.contains_key(column.name()) => Ok(Transformed::yes(named)),
                    None => Ok(Transformed::no(e)),
                }
            })
            .data()?;
        self.inner.rewrite(renamed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field};

    #[test]
    fn a_column_a_file_names_in_another_case_is_read_from_it() {
        let logical = Schema::new(vec![
            Field::new("userid", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]);
        let file = |names: &[&str]| {
            Schema::new(
                names
                    .iter()
                    .map(|n| Field::new(*n, DataType::Int64, true))
                    .collect::<Vec<_>>(),
            )
        };
        let renamed = file_names(&logical, &file(&["UserId", "v"]));
        assert_eq!(renamed.get("userid").map(String::as_str), Some("UserId"));
        assert!(file_names(&logical, &file(&["userid", "UserId", "v"])).is_empty());
        assert!(file_names(&logical, &file(&["USERID", "UserId", "v"])).is_empty());
        assert!(file_names(&logical, &file(&["v"])).is_empty());
    }

    #[test]
    fn mapped_columns_are_read_from_the_file_column_they_name() {
        let meta = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>()
        };
        let logical = Schema::new(vec![
            Field::new("renamed", DataType::Int64, true)
                .with_metadata(meta(&[(FILE_COLUMN, "col-1"), (FILE_FIELD_ID, "1")])),
            Field::new("v", DataType::Int64, true).with_metadata(meta(&[(FILE_COLUMN, "col-2")])),
        ]);
        let by_name = Schema::new(vec![
            Field::new("col-1", DataType::Int64, true),
            Field::new("v", DataType::Int64, true),
        ]);
        let names = file_names(&logical, &by_name);
        assert_eq!(names.get("renamed").map(String::as_str), Some("col-1"));
        // The file's `v` is another column (dropped, its name reused): not read.
        assert!(
            names.get("v").is_some_and(|n| n.contains("absent")),
            "{names:?}"
        );
        let with_ids = Schema::new(vec![
            Field::new("old-name", DataType::Int64, true)
                .with_metadata(meta(&[(PARQUET_FIELD_ID, "1")])),
            Field::new("col-2", DataType::Int64, true)
                .with_metadata(meta(&[(PARQUET_FIELD_ID, "2")])),
        ]);
        let names = file_names(&logical, &with_ids);
        assert_eq!(names.get("renamed").map(String::as_str), Some("old-name"));
        assert_eq!(names.get("v").map(String::as_str), Some("col-2"));
    }
}
