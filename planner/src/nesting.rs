//! A ceiling on how deep a statement's expressions nest, checked on its
//! tokens before it is parsed.
//!
//! The parser reads a chain of operators (`a OR b OR c ...`, `1 + 1 + ...`)
//! in a loop, into a tree as deep as the chain is long, and what follows it
//! walks that tree recursively: cloning, visiting, printing and dropping a
//! syntax tree cannot grow their stack, as DataFusion's own walks can. A
//! select item of 100,000 `1 + 1 + ...` terms (200 KB of SQL) ended the
//! process on a stack overflow, taking `squall serve` down for every
//! client. Parenthesized nesting is the parser's to bound (its recursion
//! limit, 50); chains are this module's: a statement whose operators could
//! nest more than [`MAX_NESTING`] deep is refused by name before a tree is
//! built (and dropped, which is recursive too). DuckDB refuses expressions
//! deeper than 1,000 by default.
//!
//! The count is an upper bound of the depth: along the open parentheses,
//! the operators since the expression began (a comma, `WHEN`, `THEN`,
//! `ELSE` and a clause keyword begin another one, a sibling in the tree),
//! and the set operations of the query (`select 1 union all select 1 ...`
//! of 20,000 branches overflowed a stack too).
//! The threads that walk trees have stacks for it
//! (`squall_core::executor::THREAD_STACK_BYTES`).
//!
//! Nesting the parser recurses into (parentheses, subqueries, `CASE`
//! inside `CASE`) is bounded by its recursion limit
//! ([`crate::trino_sql::RECURSION_LIMIT`]); past it, CASE expressions 510
//! deep were refused as "Expected: end of statement, found: 0", naming
//! neither the nesting nor the limit. Such a statement is refused here by
//! name, [`MAX_OPEN`] deep.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// Most operators a statement's expressions may nest, along one path.
pub const MAX_NESTING: usize = 5_000;

/// Most parentheses and `CASE` expressions open at once: the parser's
/// recursion limit, less the levels a statement and its clauses take.
pub const MAX_OPEN: usize = crate::trino_sql::RECURSION_LIMIT - 32;

/// `Ok` when no expression of `sql` can nest deeper than [`MAX_NESTING`]
/// and no more than [`MAX_OPEN`] parentheses and `CASE` expressions are
/// open at once; text that does not tokenize is left to the parser, which
/// says why.
pub fn check(sql: &str) -> Result<()> {
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Ok(());
    };
    // At each open parenthesis: the operators of the expression under
    // way, and the set operations (`UNION`, ...) of the query under way,
    // a chain of its own that the clauses of its queries do not end.
    let mut open: Vec<(usize, usize)> = vec![(0, 0)];
    let mut along = 0usize;
    // The CASE expressions open at each open parenthesis.
    let mut cases: Vec<usize> = vec![0];
    for token in &tokens {
        let last = open.len() - 1;
        match token {
            Token::LParen | Token::LBrace => cases.push(0),
            Token::RParen | Token::RBrace if cases.len() > 1 => {
                cases.pop();
            }
            Token::SemiColon => cases = vec![0],
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::CASE => {
                if let Some(n) = cases.last_mut() {
                    *n += 1;
                }
            }
            Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::END => {
                if let Some(n) = cases.last_mut() {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
        let depth = cases.len() - 1 + cases.iter().sum::<usize>();
        if depth > MAX_OPEN {
            return Err(DataFusionError::Plan(format!(
                "the statement nests parentheses, subqueries and CASE expressions more than \
                 {MAX_OPEN} deep; CASE WHEN a THEN x WHEN b THEN y ... ELSE z END takes many \
                 branches at one level"
            )));
        }
        match token {
            Token::LParen | Token::LBrace => open.push((0, 0)),
            Token::RParen | Token::RBrace if open.len() > 1 => {
                let (ops, sets) = open.pop().unwrap_or((0, 0));
                along -= ops + sets;
            }
            Token::RParen | Token::RBrace => {}
            Token::SemiColon => {
                // Another statement.
                open = vec![(0, 0)];
                along = 0;
            }
            t if is_set_operation(t) => {
                along -= open[last].0;
                open[last] = (0, open[last].1 + 1);
                along += 1;
            }
            t if begins_an_expression(t) => {
                along -= open[last].0;
                open[last].0 = 0;
            }
            t if is_operator(t) => {
                open[last].0 += 1;
                along += 1;
            }
            _ => {}
        }
        if along > MAX_NESTING {
            return Err(DataFusionError::Plan(format!(
                "the statement nests expressions more than {MAX_NESTING} deep (a chain of \
                 operators, such as a OR b OR c ..., or of UNIONs, is as deep as it is long); \
                 a long list of alternatives is x IN (v1, v2, ...), which does not nest, and \
                 many rows are one VALUES list or a table"
            )));
        }
    }
    Ok(())
}

/// A token after which a sibling expression begins.
fn begins_an_expression(token: &Token) -> bool {
    match token {
        Token::Comma => true,
        Token::Word(w) if w.quote_style.is_none() => matches!(
            w.keyword,
            Keyword::SELECT
                | Keyword::FROM
                | Keyword::WHERE
                | Keyword::GROUP
                | Keyword::HAVING
                | Keyword::ORDER
                | Keyword::LIMIT
                | Keyword::ON
                | Keyword::WHEN
                | Keyword::THEN
                | Keyword::ELSE
                | Keyword::END
        ),
        _ => false,
    }
}

/// `UNION`, `EXCEPT`, `INTERSECT`: the parser chains a query's set
/// operations into a tree as deep as the chain is long, too.
fn is_set_operation(token: &Token) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none()
        && matches!(w.keyword, Keyword::UNION | Keyword::EXCEPT | Keyword::INTERSECT))
}

