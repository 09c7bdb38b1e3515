use arrow::array::Array;
use arrow::util::display::array_value_to_string;
use datafusion::prelude::SessionContext;

/// The first row of `sql`'s answer, each value as text ("NULL" for NULL).
async fn row(sql: &str) -> Vec<String> {
    let ctx = SessionContext::new();
    super::register(&ctx);
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let batch = &batches[0];
    batch
        .columns()
        .iter()
        .map(|c| {
            if c.is_null(0) {
                "NULL".to_string()
            } else {
                array_value_to_string(c, 0).unwrap()
            }
        })
        .collect()
}

async fn error(sql: &str) -> String {
    let ctx = SessionContext::new();
    super::register(&ctx);
    let result = match ctx.sql(sql).await {
        Ok(df) => df.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    result.unwrap_err().to_string()
}

#[tokio::test]
async fn json_functions_answer_as_trino() {
    let doc = r#"'{"b": {"c": [10, "x", true, null, {"d": 1.5}]}, "a": "s"}'"#;
    assert_eq!(
        row(&format!(
            "select json_extract_scalar({doc}, '$.a'), json_extract_scalar({doc}, '$.b.c[0]'),
                    json_extract_scalar({doc}, '$.b.c[1]'), json_extract_scalar({doc}, '$.b.c[2]'),
                    json_extract_scalar({doc}, '$.b.c'), json_extract_scalar({doc}, '$.b.c[3]'),
                    json_extract_scalar({doc}, '$[\"b\"][\"c\"][4].d'), json_extract_scalar({doc}, '$.zz'),
                    json_extract_scalar('not json', '$.a')"
        ))
        .await,
        ["s", "10", "x", "true", "NULL", "NULL", "1.5", "NULL", "NULL"]
    );
    assert_eq!(
        row(&format!(
            "select json_extract({doc}, '$.b.c[4]'), json_extract({doc}, '$.a'), json_parse({doc}),
                    json_format(json_parse('[1, 2 ]')), json_size({doc}, '$.b.c'), json_size({doc}, '$.a'),
                    json_size({doc}, '$.q')"
        ))
        .await,
        [
            r#"{"d":1.5}"#,
            r#""s""#,
            r#"{"a":"s","b":{"c":[10,"x",true,null,{"d":1.5}]}}"#,
            "[1,2]",
            "5",
            "0",
            "NULL"
        ]
    );
    assert_eq!(
        row("select json_array_length('[1, [2, 3], 4]'), json_array_length('{}'),
                    json_array_get('[\"a\", [3, 9], \"c\"]', 1), json_array_get('[\"a\", [3, 9], \"c\"]', -1),
                    json_array_get('[1]', 5), json_array_contains('[1, 2, \"3\"]', 2),
                    json_array_contains('[1, 2, \"3\"]', 3), json_array_contains('[1, 2, \"3\"]', '3'),
                    json_array_contains('[true]', true), is_json_scalar('1'), is_json_scalar('[1]'),
                    json_extract_scalar(NULL, '$.a')")
            .await,
        ["3", "NULL", "[3,9]", r#""c""#, "NULL", "true", "false", "true", "true", "true", "false", "NULL"]
    );
    let e = error("select json_parse('{\"a\": ')").await;
    assert!(e.contains("json_parse: '{\"a\": ' is not JSON"), "{e}");
    let e = error("select json_extract('{}', 'a.b')").await;
    assert!(e.contains("json_extract: invalid JSON path 'a.b'"), "{e}");
}

#[tokio::test]
async fn json_functions_read_columns_row_by_row() {
    let ctx = SessionContext::new();
    super::register(&ctx);
    let batches = ctx
        .sql(
            "select json_extract_scalar(doc, path) v from (values ('{\"a\": 1}', '$.a'),
                 ('{\"a\": [5]}', '$.a[0]'), (NULL, '$.a'), ('{\"b\": 2}', '$.a')) t(doc, path)",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    let values: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains(" v "))
        .map(|l| l.trim_matches(|c| c == '|' || c == ' '))
        .collect();
    assert_eq!(values, ["1", "5", "", ""]);
}

#[tokio::test]
async fn url_functions_answer_as_trino() {
    let u = "'https://user@example.com:8443/a/b.html?x=1&y=&z=a%20b#frag'";
    assert_eq!(
        row(&format!(
            "select url_extract_protocol({u}), url_extract_host({u}), url_extract_port({u}),
                    url_extract_path({u}), url_extract_query({u}), url_extract_fragment({u}),
                    url_extract_parameter({u}, 'x'), url_extract_parameter({u}, 'y'),
                    url_extract_parameter({u}, 'z'), url_extract_parameter({u}, 'w'),
                    url_extract_port('http://example.com/'), url_extract_host('/a/b?q=1'),
                    url_extract_path('/a/b?q=1'), url_extract_parameter('/a/b?q=1', 'q'),
                    url_extract_host('::not a url')"
        ))
        .await,
        [
            "https",
            "example.com",
            "8443",
            "/a/b.html",
            "x=1&y=&z=a%20b",
            "frag",
            "1",
            "",
            "a%20b",
            "NULL",
            "NULL",
            "NULL",
            "/a/b",
            "1",
            "NULL"
        ]
    );
    assert_eq!(
        row("select url_encode('a b/c?d=é*'), url_decode('a+b%2Fc%3Fd%3D%C3%A9*')").await,
        ["a+b%2Fc%3Fd%3D%C3%A9*", "a b/c?d=é*"]
    );
    let e = error("select url_decode('50%')").await;
    assert!(e.contains("url_decode: '%' at byte 2"), "{e}");
}

#[tokio::test]
async fn hamming_distance_counts_differing_characters() {
    assert_eq!(row("select hamming_distance('abcé', 'abdé')").await, ["1"]);
    let e = error("select hamming_distance('ab', 'abc')").await;
    assert!(e.contains("the same length"), "{e}");
}

#[tokio::test]
async fn length_counts_bytes_of_binary_and_characters_of_text() {
    assert_eq!(
        row(
            "select length(CAST('é' AS BYTEA)) a, length(decode('00ff', 'hex')) b, length('é') c, \
             length(123) d, length(CAST(NULL AS BYTEA)) e"
        )
        .await,
        ["2", "2", "1", "3", "NULL"]
    );
}

#[tokio::test]
async fn numbers_in_other_bases() {
    assert_eq!(
        row(
            "select to_base(255, 16), to_base(-10, 2), to_base(0, 36), from_base('ff', 16), \
             from_base('-1010', 2), from_base('Z', 36), to_base(NULL, 2)"
        )
        .await,
        ["ff", "-1010", "0", "255", "-10", "35", "NULL"]
    );
    let e = error("select to_base(1, 40)").await;
    assert!(e.contains("to_base: radix must be between 2 and 36"), "{e}");
    let e = error("select from_base('xyz', 10)").await;
    assert!(e.contains("from_base: not a base-10 number: xyz"), "{e}");
}

#[tokio::test]
async fn regexp_arrays_answer_as_trino() {
    assert_eq!(
        row("select regexp_extract_all('a1b22c333', '[0-9]+'), regexp_extract_all('a1b22', '([a-z])([0-9]+)', 2),
                    regexp_extract_all('abc', '[0-9]'), regexp_split('a1b22c', '[0-9]+'), regexp_split(NULL, 'x')")
            .await,
        ["[1, 22, 333]", "[1, 22]", "[]", "[a, b, c]", "NULL"]
    );
    let e = error("select regexp_split('a', '(')").await;
    assert!(
        e.contains("regexp_split: '(' is not a regular expression"),
        "{e}"
    );
    let e = error("select regexp_extract_all('a', 'a', 2)").await;
    assert!(e.contains("has no group 2"), "{e}");
}

#[tokio::test]
async fn concat_and_reverse_take_arrays_and_concat_is_null_with_a_null() {
    assert_eq!(
        row("select concat(make_array(1), make_array(2, 3)), reverse(make_array(1, 2)), reverse('ab'),
                    concat('a', NULL, 'b'), concat('a', 'b')")
            .await,
        ["[1, 2, 3]", "[2, 1]", "ba", "NULL", "ab"]
    );
    let ctx = SessionContext::new();
    super::register(&ctx);
    let batches = ctx
        .sql("select concat(a, b) c from (values ('x', 'y'), ('x', NULL), (NULL, 'y')) t(a, b)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let c = batches[0].column(0);
    let shown: Vec<String> = (0..c.len())
        .map(|i| {
            if c.is_null(i) {
                "NULL".into()
            } else {
                array_value_to_string(c, i).unwrap()
            }
        })
        .collect();
    assert_eq!(shown, ["xy", "NULL", "NULL"]);
}
