//! The answer checker's tests: tolerances, ORDER BY ties, NULLs, and every
//! carried TPC-H answer against itself.

use super::*;

fn cmp(expected: &str, actual: &str, query: Option<&str>) -> Comparison {
    compare_csv(expected, actual, query).unwrap()
}

fn cell_eq(e: &str, a: &str) -> bool {
    let rows = vec![vec![e.to_string()]];
    CellCmp::new(&rows, 1).eq(0, e, a).unwrap()
}

const ORDERED: &str = "select a, b from t order by a";

#[test]
fn exact_match() {
    let csv = "a,b\n1,x\n2,y\n3,z\n";
    let c = cmp(csv, csv, Some(ORDERED));
    assert!(c.ok);
    assert_eq!(c.message, "match (3 rows)");
    assert!(c.warnings.is_empty());
}

#[test]
fn integer_mismatch_is_exact() {
    let c = cmp(
        "c\n1478493\n",
        "c\n1478494\n",
        Some("select c from t order by c"),
    );
    assert!(!c.ok);
    assert_eq!(
        c.message,
        "order/key mismatch at row 1 (ORDER BY cols ['c']); 1 cells in 1 rows differ positionally, \
         first: row 1 col 'c': expected '1478493' got '1478494'"
    );
    let c = cmp(
        "k,c\n1,1478493\n",
        "k,c\n1,1478494\n",
        Some("select k, c from t order by k"),
    );
    assert_eq!(
        c.message,
        "values differ in rows 1-1 ; 1 cells in 1 rows differ positionally, \
         first: row 1 col 'c': expected '1478493' got '1478494'"
    );
    assert!(cell_eq("1995", "1995.0"));
    assert!(cell_eq("1995", "1.995e3"));
    assert!(!cell_eq("1995", "1995.0000001"));
}

#[test]
fn money_tolerance() {
    let expected = "k,price\n1,100.00\n2,7.5\n";
    assert!(cmp(expected, "k,price\n1,100.004\n2,7.5\n", Some(ORDERED)).ok);
    assert!(cmp(expected, "k,price\n1,100.01\n2,7.5\n", Some(ORDERED)).ok);
    assert!(!cmp(expected, "k,price\n1,100.02\n2,7.5\n", Some(ORDERED)).ok);
    // three decimals: not a money column, so 0.004 is too far
    assert!(!cmp("k,v\n1,100.123\n", "k,v\n1,100.127\n", Some(ORDERED)).ok);
}

#[test]
fn relative_tolerance() {
    assert!(cell_eq("25.537587116854997", "25.5375871"));
    assert!(cell_eq("5320753880.69", "5320753885.0"));
    assert!(cell_eq("25.537587116854997", "25.5376"));
    assert!(!cell_eq("25.537587116854997", "25.5377"));
    assert!(!cell_eq("1.5", "1.6"));
}

#[test]
fn rounding_allowance_for_four_decimals() {
    assert!(cell_eq("0.05014459706340077", "0.050144"));
    assert!(cell_eq("0.050144", "0.05014459706"));
    assert!(!cell_eq("0.050143", "0.05014459706"));
    // three decimals on one side: no allowance
    assert!(!cell_eq("0.05014459706", "0.050"));
}

#[test]
fn tie_groups_are_multisets() {
    let expected = "a,b\n1,x\n1,y\n2,z\n";
    let c = cmp(expected, "a,b\n1,y\n1,x\n2,z\n", Some(ORDERED));
    assert!(c.ok, "{}", c.message);
    assert_eq!(
        c.message,
        "match (3 rows, 1 tie groups compared as multisets)"
    );
    let c = cmp(expected, "a,b\n1,y\n1,w\n2,z\n", Some(ORDERED));
    assert!(!c.ok);
    assert!(
        c.message.starts_with("values differ in rows 1-2 ;"),
        "{}",
        c.message
    );
    let c = cmp(expected, "a,b\n1,x\n2,z\n1,y\n", Some(ORDERED));
    assert!(!c.ok);
    assert!(
        c.message
            .starts_with("order/key mismatch at row 2 (ORDER BY cols ['a'])"),
        "{}",
        c.message
    );
}

#[test]
fn unordered_is_a_multiset() {
    let q = Some("select a, b from t");
    let c = cmp("a,b\n1,x\n2,y\n3,z\n", "a,b\n3,z\n1,x\n2,y\n", q);
    assert!(c.ok);
    assert_eq!(c.message, "match (3 rows, unordered)");
    let c = cmp("a,b\n1,x\n2,y\n3,z\n", "a,b\n3,z\n1,x\n2,q\n", q);
    assert!(!c.ok);
    assert_eq!(
        c.message,
        "multiset differs (unordered query); after sorting 1 cells in 1 rows differ, \
         first: row 2 col 'b': expected 'y' got 'q'"
    );
}