/// A token that may join two expressions into a deeper one.
fn is_operator(token: &Token) -> bool {
    match token {
        Token::Word(w) if w.quote_style.is_none() => matches!(
            w.keyword,
            Keyword::AND
                | Keyword::OR
                | Keyword::NOT
                | Keyword::IS
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::SIMILAR
                | Keyword::REGEXP
                | Keyword::RLIKE
                | Keyword::BETWEEN
                | Keyword::IN
                | Keyword::AT
                | Keyword::COLLATE
                | Keyword::XOR
                | Keyword::DIV
                | Keyword::OVERLAPS
        ),
        Token::Word(_)
        | Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::DoubleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::EscapedStringLiteral(_)
        | Token::HexStringLiteral(_)
        | Token::Whitespace(_)
        | Token::EOF
        | Token::Comma
        | Token::SemiColon
        | Token::LParen
        | Token::RParen
        | Token::LBrace
        | Token::RBrace
        | Token::RBracket
        | Token::Colon
        // A qualified name (`t.a`) is one flat identifier.
        | Token::Period
        | Token::Placeholder(_) => false,
        // Arithmetic, comparison, concatenation, casts (`::`), subscripts
        // (`[`), JSON arrows, bit operators.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(terms: usize, op: &str) -> String {
        vec!["1"; terms].join(op)
    }

    #[test]
    fn deep_case_and_parentheses_are_refused_by_name() {
        let cases = |n: usize| {
            format!(
                "select {}1{} from t",
                "case when x > 0 then ".repeat(n),
                " else 0 end".repeat(n)
            )
        };
        assert!(check(&cases(MAX_OPEN)).is_ok());
        let err = check(&cases(MAX_OPEN + 1)).unwrap_err().to_string();
        assert!(err.contains("CASE expressions more than 480 deep"), "{err}");
        // Parentheses and CASE add up; siblings do not.
        let mixed = format!(
            "select {}{} from t",
            "(case when x > 0 then ".repeat(300),
            "1 end)".repeat(300)
        );
        assert!(check(&mixed).is_err());
        let siblings = vec![cases(400); 3].join(" union all ");
        assert!(check(&siblings).is_ok());
        // As deep as the check lets through, the parser reads it.
        assert!(crate::trino_sql::statements(&cases(MAX_OPEN)).is_ok());
    }

    #[test]
    fn long_chains_are_refused_and_ordinary_statements_pass() {
        assert!(check(&format!("select {}", chain(MAX_NESTING, " + "))).is_ok());
        let err = check(&format!("select {}", chain(MAX_NESTING + 2, " + "))).unwrap_err();
        assert!(err.to_string().contains("more than 5000 deep"), "{err}");
        // A chain inside parentheses adds to the chain around it.
        let nested = format!(
            "select {} + ({})",
            chain(MAX_NESTING / 2 + 1, " + "),
            chain(MAX_NESTING / 2 + 1, " * ")
        );
        assert!(check(&nested).is_err());
        // Siblings do not add up: list items, CASE branches, clauses.
        let items = (0..20)
            .map(|_| chain(MAX_NESTING / 2, " + "))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(check(&format!("select {items}")).is_ok());
        let branches = (0..10_000)
            .map(|i| format!("when x = {i} then 'v{i}'"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(check(&format!("select case {branches} else 'other' end from t")).is_ok());
        let in_list = (0..100_000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        assert!(check(&format!("select * from t where x in ({in_list})")).is_ok());
        // 2,400 alternatives of two operators each pass; 2,600 do not.
        let alternatives = |n: usize| {
            (0..n)
                .map(|i| format!("x = {i}"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        assert!(check(&format!("select * from t where {}", alternatives(2_400))).is_ok());
        assert!(check(&format!("select * from t where {}", alternatives(2_600))).is_err());
        // Set operations chain across their queries' clauses.
        let union = |n: usize| vec!["select a + b from t where c = 1"; n].join(" union all ");
        assert!(check(&union(1_000)).is_ok());
        assert!(check(&union(MAX_NESTING + 1)).is_err());
        assert!(check(&format!("select count(*) from ({})", union(1_000))).is_ok());
        // Qualified names do not nest.
        let qualified = (0..2_400)
            .map(|i| format!("t.x = {i}"))
            .collect::<Vec<_>>()
            .join(" or ");
        assert!(check(&format!("select * from t where {qualified}")).is_ok());
        // Text that does not tokenize is the parser's to name.
        assert!(check("select 'unterminated").is_ok());
    }
}
