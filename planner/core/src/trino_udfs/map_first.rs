//! Trino's `map_agg(k, v)` keeps the first value of a key given twice (and
//! leaves out NULL keys); DataFusion's `map(keys, values)` refuses a key
//! twice ("map key must be unique"), which failed the whole query. The
//! planner writes `map_agg(k, v)` as [`MAP_FIRST`]`(array_agg(k),
//! array_agg(v))` over the rows whose key is not NULL: the map of each
//! key's first value, in the order the keys came.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, MapArray, StructArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Fields};
use arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The name of the function.
pub const MAP_FIRST: &str = "squall_map_first";

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(MapFirst {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MapFirst {
    signature: Signature,
}

/// The element type of a list type.
pub(super) fn element(t: &DataType) -> Result<DataType> {
    match t {
        DataType::List(f) | DataType::LargeList(f) => Ok(f.data_type().clone()),
        DataType::Null => Ok(DataType::Null),
        other => Err(DataFusionError::Plan(format!(
            "{MAP_FIRST}: lists of keys and values expected, not {other}"
        ))),
    }
}

/// An argument's `rows` values as a list array of 32-bit offsets (a large
/// list is cast).
pub(super) fn as_list(arg: &ColumnarValue, rows: usize) -> Result<ArrayRef> {
    let array = arg.to_array(rows)?;
    match array.data_type() {
        DataType::LargeList(f) => Ok(arrow::compute::cast(
            &array,
            &DataType::List(Arc::clone(f)),
        )?),
        _ => Ok(array),
    }
}

pub(super) fn entries(key: DataType, value: DataType) -> Fields {
    Fields::from(vec![
        Field::new("key", key, false),
        Field::new("value", value, true),
    ])
}

impl ScalarUDFImpl for MapFirst {
    fn name(&self) -> &str {
        MAP_FIRST
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let fields = entries(element(&args[0])?, element(&args[1])?);
        Ok(DataType::Map(
            Arc::new(Field::new("entries", DataType::Struct(fields), false)),
            false,
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let (keys, values) = (as_list(&args.args[0], rows)?, as_list(&args.args[1], rows)?);
        let (Some(keys), Some(values)) = (keys.as_list_opt::<i32>(), values.as_list_opt::<i32>())
        else {
            return Err(DataFusionError::Internal(format!(
                "{MAP_FIRST}: lists of keys and values expected"
            )));
        };
        let converter = RowConverter::new(vec![SortField::new(keys.value_type())])?;
        let key_rows = converter.convert_columns(&[Arc::clone(keys.values())])?;
        let (mut take_keys, mut take_values) = (Vec::new(), Vec::new());
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(rows);
        for i in 0..rows {
            let present = keys.is_valid(i) && values.is_valid(i);
            if present {
                let (start, end) = (keys.value_offsets()[i], keys.value_offsets()[i + 1]);
                let first_value = values.value_offsets()[i];
                if values.value_length(i) != end - start {
                    return Err(DataFusionError::Execution(format!(
                        "{MAP_FIRST}: {} keys but {} values",
                        end - start,
                        values.value_length(i)
                    )));
                }
                let mut seen = HashSet::new();
                for j in start..end {
                    if seen.insert(key_rows.row(j as usize)) {
                        take_keys.push(j as u32);
                        take_values.push((first_value + (j - start)) as u32);
                    }
                }
            }
            valid.push(present);
            offsets.push(i32::try_from(take_keys.len()).map_err(|_| {
                DataFusionError::Execution(format!("{MAP_FIRST}: a map past 2^31 entries"))
            })?);
        }
        let k = take(keys.values(), &UInt32Array::from(take_keys), None)?;
        let v = take(values.values(), &UInt32Array::from(take_values), None)?;
        let fields = entries(k.data_type().clone(), v.data_type().clone());
        let entries = StructArray::try_new(fields, vec![k, v], None)?;
        let map = MapArray::try_new(
            Arc::new(Field::new("entries", entries.data_type().clone(), false)),
            OffsetBuffer::new(offsets.into()),
            entries,
            Some(NullBuffer::from(valid)),
            false,
        )?;
        Ok(ColumnarValue::Array(Arc::new(map)))
    }
}

/// Trino's `map_from_entries(ARRAY[ROW(k, v), ...])`: the map of an
/// array's rows' first field to their second (any field names), refusing a
/// NULL entry, a NULL key and a key given twice, as Trino does.
pub(super) fn from_entries() -> ScalarUDF {
    ScalarUDF::new_from_impl(FromEntries {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FromEntries {
    signature: Signature,
}

const FROM_ENTRIES: &str = "map_from_entries";

/// The key and value types of an array of two-field rows.
fn entry_types(t: &DataType) -> Result<(DataType, DataType)> {
    match element(t)? {
        DataType::Struct(fields) if fields.len() == 2 => {
            Ok((fields[0].data_type().clone(), fields[1].data_type().clone()))
        }
        DataType::Null => Ok((DataType::Null, DataType::Null)),
        other => Err(DataFusionError::Plan(format!(
            "{FROM_ENTRIES}: an array of rows of two fields (key, value) expected, not of {other}"
        ))),
    }
}

fn argument_error(what: String) -> DataFusionError {
    // INVALID_FUNCTION_ARGUMENT, as Trino names it.
    DataFusionError::Execution(format!("{FROM_ENTRIES}: {what}"))
}

impl ScalarUDFImpl for FromEntries {
    fn name(&self) -> &str {
        FROM_ENTRIES
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let (k, v) = entry_types(&args[0])?;
        Ok(DataType::Map(
            Arc::new(Field::new(
                "entries",
                DataType::Struct(entries(k, v)),
                false,
            )),
            false,
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let array = as_list(&args.args[0], rows)?;
        let Some(list) = array.as_list_opt::<i32>() else {
            return Err(DataFusionError::Internal(format!(
                "{FROM_ENTRIES}: an array of rows expected"
            )));
        };
        let Some(pairs) = list.values().as_struct_opt() else {
            return Err(DataFusionError::Internal(format!(
                "{FROM_ENTRIES}: an array of rows expected"
            )));
        };
        let (keys, values) = (pairs.column(0), pairs.column(1));
        let converter = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?;
        let key_rows = converter.convert_columns(&[Arc::clone(keys)])?;
        for i in (0..rows).filter(|i| list.is_valid(*i)) {
            let (start, end) = (list.value_offsets()[i], list.value_offsets()[i + 1]);
            let mut seen = HashSet::new();
            for j in start as usize..end as usize {
                if pairs.is_null(j) {
                    return Err(argument_error("map entry cannot be null".into()));
                }
                if keys.is_null(j) {
                    return Err(argument_error("map key cannot be null".into()));
                }
                if !seen.insert(key_rows.row(j)) {
                    let key = arrow::util::display::array_value_to_string(keys, j)?;
                    return Err(argument_error(format!(
                        "Duplicate map keys ({key}) are not allowed"
                    )));
                }
            }
        }
        // The map shares the array's offsets and its rows' columns.
        let fields = entries(keys.data_type().clone(), values.data_type().clone());
        let entries =
            StructArray::try_new(fields, vec![Arc::clone(keys), Arc::clone(values)], None)?;
        let map = MapArray::try_new(
            Arc::new(Field::new("entries", entries.data_type().clone(), false)),
            list.offsets().clone(),
            entries,
            list.nulls().cloned(),
            false,
        )?;
        Ok(ColumnarValue::Array(Arc::new(map)))
    }
}
