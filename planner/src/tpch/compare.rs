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
pub fn compare_csv(expected_csv: &str, actual_csv: &str, query_sql: Option<&str>) -> Result<Comparison, String> {
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
    let folded = |h: &[String]| h.iter().map(|x| py_strip(x).to_lowercase()).collect::<Vec<_>>();
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
                let message = format!("{what} row {} has {} fields, header has {}", i + 1, r.len(), eh.len());
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
            return Ok(verdict(true, format!("match ({} rows, unordered)", er.len()), warnings));
        }
        let (first, nc, nr) = first_positional_diff(&cmp, &eh, &py_sorted(&exp_rows), &py_sorted(&act_rows))?;
        let message =
            format!("multiset differs (unordered query); after sorting {nc} cells in {nr} rows differ, first: {first}");
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
    Comparison { ok, message, warnings }
}

type Row = Vec<String>;

// ---------------------------------------------------------------- Python text helpers

/// `str.isspace()` (also what `\s` matches in a `str` regex).
fn py_isspace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `str.strip()` with no argument.
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// `\w` in a `str` regex (approximated by Rust's alphanumeric property).
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// First code point of every run of ten Unicode decimal digits (category Nd,
/// Unicode 14.0, as Python 3.11's `\d`, `int()` and `Decimal()` accept them).
const ND_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0,
    0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620,
    0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10, 0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0,
    0x112f0, 0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60,
    0x16ac0, 0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of a `\d` digit.
fn digit_value(c: char) -> Option<u8> {
    let cp = c as u32;
    if c.is_ascii_digit() {
        return Some((cp - 0x30) as u8);
    }
    let i = ND_ZEROS.partition_point(|&z| z <= cp);
    let zero = *ND_ZEROS.get(i.checked_sub(1)?)?;
    (cp - zero < 10).then_some((cp - zero) as u8)
}

/// Whether `c` matches the lowercase ASCII letter `k` under `re.IGNORECASE`.
fn ci_eq(c: char, k: char) -> bool {
    c.to_ascii_lowercase() == k
        || match k {
            'i' => c == '\u{130}' || c == '\u{131}',
            's' => c == '\u{17f}',
            'k' => c == '\u{212a}',
            _ => false,
        }
}

/// `^[+-]?\d+$` (`$` also matches before a final newline).
fn int_re(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let digits = body.strip_prefix(['+', '-']).unwrap_or(body);
    !digits.is_empty() && digits.chars().all(|c| digit_value(c).is_some())
}

/// `repr()` of a `str`. Non-printable characters outside ASCII are escaped
/// for the common cases (controls, separators, format and private-use
/// characters); unassigned code points are printed as they are.
fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        let cp = c as u32;
        if c == quote || c == '\\' {
            out.push('\\');
            out.push(c);
        } else if c == '\t' {
            out.push_str("\\t");
        } else if c == '\n' {
            out.push_str("\\n");
        } else if c == '\r' {
            out.push_str("\\r");
        } else if cp < 0x20 || cp == 0x7f {
            let _ = write!(out, "\\x{cp:02x}");
        } else if cp < 0x7f || py_printable(c) {
            out.push(c);
        } else if cp <= 0xff {
            let _ = write!(out, "\\x{cp:02x}");
        } else if cp <= 0xffff {
            let _ = write!(out, "\\u{cp:04x}");
        } else {
            let _ = write!(out, "\\U{cp:08x}");
        }
    }
    out.push(quote);
    out
}

fn py_printable(c: char) -> bool {
    let cp = c as u32;
    let separator = py_isspace(c) && c != ' ';
    let format = matches!(
        cp,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x2064
            | 0x2066..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x13438
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let private = matches!(cp, 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd);
    !(c.is_control() || separator || format || private)
}

/// `repr()` of a list of `str`.
fn py_list(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| py_repr(s)).collect();
    format!("[{}]", parts.join(", "))
}

// ---------------------------------------------------------------- CSV reading

/// Python's `csv.field_size_limit()` default.
const FIELD_LIMIT: usize = 131_072;

/// `read_csv`: header and data rows, as `csv.reader` over a file opened with
/// `newline=""` yields them.
fn read_csv(text: &str, what: &str) -> Result<(Row, Vec<Row>), String> {
    let mut rows = parse_csv(text).map_err(|e| format!("{what}: {e}"))?.into_iter();
    match rows.next() {
        Some(header) => Ok((header, rows.collect())),
        None => Err(format!("{what}: empty file (no header)")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CsvState {
    StartRecord,
    StartField,
    InField,
    InQuotedField,
    QuoteInQuotedField,
    EatCrnl,
}

#[derive(Default)]
struct CsvParser {
    fields: Vec<String>,
    field: String,
    field_len: usize,
}

impl CsvParser {
    fn add_char(&mut self, c: char) -> Result<(), String> {
        if self.field_len >= FIELD_LIMIT {
            return Err(format!("field larger than field limit ({FIELD_LIMIT})"));
        }
        self.field.push(c);
        self.field_len += 1;
        Ok(())
    }

    fn save_field(&mut self) {
        self.fields.push(std::mem::take(&mut self.field));
        self.field_len = 0;
    }
}

/// The excel dialect of CPython's `_csv.c` reader (`strict=False`), fed line
/// by line as universal-newline splitting yields lines; `None` is the end of
/// a line.
fn parse_csv(text: &str) -> Result<Vec<Row>, String> {
    use CsvState::*;
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let mut rows = Vec::new();
    let mut p = CsvParser::default();
    let mut state = StartRecord;
    let mut start = 0;
    while start < n {
        let mut end = start;
        while end < n && chars[end] != '\n' && chars[end] != '\r' {
            end += 1;
        }
        if end < n {
            end += if chars[end] == '\r' && chars.get(end + 1) == Some(&'\n') {
                2
            } else {
                1
            };
        }
        for c in chars[start..end].iter().copied().map(Some).chain([None]) {
            let newline = matches!(c, Some('\n' | '\r'));
            if state == StartRecord {
                match c {
                    None => continue,
                    Some(_) if newline => {
                        state = EatCrnl;
                        continue;
                    }
                    Some(_) => state = StartField,
                }
            }
            match state {
                StartRecord => {}
                StartField => match c {
                    _ if newline || c.is_none() => {
                        p.save_field();
                        state = if c.is_none() { StartRecord } else { EatCrnl };
                    }
                    Some('"') => state = InQuotedField,
                    Some(',') => p.save_field(),
                    Some(ch) => {
                        p.add_char(ch)?;
                        state = InField;
                    }
                    None => {}
                },
                InField => match c {
                    _ if newline || c.is_none() => {
                        p.save_field();
                        state = if c.is_none() { StartRecord } else { EatCrnl };
                    }
                    Some(',') => {
                        p.save_field();
                        state = StartField;
                    }
                    Some(ch) => p.add_char(ch)?,
                    None => {}
                },
                InQuotedField => match c {
                    None => {}
                    Some('"') => state = QuoteInQuotedField,
                    Some(ch) => p.add_char(ch)?,
                },
                QuoteInQuotedField => match c {
                    Some('"') => {
                        p.add_char('"')?;
                        state = InQuotedField;
                    }
                    Some(',') => {
                        p.save_field();
                        state = StartField;
                    }
                    _ if newline || c.is_none() => {
                        p.save_field();
                        state = if c.is_none() { StartRecord } else { EatCrnl };
                    }
                    Some(ch) => {
                        p.add_char(ch)?;
                        state = InField;
                    }
                    None => {}
                },
                EatCrnl => match c {
                    None => state = StartRecord,
                    Some(_) if newline => {}
                    Some(_) => {
                        return Err("new-line character seen in unquoted field".to_string());
                    }
                },
            }
        }
        if state == StartRecord {
            rows.push(std::mem::take(&mut p.fields));
        }
        start = end;
    }
    if p.field_len != 0 || state == InQuotedField {
        p.save_field();
        rows.push(std::mem::take(&mut p.fields));
    }
    Ok(rows)
}

// ---------------------------------------------------------------- ORDER BY parsing

/// `_strip_sql`: drops `--` and `/* */` comments and string literal contents.
fn strip_sql(sql: &[char]) -> Vec<char> {
    let n = sql.len();
    // re.sub(r"--[^\n]*", " ", sql)
    let mut a = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        if sql[i] == '-' && sql.get(i + 1) == Some(&'-') {
            a.push(' ');
            i += 2;
            while i < n && sql[i] != '\n' {
                i += 1;
            }
        } else {
            a.push(sql[i]);
            i += 1;
        }
    }
    // re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    let n = a.len();
    let mut b = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        if a[i] == '/' && a.get(i + 1) == Some(&'*') {
            match (i + 2..n.saturating_sub(1)).find(|&j| a[j] == '*' && a[j + 1] == '/') {
                Some(j) => {
                    b.push(' ');
                    i = j + 2;
                }
                None => {
                    b.extend_from_slice(&a[i..]);
                    break;
                }
            }
        } else {
            b.push(a[i]);
            i += 1;
        }
    }
    // re.sub(r"'(?:[^']|'')*'", "''", sql), backtracking included: a literal
    // that runs to the end of the text ends at the first quote of its last ''.
    let n = b.len();
    let mut c = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        if b[i] != '\'' {
            c.push(b[i]);
            i += 1;
            continue;
        }
        let mut p = i + 1;
        let mut last_pair = None;
        let end = loop {
            if p >= n {
                break last_pair.map(|lp| lp + 1);
            }
            if b[p] != '\'' {
                p += 1;
            } else if b.get(p + 1) == Some(&'\'') {
                last_pair = Some(p);
                p += 2;
            } else {
                break Some(p + 1);
            }
        };
        match end {
            Some(e) => {
                c.extend(['\'', '\'']);
                i = e;
            }
            None => {
                c.extend_from_slice(&b[i..]);
                break;
            }
        }
    }
    c
}

