//! Answer checking: decides whether a query result CSV matches the oracle
//! answer CSV. This is a port of `tpch/compare.py` with the same semantics;
//! the script is the specification (its docstring lists the rules) and the
//! port follows it function by function, keeping its names.
//!
//! This module owns everything between two CSV texts and a verdict: reading
//! CSV the way Python's `csv` module does (blank lines are empty records,
//! lenient quotes), finding the last top-level `ORDER BY` and `LIMIT` in the
//! query text, cell equality (integer exactness, relative 1e-6, money columns
//! to 0.01, the rounding allowance for >= 4 decimals, dates, booleans, NaN,
//! NULL tokens), tie groups compared as multisets, and the one-line messages.
//! Where the script leans on Python, the Python behaviour is ported too:
//! `Decimal` arithmetic (28 significant digits, half-even, exact comparison),
//! `datetime.fromisoformat` and `sorted` (CPython 3.11). `f64` is used only
//! where the script uses floats (`nan`/`inf` tokens, sort keys).
//!
//! Known approximations, none of which can change a verdict on TPC-H output:
//! `\w` (word boundaries around SQL keywords) uses Rust's alphanumeric
//! property, `repr()` in messages prints unassigned code points unescaped,
//! and naive timestamps in sort keys are taken as UTC rather than local time.
//!
//! It does not own running queries, producing result CSVs, locating answer or
//! query files, printing, exit codes, or the script's `--order-keys`,
//! `--unordered`, `--rel` and `--money-abs` options (the defaults are built in).

use std::cmp::Ordering;
use std::fmt::Write as _;

mod cell;
mod csv;
mod decimal;
mod isodate;
mod order_by;
mod pytext;
mod rows;
mod timsort;
mod values;

use self::{
    cell::*, csv::*, decimal::*, isodate::*, order_by::*, pytext::*, rows::*, timsort::*, values::*,
};

/// Outcome of comparing an actual result CSV with the expected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Whether the actual result matches the expected one.
    pub ok: bool,
    /// One-line summary, worded as `compare.py` words it.
    pub message: String,
    /// Notes that do not decide the outcome (header names, strict row order).
    pub warnings: Vec<String>,
}

