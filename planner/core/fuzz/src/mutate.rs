//! The fuzzers' mutators: small, seeded, hand-written.
//!
//! - [`mutate_sql`]: token-level edits of a real query (delete, insert,
//!   swap, duplicate tokens; a literal made huge; the query nested deep in
//!   parentheses or subqueries; random bytes; truncation), or random SQL
//!   built from a vocabulary.
//! - [`mutate_bytes`]: byte-level edits (flip, insert, delete, splice, truncate).
//! - [`mutate_json`]: a JSON value with one node replaced, removed or
//!   retyped, so the document stays JSON but breaks its schema.

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use serde_json::Value;

use crate::seeded::SplitMix64;

/// Words random SQL is drawn from.
const VOCABULARY: &[&str] = &[
    "select",
    "from",
    "where",
    "group",
    "by",
    "order",
    "having",
    "limit",
    "join",
    "on",
    "union",
    "all",
    "distinct",
    "and",
    "or",
    "not",
    "in",
    "exists",
    "case",
    "when",
    "then",
    "else",
    "end",
    "as",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "=",
    "<",
    ">",
    "<=",
    "<>",
    "null",
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "cast",
    "interval",
    "date",
    "'1998-12-01'",
    "1",
    "0",
    "-1",
    "3.5",
    "lineitem",
    "orders",
    "customer",
    "nation",
    "region",
    "part",
    "supplier",
    "partsupp",
    "l_orderkey",
    "o_orderdate",
    "c_name",
    "n_name",
    "values",
    "with",
    "over",
    "partition",
    "row_number",
    "explain",
    "analyze",
    "create",
    "table",
    "drop",
    "insert",
    "into",
    "copy",
    "to",
    "set",
    "session",
    "external",
    "location",
    "'/etc/passwd'",
    "generate_series",
    "99999999999999999999999999",
    "1e308",
    "'\u{0}'",
    "\"quoted\"",
    ";",
    "--",
    "/*",
    "*/",
];

fn tokens(sql: &str) -> Vec<String> {
    match Tokenizer::new(&GenericDialect {}, sql).tokenize() {
        Ok(tokens) => tokens
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .map(|t| t.to_string())
            .collect(),
        Err(_) => sql.split_whitespace().map(str::to_string).collect(),
    }
}

/// A mutant of `seed_sql` (one of the TPC-H queries), or random SQL.
pub fn mutate_sql(rng: &mut SplitMix64, seed_sql: &str) -> String {
    let mut toks = tokens(seed_sql);
    let word = |rng: &mut SplitMix64| rng.pick(VOCABULARY).copied().unwrap_or("x").to_string();
    match rng.below(12) {
        0 => {
            // Random SQL from the vocabulary.
            let n = 1 + rng.below(40);
            return (0..n).map(|_| word(rng)).collect::<Vec<_>>().join(" ");
        }
        1 => {
            // A huge literal somewhere.
            let huge = if rng.one_in(2) {
                format!("'{}'", "x".repeat(1 + rng.below(200_000)))
            } else {
                "9".repeat(1 + rng.below(5_000))
            };
            let at = rng.below(toks.len() + 1);
            toks.insert(at, huge);
        }
        2 => {
            // Deep nesting: parentheses or subqueries.
            let depth = 1 + rng.below(3_000);
            return if rng.one_in(2) {
                format!("select {}1{}", "(".repeat(depth), ")".repeat(depth))
            } else {
                let mut sql = "select 1 as x".to_string();
                for _ in 0..depth.min(300) {
                    sql = format!("select x from ({sql}) t");
                }
                sql
            };
        }
        3 => {
            // Random bytes (made into text), inside the query or alone.
            let n = 1 + rng.below(64);
            let junk: String = (0..n)
                .map(|_| char::from_u32(rng.below(0x2FF) as u32).unwrap_or('?'))
                .collect();
            let at = rng.below(toks.len() + 1);
            toks.insert(at, junk);
        }
        4 => {
            // Truncated.
            toks.truncate(rng.below(toks.len() + 1));
        }
        _ => {
            // A few token edits.
            for _ in 0..1 + rng.below(4) {
                let n = toks.len();
                match rng.below(4) {
                    0 if n > 0 => {
                        toks.remove(rng.below(n));
                    }
                    1 => {
                        let w = word(rng);
                        toks.insert(rng.below(n + 1), w);
                    }
                    2 if n > 1 => toks.swap(rng.below(n), rng.below(n)),
                    _ if n > 0 => {
                        let i = rng.below(n);
                        let t = toks[i].clone();
                        toks.insert(i, t);
                    }
                    _ => {}
                }
            }
        }
    }
    toks.join(" ")
}