/// `_top_level`: every parenthesised part (parentheses included) blanked.
fn top_level(sql: &[char]) -> Vec<char> {
    let mut depth: i64 = 0;
    sql.iter()
        .map(|&ch| match ch {
            '(' => {
                depth += 1;
                ' '
            }
            ')' => {
                depth -= 1;
                ' '
            }
            _ if depth == 0 => ch,
            _ => ' ',
        })
        .collect()
}

/// Whether `kw` (lowercase ASCII) matches case-insensitively at `s[i..]`.
fn kw_at(s: &[char], i: usize, kw: &str) -> bool {
    let mut j = i;
    for k in kw.chars() {
        match s.get(j) {
            Some(&c) if ci_eq(c, k) => j += 1,
            _ => return false,
        }
    }
    true
}

/// `\b` before position `i` (the character at `i` being a word character).
fn word_start(s: &[char], i: usize) -> bool {
    i == 0 || !is_word(s[i - 1])
}

/// `\b` at position `i` after a word character.
fn word_end(s: &[char], i: usize) -> bool {
    s.get(i).is_none_or(|&c| !is_word(c))
}

/// End of the first whitespace run at `i` (`i` itself if there is none).
fn skip_space(s: &[char], mut i: usize) -> usize {
    while s.get(i).is_some_and(|&c| py_isspace(c)) {
        i += 1;
    }
    i
}

/// `\border\s+by\b` at `i`: the end of the match.
fn match_order_by(top: &[char], i: usize) -> Option<usize> {
    if !word_start(top, i) || !kw_at(top, i, "order") {
        return None;
    }
    let j = skip_space(top, i + 5);
    if j == i + 5 || !kw_at(top, j, "by") || !word_end(top, j + 2) {
        return None;
    }
    Some(j + 2)
}

/// `\blimit\s+(\d+)` at `i`: the number (saturated).
fn match_limit(top: &[char], i: usize) -> Option<u128> {
    if !word_start(top, i) || !kw_at(top, i, "limit") {
        return None;
    }
    let mut j = skip_space(top, i + 5);
    if j == i + 5 {
        return None;
    }
    let mut value: Option<u128> = None;
    while let Some(d) = top.get(j).and_then(|&c| digit_value(c)) {
        let v = value.unwrap_or(0);
        value = Some(v.saturating_mul(10).saturating_add(u128::from(d)));
        j += 1;
    }
    value
}

/// `parse_order_limit`: the items of the last top-level ORDER BY (None when
/// there is none) and the number of the last top-level LIMIT.
fn parse_order_limit(sql: &str) -> (Option<Vec<String>>, Option<u128>) {
    let chars: Vec<char> = sql.chars().collect();
    let s = strip_sql(&chars);
    let top = top_level(&s);
    let mut order_end = None;
    let mut limit = None;
    for i in 0..top.len() {
        if let Some(end) = match_order_by(&top, i) {
            order_end = Some(end);
        }
        if let Some(v) = match_limit(&top, i) {
            limit = Some(v);
        }
    }
    let Some(m_end) = order_end else {
        return (None, limit);
    };
    let rest = &s[m_end..];
    let top_rest = &top[m_end..];
    let ends_clause = |p: usize| {
        top_rest[p] == ';'
            || ["limit", "offset", "fetch"]
                .iter()
                .any(|kw| word_start(top_rest, p) && kw_at(top_rest, p, kw) && word_end(top_rest, p + kw.len()))
    };
    let end = (0..top_rest.len()).find(|&p| ends_clause(p)).unwrap_or(top_rest.len());
    let mut items = Vec::new();
    let mut depth: i64 = 0;
    let mut cur = Vec::new();
    for &ch in &rest[..end] {
        if ch == '(' {
            depth += 1;
        } else if ch == ')' {
            depth -= 1;
        }
        if ch == ',' && depth == 0 {
            items.push(std::mem::take(&mut cur));
        } else {
            cur.push(ch);
        }
    }
    items.push(cur);
    let cleaned = items.iter().map(|it| clean_order_item(it)).collect();
    (Some(cleaned), limit)
}

/// `\s+` followed by `kw` ending exactly at `end`, for one of `kws`: the
/// start of the whitespace run.
fn trailing_word(s: &[char], end: usize, kws: &[&str]) -> Option<usize> {
    let kw_start = kws.iter().find_map(|kw| {
        let start = end.checked_sub(kw.len())?;
        kw_at(s, start, kw).then_some(start)
    })?;
    let mut ws = kw_start;
    while ws > 0 && py_isspace(s[ws - 1]) {
        ws -= 1;
    }
    (ws < kw_start).then_some(ws)
}

