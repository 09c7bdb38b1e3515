//! Trino's maps of a key to all its values: `multimap_agg(k, v)` (the
//! planner writes it as [`MULTIMAP`]`(array_agg(k), array_agg(v))` over the
//! rows whose key is not NULL) and `multimap_from_entries(array(row(k,
//! v)))`. A key's values keep the order they came in, and so do the keys.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, MapArray, StructArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field};
use arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::map_first::{as_list, element, entries};

/// The name `multimap_agg` is written as.
pub const MULTIMAP: &str = "squall_multimap";

pub(super) fn functions() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::new_from_impl(Multimap {
            name: MULTIMAP,
            signature: Signature::any(2, Volatility::Immutable),
        }),
        ScalarUDF::new_from_impl(Multimap {
            name: "multimap_from_entries",
            signature: Signature::any(1, Volatility::Immutable),
        }),
    ]
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Multimap {
    name: &'static str,
    signature: Signature,
}

fn map_type(key: DataType, value: DataType) -> DataType {
    let values = DataType::List(Arc::new(Field::new("item", value, true)));
    DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(entries(key, values)),
            false,
        )),
        false,
    )
}

impl ScalarUDFImpl for Multimap {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if args.len() == 2 {
            return Ok(map_type(element(&args[0])?, element(&args[1])?));
        }
        match element(&args[0])? {
            DataType::Struct(fields) if fields.len() == 2 => Ok(map_type(
                fields[0].data_type().clone(),
                fields[1].data_type().clone(),
            )),
            DataType::Null => Ok(map_type(DataType::Null, DataType::Null)),
            other => Err(DataFusionError::Plan(format!(
                "{}: an array of rows of two fields (key, value) expected, not of {other}",
                self.name
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let first = as_list(&args.args[0], rows)?;
        let Some(first) = first.as_list_opt::<i32>() else {
            return Err(DataFusionError::Internal(format!(
                "{}: a list expected",
                self.name
            )));
        };
        // Keys and values side by side: two lists, or the fields of a list of rows.
        let (keys, values, valid): (ArrayRef, ArrayRef, Vec<bool>) = if args.args.len() == 2 {
            let second = as_list(&args.args[1], rows)?;
            let Some(second) = second.as_list_opt::<i32>() else {
                return Err(DataFusionError::Internal(format!(
                    "{}: a list expected",
                    self.name
                )));
            };
            if first.value_offsets() != second.value_offsets() {
                return Err(DataFusionError::Execution(format!(
                    "{}: as many values as keys expected",
                    self.name
                )));
            }
            let valid = (0..rows)
                .map(|i| first.is_valid(i) && second.is_valid(i))
                .collect();
            (
                Arc::clone(first.values()),
                Arc::clone(second.values()),
                valid,
            )
        } else {
            let Some(pairs) = first.values().as_struct_opt() else {
                return Err(DataFusionError::Internal(format!(
                    "{}: rows expected",
                    self.name
                )));
            };
            if pairs.null_count() > 0 {
                return Err(DataFusionError::Execution(format!(
                    "{}: map entry cannot be null",
                    self.name
                )));
            }
            let valid = (0..rows).map(|i| first.is_valid(i)).collect();
            (
                Arc::clone(pairs.column(0)),
                Arc::clone(pairs.column(1)),
                valid,
            )
        };
        let converter = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?;
        let key_rows = converter.convert_columns(&[Arc::clone(&keys)])?;
        let (mut take_keys, mut take_values) = (Vec::<u32>::new(), Vec::<u32>::new());
        let (mut map_offsets, mut value_offsets) = (vec![0i32], vec![0i32]);
        let offsets = first.value_offsets();
        for (i, present) in valid.iter().enumerate() {
            if *present {
                // Each key's positions, the keys in the order they came.
                let mut slot = HashMap::new();
                let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
                for j in offsets[i] as usize..offsets[i + 1] as usize {
                    if keys.is_null(j) {
                        return Err(DataFusionError::Execution(format!(
                            "{}: map key cannot be null",
                            self.name
                        )));
                    }
                    let at = *slot.entry(key_rows.row(j)).or_insert_with(|| {
                        groups.push((j as u32, Vec::new()));
                        groups.len() - 1
                    });
                    groups[at].1.push(j as u32);
                }
                for (key, positions) in groups {
                    take_keys.push(key);
                    take_values.extend(positions);
                    value_offsets.push(take_values.len() as i32);
                }
            }
            map_offsets.push(take_keys.len() as i32);
        }
        let k = take(keys.as_ref(), &UInt32Array::from(take_keys), None)?;
        let v = take(values.as_ref(), &UInt32Array::from(take_values), None)?;
        let lists = ListArray::try_new(
            Arc::new(Field::new("item", v.data_type().clone(), true)),
            OffsetBuffer::new(value_offsets.into()),
            v,
            None,
        )?;
        let fields = entries(k.data_type().clone(), lists.data_type().clone());
        let entries = StructArray::try_new(fields, vec![k, Arc::new(lists)], None)?;
        let map = MapArray::try_new(
            Arc::new(Field::new("entries", entries.data_type().clone(), false)),
            OffsetBuffer::new(map_offsets.into()),
            entries,
            Some(NullBuffer::from(valid)),
            false,
        )?;
        if args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
            return datafusion::scalar::ScalarValue::try_from_array(&map, 0)
                .map(ColumnarValue::Scalar);
        }
        Ok(ColumnarValue::Array(Arc::new(map)))
    }
}
