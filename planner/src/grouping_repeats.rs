//! `GROUP BY ROLLUP (a, b, a)` and `CUBE` or a grouping set naming an
//! expression twice, as Trino and DuckDB take them: the same grouping sets
//! (`ROLLUP (a, b, a)` is `GROUPING SETS ((a, b, a), (a, b), (a), ())`),
//! each naming an expression once, a set that comes out twice kept twice
//! (its groups are rows twice, as SQL has it). DataFusion refused them
//! ("Schema contains duplicate qualified field name"). A ROLLUP or CUBE
//! without a repeat is left as it is.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, VisitorMut};

/// CUBE over more elements than this is left to DataFusion (2^n sets).
const MAX_CUBE: usize = 12;

/// `statement` with each ROLLUP, CUBE or GROUPING SETS that repeats an
/// expression written as grouping sets that do not.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Repeats)
}

struct Repeats;

/// `exprs` without their repeats, in order.
fn once(exprs: impl IntoIterator<Item = Expr>) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    for e in exprs {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn repeats(elements: &[Vec<Expr>]) -> bool {
    let all: Vec<&Expr> = elements.iter().flatten().collect();
    all.iter().enumerate().any(|(i, e)| all[..i].contains(e))
}

/// The grouping sets of `ROLLUP (elements)`: every prefix, longest first.
fn rollup_sets(elements: &[Vec<Expr>]) -> Vec<Vec<Expr>> {
    (0..=elements.len())
        .rev()
        .map(|n| once(elements[..n].iter().flatten().cloned()))
        .collect()
}

/// The grouping sets of `CUBE (elements)`: every subset, the whole first.
fn cube_sets(elements: &[Vec<Expr>]) -> Vec<Vec<Expr>> {
    let n = elements.len();
    (0..1usize << n)
        .rev()
        .map(|mask| {
            once(
                (0..n)
                    .filter(|i| mask & (1 << (n - 1 - i)) != 0)
                    .flat_map(|i| elements[i].iter().cloned()),
            )
        })
        .collect()
}

impl VisitorMut for Repeats {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        let sets = match expr {
            Expr::Rollup(elements) if repeats(elements) => rollup_sets(elements),
            Expr::Cube(elements) if repeats(elements) && elements.len() <= MAX_CUBE => {
                cube_sets(elements)
            }
            Expr::GroupingSets(sets) if sets.iter().any(|s| repeats(std::slice::from_ref(s))) => {
                sets.iter().map(|s| once(s.iter().cloned())).collect()
            }
            _ => return ControlFlow::Continue(()),
        };
        *expr = Expr::GroupingSets(sets);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let statement = crate::trino_sql::parse(sql).unwrap().pop_front().unwrap();
        rewrite(statement).unwrap().to_string()
    }

    #[test]
    fn a_repeated_grouping_expression_is_named_once_per_set() {
        assert_eq!(
            rewritten("select 1 from t group by rollup (a, b, a)"),
            "SELECT 1 FROM t GROUP BY GROUPING SETS ((a, b), (a, b), (a), ())"
        );
        assert_eq!(
            rewritten("select 1 from t group by cube (a, a)"),
            "SELECT 1 FROM t GROUP BY GROUPING SETS ((a), (a), (a), ())"
        );
        assert_eq!(
            rewritten("select 1 from t group by grouping sets ((a, a), (b))"),
            "SELECT 1 FROM t GROUP BY GROUPING SETS ((a), (b))"
        );
        // Without a repeat: as written.
        assert_eq!(
            rewritten("select 1 from t group by rollup (a, b)"),
            "SELECT 1 FROM t GROUP BY ROLLUP (a, b)"
        );
    }
}
