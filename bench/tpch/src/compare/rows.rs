//! Row order, tie groups and multiset comparison.

use super::*;

/// One element of `_sort_key`: the tuple `(tag, float, str)`.
#[derive(Clone, Copy)]
pub(super) struct KeyCell<'a> {
    pub(super) tag: u8,
    pub(super) f: f64,
    pub(super) s: &'a str,
}

/// Tuple element equality as Python's comparison sees it: the NaN of the
/// key tuples is always the same object, so it equals itself.
pub(super) fn key_cell_eq(a: &KeyCell, b: &KeyCell) -> bool {
    a.tag == b.tag && (a.f == b.f || (a.f.is_nan() && b.f.is_nan())) && a.s == b.s
}

pub(super) fn key_cell_lt(a: &KeyCell, b: &KeyCell) -> bool {
    if a.tag != b.tag {
        a.tag < b.tag
    } else if !(a.f == b.f || (a.f.is_nan() && b.f.is_nan())) {
        a.f < b.f
    } else {
        a.s < b.s
    }
}

/// `<` between two key lists.
pub(super) fn key_lt(a: &[KeyCell], b: &[KeyCell]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if !key_cell_eq(x, y) {
            return key_cell_lt(x, y);
        }
    }
    a.len() < b.len()
}

/// `_sort_key`.
pub(super) fn sort_key(row: &[String]) -> Vec<KeyCell<'_>> {
    row.iter()
        .map(|v| {
            if is_null(v) {
                return KeyCell {
                    tag: 0,
                    f: 0.0,
                    s: "",
                };
            }
            if let Some(n) = num(v) {
                return KeyCell {
                    tag: 1,
                    f: n.to_f64(),
                    s: "",
                };
            }
            match dt(v) {
                Some(d) => {
                    let f = if d.offset_us.is_none() && d.year > 1900 {
                        d.timestamp()
                    } else {
                        0.0
                    };
                    KeyCell { tag: 2, f, s: v }
                }
                None => KeyCell {
                    tag: 3,
                    f: 0.0,
                    s: v,
                },
            }
        })
        .collect()
}

/// `sorted(rows, key=_sort_key)`.
pub(super) fn py_sorted<'r>(rows: &[&'r Row]) -> Vec<&'r Row> {
    let keys: Vec<Vec<KeyCell>> = rows.iter().map(|r| sort_key(r)).collect();
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    list_sort(&mut idx, &|a, b| key_lt(&keys[a], &keys[b]));
    idx.into_iter().map(|i| rows[i]).collect()
}

/// `multiset_eq`: equal as multisets (with tolerance).
pub(super) fn multiset_eq(
    cmp: &CellCmp,
    exp_rows: &[&Row],
    act_rows: &[&Row],
) -> Result<bool, String> {
    if exp_rows.len() != act_rows.len() {
        return Ok(false);
    }
    let es = py_sorted(exp_rows);
    let as_ = py_sorted(act_rows);
    let mut all = true;
    for (e, a) in es.iter().zip(&as_) {
        if !cmp.row_eq(e, a)? {
            all = false;
            break;
        }
    }
    if all {
        return Ok(true);
    }
    if exp_rows.len() > 5000 {
        return Ok(false);
    }
    let mut remaining: Vec<&Row> = act_rows.to_vec();
    for e in exp_rows {
        let mut found = None;
        for (i, a) in remaining.iter().enumerate() {
            if cmp.row_eq(e, a)? {
                found = Some(i);
                break;
            }
        }
        match found {
            Some(i) => {
                remaining.remove(i);
            }
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// `first_positional_diff`: (first difference or "None", cells, rows).
pub(super) fn first_positional_diff(
    cmp: &CellCmp,
    header: &[String],
    exp_rows: &[&Row],
    act_rows: &[&Row],
) -> Result<(String, usize, usize), String> {
    let (mut n_cells, mut n_rows) = (0, 0);
    let mut first = None;
    for (i, (e, a)) in exp_rows.iter().zip(act_rows).enumerate() {
        let mut bad = Vec::new();
        for j in 0..e.len() {
            if !cmp.eq(j, &e[j], &a[j])? {
                bad.push(j);
            }
        }
        if let Some(&j) = bad.first() {
            n_rows += 1;
            n_cells += bad.len();
            if first.is_none() {
                first = Some(format!(
                    "row {} col {}: expected {} got {}",
                    i + 1,
                    py_repr(&header[j]),
                    py_repr(&e[j]),
                    py_repr(&a[j])
                ));
            }
        }
    }
    Ok((first.unwrap_or_else(|| "None".to_string()), n_cells, n_rows))
}
