//! Finding the last top-level ORDER BY and LIMIT of the query text, and mapping ORDER BY items to columns.

use super::*;

/// `_strip_sql`: drops `--` and `/* */` comments and string literal contents.
pub(super) fn strip_sql(sql: &[char]) -> Vec<char> {
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
pub(super) fn top_level(sql: &[char]) -> Vec<char> {
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
pub(super) fn kw_at(s: &[char], i: usize, kw: &str) -> bool {
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
pub(super) fn word_start(s: &[char], i: usize) -> bool {
    i == 0 || !is_word(s[i - 1])
}

/// `\b` at position `i` after a word character.
pub(super) fn word_end(s: &[char], i: usize) -> bool {
    s.get(i).is_none_or(|&c| !is_word(c))
}

/// End of the first whitespace run at `i` (`i` itself if there is none).
pub(super) fn skip_space(s: &[char], mut i: usize) -> usize {
    while s.get(i).is_some_and(|&c| py_isspace(c)) {
        i += 1;
    }
    i
}

/// `\border\s+by\b` at `i`: the end of the match.
pub(super) fn match_order_by(top: &[char], i: usize) -> Option<usize> {
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
pub(super) fn match_limit(top: &[char], i: usize) -> Option<u128> {
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
pub(super) fn parse_order_limit(sql: &str) -> (Option<Vec<String>>, Option<u128>) {
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
            || ["limit", "offset", "fetch"].iter().any(|kw| {
                word_start(top_rest, p)
                    && kw_at(top_rest, p, kw)
                    && word_end(top_rest, p + kw.len())
            })
    };
    let end = (0..top_rest.len())
        .find(|&p| ends_clause(p))
        .unwrap_or(top_rest.len());
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
pub(super) fn trailing_word(s: &[char], end: usize, kws: &[&str]) -> Option<usize> {
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
pub(super) fn clean_order_item(item: &[char]) -> String {
    let strip = |s: &[char]| -> Vec<char> {
        let start = s.iter().position(|&c| !py_isspace(c)).unwrap_or(s.len());
        let end = s
            .iter()
            .rposition(|&c| !py_isspace(c))
            .map_or(start, |e| e + 1);
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
pub(super) fn order_key_indices(items: &[String], header: &[String]) -> Option<Vec<usize>> {
    let names: Vec<String> = header.iter().map(|h| py_strip(h).to_lowercase()).collect();
    let mut idx = Vec::with_capacity(items.len());
    for it in items {
        let t = py_strip(it).trim_matches('"').to_lowercase();
        if int_re(&t) {
            let body = t.strip_suffix('\n').unwrap_or(&t);
            let negative = body.starts_with('-');
            let value = body.chars().filter_map(digit_value).fold(0u128, |v, d| {
                v.saturating_mul(10).saturating_add(u128::from(d))
            });
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
