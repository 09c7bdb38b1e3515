//! The SQL dialect squall parses: sqlparser's generic dialect, as
//! DataFusion's own parser uses it, with Trino's lambdas (`x -> x * 2`,
//! `(s, x) -> s + x`) for `transform`, `filter`, `any_match` and the other
//! functions over arrays that take one. The parser's dialect-dependent
//! paths see the generic dialect (`dialect()`), so nothing else parses
//! differently. `->` is a lambda only; squall has no JSON arrow operator.
//!
//! `a IS [NOT] DISTINCT FROM b` takes for `b` a value expression, as
//! Trino's grammar does: sqlparser 0.62 parses a whole expression there,
//! so `x IS DISTINCT FROM y AND z IS NOT NULL` was read as
//! `x IS DISTINCT FROM (y AND z IS NOT NULL)` and failed ("Cannot infer
//! common argument type for logical boolean operation Utf8 AND Boolean"),
//! or answered wrongly where the types agreed.
//!
//! A subquery that is a VALUES query is read where sqlparser 0.62 reads
//! only one starting with SELECT or WITH: `x > ALL (VALUES 1, 3)` (every
//! comparison, `ANY`, `SOME`) and `(VALUES 5)` as a value (it was read as a
//! call of a function `values`).
//!
//! `||` binds looser than `+` and `-`, as in Trino (and PostgreSQL):
//! `'id-' || n + 1` is `'id-' || (n + 1)`; sqlparser gives `||` the
//! precedence of `*`, which made it `('id-' || n) + 1` and failed ("Cannot
//! coerce arithmetic expression Utf8 + Int64").

use std::any::TypeId;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr};
use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect, Precedence};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

/// The generic dialect with lambdas.
#[derive(Debug, Default, Clone, Copy)]
pub struct TrinoDialect;

impl Dialect for TrinoDialect {
    fn dialect(&self) -> TypeId {
        GenericDialect.dialect()
    }