#[test]
fn limit_only_checks_keys_of_the_last_tie_group() {
    let expected = "a,b\n1,p\n2,q\n2,r\n";
    let actual = "a,b\n1,p\n2,q\n2,s\n";
    let c = cmp(
        expected,
        actual,
        Some("select a, b from t order by a limit 3"),
    );
    assert!(c.ok, "{}", c.message);
    assert!(!cmp(expected, actual, Some(ORDERED)).ok);
    assert!(
        !cmp(
            expected,
            actual,
            Some("select a, b from t order by a limit 4")
        )
        .ok
    );
    // a different key in the last group is still a mismatch
    let c = cmp(
        expected,
        "a,b\n1,p\n2,q\n3,r\n",
        Some("select a, b from t order by a limit 3"),
    );
    assert!(!c.ok);
}

#[test]
fn nulls() {
    let c = cmp("a,b\n1,\n2,NULL\n", "a,b\n1,\\N\n2,null\n", Some(ORDERED));
    assert!(c.ok, "{}", c.message);
    assert!(!cell_eq("", "0"));
    assert!(!cell_eq("0", ""));
}

#[test]
fn dates_booleans_nan() {
    assert!(cell_eq("1995-03-15", "1995-03-15 00:00:00"));
    assert!(cell_eq("1995-03-15", "1995-03-15T00:00:00.000"));
    assert!(!cell_eq("1995-03-15", "1995-03-16"));
    assert!(!cell_eq("1995-03-15", "1995-03-15 00:00:01"));
    assert!(!cell_eq("1995-03-15", "1995-03-15Z"));
    assert!(cell_eq("1995-03-15 01:00:00+01:00", "1995-03-15 00:00:00Z"));
    assert!(cell_eq("true", "T"));
    assert!(cell_eq("1", "true"));
    assert!(!cell_eq("true", "1"));
    assert!(!cell_eq("f", "true"));
    assert!(cell_eq("NaN", "nan"));
    assert!(!cell_eq("nan", "1.0"));
    assert!(cell_eq("inf", "1e400"));
    assert!(!cell_eq("abc", "ABC"));
}

#[test]
fn column_and_row_counts() {
    let c = cmp("a,b\n1,2\n", "a\n1\n", Some(ORDERED));
    assert!(!c.ok);
    assert_eq!(
        c.message,
        "column count differs: expected 2 ['a', 'b'] got 1 ['a']"
    );
    let c = cmp("a,b\n1,2\n", "a,b\n1,2\n3,4\n", Some(ORDERED));
    assert!(!c.ok);
    assert_eq!(c.message, "row count differs: expected 1 got 2");
    let c = cmp("a,b\n1,2\n", "a,b\n1,2,3\n", Some(ORDERED));
    assert_eq!(c.message, "actual row 1 has 3 fields, header has 2");
    let c = cmp("a,b\n1,2\n", "A,c\n1,2\n", Some(ORDERED));
    assert!(c.ok);
    assert_eq!(
        c.warnings,
        vec!["header names differ: expected ['a', 'b'] got ['A', 'c']"]
    );
    assert!(compare_csv("", "a\n", None).is_err());
}

#[test]
fn no_query_is_strict_order() {
    let c = cmp("a\n1\n1\n", "a\n1\n1.0\n", None);
    assert!(c.ok);
    assert_eq!(
        c.message,
        "match (2 rows, 1 tie groups compared as multisets)"
    );
    assert_eq!(
        c.warnings,
        vec!["no query text: comparing in strict row order"]
    );
}

#[test]
fn order_by_parsing() {
    let sql = "select a as x, (select max(b) from t order by b) as y -- order by z\n\
               from t /* order by w,\n v */ where s = 'order by q' and u = 'it''s'\n\
               order by 2 desc, \"X\" asc nulls last, t.x NULLS FIRST\n\
               limit 10;";
    let (items, limit) = parse_order_limit(sql);
    assert_eq!(
        items,
        Some(vec![
            "2".to_string(),
            "\"X\"".to_string(),
            "t.x".to_string()
        ])
    );
    assert_eq!(limit, Some(10));
    let header = vec!["x".to_string(), "Y".to_string()];
    assert_eq!(
        order_key_indices(&items.unwrap_or_default(), &header),
        Some(vec![1, 0, 0])
    );

    let (items, limit) = parse_order_limit("select * from (select a from t order by a limit 5) s");
    assert_eq!((items, limit), (None, None));
    let (items, _) = parse_order_limit("select f(a, b) from t order by f(a, b), c offset 3");
    assert_eq!(items, Some(vec!["f(a, b)".to_string(), "c".to_string()]));
    assert_eq!(order_key_indices(&["sum(x)".to_string()], &header), None);
    assert_eq!(order_key_indices(&["3".to_string()], &header), None);
    assert_eq!(order_key_indices(&["0".to_string()], &header), None);

    let c = cmp(
        "x\n2\n1\n",
        "x\n2\n1\n",
        Some("select x from t order by x + 1"),
    );
    assert!(c.ok);
    assert_eq!(
        c.warnings,
        vec!["ORDER BY ['x + 1'] not all output columns; using strict row order"]
    );
}

