//! Nested fields a file names otherwise than the table: a struct's field
//! renamed by Delta column mapping (the file holds `col-<uuid>`) or by an
//! Iceberg schema change (the file holds the field's old name; its field
//! id is the same).
//!
//! The scan adapter (`case_blind`) reads such a column as the table's type
//! with each nested field named as the file names it ([`file_named`]:
//! DataFusion's cast then matches the file's fields by name), and
//! [`Renamed`] gives the values the table's names back: the same arrays,
//! their type's names changed, no value copied.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use arrow::array::{ArrayData, RecordBatch, make_array};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;

use crate::case_blind::{FILE_COLUMN, FILE_FIELD_ID, PARQUET_FIELD_ID};

/// `logical` (a table column's type) with each nested field named as the
/// file's type `physical` names it: by its field id where both carry ids,
/// else by the name its metadata gives ([`FILE_COLUMN`]), else its own.
/// `None` when the file names every nested field as the table does.
pub fn file_named(logical: &DataType, physical: &DataType) -> Option<DataType> {
    let named = rename(logical, physical);
    (named != *logical).then_some(named)
}

fn rename(logical: &DataType, physical: &DataType) -> DataType {
    match (logical, physical) {
        (DataType::Struct(fields), DataType::Struct(file)) => {
            DataType::Struct(renamed_fields(fields, file))
        }
        (DataType::List(f), DataType::List(p) | DataType::LargeList(p)) => {
            DataType::List(element(f, p))
        }
        (DataType::LargeList(f), DataType::List(p) | DataType::LargeList(p)) => {
            DataType::LargeList(element(f, p))
        }
        (DataType::Map(f, sorted), DataType::Map(p, _)) => DataType::Map(element(f, p), *sorted),
        _ => logical.clone(),
    }
}

fn element(field: &FieldRef, file: &FieldRef) -> FieldRef {
    Arc::new(
        field
            .as_ref()
            .clone()
            .with_data_type(rename(field.data_type(), file.data_type())),
    )
}

fn renamed_fields(fields: &Fields, file: &Fields) -> Fields {
    let has_ids = file
        .iter()
        .any(|f| f.metadata().contains_key(PARQUET_FIELD_ID));
    fields
        .iter()
        .map(|f| {
            let by_id = f
                .metadata()
                .get(FILE_FIELD_ID)
                .filter(|_| has_ids)
                .and_then(|id| {
                    file.iter()
                        .find(|p| p.metadata().get(PARQUET_FIELD_ID) == Some(id))
                });
            let name = match by_id {
                Some(p) => p.name().clone(),
                None => f.metadata().get(FILE_COLUMN).unwrap_or(f.name()).clone(),
            };
            let matched = file.iter().find(|p| *p.name() == name);
            let ty = match matched {
                Some(p) => rename(f.data_type(), p.data_type()),
                None => f.data_type().clone(),
            };
            Arc::new(Field::new(name, ty, f.is_nullable()).with_metadata(f.metadata().clone()))
        })
        .collect()
}

/// `inner`'s values (of a type like `to` but for the names of nested
/// fields) as `to`.
#[derive(Debug, Eq)]
pub struct Renamed {
    inner: Arc<dyn PhysicalExpr>,
    to: DataType,
}

impl PartialEq for Renamed {
    fn eq(&self, other: &Self) -> bool {
        self.inner.eq(&other.inner) && self.to == other.to
    }
}

impl Hash for Renamed {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.hash(state);
        self.to.hash(state);
    }
}

impl Renamed {
    pub fn new(inner: Arc<dyn PhysicalExpr>, to: DataType) -> Self {
        Self { inner, to }
    }
}

impl fmt::Display for Renamed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RENAMED({})", self.inner)
    }
}

impl PhysicalExpr for Renamed {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(self.to.clone())
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        self.inner.nullable(input_schema)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        Ok(match self.inner.evaluate(batch)? {
            ColumnarValue::Array(a) => {
                ColumnarValue::Array(make_array(retyped(a.to_data(), &self.to)?))
            }
            ColumnarValue::Scalar(s) => {
                let array = make_array(retyped(s.to_array()?.to_data(), &self.to)?);
                ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?)
            }
        })
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.inner]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        let [inner] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("RENAMED takes one child".into()))?;
        Ok(Arc::new(Self::new(inner, self.to.clone())))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.fmt_sql(f)
    }
}

/// `data` as type `to`: the same buffers, its type's (and its children's)
/// names changed.
fn retyped(data: ArrayData, to: &DataType) -> Result<ArrayData> {
    let children: Vec<&DataType> = match to {
        DataType::Struct(fields) => fields.iter().map(|f| f.data_type()).collect(),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => vec![f.data_type()],
        _ => Vec::new(),
    };
    if children.len() != data.child_data().len() {
        return Err(DataFusionError::Internal(format!(
            "cannot read {} as {to}",
            data.data_type()
        )));
    }
    let child_data = data
        .child_data()
        .iter()
        .zip(children)
        .map(|(c, t)| retyped(c.clone(), t))
        .collect::<Result<Vec<_>>>()?;
    Ok(data
        .into_builder()
        .data_type(to.clone())
        .child_data(child_data)
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array, StructArray};
    use std::collections::HashMap;

    #[test]
    fn nested_fields_are_named_as_the_file_names_them_and_back() {
        let meta = |k: &str, v: &str| HashMap::from([(k.to_string(), v.to_string())]);
        let logical = DataType::Struct(Fields::from(vec![
            Field::new("a", DataType::Int64, true).with_metadata(meta(FILE_COLUMN, "col-1")),
            Field::new("b", DataType::Int64, true).with_metadata(meta(FILE_FIELD_ID, "7")),
        ]));
        let file = DataType::Struct(Fields::from(vec![
            Field::new("col-1", DataType::Int64, true),
            Field::new("old_b", DataType::Int64, true).with_metadata(meta(PARQUET_FIELD_ID, "7")),
        ]));
        let named = file_named(&logical, &file).unwrap();
        let DataType::Struct(fields) = &named else {
            panic!("{named}")
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["col-1", "old_b"]);
        assert!(file_named(&file, &file).is_none());

        let values = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(Int64Array::from(vec![3, 4])),
            ],
            Some(vec![true, false].into()),
        );
        let back = make_array(retyped(values.to_data(), &logical).unwrap());
        assert_eq!(back.data_type(), &logical);
        assert!(back.is_null(1));
    }
}
