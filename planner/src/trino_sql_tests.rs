//! Tests of the text rewrites made before parsing.
use super::prepare;

#[test]
fn set_session_is_the_engine_s_set() {
    assert_eq!(
        prepare("SET SESSION squall.shuffle.partitions = 8; select 'set session x' as s"),
        "SET  squall.shuffle.partitions = 8; select 'set session x' as s"
    );
    assert_eq!(prepare("select session_user"), "select session_user");
}

#[test]
fn trino_s_explain_options_squall_answers_anyway_go() {
    assert_eq!(
        prepare("EXPLAIN (TYPE DISTRIBUTED, FORMAT TEXT) select 1"),
        "EXPLAIN  select 1"
    );
    assert_eq!(
        prepare("explain analyze (type io) select 1"),
        "explain analyze  select 1"
    );
    for kept in [
        "explain (format json) select 1",
        "explain select (1)",
        "explain (type validate) select 1",
    ] {
        assert_eq!(prepare(kept), kept);
    }
}

#[test]
fn trino_types_in_casts_become_squall_s_functions() {
    assert_eq!(
        prepare(
            "select cast(j as array(varchar)), try_cast(x AS Row(a integer, b array(bigint))) from t"
        ),
        "select squall_json_cast(j , 'List(Utf8)', false), \
         squall_json_cast(x , 'Struct(\"a\": Int32, \"b\": List(Int64))', true) from t"
    );
    assert_eq!(
        prepare("select cast(m as map(varchar, decimal(10, 2))), cast(x as json), json '[1]'"),
        "select squall_json_cast(m , 'Map(\"entries\": non-null Struct(\"key\": non-null Utf8, \
         \"value\": Decimal128(10, 2)), unsorted)', false), squall_to_json(x ), json_parse('[1]')"
    );
    // Outside a cast's type: as written (an array constructor, a column
    // named json, a function named map, a cast to a plain type).
    for kept in [
        "select array[1, 2], map(array['a'], array[1]), json from t",
        "select cast(a as bigint), row(1, 2) from t",
        "select cast(json as varchar) from t",
    ] {
        assert_eq!(prepare(kept), kept);
    }
}

#[test]
fn a_view_s_security_clause_goes_and_nothing_else() {
    assert_eq!(
        prepare(
            "/* dbt */ create or replace view\n  \"squall\".\"a\".\"v\"\n  security definer\n  as\n select 'security' as security from t"
        ),
        "/* dbt */ create or replace view\n  \"squall\".\"a\".\"v\"\n   \n  as\n select 'security' as security from t"
    );
    assert_eq!(
        prepare("CREATE VIEW v SECURITY INVOKER AS SELECT 1"),
        "CREATE VIEW v   AS SELECT 1"
    );
    for kept in [
        "select security from t",
        "create table security as select 1",
        "create view \"security\" as select 1",
    ] {
        assert_eq!(prepare(kept), kept);
    }
}