#[test]
fn csv_like_python() {
    let rows = parse_csv("a,b\n\nc\r\n\"x\"y,\"q\n\"\"z").unwrap();
    assert_eq!(
        rows,
        vec![vec!["a", "b"], vec![], vec!["c"], vec!["xy", "q\n\"z"]]
            .into_iter()
            .map(|r| r.into_iter().map(String::from).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    let rows = parse_csv("a\rb\r\n\"c\rd\"").unwrap();
    assert_eq!(
        rows,
        vec![
            vec!["a".to_string()],
            vec!["b".to_string()],
            vec!["c\rd".to_string()]
        ]
    );
    assert_eq!(parse_csv("\"abc").unwrap(), vec![vec!["abc".to_string()]]);
    assert_eq!(
        parse_csv(",\n").unwrap(),
        vec![vec![String::new(), String::new()]]
    );
    assert!(parse_csv(&"x".repeat(FIELD_LIMIT + 1)).is_err());
}

#[test]
fn decimal_context_rounding() {
    let d = |s: &str| match num(s) {
        Some(Num::Decimal(d)) => d,
        other => panic!("{s}: {other:?}"),
    };
    // 28 significant digits, half-even
    let r = dec_sub(&d("1234567890123456789012345678.5"), &d("0")).unwrap();
    assert_eq!(
        dec_cmp(&r, &d("1234567890123456789012345678")),
        Ordering::Equal
    );
    let r = dec_sub(&d("1234567890123456789012345679.5"), &d("0")).unwrap();
    assert_eq!(
        dec_cmp(&r, &d("1234567890123456789012345680")),
        Ordering::Equal
    );
    let r = dec_sub(&d("1e30"), &d("1e-30")).unwrap();
    assert_eq!(dec_cmp(&r, &d("1e30")), Ordering::Equal);
    assert!(dec_abs(&d("1e1000000")).is_err());
    assert!(num("1e9999999999999999999").is_none());
    assert!(num("1e999999999999999999").is_some());
}

#[test]
fn repr_like_python() {
    assert_eq!(py_repr("it's"), "\"it's\"");
    assert_eq!(py_repr("a\"b'c"), "'a\"b\\'c'");
    assert_eq!(py_repr("x\ty\u{1}\u{a0}é"), "'x\\ty\\x01\\xa0é'");
}

#[test]
fn real_answers_match_themselves() {
    // What compare.py prints for each answer compared with itself.
    let expected_messages = [
        "match (4 rows)",
        "match (44 rows)",
        "match (10 rows)",
        "match (5 rows)",
        "match (5 rows)",
        "match (1 rows, unordered)",
        "match (4 rows)",
        "match (2 rows)",
        "match (175 rows)",
        "match (20 rows)",
        "match (2541 rows, 2 tie groups compared as multisets)",
        "match (2 rows)",
        "match (37 rows)",
        "match (1 rows, unordered)",
        "match (1 rows)",
        "match (2762 rows)",
        "match (1 rows, unordered)",
        "match (5 rows)",
        "match (1 rows, unordered)",
        "match (9 rows)",
        "match (47 rows)",
        "match (7 rows)",
    ];
    for (q, want) in (1..=22).zip(expected_messages) {
        let csv = crate::expected_answer(0.1, q).unwrap();
        let sql = crate::query(q).unwrap();
        let c = compare_csv(csv, csv, Some(sql)).unwrap();
        assert!(c.ok, "q{q:02}: {}", c.message);
        assert_eq!(c.message, want, "q{q:02}");
        assert!(c.warnings.is_empty(), "q{q:02}: {:?}", c.warnings);
    }

    let csv = crate::expected_answer(0.1, 1).unwrap();
    let sql = crate::query(1).unwrap();
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
    let last = cells.len() - 1;
    let count: i64 = cells[last].parse().unwrap();
    cells[last] = (count + 1).to_string();
    lines[1] = cells.join(",");
    let mutated = lines.join("\n") + "\n";
    let c = compare_csv(csv, &mutated, Some(sql)).unwrap();
    assert!(!c.ok);
    assert_eq!(
        c.message,
        format!(
            "values differ in rows 1-1 ; 1 cells in 1 rows differ positionally, \
             first: row 1 col 'count_order': expected '{count}' got '{}'",
            count + 1
        )
    );
}