/// Drops `NULLS FIRST|LAST`, then `ASC|DESC`, from the end of an item.
fn clean_order_item(item: &[char]) -> String {
    let strip = |s: &[char]| -> Vec<char> {
        let start = s.iter().position(|&c| !py_isspace(c)).unwrap_or(s.len());
        let end = s.iter().rposition(|&c| !py_isspace(c)).map_or(start, |e| e + 1);
        s[start..end.max(start)].to_vec()
    };
    let mut it = strip(item);
    // re.sub(r"\s+nulls\s+(first|last)\s*$", "", it.strip(), flags=re.I)
    if let Some(ws) = trailing_word(&it, it.len(), &["first", "last"])
        && let Some(ws2) = trailing_word(&it, ws, &["nulls"])
    {
        it.truncate(ws2);
    }
    let mut it = strip(&it);
    // re.sub(r"\s+(asc|desc)\s*$", "", it.strip(), flags=re.I)
    if let Some(ws) = trailing_word(&it, it.len(), &["asc", "desc"]) {
        it.truncate(ws);
    }
    strip(&it).into_iter().collect()
}

/// `order_key_indices`: column indices of the ORDER BY items; None if some
/// item is not an output column.
fn order_key_indices(items: &[String], header: &[String]) -> Option<Vec<usize>> {
    let names: Vec<String> = header.iter().map(|h| py_strip(h).to_lowercase()).collect();
    let mut idx = Vec::with_capacity(items.len());
    for it in items {
        let t = py_strip(it).trim_matches('"').to_lowercase();
        if int_re(&t) {
            let body = t.strip_suffix('\n').unwrap_or(&t);
            let negative = body.starts_with('-');
            let value = body
                .chars()
                .filter_map(digit_value)
                .fold(0u128, |v, d| v.saturating_mul(10).saturating_add(u128::from(d)));
            if negative || value == 0 || value > header.len() as u128 {
                return None;
            }
            idx.push(value as usize - 1);
            continue;
        }
        let last = t.rsplit('.').next().unwrap_or("").trim_matches('"');
        let found = [t.as_str(), last]
            .iter()
            .find_map(|c| names.iter().position(|name| name == c))?;
        idx.push(found);
    }
    Some(idx)
}

// ---------------------------------------------------------------- exact decimals

/// A finite decimal: `(-1)^neg * coef * 10^exp`, `coef` as decimal digits
/// (most significant first, no leading zeros; empty is zero).
#[derive(Clone, Debug)]
struct Dec {
    neg: bool,
    coef: Vec<u8>,
    exp: i128,
}

/// Python's default decimal context: 28 digits, Emax 999999, Emin -999999.
const PREC: i128 = 28;
const EMAX: i128 = 999_999;
const ETINY: i128 = -999_999 - (PREC - 1);
/// Limits of `Decimal(str)` (libmpdec's maximal context, 64-bit).
const MAX_EMAX: i128 = 999_999_999_999_999_999;
const MAX_ETINY: i128 = -MAX_EMAX - (MAX_EMAX - 1);

impl Dec {
    fn new(neg: bool, mut coef: Vec<u8>, exp: i128) -> Dec {
        let lead = coef.iter().take_while(|&&d| d == 0).count();
        coef.drain(..lead);
        Dec { neg, coef, exp }
    }

    fn unit(exp: i128) -> Dec {
        Dec {
            neg: false,
            coef: vec![1],
            exp,
        }
    }

    fn is_zero(&self) -> bool {
        self.coef.is_empty()
    }

    fn digits(&self) -> i128 {
        self.coef.len() as i128
    }

    fn adjexp(&self) -> i128 {
        self.exp + self.digits() - 1
    }

    /// `float(d)`: correctly rounded, like `float(str(d))`.
    fn to_f64(&self) -> f64 {
        let mut s = String::with_capacity(self.coef.len() + 48);
        if self.neg {
            s.push('-');
        }
        if self.coef.is_empty() {
            s.push('0');
        }
        s.extend(self.coef.iter().map(|&d| char::from(b'0' + d)));
        let _ = write!(s, "e{}", self.exp);
        s.parse().unwrap_or(f64::NAN)
    }
}