/// Compares `actual_csv` with `expected_csv`.
///
/// Both are full CSV texts with a header row; NULL is an empty field (the
/// tokens `NULL`, `null` and `\N` are NULL too). `query_sql` is the query text
/// the ORDER BY keys and LIMIT are read from; `None` compares in strict row
/// order, as the script does when it has no query.
///
/// Mismatches are `Ok` with `ok == false`. `Err` means an input could not be
/// read: an empty text (no header), a field over Python's 131072-character
/// limit, or a number so large that Python's decimal arithmetic overflows
/// (where the script raises).
pub fn compare_csv(
    expected_csv: &str,
    actual_csv: &str,
    query_sql: Option<&str>,
) -> Result<Comparison, String> {
    let (eh, er) = read_csv(expected_csv, "expected")?;
    let (ah, ar) = read_csv(actual_csv, "actual")?;
    let mut warnings = Vec::new();
    if eh.len() != ah.len() {
        let message = format!(
            "column count differs: expected {} {} got {} {}",
            eh.len(),
            py_list(&eh),
            ah.len(),
            py_list(&ah)
        );
        return Ok(verdict(false, message, warnings));
    }
    let folded = |h: &[String]| {
        h.iter()
            .map(|x| py_strip(x).to_lowercase())
            .collect::<Vec<_>>()
    };
    if folded(&eh) != folded(&ah) {
        warnings.push(format!(
            "header names differ: expected {} got {}",
            py_list(&eh),
            py_list(&ah)
        ));
    }
    for (rows, what) in [(&er, "expected"), (&ar, "actual")] {
        for (i, r) in rows.iter().enumerate() {
            if r.len() != eh.len() {
                let message = format!(
                    "{what} row {} has {} fields, header has {}",
                    i + 1,
                    r.len(),
                    eh.len()
                );
                return Ok(verdict(false, message, warnings));
            }
        }
    }
    if er.len() != ar.len() {
        let message = format!("row count differs: expected {} got {}", er.len(), ar.len());
        return Ok(verdict(false, message, warnings));
    }
    let cmp = CellCmp::new(&er, eh.len());
    let all_columns: Vec<usize> = (0..eh.len()).collect();

    let (keys, limit) = match query_sql {
        Some(sql) => {
            let (items, limit) = parse_order_limit(sql);
            match items {
                Some(items) => match order_key_indices(&items, &eh) {
                    Some(keys) => (Some(keys), limit),
                    None => {
                        warnings.push(format!(
                            "ORDER BY {} not all output columns; using strict row order",
                            py_list(&items)
                        ));
                        (Some(all_columns), limit)
                    }
                },
                None => (None, limit),
            }
        }
        None => {
            warnings.push("no query text: comparing in strict row order".to_string());
            (Some(all_columns), None)
        }
    };

    let exp_rows: Vec<&Row> = er.iter().collect();
    let act_rows: Vec<&Row> = ar.iter().collect();
    let Some(keys) = keys else {
        if multiset_eq(&cmp, &exp_rows, &act_rows)? {
            return Ok(verdict(
                true,
                format!("match ({} rows, unordered)", er.len()),
                warnings,
            ));
        }
        let (first, nc, nr) =
            first_positional_diff(&cmp, &eh, &py_sorted(&exp_rows), &py_sorted(&act_rows))?;
        let message = format!(
            "multiset differs (unordered query); after sorting {nc} cells in {nr} rows differ, first: {first}"
        );
        return Ok(verdict(false, message, warnings));
    };

    // Ordered comparison with tie groups.
    let n = er.len();
    let limit_hit = limit.is_some_and(|l| l == n as u128);
    let mut ties = 0usize;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && cmp.row_eq_on(&er[i], &er[j], &keys)? {
            j += 1;
        }
        for (k, a) in ar.iter().enumerate().take(j).skip(i) {
            if !cmp.row_eq_on(&er[i], a, &keys)? {
                let (first, nc, nr) = first_positional_diff(&cmp, &eh, &exp_rows, &act_rows)?;
                let names: Vec<String> = keys.iter().map(|&x| eh[x].clone()).collect();
                let message = format!(
                    "order/key mismatch at row {} (ORDER BY cols {}); {nc} cells in {nr} rows differ positionally, first: {first}",
                    k + 1,
                    py_list(&names)
                );
                return Ok(verdict(false, message, warnings));
            }
        }
        if j - i > 1 {
            ties += 1;
        }
        let last_group = j == n;
        if !(limit_hit && last_group) {
            let ok = if j - i == 1 {
                cmp.row_eq(&er[i], &ar[i])?
            } else {
                multiset_eq(&cmp, &exp_rows[i..j], &act_rows[i..j])?
            };
            if !ok {
                let (first, nc, nr) = first_positional_diff(&cmp, &eh, &exp_rows, &act_rows)?;
                let message = format!(
                    "values differ in rows {}-{j} ; {nc} cells in {nr} rows differ positionally, first: {first}",
                    i + 1
                );
                return Ok(verdict(false, message, warnings));
            }
        }
        i = j;
    }
    let extra = if ties > 0 {
        format!(", {ties} tie groups compared as multisets")
    } else {
        String::new()
    };
    Ok(verdict(true, format!("match ({n} rows{extra})"), warnings))
}

fn verdict(ok: bool, message: String, warnings: Vec<String>) -> Comparison {
    Comparison {
        ok,
        message,
        warnings,
    }
}

type Row = Vec<String>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

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

        let (items, limit) =
            parse_order_limit("select * from (select a from t order by a limit 5) s");
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

    /// The TPC-H answer files, from the first folder that has them.
    fn answers_dir() -> Option<PathBuf> {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        [
            manifest.join("tests/data/tpch/answers/sf0.1"),
            manifest.join("src/tpch/answers/sf0.1"),
            PathBuf::from("/work/shared/tpch/answers/sf0.1"),
        ]
        .into_iter()
        .find(|p| p.join("q01.csv").is_file())
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn real_answers_match_themselves() {
        let Some(answers) = answers_dir() else {
            eprintln!("no TPC-H answer files found; skipping");
            return;
        };
        let queries = answers.join("../../queries");
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
            let csv = read(&answers.join(format!("q{q:02}.csv")));
            let sql = read(&queries.join(format!("q{q:02}.sql")));
            let c = compare_csv(&csv, &csv, Some(&sql)).unwrap();
            assert!(c.ok, "q{q:02}: {}", c.message);
            assert_eq!(c.message, want, "q{q:02}");
            assert!(c.warnings.is_empty(), "q{q:02}: {:?}", c.warnings);
        }

        let csv = read(&answers.join("q01.csv"));
        let sql = read(&queries.join("q01.sql"));
        let mut lines: Vec<String> = csv.lines().map(String::from).collect();
        let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
        let last = cells.len() - 1;
        let count: i64 = cells[last].parse().unwrap();
        cells[last] = (count + 1).to_string();
        lines[1] = cells.join(",");
        let mutated = lines.join("\n") + "\n";
        let c = compare_csv(&csv, &mutated, Some(&sql)).unwrap();
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
}
