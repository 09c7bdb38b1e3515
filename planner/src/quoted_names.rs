//! Quoted names matched whatever their case, as Trino matches them.
//!
//! squall presents every catalog column, field and table in lowercase
//! (`crate::any_case`), and DataFusion folds an unquoted name to lowercase
//! but matches a quoted one exactly: `SELECT "UserId" FROM users`, as a
//! user of PostgreSQL writes a column a file names `UserId`, failed with
//! "No field named "UserId"". Trino matches quoted names regardless of
//! case (trinodb/trino#17), so the same statement answers there.
//!
//! A statement that fails to plan and holds a quoted name with an
//! uppercase letter is planned once more with its quoted names in
//! lowercase; if that plans, it is the plan, else the first error stands.
//! A statement that plans as written keeps its names, so a table whose
//! columns differ only by case (`id` and `ID`, kept as they are) is still
//! read by the exact quoted name, and a quoted alias keeps its case as the
//! column's label.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

use crate::trino_dialect::TrinoDialect;

/// `statement` with every double-quoted name in lowercase, or None when it
/// has no quoted name with an uppercase letter (nothing would change).
pub fn lowercased(statement: &Statement) -> Result<Option<Statement>> {
    let text = statement.to_string();
    let tokens = Tokenizer::new(&TrinoDialect, &text)
        .tokenize()
        .map_err(|e| DataFusionError::Internal(format!("re-reading a statement: {e}")))?;
    let mut changed = false;
    let lowered: String = tokens
        .into_iter()
        .map(|token| match token {
            Token::Word(mut word)
                if word.quote_style == Some('"') && word.value.chars().any(char::is_uppercase) =>
            {
                changed = true;
                word.value = word.value.to_lowercase();
                crate::trino_sql::token_text(&Token::Word(word))
            }
            other => crate::trino_sql::token_text(&other),
        })
        .collect();
    if !changed {
        return Ok(None);
    }
    let mut statements = crate::trino_sql::statements(&lowered)?;
    match (statements.pop_front(), statements.is_empty()) {
        (Some(statement), true) => Ok(Some(statement)),
        _ => Err(DataFusionError::Internal(format!(
            "re-reading a statement gave other than one statement: {lowered}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(sql: &str) -> Option<String> {
        let statement = crate::trino_sql::parse(sql).unwrap().pop_front().unwrap();
        lowercased(&statement).unwrap().map(|s| s.to_string())
    }

    #[test]
    fn quoted_names_fold_and_the_rest_stays() {
        assert_eq!(
            lowered(
                r#"SELECT "UserId" AS "Id", 'A "Quoted" Text' AS x FROM "Events" AS "E" WHERE "E"."Kind" = 'Click'"#
            )
            .as_deref(),
            Some(
                r#"SELECT "userid" AS "id", 'A "Quoted" Text' AS x FROM "events" AS "e" WHERE "e"."kind" = 'Click'"#
            )
        );
        assert_eq!(lowered(r#"SELECT "userid", UserId FROM t"#), None);
        assert_eq!(
            lowered(r#"EXPLAIN SELECT "A" FROM t"#).as_deref(),
            Some(r#"EXPLAIN SELECT "a" FROM t"#)
        );
    }
}
