use super::rewrite;

#[test]
fn exponents_are_doubles_and_items_with_literals_keep_their_text() {
    assert_eq!(
        crate::trino_sql::rewritten_text(
            "select 1e5, x * 1.5, 2, y, 1.5 as z from t where x > 2.5E-3",
            rewrite
        ),
        "SELECT CAST('1e5' AS DOUBLE) AS \"1e5\", x * 1.5 AS \"x * 1.5\", 2 AS \"2\", y, 1.5 AS z \
         FROM t WHERE x > CAST('2.5E-3' AS DOUBLE)"
    );
}

#[test]
fn decimal_literals_are_typed_by_their_digits() {
    use super::decimal_digits;
    assert_eq!(decimal_digits("1.25"), Some((3, 2)));
    assert_eq!(decimal_digits(" -001.250 "), Some((4, 3)));
    assert_eq!(decimal_digits(".5"), Some((1, 1)));
    assert_eq!(decimal_digits("0"), Some((1, 0)));
    assert_eq!(decimal_digits("+7."), Some((1, 0)));
    assert_eq!(decimal_digits("1e3"), None);
    assert_eq!(decimal_digits("."), None);
    assert_eq!(decimal_digits(&"9".repeat(39)), None);
    assert_eq!(
        crate::trino_sql::rewritten_text("select x from t where x > DECIMAL '12.50'", rewrite),
        "SELECT x FROM t WHERE x > CAST('12.50' AS DECIMAL(4,2))"
    );
}
