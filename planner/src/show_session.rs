//! Trino's `SHOW SESSION [LIKE 'pattern' [ESCAPE 'c']]`: the session's
//! settings with their values, defaults and descriptions (columns `Name`,
//! `Value`, `Default`, `Type`, `Description`), which clients list and SQL
//! editors show. The SQL parser reads `SHOW SESSION` as a variable and
//! drops a `LIKE` pattern, and DataFusion then refused it, so the statement
//! is written, before it is parsed, as the query of DataFusion's
//! `information_schema.df_settings` (the session's values as they are when
//! it runs, `SET` included) beside the defaults. squall's own settings are
//! named as they are set, `squall.shuffle.partitions`.

use std::sync::OnceLock;

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` with each `SHOW SESSION` statement written as its query, if it has
/// one.
pub fn rewrite(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("session") {
        return None;
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let mut out = String::with_capacity(sql.len());
    let mut changed = false;
    for statement in tokens.split_inclusive(|t| *t == Token::SemiColon) {
        match query_of(statement) {
            Some(query) => {
                out.push_str(&query);
                if statement.last() == Some(&Token::SemiColon) {
                    out.push(';');
                }
                changed = true;
            }
            None => statement
                .iter()
                .for_each(|t| out.push_str(&crate::trino_sql::token_text(t))),
        }
    }
    changed.then_some(out)
}

/// The query a statement's tokens are, if they are `SHOW SESSION [LIKE p
/// [ESCAPE e]]`.
fn query_of(tokens: &[Token]) -> Option<String> {
    let words: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let keyword = |i: usize, k: Keyword| matches!(words.get(i), Some(Token::Word(w)) if w.keyword == k && w.quote_style.is_none());
    let text = |i: usize| match words.get(i) {
        Some(Token::SingleQuotedString(s)) => Some(s.clone()),
        _ => None,
    };
    if !(keyword(0, Keyword::SHOW) && keyword(1, Keyword::SESSION)) {
        return None;
    }
    let filter = match words.len() {
        2 => String::new(),
        4 if keyword(2, Keyword::LIKE) => format!(" WHERE n LIKE {}", quoted(&text(3)?)),
        6 if keyword(2, Keyword::LIKE) && keyword(4, Keyword::ESCAPE) => format!(
            " WHERE n LIKE {} ESCAPE {}",
            quoted(&text(3)?),
            quoted(&text(5)?)
        ),
        _ => return None,
    };
    Some(format!(
        "SELECT n AS \"Name\", v AS \"Value\", coalesce(d, '') AS \"Default\", 'varchar' AS \"Type\", \
         coalesce(description, '') AS \"Description\" FROM (SELECT {named} AS n, coalesce(value, '') AS v, \
         description, d FROM information_schema.df_settings LEFT JOIN (VALUES {defaults}) AS defaults(k, d) \
         ON name = k) AS s{filter} ORDER BY 1",
        named = "CASE WHEN name LIKE 'datafusion.%' THEN name ELSE concat('squall.', name) END",
        defaults = defaults(),
    ))
}

/// Each setting's default, as `VALUES` rows: the engine's configuration
/// before any `SET` (the deployment's `SQUALL_*` environment included).
fn defaults() -> &'static str {
    static DEFAULTS: OnceLock<String> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        let rows: Vec<String> = crate::engine::session_config(&[])
            .map(|c| c.options().entries())
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                format!(
                    "({}, {})",
                    quoted(&e.key),
                    quoted(e.value.as_deref().unwrap_or(""))
                )
            })
            .collect();
        if rows.is_empty() {
            "('', '')".to_string()
        } else {
            rows.join(", ")
        }
    })
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_show_session_is_written() {
        assert_eq!(rewrite("select session from t"), None);
        assert_eq!(rewrite("show tables"), None);
        let all = rewrite("SHOW SESSION").unwrap_or_default();
        assert!(
            all.contains("information_schema.df_settings") && !all.contains("WHERE"),
            "{all}"
        );
        let like = rewrite("show session like 'squall.shuffle%';").unwrap_or_default();
        assert!(
            like.contains("WHERE n LIKE 'squall.shuffle%'") && like.ends_with(';'),
            "{like}"
        );
        let two = rewrite("set a = 1; show session like 'x\\_%' escape '\\'").unwrap_or_default();
        assert!(
            two.starts_with("set a = 1;") && two.contains("ESCAPE"),
            "{two}"
        );
        // Anything else after SESSION: left to the parser.
        assert_eq!(rewrite("show session foo"), None);
    }
}
