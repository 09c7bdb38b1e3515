//! Reading CSV the way Python's `csv` module does.

use super::*;

/// Python's `csv.field_size_limit()` default.
pub(super) const FIELD_LIMIT: usize = 131_072;

/// `read_csv`: header and data rows, as `csv.reader` over a file opened with
/// `newline=""` yields them.
pub(super) fn read_csv(text: &str, what: &str) -> Result<(Row, Vec<Row>), String> {
    let mut rows = parse_csv(text)
        .map_err(|e| format!("{what}: {e}"))?
        .into_iter();
    match rows.next() {
        Some(header) => Ok((header, rows.collect())),
        None => Err(format!("{what}: empty file (no header)")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CsvState {
    StartRecord,
    StartField,
    InField,
    InQuotedField,
    QuoteInQuotedField,
    EatCrnl,
}

#[derive(Default)]
pub(super) struct CsvParser {
    pub(super) fields: Vec<String>,
    pub(super) field: String,
    pub(super) field_len: usize,
}

impl CsvParser {
    pub(super) fn add_char(&mut self, c: char) -> Result<(), String> {
        if self.field_len >= FIELD_LIMIT {
            return Err(format!("field larger than field limit ({FIELD_LIMIT})"));
        }
        self.field.push(c);
        self.field_len += 1;
        Ok(())
    }

    pub(super) fn save_field(&mut self) {
        self.fields.push(std::mem::take(&mut self.field));
        self.field_len = 0;
    }
}

/// The excel dialect of CPython's `_csv.c` reader (`strict=False`), fed line
/// by line as universal-newline splitting yields lines; `None` is the end of
/// a line.
pub(super) fn parse_csv(text: &str) -> Result<Vec<Row>, String> {
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
