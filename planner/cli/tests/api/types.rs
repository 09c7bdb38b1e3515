//! Column types, typeSignatures and value encodings on the wire.

use serde_json::{Value, json};
use squall_server::ApiAuth;

use crate::common::*;

fn column<'a>(columns: &'a [Value], name: &str) -> &'a Value {
    columns
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literals_of_every_type() {
    let server = start(ApiAuth::None).await;
    let sql = "select \
        cast(1 as tinyint) as t, cast(2 as smallint) as s, cast(3 as int) as i, cast(4 as bigint) as b, \
        cast(123.45 as decimal(15,2)) as d, cast(-0.5 as decimal(10,3)) as dn, \
        cast(1.5 as double) as f, cast('NaN' as double) as nan, cast('-inf' as double) as ninf, \
        cast(0.25 as real) as r, 'text' as v, true as bo, cast(null as bigint) as n, null as u, \
        date '1995-03-15' as dt, cast('2020-01-02T03:04:05.678' as timestamp) as ts, \
        make_array(1, 2, 3) as arr";
    let out = run_query(&server, sql, &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    let cols = out.columns.clone().unwrap();
    let types: Vec<(&str, &str)> = vec![
        ("t", "tinyint"),
        ("s", "smallint"),
        ("i", "integer"),
        ("b", "bigint"),
        ("d", "decimal(15,2)"),
        ("dn", "decimal(10,3)"),
        ("f", "double"),
        ("r", "real"),
        ("v", "varchar"),
        ("bo", "boolean"),
        ("n", "bigint"),
        ("u", "unknown"),
        ("dt", "date"),
        ("ts", "timestamp(9)"),
        ("arr", "array(bigint)"),
    ];
    for (name, ty) in types {
        assert_eq!(column(&cols, name)["type"], ty, "column {name}");
    }
    assert_eq!(
        column(&cols, "d")["typeSignature"],
        json!({"rawType": "decimal", "arguments": [{"kind": "LONG", "value": 15}, {"kind": "LONG", "value": 2}]})
    );
    assert_eq!(
        column(&cols, "v")["typeSignature"],
        json!({"rawType": "varchar", "arguments": [{"kind": "LONG", "value": 2147483647}]})
    );
    assert_eq!(
        column(&cols, "ts")["typeSignature"],
        json!({"rawType": "timestamp", "arguments": [{"kind": "LONG", "value": 9}]})
    );
    assert_eq!(
        column(&cols, "arr")["typeSignature"],
        json!({"rawType": "array", "arguments": [{"kind": "TYPE", "value": {"rawType": "bigint", "arguments": []}}]})
    );
    assert_eq!(
        out.rows,
        vec![json!([
            1,
            2,
            3,
            4,
            "123.45",
            "-0.500",
            1.5,
            "NaN",
            "-Infinity",
            0.25,
            "text",
            true,
            null,
            null,
            "1995-03-15",
            "2020-01-02 03:04:05.678000000",
            [1, 2, 3]
        ])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_columns_of_tpch_types() {
    let server = start(ApiAuth::None).await;
    let sql = "select l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_returnflag, l_shipdate, \
        l_comment, l_discount > 0.05 as big_discount, \
        case when l_linenumber = 1 then null else l_tax end as maybe_tax \
        from lineitem where l_orderkey = 1 order by l_linenumber";
    let out = run_query(&server, sql, &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    let cols = out.columns.clone().unwrap();
    assert_eq!(column(&cols, "l_orderkey")["type"], "bigint");
    assert_eq!(column(&cols, "l_extendedprice")["type"], "decimal(15,2)");
    assert_eq!(column(&cols, "l_returnflag")["type"], "varchar");
    assert_eq!(column(&cols, "l_shipdate")["type"], "date");
    assert_eq!(column(&cols, "big_discount")["type"], "boolean");
    assert_eq!(
        out.rows.len(),
        6,
        "order 1 has six lines at every scale factor"
    );
    let first = out.rows[0].as_array().unwrap();
    assert_eq!(first[0], 1);
    assert_eq!(first[1], 1);
    assert!(
        first[3]
            .as_str()
            .is_some_and(|s| s.contains('.') && s.split('.').nth(1).unwrap().len() == 2)
    );
    assert!(
        first[5]
            .as_str()
            .is_some_and(|s| s.len() == 10 && s.as_bytes()[4] == b'-')
    );
    assert!(first[7].is_boolean());
    assert!(first[8].is_null(), "line 1 has a NULL tax here");
    assert!(out.rows[1].as_array().unwrap()[8].is_string());
}
