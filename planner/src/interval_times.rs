//! An interval times a number, `INTERVAL '1' DAY * n` (Trino's way to step
//! dates by a computed count), which DataFusion refuses ("Invalid interval
//! arithmetic operation"): written before planning as the interval of that
//! many units, `CAST(CAST(1 * (n) AS VARCHAR) || ' DAY' AS INTERVAL)`, NULL
//! where `n` is. Only an interval of one unit with a numeric literal is
//! rewritten; any other product is left for DataFusion to refuse.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Value};

/// `expr` as above when it is an interval of one unit times a number.
pub fn rewrite(expr: &mut Expr) -> datafusion::error::Result<()> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Multiply,
        right,
    } = expr
    else {
        return Ok(());
    };
    let (interval, factor) = match (left.as_ref(), right.as_ref()) {
        (Expr::Interval(i), f) | (f, Expr::Interval(i)) => (i, f),
        _ => return Ok(()),
    };
    let (Some(unit), None) = (&interval.leading_field, &interval.last_field) else {
        return Ok(());
    };
    let amount = match interval.value.as_ref() {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::Number(s, _) => s.trim().to_string(),
            _ => return Ok(()),
        },
        _ => return Ok(()),
    };
    if amount.parse::<f64>().is_err() {
        return Ok(());
    }
    let sql = format!("CAST(CAST(({amount}) * ({factor}) AS VARCHAR) || ' {unit}' AS INTERVAL)");
    *expr = crate::trino_sql::expression(&sql, "an interval times a number")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        let mut e = crate::trino_sql::expression(sql, "test").unwrap();
        super::rewrite(&mut e).unwrap();
        e.to_string()
    }

    #[test]
    fn intervals_times_numbers_are_intervals_of_that_many_units() {
        assert_eq!(
            rewritten("INTERVAL '1' DAY * n"),
            "CAST(CAST((1) * (n) AS VARCHAR) || ' DAY' AS INTERVAL)"
        );
        assert_eq!(
            rewritten("2 * interval '3' month"),
            "CAST(CAST((3) * (2) AS VARCHAR) || ' MONTH' AS INTERVAL)"
        );
        for kept in ["INTERVAL '1 day' * 2", "x * 2", "INTERVAL '1' DAY + x"] {
            let e = crate::trino_sql::expression(kept, "test")
                .unwrap()
                .to_string();
            assert_eq!(rewritten(kept), e);
        }
    }
}
