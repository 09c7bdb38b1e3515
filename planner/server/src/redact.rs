//! SQL as logs may show it: [`SqlFingerprint`], the statement with every
//! literal replaced by `?` (its *shape*) and a short digest of that shape.
//!
//! Literals are where secrets and personal data sit (`WHERE email =
//! 'a@b.c'`, `password = '…'`), so info-level logs carry the fingerprint and
//! never the SQL text; two runs of one query with different parameters share
//! a digest, which is what an operator groups by. Text the tokenizer cannot
//! read is not shown at all, only its length.
//!
//! ```text
//! select * from t where name = 'alice' and id in (1, 2)
//!   -> shape  "select * from t where name = ? and id in (?, ?)"
//!   -> digest "5f0c2d9a41b7e3c8"   (FNV-1a 64 of the shape)
//! ```

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// Longest shape kept, in characters.
const MAX_SHAPE_CHARS: usize = 200;

/// A statement's shape and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlFingerprint {
    /// The statement with literals replaced by `?`, whitespace collapsed,
    /// cut at 200 characters.
    pub shape: String,
    /// FNV-1a 64 of the whole shape, 16 hex digits.
    pub digest: String,
}

/// The fingerprint of `sql`.
pub fn fingerprint(sql: &str) -> SqlFingerprint {
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize();
    let full = match tokens {
        Ok(tokens) => shape_of(&tokens),
        Err(_) => format!("<unreadable SQL, {} bytes>", sql.len()),
    };
    let digest = format!("{:016x}", fnv1a(full.as_bytes()));
    let shape = match full.char_indices().nth(MAX_SHAPE_CHARS) {
        Some((cut, _)) => format!("{}…", &full[..cut]),
        None => full,
    };
    SqlFingerprint { shape, digest }
}

fn shape_of(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut space = false;
    for token in tokens {
        let text = match token {
            Token::Whitespace(_) => {
                space = !out.is_empty();
                continue;
            }
            t if is_literal(t) => "?".to_string(),
            t => t.to_string(),
        };
        if space {
            out.push(' ');
            space = false;
        }
        out.push_str(&text);
    }
    out
}

fn is_literal(token: &Token) -> bool {
    matches!(
        token,
        Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
    )
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_never_show() {
        let a = fingerprint("select * from t\n where name = 'alice' and id in (1, 2.5)");
        assert_eq!(a.shape, "select * from t where name = ? and id in (?, ?)");
        let b = fingerprint("SELECT * FROM t WHERE name = 'bob' AND id IN (3, 4)");
        assert_ne!(a.digest, b.digest, "case is part of the shape");
        let c = fingerprint("select * from t where name = 'eve' and id in (9, 8)");
        assert_eq!(a.digest, c.digest);
        let secret = fingerprint("select 'hunter2', x'DEADBEEF', E'tab\\t' -- note\n");
        for word in ["hunter2", "DEADBEEF", "tab", "note"] {
            assert!(!secret.shape.contains(word), "{}", secret.shape);
        }
        let broken = fingerprint("select 'unterminated secret");
        assert!(!broken.shape.contains("secret"), "{}", broken.shape);
        assert!(
            fingerprint(&"select 1 + ".repeat(100))
                .shape
                .chars()
                .count()
                <= 201
        );
    }
}
