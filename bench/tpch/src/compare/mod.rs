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
mod tests;
