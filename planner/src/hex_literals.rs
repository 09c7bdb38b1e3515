//! Trino's hexadecimal integer literals: `0x1F` is the BIGINT 31 in Trino;
//! squall's parser reads it as the binary string `X'1F'` (MySQL's
//! meaning), so `0xFF + 1` failed and `n = 0x10` compared a number with
//! bytes. Each such literal is written in decimal before the text is
//! parsed; `X'1F'` stays a binary string, as in Trino.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` with its `0x...` literals in decimal; `None` when it has none (or
/// does not tokenize: the parser then says why). A literal past BIGINT is
/// left as it is. Only the literals' own text changes: the rest is kept
/// byte for byte.
pub fn in_decimal(sql: &str) -> Option<String> {
    if !sql
        .as_bytes()
        .windows(2)
        .any(|w| w.eq_ignore_ascii_case(b"0x"))
    {
        return None;
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    // Where each line begins, to find a token's text from its location
    // (line and column count from 1, the column in characters).
    let mut line_starts = vec![0];
    line_starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
    let offset = |line: u64, column: u64| -> Option<usize> {
        let start = *line_starts.get((line as usize).checked_sub(1)?)?;
        let rest = &sql[start..];
        let skip = (column as usize).checked_sub(1)?;
        Some(start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i))
    };
    let mut replacements = Vec::new();
    for t in &tokens {
        let Token::HexStringLiteral(digits) = &t.token else {
            continue;
        };
        let (Some(from), Some(to)) = (
            offset(t.span.start.line, t.span.start.column),
            offset(t.span.end.line, t.span.end.column),
        ) else {
            continue;
        };
        let text = &sql[from..to];
        if !(text.starts_with("0x") || text.starts_with("0X")) {
            continue;
        }
        if let Ok(n) = i64::from_str_radix(digits, 16) {
            replacements.push((from, to, n.to_string()));
        }
    }
    if replacements.is_empty() {
        return None;
    }
    let mut out = sql.to_string();
    for (from, to, n) in replacements.into_iter().rev() {
        out.replace_range(from..to, &n);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::in_decimal;

    #[test]
    fn hexadecimal_integers_are_written_in_decimal() {
        assert_eq!(
            in_decimal("select 0x1F + 1, X'1F', '0x10', \"0x\"\nwhere n = 0xfF").as_deref(),
            Some("select 31 + 1, X'1F', '0x10', \"0x\"\nwhere n = 255")
        );
        assert_eq!(in_decimal("select x'0a'"), None);
        // The rest of the text is kept as written (a quote doubled in a
        // string, an escape).
        assert_eq!(
            in_decimal("select '0x it''s', E'a\\n', 0x10").as_deref(),
            Some("select '0x it''s', E'a\\n', 16")
        );
        assert_eq!(in_decimal("select '0x1'"), None);
        assert_eq!(in_decimal("select 0xFFFFFFFFFFFFFFFFFF").as_deref(), None);
    }
}