    fn supports_lambda_functions(&self) -> bool {
        true
    }

    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        // Below `+` / `-`, above the comparisons (and sqlparser's bitwise
        // operators, which Trino writes as functions).
        (parser.peek_token_ref().token == Token::StringConcat).then(|| {
            Ok((self.prec_value(Precedence::PlusMinus) + self.prec_value(Precedence::Xor)) / 2)
        })
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        // `(VALUES (5))`, a scalar subquery of a VALUES query.
        if !values_in_parentheses(parser, 0) {
            return None;
        }
        parser.advance_token();
        Some(subquery_to_parenthesis(parser))
    }

    fn parse_infix(
        &self,
        parser: &mut Parser,
        expr: &Expr,
        _precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        if let Some(quantified) = quantified_values(parser, expr) {
            return Some(quantified);
        }
        let negated = if parser.parse_keywords(&[Keyword::IS, Keyword::DISTINCT, Keyword::FROM]) {
            false
        } else if parser.parse_keywords(&[
            Keyword::IS,
            Keyword::NOT,
            Keyword::DISTINCT,
            Keyword::FROM,
        ]) {
            true
        } else {
            return None;
        };
        // Arithmetic, concatenation and the like bind tighter than the
        // comparison; a comparison, AND or OR ends the operand.
        let right = match parser.parse_subexpr(self.prec_value(Precedence::Eq)) {
            Ok(right) => Box::new(right),
            Err(e) => return Some(Err(e)),
        };
        let left = Box::new(expr.clone());
        Some(Ok(if negated {
            Expr::IsNotDistinctFrom(left, right)
        } else {
            Expr::IsDistinctFrom(left, right)
        }))
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        GenericDialect.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        GenericDialect.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        GenericDialect.is_identifier_part(ch)
    }

    fn supports_unicode_string_literal(&self) -> bool {
        GenericDialect.supports_unicode_string_literal()
    }

    fn supports_partition_by_after_order_by(&self) -> bool {
        GenericDialect.supports_partition_by_after_order_by()
    }

    fn supports_array_join_syntax(&self) -> bool {
        GenericDialect.supports_array_join_syntax()
    }

    fn supports_group_by_expr(&self) -> bool {
        GenericDialect.supports_group_by_expr()
    }

    fn supports_group_by_with_modifier(&self) -> bool {
        GenericDialect.supports_group_by_with_modifier()
    }

    fn supports_left_associative_joins_without_parens(&self) -> bool {
        GenericDialect.supports_left_associative_joins_without_parens()
    }

    fn supports_connect_by(&self) -> bool {
        GenericDialect.supports_connect_by()
    }

    fn supports_match_recognize(&self) -> bool {
        GenericDialect.supports_match_recognize()
    }

    fn supports_pipe_operator(&self) -> bool {
        GenericDialect.supports_pipe_operator()
    }

    fn supports_start_transaction_modifier(&self) -> bool {
        GenericDialect.supports_start_transaction_modifier()
    }

    fn supports_window_function_null_treatment_arg(&self) -> bool {
        GenericDialect.supports_window_function_null_treatment_arg()
    }

    fn supports_dictionary_syntax(&self) -> bool {
        GenericDialect.supports_dictionary_syntax()
    }

    fn supports_window_clause_named_window_reference(&self) -> bool {
        GenericDialect.supports_window_clause_named_window_reference()
    }

    fn supports_parenthesized_set_variables(&self) -> bool {
        GenericDialect.supports_parenthesized_set_variables()
    }

    fn supports_select_wildcard_except(&self) -> bool {
        GenericDialect.supports_select_wildcard_except()
    }

    fn support_map_literal_syntax(&self) -> bool {
        GenericDialect.support_map_literal_syntax()
    }

    fn allow_extract_custom(&self) -> bool {
        GenericDialect.allow_extract_custom()
    }

    fn allow_extract_single_quotes(&self) -> bool {
        GenericDialect.allow_extract_single_quotes()
    }

    fn supports_extract_comma_syntax(&self) -> bool {
        GenericDialect.supports_extract_comma_syntax()
    }

    fn supports_create_view_comment_syntax(&self) -> bool {
        GenericDialect.supports_create_view_comment_syntax()
    }

    fn supports_parens_around_table_factor(&self) -> bool {
        GenericDialect.supports_parens_around_table_factor()
    }

    fn supports_values_as_table_factor(&self) -> bool {
        GenericDialect.supports_values_as_table_factor()
    }

    fn supports_create_index_with_clause(&self) -> bool {
        GenericDialect.supports_create_index_with_clause()
    }

    fn supports_explain_with_utility_options(&self) -> bool {
        GenericDialect.supports_explain_with_utility_options()
    }

    fn supports_limit_comma(&self) -> bool {
        GenericDialect.supports_limit_comma()
    }

    fn supports_update_order_by(&self) -> bool {
        GenericDialect.supports_update_order_by()
    }

    fn supports_from_first_select(&self) -> bool {
        GenericDialect.supports_from_first_select()
    }

    fn supports_projection_trailing_commas(&self) -> bool {
        GenericDialect.supports_projection_trailing_commas()
    }

    fn supports_asc_desc_in_column_definition(&self) -> bool {
        GenericDialect.supports_asc_desc_in_column_definition()
    }

    fn supports_try_convert(&self) -> bool {
        GenericDialect.supports_try_convert()
    }

    fn supports_bitwise_shift_operators(&self) -> bool {
        GenericDialect.supports_bitwise_shift_operators()
    }

    fn supports_comment_on(&self) -> bool {
        GenericDialect.supports_comment_on()
    }

    fn supports_load_extension(&self) -> bool {
        GenericDialect.supports_load_extension()
    }

    fn supports_named_fn_args_with_assignment_operator(&self) -> bool {
        GenericDialect.supports_named_fn_args_with_assignment_operator()
    }

    fn supports_struct_literal(&self) -> bool {
        GenericDialect.supports_struct_literal()
    }

    fn supports_empty_projections(&self) -> bool {
        GenericDialect.supports_empty_projections()
    }

    fn supports_nested_comments(&self) -> bool {
        GenericDialect.supports_nested_comments()
    }

    fn supports_multiline_comment_hints(&self) -> bool {
        GenericDialect.supports_multiline_comment_hints()
    }

    fn supports_user_host_grantee(&self) -> bool {
        GenericDialect.supports_user_host_grantee()
    }

    fn supports_string_escape_constant(&self) -> bool {
        GenericDialect.supports_string_escape_constant()
    }

    fn supports_array_typedef_with_brackets(&self) -> bool {
        GenericDialect.supports_array_typedef_with_brackets()
    }

    fn supports_match_against(&self) -> bool {
        GenericDialect.supports_match_against()
    }

    fn supports_set_names(&self) -> bool {
        GenericDialect.supports_set_names()
    }

    fn supports_comma_separated_set_assignments(&self) -> bool {
        GenericDialect.supports_comma_separated_set_assignments()
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        GenericDialect.supports_filter_during_aggregation()
    }

    fn supports_select_wildcard_exclude(&self) -> bool {
        GenericDialect.supports_select_wildcard_exclude()
    }

    fn supports_data_type_signed_suffix(&self) -> bool {
        GenericDialect.supports_data_type_signed_suffix()
    }

    fn supports_interval_options(&self) -> bool {
        GenericDialect.supports_interval_options()
    }

    fn supports_quote_delimited_string(&self) -> bool {
        GenericDialect.supports_quote_delimited_string()
    }

    fn supports_select_wildcard_replace(&self) -> bool {
        GenericDialect.supports_select_wildcard_replace()
    }

    fn supports_select_wildcard_ilike(&self) -> bool {
        GenericDialect.supports_select_wildcard_ilike()
    }

    fn supports_select_wildcard_rename(&self) -> bool {
        GenericDialect.supports_select_wildcard_rename()
    }

    fn supports_optimize_table(&self) -> bool {
        GenericDialect.supports_optimize_table()
    }

    fn supports_install(&self) -> bool {
        GenericDialect.supports_install()
    }

    fn supports_detach(&self) -> bool {
        GenericDialect.supports_detach()
    }

    fn supports_prewhere(&self) -> bool {
        GenericDialect.supports_prewhere()
    }

    fn supports_with_fill(&self) -> bool {
        GenericDialect.supports_with_fill()
    }

    fn supports_limit_by(&self) -> bool {
        GenericDialect.supports_limit_by()
    }

    fn supports_interpolate(&self) -> bool {
        GenericDialect.supports_interpolate()
    }

    fn supports_settings(&self) -> bool {
        GenericDialect.supports_settings()
    }

    fn supports_select_format(&self) -> bool {
        GenericDialect.supports_select_format()
    }

    fn supports_comment_optimizer_hint(&self) -> bool {
        GenericDialect.supports_comment_optimizer_hint()
    }

    fn supports_constraint_keyword_without_name(&self) -> bool {
        GenericDialect.supports_constraint_keyword_without_name()
    }

    fn supports_key_column_option(&self) -> bool {
        GenericDialect.supports_key_column_option()
    }

    fn supports_comma_separated_trim(&self) -> bool {
        GenericDialect.supports_comma_separated_trim()
    }

    fn supports_cte_without_as(&self) -> bool {
        GenericDialect.supports_cte_without_as()
    }

    fn supports_select_item_multi_column_alias(&self) -> bool {
        GenericDialect.supports_select_item_multi_column_alias()
    }

    fn supports_xml_expressions(&self) -> bool {
        GenericDialect.supports_xml_expressions()
    }
}

