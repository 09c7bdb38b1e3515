//! Trino's clauses that squall's SQL parser does not know and that change
//! nothing squall does, taken out of the text before it is parsed:
//! `CREATE [OR REPLACE] VIEW v SECURITY DEFINER|INVOKER AS ...`, which
//! dbt-trino writes for every view (squall runs a view's query with the
//! caller's rights either way: it has no users' grants).

use std::borrow::Cow;
use std::collections::VecDeque;

use datafusion::error::Result;
use datafusion::sql::parser::{DFParser, Statement};

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The statements of `sql`, as squall's parser reads them after
/// [`prepare`]: what every entry point (a query, the API's checks) parses.
/// Text whose expressions would nest too deep is refused before it is
/// parsed ([`crate::nesting`]).
pub fn parse(sql: &str) -> Result<VecDeque<Statement>> {
    crate::nesting::check(sql)?;
    DFParser::parse_sql_with_dialect(&prepare(sql), &crate::trino_dialect::TrinoDialect)
}

/// `statement` (or the statement an EXPLAIN explains) walked by a rewriter
/// of its syntax tree; DataFusion's own statements (`COPY`, `CREATE
/// EXTERNAL TABLE`) as they are.
pub fn rewritten<V>(statement: Statement, rewriter: &mut V) -> Result<Statement>
where
    V: datafusion::sql::sqlparser::ast::VisitorMut<Break = datafusion::error::DataFusionError>,
{
    use datafusion::sql::sqlparser::ast::VisitMut;
    match statement {
        Statement::Statement(mut sql) => {
            if let std::ops::ControlFlow::Break(e) = sql.visit(rewriter) {
                return Err(e);
            }
            Ok(Statement::Statement(sql))
        }
        Statement::Explain(mut explain) => {
            explain.statement = Box::new(rewritten(*explain.statement, rewriter)?);
            Ok(Statement::Explain(explain))
        }
        other => Ok(other),
    }
}

/// The text of `sql`'s first statement after `rewrite` (the rewriters'
/// unit tests).
#[cfg(test)]
pub(crate) fn rewritten_text(sql: &str, rewrite: fn(Statement) -> Result<Statement>) -> String {
    let statement = parse(sql).unwrap().pop_front().unwrap();
    rewrite(statement).unwrap().to_string()
}

/// An SQL expression squall wrote (`what` names the rewrite, for the
/// internal error a mistake of squall's would be).
pub fn expression(sql: &str, what: &str) -> Result<datafusion::sql::sqlparser::ast::Expr> {
    use datafusion::sql::sqlparser::parser::Parser;
    Parser::new(&crate::trino_dialect::TrinoDialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| datafusion::error::DataFusionError::Internal(format!("{what}: {e}: {sql}")))
}

/// `sql` without Trino's view `SECURITY` clause; as it is when it has none
/// (or does not tokenize: the parser then says why).
pub fn prepare(sql: &str) -> Cow<'_, str> {
    if !sql.to_ascii_lowercase().contains("security") {
        return Cow::Borrowed(sql);
    }
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Cow::Borrowed(sql);
    };
    let words: Vec<(usize, Option<Keyword>)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .map(|(i, t)| match t {
            Token::Word(w) if w.quote_style.is_none() => (i, Some(w.keyword)),
            _ => (i, None),
        })
        .collect();
    let mut drop = Vec::new();
    let mut in_create_view = false;
    for (k, (_, keyword)) in words.iter().enumerate() {
        match keyword {
            Some(Keyword::CREATE) => in_create_view = false,
            Some(Keyword::VIEW) if k > 0 => {
                in_create_view = words[..k]
                    .iter()
                    .rev()
                    .find(|(_, w)| !matches!(w, Some(Keyword::OR | Keyword::REPLACE)))
                    .is_some_and(|(_, w)| *w == Some(Keyword::CREATE));
            }
            Some(Keyword::SECURITY)
                if in_create_view
                    && matches!(
                        words.get(k + 1),
                        Some((_, Some(Keyword::DEFINER | Keyword::INVOKER)))
                    )
                    && matches!(words.get(k + 2), Some((_, Some(Keyword::AS)))) =>
            {
                drop.push(words[k].0);
                drop.push(words[k + 1].0);
                in_create_view = false;
            }
            _ => {}
        }
        if tokens[words[k].0] == Token::SemiColon {
            in_create_view = false;
        }
    }
    if drop.is_empty() {
        return Cow::Borrowed(sql);
    }
    Cow::Owned(
        tokens
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, t)| t.to_string())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::prepare;

    #[test]
    fn a_view_s_security_clause_goes_and_nothing_else() {
        assert_eq!(
            prepare(
                "/* dbt */ create or replace view\n  \"squall\".\"a\".\"v\"\n  security definer\n  as\n select 'security' as security from t"
            ),
            "/* dbt */ create or replace view\n  \"squall\".\"a\".\"v\"\n   \n  as\n select 'security' as security from t"
        );
        assert_eq!(
            prepare("CREATE VIEW v SECURITY INVOKER AS SELECT 1"),
            "CREATE VIEW v   AS SELECT 1"
        );
        for kept in [
            "select security from t",
            "create table security as select 1",
            "create view \"security\" as select 1",
        ] {
            assert_eq!(prepare(kept), kept);
        }
    }
}
