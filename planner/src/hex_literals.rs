//! Trino's hexadecimal integer literals: `0x1F` is the BIGINT 31 in Trino;
//! squall's parser reads it as the binary string `X'1F'` (MySQL's
//! meaning), so `0xFF + 1` failed and `n = 0x10` compared a number with
//! bytes. Each such literal is written in decimal before the text is
//! parsed; `X'1F'` stays a binary string, as in Trino.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` with its `0x...` literals in decimal; `None` when it has none (or
/// does not tokenize: the parser then says why). A literal past BIGINT is
/// left as it is.
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
    // Where each line begins, to find a token's text from its location.
    let lines: Vec<&str> = sql.split('\n').collect();
    let source_starts_with_0x = |line: u64, column: u64| -> bool {
        let Some(text) = lines.get((line as usize).wrapping_sub(1)) else {
            return false;
        };
        let rest: String = text
            .chars()
            .skip((column as usize).saturating_sub(1))
            .take(2)
            .collect();
        rest.eq_ignore_ascii_case("0x")
    };
    let mut changed = false;
    let text: String = tokens
        .iter()
        .map(|t| match &t.token {
            Token::HexStringLiteral(digits)
                if source_starts_with_0x(t.span.start.line, t.span.start.column) =>
            {
                match i64::from_str_radix(digits, 16) {
                    Ok(n) => {
                        changed = true;
                        n.to_string()
                    }
                    Err(_) => format!("0x{digits}"),
                }
            }
            token => token.to_string(),
        })
        .collect();
    changed.then_some(text)
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
        assert_eq!(in_decimal("select '0x1'"), None);
        assert_eq!(in_decimal("select 0xFFFFFFFFFFFFFFFFFF").as_deref(), None);
    }
}