/// Byte-level mutant of `data`.
pub fn mutate_bytes(rng: &mut SplitMix64, data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..1 + rng.below(8) {
        let n = out.len();
        match rng.below(5) {
            0 if n > 0 => {
                let i = rng.below(n);
                out[i] ^= 1 << rng.below(8);
            }
            1 => {
                let b = rng.next_u64() as u8;
                out.insert(rng.below(n + 1), b);
            }
            2 if n > 0 => {
                out.remove(rng.below(n));
            }
            3 if n > 1 => {
                // Copy a slice over another place.
                let (from, to) = (rng.below(n), rng.below(n));
                let len = rng.below(64).min(n - from).min(n - to);
                let chunk = out[from..from + len].to_vec();
                out[to..to + len].copy_from_slice(&chunk);
            }
            _ => out.truncate(rng.below(n + 1)),
        }
    }
    out
}

/// `value` with one node (reached by a random walk) replaced, removed or retyped.
pub fn mutate_json(rng: &mut SplitMix64, value: &Value) -> Value {
    let mut out = value.clone();
    let replacement = random_value(rng);
    let mut node = &mut out;
    loop {
        let descend = rng.below(4) != 0;
        let next_key = match node {
            Value::Object(map) if descend && !map.is_empty() => {
                let keys: Vec<String> = map.keys().cloned().collect();
                let key = keys[rng.below(keys.len())].clone();
                if rng.one_in(6) {
                    map.remove(&key);
                    return out;
                }
                Some(Err(key))
            }
            Value::Array(items) if descend && !items.is_empty() => Some(Ok(rng.below(items.len()))),
            _ => None,
        };
        node = match (next_key, node) {
            (Some(Err(key)), Value::Object(map)) => match map.get_mut(&key) {
                Some(v) => v,
                None => return out,
            },
            (Some(Ok(i)), Value::Array(items)) => &mut items[i],
            (_, node) => {
                *node = replacement;
                return out;
            }
        };
    }
}

fn random_value(rng: &mut SplitMix64) -> Value {
    match rng.below(10) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => Value::from(rng.next_u64() as i64),
        3 => Value::from(-1),
        4 => Value::from(u64::MAX),
        5 => Value::from(1e300),
        6 => Value::from("x".repeat(rng.below(10_000))),
        7 => Value::from("../../../etc/passwd"),
        8 => Value::Array(vec![Value::Null; rng.below(5)]),
        _ => serde_json::json!({"unexpected": rng.next_u64()}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_reproducible_and_differ() {
        let sql = "select l_orderkey, sum(l_quantity) from lineitem where l_tax > 0.01 group by 1";
        let run = |seed| {
            let mut rng = SplitMix64::new(seed);
            (0..50)
                .map(|_| mutate_sql(&mut rng, sql))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert!(run(3).iter().any(|m| m != sql));
        let mut rng = SplitMix64::new(9);
        let json = serde_json::json!({"a": [1, {"b": "c"}], "d": true});
        let mutants: Vec<Value> = (0..50).map(|_| mutate_json(&mut rng, &json)).collect();
        assert!(mutants.iter().any(|m| *m != json));
        let bytes = mutate_bytes(&mut rng, b"{\"protocol\": 1}");
        assert!(bytes.len() < 1000);
    }
}
