//! Trino's `try(e)`, written before planning.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, Value, VisitMut, VisitorMut};

use super::parse;

/// Trino's `try(e)`: `e` with the errors squall can foresee turned into
/// NULL: its casts as `TRY_CAST`, its divisions and remainders by zero
/// (`x / NULLIF(y, 0)`). Other errors still fail the query.
pub(super) fn without_errors(mut expr: Expr) -> Expr {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, CastKind};
    struct Lenient;
    impl VisitorMut for Lenient {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            match e {
                Expr::Cast { kind, .. } if *kind != CastKind::TryCast => *kind = CastKind::TryCast,
                Expr::BinaryOp {
                    op: BinaryOperator::Divide | BinaryOperator::Modulo,
                    right,
                    ..
                } => {
                    let divisor = std::mem::replace(right.as_mut(), Expr::value(Value::Null));
                    if let Ok(nullif) = parse(&format!("NULLIF({divisor}, 0)")) {
                        **right = nullif;
                    } else {
                        **right = divisor;
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = expr.visit(&mut Lenient);
    Expr::Nested(Box::new(expr))
}
