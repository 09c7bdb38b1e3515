//! Tests of an Iceberg table's metadata reading.
use super::*;
use serde_json::json;

fn schema(id: i64, inner: &str) -> Value {
    json!({"schema-id": id, "type": "struct", "fields": [
        {"id": 1, "name": "k", "required": false, "type": "long"},
        {"id": 2, "name": "s", "required": false, "type": {"type": "struct", "fields": [
            {"id": 3, "name": inner, "required": false, "type": "string"}]}}]})
}

#[test]
fn columns_and_nested_fields_carry_their_field_ids() {
    let doc = json!({"current-schema-id": 1, "schemas": [schema(0, "x"), schema(1, "y")]});
    let current = current_schema(&doc, None).unwrap();
    let id = |f: &arrow::datatypes::Field| {
        f.metadata()
            .get(squall_core::case_blind::FILE_FIELD_ID)
            .cloned()
    };
    assert_eq!(id(current.field_with_name("k").unwrap()), Some("1".into()));
    let arrow::datatypes::DataType::Struct(inner) =
        current.field_with_name("s").unwrap().data_type()
    else {
        panic!("{current:?}")
    };
    assert_eq!(inner[0].name(), "y");
    assert_eq!(id(&inner[0]), Some("3".into()));
}
