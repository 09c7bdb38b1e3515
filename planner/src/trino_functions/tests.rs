use super::*;
use datafusion::sql::parser::DFParser;

fn rewritten(sql: &str) -> String {
    crate::trino_sql::rewritten_text(sql, default_rewrite)
}

fn default_rewrite(statement: Statement) -> Result<Statement> {
    rewrite(statement, &SessionIdentity::default(), "squall", "public")
}

#[test]
fn trino_calls_become_datafusion_expressions() {
    assert_eq!(
        rewritten("select if(a > 1, 'x', 'y'), count_if(b) over (), arbitrary(c) from t"),
        "SELECT CASE WHEN (a > 1) THEN ('x') ELSE ('y') END AS \"if(a > 1, 'x', 'y')\", \
         count(CASE WHEN (b) THEN 1 END) OVER () AS \"count_if(b) OVER ()\", any_value(c) AS \"arbitrary(c)\" FROM t"
    );
    assert_eq!(
        rewritten("select year(d) as y, 1 + day_of_week(d) from t where month(d) = 2"),
        "SELECT CAST(date_part('year', (d)) AS BIGINT) AS y, \
         1 + CAST(date_part('isodow', (d)) AS BIGINT) AS \"1 + day_of_week(d)\" \
         FROM t WHERE CAST(date_part('month', (d)) AS BIGINT) = 2"
    );
    let add = rewritten("select date_add('quarter', n, d) from t");
    assert!(
        add.contains("CAST(concat(CAST(3 * (n) AS VARCHAR), ' month') AS INTERVAL)"),
        "{add}"
    );
    assert_eq!(
        rewritten("select ceiling(x) as c from t"),
        "SELECT ceil(x) AS c FROM t"
    );
    // Not Trino's: kept.
    let kept = "SELECT date_part('year', d), myschema.year(d), upper(x) FROM t";
    assert_eq!(rewritten(kept), kept);
    let err = DFParser::parse_sql("select date_add('fortnight', 1, d) from t")
        .unwrap()
        .pop_front()
        .map(default_rewrite)
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown unit 'fortnight'"), "{err}");
}
