//! Trino's functions of maps and of two arrays that DataFusion does not
//! have, written with its own:
//!
//! | Trino | as |
//! |---|---|
//! | `transform_values(m, (k, v) -> e)` | `map(map_keys(m), array_transform(map_entries(m), kv -> e))` |
//! | `transform_keys(m, (k, v) -> e)` | `map(array_transform(map_entries(m), kv -> e), map_values(m))` (a key made twice is refused) |
//! | `map_filter(m, (k, v) -> p)` | `map_from_entries(array_filter(map_entries(m), kv -> p))` |
//! | `map_concat(m1, m2, ...)` | the union of the maps, a key's value from the last map holding it (`squall_map_first` over the maps' entries, last map first) |
//! | `map_agg(k, v)` | `squall_map_first(array_agg(k), array_agg(v))` over the rows whose key is not NULL: a key given twice keeps its first value, as Trino's |
//! | `multimap_agg(k, v)` | `squall_multimap(array_agg(k), array_agg(v))` over the same rows: each key's values in the order they came |
//! | `map_union(m)` | `squall_map_first` over the group's maps' keys and values: a key's value from the first map holding it (Trino's picks any) |
//! | `zip_with(a, b, (x, y) -> e)` | `array_transform(arrays_zip(a, b), xy -> e)` (the shorter array padded with NULLs, as Trino pads it) |
//!
//! A lambda's parameters become fields of the one parameter DataFusion's
//! lambda takes (`k` is `kv['key']`). A NULL map is NULL.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::ast::{Expr, VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// The one parameter of the lambdas written here.
const PARAMETER: &str = "squall_entry";

/// The SQL a call of `name` with `args` is, if it is one of this module's.
pub(super) fn rewritten(name: &str, args: &[Expr]) -> Result<Option<String>> {
    let a = |i: usize| format!("({})", args[i]);
    Ok(Some(match (name, args.len()) {
        // A map's entries through a lambda of (key, value).
        ("transform_values" | "transform_keys" | "map_filter", 2) => {
            let f = lambda(name, &args[1], ["key", "value"])?;
            let m = a(0);
            let body = match name {
                "transform_values" => {
                    format!("map(map_keys({m}), array_transform(map_entries({m}), {f}))")
                }
                "transform_keys" => {
                    format!("map(array_transform(map_entries({m}), {f}), map_values({m}))")
                }
                _ => format!("map_from_entries(array_filter(map_entries({m}), {f}))"),
            };
            format!("CASE WHEN {m} IS NULL THEN NULL ELSE {body} END")
        }
        ("zip_with", 3) => {
            let f = lambda(name, &args[2], ["1", "2"])?;
            format!("array_transform(arrays_zip({}, {}), {f})", a(0), a(1))
        }
        ("map_concat", n) if n >= 2 => {
            let last_first: Vec<usize> = (0..n).rev().collect();
            let keys: Vec<String> = last_first
                .iter()
                .map(|&i| format!("map_keys({})", a(i)))
                .collect();
            let values: Vec<String> = last_first
                .iter()
                .map(|&i| format!("map_values({})", a(i)))
                .collect();
            let nulls: Vec<String> = (0..n).map(|i| format!("{} IS NULL", a(i))).collect();
            format!(
                "CASE WHEN {} THEN NULL ELSE {}(array_concat({}), array_concat({})) END",
                nulls.join(" OR "),
                squall_core::trino_udfs::map_first::MAP_FIRST,
                keys.join(", "),
                values.join(", ")
            )
        }
        // Aggregates, as one call of their own (no FILTER, OVER, ...).
        // Rows whose key is NULL are left out, as Trino leaves them; the
        // two lists are built from the same rows in the same order: a key
        // given twice keeps its first value (map_first), or all of them
        // in order (multimap).
        ("map_agg" | "multimap_agg", 2) => format!(
            "{}(array_agg({k}) FILTER (WHERE {k} IS NOT NULL), \
             array_agg({v}) FILTER (WHERE {k} IS NOT NULL))",
            if name == "map_agg" {
                squall_core::trino_udfs::map_first::MAP_FIRST
            } else {
                squall_core::trino_udfs::multimap::MULTIMAP
            },
            k = a(0),
            v = a(1)
        ),
        // The union of a group's maps, a key's value from the first map
        // holding it (Trino's picks any).
        ("map_union", 1) => format!(
            "{}(flatten(array_agg(map_keys({m})) FILTER (WHERE {m} IS NOT NULL)), \
             flatten(array_agg(map_values({m})) FILTER (WHERE {m} IS NOT NULL)))",
            squall_core::trino_udfs::map_first::MAP_FIRST,
            m = a(0)
        ),
        _ => return Ok(None),
    }))
}

/// `lambda`, a two-parameter lambda `(p, q) -> e`, as the one-parameter
/// lambda whose parameter's `fields` are `p` and `q`.
fn lambda(function: &str, lambda: &Expr, fields: [&str; 2]) -> Result<String> {
    let refused = || {
        DataFusionError::Plan(format!(
            "{function}: its last argument must be a lambda of two parameters ((a, b) -> expression), not {lambda}"
        ))
    };
    let Expr::Lambda(l) = lambda else {
        return Err(refused());
    };
    let params: Vec<String> = l
        .params
        .iter()
        .map(|p| p.name.value.to_ascii_lowercase())
        .collect();
    if params.len() != 2 {
        return Err(refused());
    }
    let mut body = (*l.body).clone();
    let mut fields_of = Fields { params, fields };
    if let ControlFlow::Break(e) = body.visit(&mut fields_of) {
        return Err(e);
    }
    Ok(format!("{PARAMETER} -> {body}"))
}

/// Replaces the lambda's parameters by its one parameter's fields.
struct Fields<'a> {
    params: Vec<String>,
    fields: [&'a str; 2],
}

impl VisitorMut for Fields<'_> {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if let Expr::Identifier(ident) = expr
            && ident.quote_style.is_none()
            && let Some(i) = self
                .params
                .iter()
                .position(|p| *p == ident.value.to_ascii_lowercase())
        {
            match super::parse(&format!("{PARAMETER}['{}']", self.fields[i])) {
                Ok(field) => *expr = field,
                Err(e) => return ControlFlow::Break(e),
            }
        }
        ControlFlow::Continue(())
    }
}
