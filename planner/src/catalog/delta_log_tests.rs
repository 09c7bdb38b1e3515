//! Tests of the Delta log's reading: which objects are what.
use super::*;
use arrow::datatypes::{DataType, Field, TimeUnit};

fn meta(key: &str) -> ObjectMeta {
    ObjectMeta {
        location: Path::from(key),
        last_modified: chrono::DateTime::default(),
        size: 1,
        e_tag: None,
        version: None,
    }
}

/// Commits, single and multi-part checkpoints and V2 checkpoints (named
/// by a UUID, their files' actions in sidecars) are told apart by name; a
/// checkpoint missing a part, checksums and the sidecars themselves are
/// not checkpoints.
#[test]
fn log_objects_are_known_by_their_names() {
    let log = Path::from("t/_delta_log");
    let names = [
        "00000000000000000000.json",
        "00000000000000000001.json",
        "00000000000000000001.crc",
        "00000000000000000002.json",
        "00000000000000000002.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000002.checkpoint.0000000002.0000000002.parquet",
        "00000000000000000003.json",
        "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000004.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
        "00000000000000000004.json",
        "00000000000000000005.checkpoint.parquet",
        "_last_checkpoint",
        "_sidecars/00000000000000000004.checkpoint.x.parquet",
    ];
    let objects = LogObjects::from_listing(
        names.iter().map(|n| meta(&format!("t/_delta_log/{n}"))),
        &log,
    );
    assert_eq!(
        objects.commits.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        objects.checkpoints.keys().copied().collect::<Vec<_>>(),
        vec![2, 4, 5]
    );
    assert_eq!(objects.checkpoints[&2].len(), 2);
    assert_eq!(objects.latest(), Some(5));
    assert!(objects.commits_between(1, 4).is_some());
    assert!(objects.commits_between(3, 5).is_none());
}

/// Delta's types as the Parquet reader reads its files.
#[test]
fn delta_types_become_arrow_types() {
    let t = |json: &str| super::super::log_types::delta_type(&serde_json::from_str(json).unwrap());
    assert_eq!(
        t(r#""decimal(12, 2)""#).unwrap(),
        DataType::Decimal128(12, 2)
    );
    assert_eq!(
        t(r#""timestamp""#).unwrap(),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
    assert_eq!(
        t(r#"{"type":"array","elementType":"long","containsNull":false}"#).unwrap(),
        DataType::List(Arc::new(Field::new("element", DataType::Int64, false)))
    );
    let map = t(r#"{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"a","type":"date","nullable":true}]},"valueContainsNull":true}"#)
        .unwrap();
    let DataType::Map(entries, false) = map else {
        panic!("{map}")
    };
    assert_eq!(entries.name(), "key_value");
    assert!(t(r#""variant""#).unwrap_err().contains("variant"));
}