/// Exact comparison by value.
fn dec_cmp(a: &Dec, b: &Dec) -> Ordering {
    match (a.is_zero(), b.is_zero()) {
        (true, true) => Ordering::Equal,
        (true, false) => {
            if b.neg {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (false, true) => {
            if a.neg {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, false) if a.neg != b.neg => {
            if a.neg {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (false, false) => {
            let m = a.adjexp().cmp(&b.adjexp()).then_with(|| {
                let n = a.coef.len().max(b.coef.len());
                (0..n)
                    .map(|i| {
                        let x = a.coef.get(i).copied().unwrap_or(0);
                        x.cmp(&b.coef.get(i).copied().unwrap_or(0))
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            });
            if a.neg { m.reverse() } else { m }
        }
    }
}

/// Rounds an exact result into the default context (half-even), as
/// libmpdec's finalize step does; overflow is trapped there, so it is an error.
fn round_ctx(neg: bool, coef: Vec<u8>, exp: i128) -> Result<Dec, String> {
    let d = Dec::new(neg, coef, exp);
    if d.is_zero() {
        return Ok(d);
    }
    let min_exp = (d.adjexp() - (PREC - 1)).max(ETINY);
    let mut out = d;
    if out.exp < min_exp {
        let drop = min_exp - out.exp;
        let len = out.digits();
        let (mut kept, first, rest_nonzero) = if drop <= len {
            let keep = (len - drop) as usize;
            let first = out.coef[keep];
            let rest = out.coef[keep + 1..].iter().any(|&x| x != 0);
            (out.coef[..keep].to_vec(), first, rest)
        } else {
            (Vec::new(), 0, true)
        };
        let odd = kept.last().is_some_and(|&x| x % 2 == 1);
        let up = first > 5 || (first == 5 && (rest_nonzero || odd));
        let mut exp = min_exp;
        if up {
            let mut carry = true;
            for x in kept.iter_mut().rev() {
                if *x == 9 {
                    *x = 0;
                } else {
                    *x += 1;
                    carry = false;
                    break;
                }
            }
            if carry {
                kept.insert(0, 1);
            }
            if kept.len() as i128 > PREC {
                kept.pop();
                exp += 1;
            }
        }
        out = Dec::new(out.neg, kept, exp);
    }
    if !out.is_zero() && out.adjexp() > EMAX {
        return Err("decimal overflow".to_string());
    }
    Ok(out)
}

fn mag_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let a = &a[a.iter().take_while(|&&d| d == 0).count()..];
    let b = &b[b.iter().take_while(|&&d| d == 0).count()..];
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn mag_add(a: &[u8], b: &[u8]) -> Vec<u8> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n + 1);
    let mut carry = 0u8;
    for i in 0..n {
        let x = if i < a.len() { a[a.len() - 1 - i] } else { 0 };
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 };
        let s = x + y + carry;
        out.push(s % 10);
        carry = s / 10;
    }
    out.push(carry);
    out.reverse();
    out
}

/// `a - b` for `a >= b`.
fn mag_sub(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0u8;
    for i in 0..a.len() {
        let x = a[a.len() - 1 - i];
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 } + borrow;
        if x >= y {
            out.push(x - y);
            borrow = 0;
        } else {
            out.push(x + 10 - y);
            borrow = 1;
        }
    }
    out.reverse();
    out
}

/// `a + b` in the default context (libmpdec's `_mpd_qaddsub`, including its
/// substitution of a tiny operand that lies wholly below the rounding digit).
fn dec_add(a: &Dec, b: &Dec) -> Result<Dec, String> {
    if a.is_zero() {
        return round_ctx(b.neg, b.coef.clone(), b.exp);
    }
    if b.is_zero() {
        return round_ctx(a.neg, a.coef.clone(), a.exp);
    }
    let (big, mut small) = if a.exp >= b.exp { (a, b.clone()) } else { (b, a.clone()) };
    if big.exp != small.exp {
        let lim = big.exp - 1
            + if big.digits() > PREC {
                0
            } else {
                big.digits() - PREC - 1
            };
        if small.adjexp() < lim {
            small = Dec {
                neg: small.neg,
                coef: vec![1],
                exp: lim,
            };
        }
    }
    let shift = (big.exp - small.exp) as usize;
    let mut aligned = big.coef.clone();
    aligned.resize(aligned.len() + shift, 0);
    let (neg, mag) = if big.neg == small.neg {
        (big.neg, mag_add(&aligned, &small.coef))
    } else {
        match mag_cmp(&aligned, &small.coef) {
            Ordering::Greater => (big.neg, mag_sub(&aligned, &small.coef)),
            Ordering::Less => (small.neg, mag_sub(&small.coef, &aligned)),
            Ordering::Equal => (false, Vec::new()),
        }
    };
    round_ctx(neg, mag, small.exp)
}

fn dec_sub(a: &Dec, b: &Dec) -> Result<Dec, String> {
    dec_add(
        a,
        &Dec {
            neg: !b.neg,
            coef: b.coef.clone(),
            exp: b.exp,
        },
    )
}

fn dec_abs(a: &Dec) -> Result<Dec, String> {
    round_ctx(false, a.coef.clone(), a.exp)
}

// ---------------------------------------------------------------- cell values

/// The sign, digits, fractional digit count and exponent of a `NUM_RE` match
/// (`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`).
struct NumToken {
    neg: bool,
    digits: Vec<u8>,
    frac_len: usize,
    exp: i128,
}

fn lex_num(s: &str) -> Option<NumToken> {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let mut neg = false;
    if let Some(&c) = chars.first()
        && (c == '+' || c == '-')
    {
        neg = c == '-';
        i = 1;
    }
    let mut digits = Vec::new();
    let run = |i: &mut usize, out: &mut Vec<u8>| {
        while let Some(d) = chars.get(*i).and_then(|&c| digit_value(c)) {
            out.push(d);
            *i += 1;
        }
    };
    run(&mut i, &mut digits);
    let int_len = digits.len();
    let mut frac_len = 0;
    if chars.get(i) == Some(&'.') {
        i += 1;
        run(&mut i, &mut digits);
        frac_len = digits.len() - int_len;
    }
    if int_len == 0 && frac_len == 0 {
        return None;
    }
    let mut exp: i128 = 0;
    if matches!(chars.get(i), Some('e' | 'E')) {
        i += 1;
        let mut exp_neg = false;
        if let Some(&c) = chars.get(i)
            && (c == '+' || c == '-')
        {
            exp_neg = c == '-';
            i += 1;
        }
        let mut exp_digits = Vec::new();
        run(&mut i, &mut exp_digits);
        if exp_digits.is_empty() {
            return None;
        }
        // Saturated far outside the range Decimal() accepts.
        let limit: i128 = 10i128.pow(30);
        exp = exp_digits
            .iter()
            .fold(0i128, |v, &d| (v * 10 + i128::from(d)).min(limit));
        if exp_neg {
            exp = -exp;
        }
    }
    (i == chars.len()).then_some(NumToken {
        neg,
        digits,
        frac_len,
        exp,
    })
}

fn num_re(s: &str) -> bool {
    lex_num(s).is_some()
}

/// A number as `_num` returns it: a float for the special tokens, a Decimal
/// otherwise.
#[derive(Clone, Debug)]
enum Num {
    Float(f64),
    Decimal(Dec),
}

impl Num {
    fn to_f64(&self) -> f64 {
        match self {
            Num::Float(f) => *f,
            Num::Decimal(d) => d.to_f64(),
        }
    }
}

/// `_num`.
fn num(s: &str) -> Option<Num> {
    let t = py_strip(s);
    match t.to_lowercase().as_str() {
        "nan" => return Some(Num::Float(f64::NAN)),
        "inf" | "+inf" | "infinity" | "+infinity" => return Some(Num::Float(f64::INFINITY)),
        "-inf" | "-infinity" => return Some(Num::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let tok = lex_num(t)?;
    let d = Dec::new(tok.neg, tok.digits, tok.exp - tok.frac_len as i128);
    // Decimal(t) raises InvalidOperation outside libmpdec's maximal context.
    let valid = if d.is_zero() {
        (MAX_ETINY..=MAX_EMAX).contains(&d.exp)
    } else {
        d.adjexp() <= MAX_EMAX && d.exp >= MAX_ETINY
    };
    valid.then_some(Num::Decimal(d))
}

/// `_scale`: digits after the point; 0 for an integer literal; None for an
/// exponent form or anything else without a point.
fn scale(s: &str) -> Option<usize> {
    let s = py_strip(s);
    if s.contains(['e', 'E']) || !s.contains('.') {
        return int_re(s).then_some(0);
    }
    s.split_once('.').map(|(_, frac)| frac.chars().count())
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "NULL" | "null" | "\\N")
}

fn py_bool(s: &str) -> Option<bool> {
    match s.to_lowercase().as_str() {
        "true" | "t" => Some(true),
        "false" | "f" => Some(false),
        _ => None,
    }
}

// ---------------------------------------------------------------- datetime.fromisoformat

/// A parsed `datetime` (Python 3.11 `datetime.fromisoformat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DateTime {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    micro: i64,
    /// UTC offset in microseconds; None for a naive datetime.
    offset_us: Option<i64>,
}

impl DateTime {
    /// Microseconds since 0001-01-01 00:00 of the wall-clock fields.
    fn local_us(&self) -> i64 {
        let days = ymd_to_ord(self.year, self.month, self.day);
        ((days * 86_400 + self.hour * 3_600 + self.minute * 60 + self.second) * 1_000_000) + self.micro
    }

    /// `==` between datetimes: naive and aware never compare equal.
    fn same_instant(&self, other: &DateTime) -> bool {
        match (self.offset_us, other.offset_us) {
            (None, None) => self.local_us() == other.local_us(),
            (Some(a), Some(b)) => self.local_us() - a == other.local_us() - b,
            _ => false,
        }
    }

    /// `timestamp()` of a naive datetime (local time taken as UTC).
    fn timestamp(&self) -> f64 {
        let days = ymd_to_ord(self.year, self.month, self.day) - ymd_to_ord(1970, 1, 1);
        let secs = days * 86_400 + self.hour * 3_600 + self.minute * 60 + self.second;
        secs as f64 + self.micro as f64 / 1e6
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

const DAYS_BEFORE_MONTH: [i64; 13] = [0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

fn days_before_month(y: i64, m: i64) -> i64 {
    let d = DAYS_BEFORE_MONTH.get(m as usize).copied().unwrap_or(0);
    if m > 2 && is_leap(y) { d + 1 } else { d }
}

fn ymd_to_ord(y: i64, m: i64, d: i64) -> i64 {
    let p = y - 1;
    p * 365 + p / 4 - p / 100 + p / 400 + days_before_month(y, m) + d
}

fn ord_to_ymd(ordinal: i64) -> (i64, i64, i64) {
    let o = ordinal - 1;
    let n400 = o / 146_097;
    let n = o % 146_097;
    let mut year = n400 * 400 + 1;
    let n100 = n / 36_524;
    let n = n % 36_524;
    let n4 = n / 1_461;
    let n = n % 1_461;
    let n1 = n / 365;
    let n = n % 365;
    year += n100 * 100 + n4 * 4 + n1;
    if n1 == 4 || n100 == 4 {
        return (year - 1, 12, 31);
    }
    let leap = n1 == 3 && (n4 != 24 || n100 == 3);
    let mut month = (n + 50) >> 5;
    let mut preceding = DAYS_BEFORE_MONTH.get(month as usize).copied().unwrap_or(0) + i64::from(month > 2 && leap);
    if preceding > n {
        month -= 1;
        preceding -= days_in_month(year, month);
    }
    (year, month, n - preceding + 1)
}

fn iso_to_ymd(iso_year: i64, iso_week: i64, iso_day: i64) -> Result<(i64, i64, i64), i32> {
    if !(1..=9999).contains(&iso_year) {
        return Err(-4);
    }
    if iso_week <= 0 || iso_week >= 53 {
        let first_weekday = (ymd_to_ord(iso_year, 1, 1) + 6) % 7;
        let has_53 = first_weekday == 3 || (first_weekday == 2 && is_leap(iso_year));
        if !(iso_week == 53 && has_53) {
            return Err(-2);
        }
    }
    if iso_day <= 0 || iso_day >= 8 {
        return Err(-3);
    }
    let first_day = ymd_to_ord(iso_year, 1, 1);
    let first_weekday = (first_day + 6) % 7;
    let mut week1_monday = first_day - first_weekday;
    if first_weekday > 3 {
        week1_monday += 7;
    }
    Ok(ord_to_ymd(week1_monday + (iso_week - 1) * 7 + iso_day - 1))
}

/// The UTF-8 bytes of the string with C's view past the end (NUL).
struct CStr<'a>(&'a [u8]);

impl CStr<'_> {
    fn at(&self, i: i64) -> u8 {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.0.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn is_digit(&self, i: i64) -> bool {
        self.at(i).is_ascii_digit()
    }

    /// `parse_digits`: accumulates `n` digits into `var`.
    fn digits(&self, p: &mut i64, n: i64, var: &mut i64) -> bool {
        for _ in 0..n {
            let c = self.at(*p);
            *p += 1;
            if !c.is_ascii_digit() {
                return false;
            }
            *var = *var * 10 + i64::from(c - b'0');
        }
        true
    }
}

/// `_find_isoformat_datetime_separator`.
fn find_separator(s: &CStr, len: i64) -> i64 {
    if len == 7 {
        return 7;
    }
    if s.at(4) == b'-' {
        if s.at(5) == b'W' {
            if len < 8 {
                return -1;
            }
            if len > 8 && s.at(8) == b'-' {
                if len == 9 {
                    return -1;
                }
                if len > 10 && s.is_digit(10) {
                    return 8;
                }
                return 10;
            }
            return 8;
        }
        return 10;
    }
    if s.at(4) == b'W' {
        let mut idx = 7;
        while idx < len && s.is_digit(idx) {
            idx += 1;
        }
        if idx < 9 {
            return idx;
        }
        return if idx % 2 == 0 { 7 } else { 8 };
    }
    8
}

/// `parse_isoformat_date`: 0 on success.
fn parse_iso_date(s: &CStr, len: i64, ymd: &mut (i64, i64, i64)) -> i32 {
    let mut p = 0;
    if !s.digits(&mut p, 4, &mut ymd.0) {
        return -1;
    }
    let uses_separator = s.at(p) == b'-';
    if uses_separator {
        p += 1;
    }
    if s.at(p) == b'W' {
        p += 1;
        let (mut week, mut day) = (0, 0);
        if !s.digits(&mut p, 2, &mut week) {
            return -3;
        }
        // (size_t)(p - dtstr) < len, with len == -1 wrapping to SIZE_MAX
        if len < 0 || p < len {
            if uses_separator {
                let c = s.at(p);
                p += 1;
                if c != b'-' {
                    return -2;
                }
            }
            if !s.digits(&mut p, 1, &mut day) {
                return -4;
            }
        } else {
            day = 1;
        }
        return match iso_to_ymd(ymd.0, week, day) {
            Ok(v) => {
                *ymd = v;
                0
            }
            Err(rv) => -3 + rv,
        };
    }
    if !s.digits(&mut p, 2, &mut ymd.1) {
        return -1;
    }
    if uses_separator {
        let c = s.at(p);
        p += 1;
        if c != b'-' {
            return -2;
        }
    }
    if !s.digits(&mut p, 2, &mut ymd.2) {
        return -1;
    }
    0
}

/// `parse_hh_mm_ss_ff`: (rv, [h, m, s], microseconds).
fn parse_hh_mm_ss_ff(s: &CStr, start: i64, end: i64) -> (i32, [i64; 3], i64) {
    let mut vals = [0i64; 3];
    let mut micro = 0;
    let mut p = start;
    let mut has_separator = true;
    for i in 0..3 {
        if !s.digits(&mut p, 2, &mut vals[i]) {
            return (-3, vals, micro);
        }
        let c = s.at(p);
        p += 1;
        if i == 0 {
            has_separator = c == b':';
        }
        if p >= end {
            return (i32::from(c != 0), vals, micro);
        } else if has_separator && c == b':' {
            continue;
        } else if c == b'.' || c == b',' {
            break;
        } else if !has_separator {
            p -= 1;
        } else {
            return (-4, vals, micro);
        }
    }
    let remains = end - p;
    let to_parse = if !(0..6).contains(&remains) { 6 } else { remains };
    if !s.digits(&mut p, to_parse, &mut micro) {
        return (-3, vals, micro);
    }
    if (1..6).contains(&to_parse) {
        micro *= 10i64.pow((6 - to_parse) as u32);
    }
    while s.is_digit(p) {
        p += 1;
    }
    (i32::from(s.at(p) != 0), vals, micro)
}

/// `parse_isoformat_time`: (rv, [h, m, s], microseconds, tz seconds, tz microseconds).
fn parse_iso_time(s: &CStr, start: i64, len: i64) -> (i32, [i64; 3], i64, i64, i64) {
    let end = start + len;
    let mut tz = start;
    loop {
        if matches!(s.at(tz), b'Z' | b'+' | b'-') {
            break;
        }
        tz += 1;
        if tz >= end {
            break;
        }
    }
    let (rv, hms, micro) = parse_hh_mm_ss_ff(s, start, tz);
    if rv < 0 {
        return (rv, hms, micro, 0, 0);
    }
    if tz == end {
        return (if rv == 1 { -5 } else { 0 }, hms, micro, 0, 0);
    }
    if s.at(tz) == b'Z' {
        return (if s.at(tz + 1) != 0 { -5 } else { 1 }, hms, micro, 0, 0);
    }
    let sign = if s.at(tz) == b'-' { -1 } else { 1 };
    let (rv, tz_hms, tz_micro) = parse_hh_mm_ss_ff(s, tz + 1, end);
    let offset = sign * (tz_hms[0] * 3_600 + tz_hms[1] * 60 + tz_hms[2]);
    (if rv != 0 { -5 } else { 1 }, hms, micro, offset, tz_micro * sign)
}

/// `datetime.fromisoformat(s)`; None where Python raises ValueError.
fn fromisoformat(text: &str) -> Option<DateTime> {
    if text.chars().count() < 7 {
        return None;
    }
    let s = CStr(text.as_bytes());
    let len = text.len() as i64;
    let sep = find_separator(&s, len);
    let mut ymd = (0, 0, 0);
    let mut rv = parse_iso_date(&s, sep, &mut ymd);
    let (mut hms, mut micro, mut tz_secs, mut tz_micro) = ([0i64; 3], 0, 0, 0);
    if rv == 0 && len > sep {
        if sep < 0 {
            return None;
        }
        let lead = s.at(sep);
        let step = if lead & 0x80 == 0 {
            1
        } else {
            match lead & 0xf0 {
                0xe0 => 3,
                0xf0 => 4,
                _ => 2,
            }
        };
        let p = sep + step;
        if p > len {
            return None;
        }
        (rv, hms, micro, tz_secs, tz_micro) = parse_iso_time(&s, p, len - p);
    }
    if rv < 0 {
        return None;
    }
    let offset_us = if rv == 1 {
        if tz_secs == 0 {
            Some(0)
        } else {
            let total = tz_secs * 1_000_000 + tz_micro;
            if total <= -86_400_000_000 || total >= 86_400_000_000 {
                return None;
            }
            Some(total)
        }
    } else {
        None
    };
    let (year, month, day) = ymd;
    let date_ok =
        (1..=9999).contains(&year) && (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month);
    let [hour, minute, second] = hms;
    let time_ok = hour <= 23 && minute <= 59 && second <= 59 && micro <= 999_999;
    (date_ok && time_ok).then_some(DateTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micro,
        offset_us,
    })
}

/// `_dt`.
fn dt(s: &str) -> Option<DateTime> {
    fromisoformat(py_strip(s))
}

// ---------------------------------------------------------------- cell comparison

/// `CellCmp`: per-column money flags and the cell equality rules.
struct CellCmp {
    money: Vec<bool>,
}

impl CellCmp {
    fn new(expected_rows: &[Row], ncols: usize) -> CellCmp {
        let money = (0..ncols)
            .map(|j| {
                let vals: Vec<&str> = expected_rows
                    .iter()
                    .map(|r| r[j].as_str())
                    .filter(|v| !is_null(v))
                    .collect();
                let nums: Vec<&str> = vals.iter().copied().filter(|v| num_re(py_strip(v))).collect();
                !vals.is_empty()
                    && nums.len() == vals.len()
                    && nums.iter().any(|v| v.contains('.'))
                    && nums.iter().all(|v| scale(v).unwrap_or(0) <= 2)
            })
            .collect();
        CellCmp { money }
    }

    fn eq(&self, j: usize, e: &str, a: &str) -> Result<bool, String> {
        let (en, an) = (is_null(e), is_null(a));
        if en || an {
            return Ok(en && an);
        }
        if e == a {
            return Ok(true);
        }
        if let (Some(ev), Some(av)) = (num(e), num(a)) {
            let (ev, av) = match (ev, av) {
                (Num::Decimal(x), Num::Decimal(y)) => (x, y),
                (x, y) => {
                    let (ef, af) = (x.to_f64(), y.to_f64());
                    if ef.is_nan() || af.is_nan() {
                        return Ok(ef.is_nan() && af.is_nan());
                    }
                    return Ok(ef == af);
                }
            };
            if int_re(py_strip(e)) {
                return Ok(dec_cmp(&ev, &av) == Ordering::Equal);
            }
            let overflow = |err: String| format!("{err} comparing {} with {}", py_repr(e), py_repr(a));
            let diff = dec_abs(&dec_sub(&ev, &av).map_err(overflow)?).map_err(overflow)?;
            let (ea, aa) = (dec_abs(&ev).map_err(overflow)?, dec_abs(&av).map_err(overflow)?);
            let larger = if dec_cmp(&aa, &ea) == Ordering::Greater { aa } else { ea };
            let tolerance = round_ctx(false, larger.coef, larger.exp - 6).map_err(overflow)?;
            if dec_cmp(&diff, &tolerance) != Ordering::Greater {
                return Ok(true);
            }
            if self.money.get(j).copied().unwrap_or(false) && dec_cmp(&diff, &Dec::unit(-2)) != Ordering::Greater {
                return Ok(true);
            }
            if let (Some(se), Some(sa)) = (scale(e), scale(a)) {
                let s = se.min(sa);
                if s >= 4 && dec_cmp(&diff, &Dec::unit(-(s as i128))) != Ordering::Greater {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        if let (Some(x), Some(y)) = (py_bool(e), py_bool(a)) {
            return Ok(x == y);
        }
        if matches!(e.to_lowercase().as_str(), "0" | "1")
            && let Some(y) = py_bool(a)
        {
            return Ok((e == "1") == y);
        }
        if let (Some(de), Some(da)) = (dt(e), dt(a)) {
            return Ok(de.same_instant(&da));
        }
        Ok(false)
    }

    fn row_eq(&self, er: &[String], ar: &[String]) -> Result<bool, String> {
        for j in 0..er.len() {
            if !self.eq(j, &er[j], &ar[j])? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn row_eq_on(&self, er: &[String], ar: &[String], cols: &[usize]) -> Result<bool, String> {
        for &j in cols {
            if !self.eq(j, &er[j], &ar[j])? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

// ---------------------------------------------------------------- row order and multisets

/// One element of `_sort_key`: the tuple `(tag, float, str)`.
#[derive(Clone, Copy)]
struct KeyCell<'a> {
    tag: u8,
    f: f64,
    s: &'a str,
}

/// Tuple element equality as Python's comparison sees it: the NaN of the
/// key tuples is always the same object, so it equals itself.
fn key_cell_eq(a: &KeyCell, b: &KeyCell) -> bool {
    a.tag == b.tag && (a.f == b.f || (a.f.is_nan() && b.f.is_nan())) && a.s == b.s
}

fn key_cell_lt(a: &KeyCell, b: &KeyCell) -> bool {
    if a.tag != b.tag {
        a.tag < b.tag
    } else if !(a.f == b.f || (a.f.is_nan() && b.f.is_nan())) {
        a.f < b.f
    } else {
        a.s < b.s
    }
}

/// `<` between two key lists.
fn key_lt(a: &[KeyCell], b: &[KeyCell]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if !key_cell_eq(x, y) {
            return key_cell_lt(x, y);
        }
    }
    a.len() < b.len()
}

/// `_sort_key`.
fn sort_key(row: &[String]) -> Vec<KeyCell<'_>> {
    row.iter()
        .map(|v| {
            if is_null(v) {
                return KeyCell { tag: 0, f: 0.0, s: "" };
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
                None => KeyCell { tag: 3, f: 0.0, s: v },
            }
        })
        .collect()
}

/// `sorted(rows, key=_sort_key)`.
fn py_sorted<'r>(rows: &[&'r Row]) -> Vec<&'r Row> {
    let keys: Vec<Vec<KeyCell>> = rows.iter().map(|r| sort_key(r)).collect();
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    list_sort(&mut idx, &|a, b| key_lt(&keys[a], &keys[b]));
    idx.into_iter().map(|i| rows[i]).collect()
}

/// `multiset_eq`: equal as multisets (with tolerance).
fn multiset_eq(cmp: &CellCmp, exp_rows: &[&Row], act_rows: &[&Row]) -> Result<bool, String> {
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
fn first_positional_diff(
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

// ---------------------------------------------------------------- list.sort

// A port of CPython 3.11's `list.sort` (Objects/listobject.c: timsort with
// powersort merging). Any stable sort gives Python's order when `<` is a
// consistent order; the port also gives it when it is not, which happens with
// a NaN among numbers in a column (NaN is neither below nor above a number).

const MIN_GALLOP: usize = 7;

struct Run {
    base: usize,
    len: usize,
    power: u32,
}

struct MergeState<T> {
    min_gallop: usize,
    pending: Vec<Run>,
    tmp: Vec<T>,
}

type Lt<'a, T> = &'a dyn Fn(T, T) -> bool;

fn list_sort<T: Copy>(v: &mut [T], lt: Lt<T>) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut ms = MergeState {
        min_gallop: MIN_GALLOP,
        pending: Vec::new(),
        tmp: Vec::new(),
    };
    let minrun = compute_minrun(n);
    let mut lo = 0;
    while lo < n {
        let remaining = n - lo;
        let (mut run, descending) = count_run(&v[lo..], lt);
        if descending {
            v[lo..lo + run].reverse();
        }
        if run < minrun {
            let force = remaining.min(minrun);
            binary_sort(&mut v[lo..lo + force], run, lt);
            run = force;
        }
        if let Some(top) = ms.pending.last() {
            let power = powerloop(top.base, top.len, run, n);
            while ms.pending.len() > 1 && ms.pending[ms.pending.len() - 2].power > power {
                let i = ms.pending.len() - 2;
                merge_at(&mut ms, v, i, lt);
            }
            if let Some(top) = ms.pending.last_mut() {
                top.power = power;
            }
        }
        ms.pending.push(Run {
            base: lo,
            len: run,
            power: 0,
        });
        lo += run;
    }
    while ms.pending.len() > 1 {
        let mut i = ms.pending.len() - 2;
        if i > 0 && ms.pending[i - 1].len < ms.pending[i + 1].len {
            i -= 1;
        }
        merge_at(&mut ms, v, i, lt);
    }
}

fn compute_minrun(mut n: usize) -> usize {
    let mut r = 0;
    while n >= 64 {
        r |= n & 1;
        n >>= 1;
    }
    n + r
}

fn powerloop(s1: usize, n1: usize, n2: usize, n: usize) -> u32 {
    let mut result = 0;
    let mut a = 2 * s1 + n1;
    let mut b = a + n1 + n2;
    loop {
        result += 1;
        if a >= n {
            a -= n;
            b -= n;
        } else if b >= n {
            break;
        }
        a <<= 1;
        b <<= 1;
    }
    result
}

/// Length of the run at the start of `v`, and whether it is strictly descending.
fn count_run<T: Copy>(v: &[T], lt: Lt<T>) -> (usize, bool) {
    if v.len() < 2 {
        return (v.len(), false);
    }
    let descending = lt(v[1], v[0]);
    let mut n = 2;
    while n < v.len() && lt(v[n], v[n - 1]) == descending {
        n += 1;
    }
    (n, descending)
}

/// Binary insertion sort of `v`, whose first `start` elements are sorted.
fn binary_sort<T: Copy>(v: &mut [T], start: usize, lt: Lt<T>) {
    for start in start.max(1)..v.len() {
        let pivot = v[start];
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + ((r - l) >> 1);
            if lt(pivot, v[p]) {
                r = p;
            } else {
                l = p + 1;
            }
        }
        v[l..=start].rotate_right(1);
    }
}

/// Where `key` goes in sorted `a`, leftmost among equals, searching from `hint`.
fn gallop_left<T: Copy>(key: T, a: &[T], hint: usize, lt: Lt<T>) -> usize {
    let n = a.len() as isize;
    let hint = hint as isize;
    let at = |i: isize| a[i as usize];
    let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
    if lt(at(hint), key) {
        let maxofs = n - hint;
        while ofs < maxofs && lt(at(hint + ofs), key) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        lastofs += hint;
        ofs += hint;
    } else {
        let maxofs = hint + 1;
        while ofs < maxofs && !lt(at(hint - ofs), key) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        (lastofs, ofs) = (hint - ofs, hint - lastofs);
    }
    lastofs += 1;
    while lastofs < ofs {
        let m = lastofs + ((ofs - lastofs) >> 1);
        if lt(at(m), key) {
            lastofs = m + 1;
        } else {
            ofs = m;
        }
    }
    ofs as usize
}

/// Where `key` goes in sorted `a`, rightmost among equals, searching from `hint`.
fn gallop_right<T: Copy>(key: T, a: &[T], hint: usize, lt: Lt<T>) -> usize {
    let n = a.len() as isize;
    let hint = hint as isize;
    let at = |i: isize| a[i as usize];
    let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
    if lt(key, at(hint)) {
        let maxofs = hint + 1;
        while ofs < maxofs && lt(key, at(hint - ofs)) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        (lastofs, ofs) = (hint - ofs, hint - lastofs);
    } else {
        let maxofs = n - hint;
        while ofs < maxofs && !lt(key, at(hint + ofs)) {
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        lastofs += hint;
        ofs += hint;
    }
    lastofs += 1;
    while lastofs < ofs {
        let m = lastofs + ((ofs - lastofs) >> 1);
        if lt(key, at(m)) {
            ofs = m;
        } else {
            lastofs = m + 1;
        }
    }
    ofs as usize
}

/// Merges pending runs `i` and `i + 1`.
fn merge_at<T: Copy>(ms: &mut MergeState<T>, v: &mut [T], i: usize, lt: Lt<T>) {
    let (base_a, na) = (ms.pending[i].base, ms.pending[i].len);
    let (base_b, nb) = (ms.pending[i + 1].base, ms.pending[i + 1].len);
    ms.pending[i].len = na + nb;
    if i + 3 == ms.pending.len() {
        ms.pending.swap(i + 1, i + 2);
    }
    ms.pending.pop();
    let k = gallop_right(v[base_b], &v[base_a..base_a + na], 0, lt);
    let (base_a, na) = (base_a + k, na - k);
    if na == 0 {
        return;
    }
    let nb = gallop_left(v[base_a + na - 1], &v[base_b..base_b + nb], nb - 1, lt);
    if nb == 0 {
        return;
    }
    if na <= nb {
        merge_lo(ms, v, base_a, na, nb, lt);
    } else {
        merge_hi(ms, v, base_a, na, nb, lt);
    }
}

enum MergeEnd {
    Succeed,
    CopyRest,
}

/// `merge_lo`: merges `v[a..a+na]` and the `nb` elements after it, `na <= nb`.
fn merge_lo<T: Copy>(ms: &mut MergeState<T>, v: &mut [T], a: usize, mut na: usize, mut nb: usize, lt: Lt<T>) {
    ms.tmp.clear();
    ms.tmp.extend_from_slice(&v[a..a + na]);
    let tmp = &ms.tmp;
    let (mut dest, mut ia, mut ib) = (a, 0, a + na);
    v[dest] = v[ib];
    dest += 1;
    ib += 1;
    nb -= 1;
    let mut min_gallop = ms.min_gallop;
    let end = 'merge: {
        if nb == 0 {
            break 'merge MergeEnd::Succeed;
        }
        if na == 1 {
            break 'merge MergeEnd::CopyRest;
        }
        loop {
            let (mut acount, mut bcount) = (0, 0);
            loop {
                if lt(v[ib], tmp[ia]) {
                    v[dest] = v[ib];
                    dest += 1;
                    ib += 1;
                    bcount += 1;
                    acount = 0;
                    nb -= 1;
                    if nb == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                    if bcount >= min_gallop {
                        break;
                    }
                } else {
                    v[dest] = tmp[ia];
                    dest += 1;
                    ia += 1;
                    acount += 1;
                    bcount = 0;
                    na -= 1;
                    if na == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if acount >= min_gallop {
                        break;
                    }
                }
            }
            min_gallop += 1;
            loop {
                min_gallop -= usize::from(min_gallop > 1);
                ms.min_gallop = min_gallop;
                let k = gallop_right(v[ib], &tmp[ia..ia + na], 0, lt);
                acount = k;
                if k > 0 {
                    v[dest..dest + k].copy_from_slice(&tmp[ia..ia + k]);
                    dest += k;
                    ia += k;
                    na -= k;
                    if na == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if na == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[dest] = v[ib];
                dest += 1;
                ib += 1;
                nb -= 1;
                if nb == 0 {
                    break 'merge MergeEnd::Succeed;
                }
                let k = gallop_left(tmp[ia], &v[ib..ib + nb], 0, lt);
                bcount = k;
                if k > 0 {
                    v.copy_within(ib..ib + k, dest);
                    dest += k;
                    ib += k;
                    nb -= k;
                    if nb == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[dest] = tmp[ia];
                dest += 1;
                ia += 1;
                na -= 1;
                if na == 1 {
                    break 'merge MergeEnd::CopyRest;
                }
                if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                    break;
                }
            }
            min_gallop += 1;
            ms.min_gallop = min_gallop;
        }
    };
    match end {
        MergeEnd::Succeed => v[dest..dest + na].copy_from_slice(&tmp[ia..ia + na]),
        MergeEnd::CopyRest => {
            v.copy_within(ib..ib + nb, dest);
            v[dest + nb] = tmp[ia];
        }
    }
}

/// `merge_hi`: merges `v[a..a+na]` and the `nb` elements after it, `na > nb`.
/// Positions run downwards and may pass below `a`, hence `isize`.
fn merge_hi<T: Copy>(ms: &mut MergeState<T>, v: &mut [T], a: usize, mut na: usize, mut nb: usize, lt: Lt<T>) {
    let b = a + na;
    ms.tmp.clear();
    ms.tmp.extend_from_slice(&v[b..b + nb]);
    let tmp = &ms.tmp;
    let u = |i: isize| i as usize;
    let (mut dest, mut ia, mut ib) = ((b + nb - 1) as isize, (a + na - 1) as isize, nb as isize - 1);
    v[u(dest)] = v[u(ia)];
    dest -= 1;
    ia -= 1;
    na -= 1;
    let mut min_gallop = ms.min_gallop;
    let end = 'merge: {
        if na == 0 {
            break 'merge MergeEnd::Succeed;
        }
        if nb == 1 {
            break 'merge MergeEnd::CopyRest;
        }
        loop {
            let (mut acount, mut bcount) = (0, 0);
            loop {
                if lt(tmp[u(ib)], v[u(ia)]) {
                    v[u(dest)] = v[u(ia)];
                    dest -= 1;
                    ia -= 1;
                    acount += 1;
                    bcount = 0;
                    na -= 1;
                    if na == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                    if acount >= min_gallop {
                        break;
                    }
                } else {
                    v[u(dest)] = tmp[u(ib)];
                    dest -= 1;
                    ib -= 1;
                    bcount += 1;
                    acount = 0;
                    nb -= 1;
                    if nb == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if bcount >= min_gallop {
                        break;
                    }
                }
            }
            min_gallop += 1;
            loop {
                min_gallop -= usize::from(min_gallop > 1);
                ms.min_gallop = min_gallop;
                let k = na - gallop_right(tmp[u(ib)], &v[a..a + na], na - 1, lt);
                acount = k;
                if k > 0 {
                    dest -= k as isize;
                    ia -= k as isize;
                    v.copy_within(u(ia + 1)..u(ia + 1) + k, u(dest + 1));
                    na -= k;
                    if na == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[u(dest)] = tmp[u(ib)];
                dest -= 1;
                ib -= 1;
                nb -= 1;
                if nb == 1 {
                    break 'merge MergeEnd::CopyRest;
                }
                let k = nb - gallop_left(v[u(ia)], &tmp[..nb], nb - 1, lt);
                bcount = k;
                if k > 0 {
                    dest -= k as isize;
                    ib -= k as isize;
                    v[u(dest + 1)..u(dest + 1) + k].copy_from_slice(&tmp[u(ib + 1)..u(ib + 1) + k]);
                    nb -= k;
                    if nb == 1 {
                        break 'merge MergeEnd::CopyRest;
                    }
                    if nb == 0 {
                        break 'merge MergeEnd::Succeed;
                    }
                }
                v[u(dest)] = v[u(ia)];
                dest -= 1;
                ia -= 1;
                na -= 1;
                if na == 0 {
                    break 'merge MergeEnd::Succeed;
                }
                if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                    break;
                }
            }
            min_gallop += 1;
            ms.min_gallop = min_gallop;
        }
    };
    match end {
        MergeEnd::Succeed => {
            if nb > 0 {
                let start = u(dest + 1) - nb;
                v[start..start + nb].copy_from_slice(&tmp[..nb]);
            }
        }
        MergeEnd::CopyRest => {
            let (src, dst) = (u(ia + 1) - na, u(dest + 1) - na);
            v.copy_within(src..src + na, dst);
            v[dst - 1] = tmp[u(ib)];
        }
    }
}

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
        let c = cmp("c\n1478493\n", "c\n1478494\n", Some("select c from t order by c"));
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
        assert_eq!(c.message, "match (3 rows, 1 tie groups compared as multisets)");
        let c = cmp(expected, "a,b\n1,y\n1,w\n2,z\n", Some(ORDERED));
        assert!(!c.ok);
        assert!(c.message.starts_with("values differ in rows 1-2 ;"), "{}", c.message);
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
        let c = cmp(expected, actual, Some("select a, b from t order by a limit 3"));
        assert!(c.ok, "{}", c.message);
        assert!(!cmp(expected, actual, Some(ORDERED)).ok);
        assert!(!cmp(expected, actual, Some("select a, b from t order by a limit 4")).ok);
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
        assert_eq!(c.message, "column count differs: expected 2 ['a', 'b'] got 1 ['a']");
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
        assert_eq!(c.message, "match (2 rows, 1 tie groups compared as multisets)");
        assert_eq!(c.warnings, vec!["no query text: comparing in strict row order"]);
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
            Some(vec!["2".to_string(), "\"X\"".to_string(), "t.x".to_string()])
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

        let c = cmp("x\n2\n1\n", "x\n2\n1\n", Some("select x from t order by x + 1"));
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
            vec![vec!["a".to_string()], vec!["b".to_string()], vec!["c\rd".to_string()]]
        );
        assert_eq!(parse_csv("\"abc").unwrap(), vec![vec!["abc".to_string()]]);
        assert_eq!(parse_csv(",\n").unwrap(), vec![vec![String::new(), String::new()]]);
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
        assert_eq!(dec_cmp(&r, &d("1234567890123456789012345678")), Ordering::Equal);
        let r = dec_sub(&d("1234567890123456789012345679.5"), &d("0")).unwrap();
        assert_eq!(dec_cmp(&r, &d("1234567890123456789012345680")), Ordering::Equal);
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