/// Whether the tokens from the `n`th ahead are `( VALUES (`: a VALUES query
/// in parentheses (its rows are parenthesised by then,
/// `crate::bare_values`).
fn values_in_parentheses(parser: &Parser, n: usize) -> bool {
    parser.peek_nth_token_ref(n).token == Token::LParen
        && matches!(&parser.peek_nth_token_ref(n + 1).token,
            Token::Word(w) if w.keyword == Keyword::VALUES && w.quote_style.is_none())
        && parser.peek_nth_token_ref(n + 2).token == Token::LParen
}

/// The query up to the parenthesis closing it, as a subquery.
fn subquery_to_parenthesis(parser: &mut Parser) -> Result<Expr, ParserError> {
    let query = parser.parse_query()?;
    parser.expect_token(&Token::RParen)?;
    Ok(Expr::Subquery(query))
}

/// `x > ANY (VALUES 1, 3)` (also `SOME`, `ALL`, every comparison): a
/// quantified comparison over a VALUES query, which sqlparser 0.62 takes
/// only over a query starting with SELECT or WITH ("Expected: ), found:
/// ,"). `None` when the tokens ahead are not one.
fn quantified_values(parser: &mut Parser, left: &Expr) -> Option<Result<Expr, ParserError>> {
    let op = match parser.peek_nth_token_ref(0).token {
        Token::Eq => BinaryOperator::Eq,
        Token::Neq => BinaryOperator::NotEq,
        Token::Lt => BinaryOperator::Lt,
        Token::Gt => BinaryOperator::Gt,
        Token::LtEq => BinaryOperator::LtEq,
        Token::GtEq => BinaryOperator::GtEq,
        _ => return None,
    };
    let keyword = match &parser.peek_nth_token_ref(1).token {
        Token::Word(w) if matches!(w.keyword, Keyword::ANY | Keyword::SOME | Keyword::ALL) => {
            w.keyword
        }
        _ => return None,
    };
    if !values_in_parentheses(parser, 2) {
        return None;
    }
    for _ in 0..3 {
        parser.advance_token();
    }
    let right = match subquery_to_parenthesis(parser) {
        Ok(right) => Box::new(right),
        Err(e) => return Some(Err(e)),
    };
    let left = Box::new(left.clone());
    Some(Ok(if keyword == Keyword::ALL {
        Expr::AllOp {
            left,
            compare_op: op,
            right,
        }
    } else {
        Expr::AnyOp {
            left,
            compare_op: op,
            right,
            is_some: keyword == Keyword::SOME,
        }
    }))
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr};
    use datafusion::sql::sqlparser::parser::Parser;

    use super::TrinoDialect;

    fn parsed(sql: &str) -> Expr {
        Parser::new(&TrinoDialect)
            .try_with_sql(sql)
            .and_then(|mut p| p.parse_expr())
            .unwrap()
    }

    /// The operator at the top of a binary expression and its operands.
    fn split(e: Expr) -> (BinaryOperator, Expr, Expr) {
        match e {
            Expr::BinaryOp { left, op, right } => (op, *left, *right),
            e => panic!("not a binary expression: {e:?}"),
        }
    }

    #[test]
    fn values_queries_are_subqueries() {
        // A quantified comparison binds as a comparison: `AND` is above it.
        let (op, left, _) = split(parsed("x > ALL (VALUES (1), (3)) AND y"));
        assert_eq!(op, BinaryOperator::And);
        assert!(
            matches!(&left, Expr::AllOp { compare_op: BinaryOperator::Gt, right, .. }
                if matches!(right.as_ref(), Expr::Subquery(_))),
            "{left:?}"
        );
        assert!(matches!(
            parsed("x <> SOME (VALUES (1))"),
            Expr::AnyOp {
                compare_op: BinaryOperator::NotEq,
                is_some: true,
                ..
            }
        ));
        let (op, left, _) = split(parsed("(VALUES (5)) + 1"));
        assert_eq!(op, BinaryOperator::Plus);
        assert!(matches!(left, Expr::Subquery(_)), "{left:?}");
        // A parenthesised expression and a subquery of SELECT read as before.
        assert!(matches!(parsed("(values_x + 1)"), Expr::Nested(_)));
        assert!(matches!(parsed("x = ANY (SELECT 1)"), Expr::AnyOp { .. }));
    }

    #[test]
    fn distinct_from_takes_a_value_expression() {
        let (op, left, right) = split(parsed("a IS DISTINCT FROM b AND c IS NOT NULL"));
        assert_eq!(op, BinaryOperator::And);
        assert!(matches!(left, Expr::IsDistinctFrom(..)), "{left:?}");
        assert!(matches!(right, Expr::IsNotNull(..)), "{right:?}");

        let (op, left, right) = split(parsed(
            "a IS DISTINCT FROM b AND c OR d IS NOT DISTINCT FROM e + 1",
        ));
        assert_eq!(op, BinaryOperator::Or);
        assert_eq!(split(left).0, BinaryOperator::And);
        let Expr::IsNotDistinctFrom(_, e) = right else {
            panic!("{right:?}")
        };
        assert_eq!(split(*e).0, BinaryOperator::Plus);

        let (op, left, _) = split(parsed("a IS NOT DISTINCT FROM b = false"));
        assert_eq!(op, BinaryOperator::Eq);
        assert!(matches!(left, Expr::IsNotDistinctFrom(..)), "{left:?}");
    }

    #[test]
    fn concatenation_binds_looser_than_addition() {
        let (op, left, right) = split(parsed("'a' || n + 1"));
        assert_eq!(op, BinaryOperator::StringConcat);
        assert!(matches!(left, Expr::Value(..)), "{left:?}");
        assert_eq!(split(right).0, BinaryOperator::Plus);

        let (op, left, right) = split(parsed("2 * 3 || 'x' || n - 1 = 'a'"));
        assert_eq!(op, BinaryOperator::Eq);
        assert!(matches!(right, Expr::Value(..)), "{right:?}");
        let (op, left, right) = split(left);
        assert_eq!(op, BinaryOperator::StringConcat);
        assert_eq!(split(right).0, BinaryOperator::Minus);
        let (op, left, _) = split(left);
        assert_eq!(op, BinaryOperator::StringConcat);
        assert_eq!(split(left).0, BinaryOperator::Multiply);
    }
}
