//! Lambdas: a parameter's fields over arrays of rows (`i -> i.price`),
//! and a predicate negated (`all_match`).

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Value,
};

/// A lambda's `x.f.g` where `x` is its parameter (an array of rows:
/// `transform(items, i -> i.price * i.qty)`) as `get_field(get_field(x,
/// 'f'), 'g')`: DataFusion looks a dotted name up as a table's column and
/// failed with "No field named x.f". Written as a call, it stays one when
/// squall writes the lambda back as text.
pub(super) fn fields_of_parameters(lambda: &mut datafusion::sql::sqlparser::ast::LambdaFunction) {
    use datafusion::sql::sqlparser::ast::OneOrManyWithParens;
    let name = |i: &Ident| match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_ascii_lowercase(),
    };
    let params: Vec<String> = match &lambda.params {
        OneOrManyWithParens::One(p) => vec![name(&p.name)],
        OneOrManyWithParens::Many(ps) => ps.iter().map(|p| name(&p.name)).collect(),
    };
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(lambda.body.as_mut(), |e| {
        if let Expr::CompoundIdentifier(ids) = e
            && let [root, fields @ ..] = ids.as_slice()
            && !fields.is_empty()
            && params.contains(&name(root))
        {
            let mut access = Expr::Identifier(root.clone());
            for field in fields {
                let field = Value::SingleQuotedString(name(field)).with_empty_span();
                access = Expr::Function(Function {
                    name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new("get_field"))]),
                    uses_odbc_syntax: false,
                    parameters: FunctionArguments::None,
                    args: FunctionArguments::List(
                        datafusion::sql::sqlparser::ast::FunctionArgumentList {
                            duplicate_treatment: None,
                            args: vec![
                                FunctionArg::Unnamed(FunctionArgExpr::Expr(access)),
                                FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(field))),
                            ],
                            clauses: vec![],
                        },
                    ),
                    filter: None,
                    null_treatment: None,
                    over: None,
                    within_group: vec![],
                });
            }
            *e = access;
        }
        ControlFlow::<()>::Continue(())
    });
}

/// `lambda` with its body negated (`x -> NOT (p)`): all elements match
/// when none fails to.
pub(super) fn negated_lambda(lambda: &Expr) -> Result<String> {
    use datafusion::sql::sqlparser::ast::UnaryOperator;
    let Expr::Lambda(l) = lambda else {
        return Err(DataFusionError::Plan(format!(
            "all_match: the second argument must be a lambda (x -> predicate), not {lambda}"
        )));
    };
    let mut l = l.clone();
    l.body = Box::new(Expr::UnaryOp {
        op: UnaryOperator::Not,
        expr: Box::new(Expr::Nested(l.body)),
    });
    Ok(Expr::Lambda(l).to_string())
}
