//! `CAST(x AS VARCHAR(n))` and `TRY_CAST(x AS VARCHAR(n))` with Trino's
//! length: written as `squall_varchar(x, CAST(x AS VARCHAR), n, try)`
//! (`squall_core::trino_udfs::varchar_n`), which cuts text to `n`
//! characters and refuses (or, for `TRY_CAST`, nulls) another value whose
//! text is longer. DataFusion reads `VARCHAR(n)` as `VARCHAR`: a cast to
//! `VARCHAR(3)` kept every character, and grouped by them. A select list's
//! unnamed cast keeps its name. A cast to VARBINARY is a cast to BYTEA,
//! DataFusion's name for it.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    CastKind, CharacterLength, DataType, Expr, Query, VisitorMut,
};
use squall_core::trino_udfs::varchar_n::VARCHAR_N;

/// `statement` with its casts to `VARCHAR(n)` given their length.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Lengths)
}

struct Lengths;

/// The length of a `VARCHAR(n)` type.
fn length(t: &DataType) -> Option<u64> {
    match t {
        DataType::Varchar(Some(CharacterLength::IntegerLength { length, .. }))
        | DataType::CharacterVarying(Some(CharacterLength::IntegerLength { length, .. }))
        | DataType::CharVarying(Some(CharacterLength::IntegerLength { length, .. })) => {
            Some(*length)
        }
        _ => None,
    }
}

impl VisitorMut for Lengths {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        crate::select_names::name_by_text(
            &mut query.body,
            |e| matches!(e, Expr::Cast { data_type, .. } if length(data_type).is_some()),
        );
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        let Expr::Cast {
            kind,
            expr: value,
            data_type,
            ..
        } = expr
        else {
            return ControlFlow::Continue(());
        };
        // Trino's VARBINARY is DataFusion's BYTEA (which refused the name).
        if matches!(data_type, DataType::Varbinary(_)) {
            *data_type = DataType::Bytea;
            return ControlFlow::Continue(());
        }
        let Some(n) = length(data_type) else {
            return ControlFlow::Continue(());
        };
        let lenient = matches!(kind, CastKind::TryCast | CastKind::SafeCast);
        let sql = format!("{VARCHAR_N}(({value}), CAST(({value}) AS VARCHAR), {n}, {lenient})");
        match crate::trino_sql::expression(&sql, "a cast to VARCHAR(n)") {
            Ok(new) => {
                *expr = new;
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(e),
        }
    }
}
