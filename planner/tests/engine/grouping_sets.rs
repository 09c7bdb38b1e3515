//! Aggregations by grouping sets (`ROLLUP`, `CUBE`, `GROUPING SETS`) over
//! columns a filter or a join made constant or equal below them: a set
//! that leaves such a column out pads it with NULLs, so above the
//! aggregation it is neither constant nor equal to its partner.

use crate::common::*;

/// Staged over tasks of a few row groups and 5 hash partitions.
const SMALL_TASKS: [(&str, &str); 3] = [
    ("squall.query.single_task_bytes", "0"),
    ("squall.scan.target_task_bytes", "20000"),
    ("squall.shuffle.partitions", "5"),
];
/// The whole plan as one task.
const ONE_TASK: [(&str, &str); 1] = [("squall.query.single_task_bytes", "1000000000000")];

/// `ROLLUP` over a column a filter made constant: each grouping set's
/// rows once (the grand total came out once per run of the final
/// aggregation's input: 84 as 25 and 59 staged, and one task with small
/// batches, as DataFusion planned the final aggregation streaming over an
/// input it took for sorted by the "constant"), and a sort by it sorts
/// (the sort was left out). `GROUPING SETS` of two columns a join made
/// equal: each set's rows, the other column NULL. Staged, and one task of
/// one-row batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouping_sets_pad_constant_and_equal_columns_with_nulls() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let french = single_node_value(
        &reference,
        "select count(*) from supplier, nation where s_nationkey = n_nationkey and n_name = 'FRANCE'",
    )
    .await;
    let nations = single_node_value(
        &reference,
        "select count(distinct s_nationkey) from supplier",
    )
    .await;
    let rollup = "select n_regionkey, n_name, count(*) as c from supplier \
                  join nation on s_nationkey = n_nationkey where n_name = 'FRANCE' \
                  group by rollup (n_regionkey, n_name) order by n_name, n_regionkey";
    let expected = format!("n_regionkey,n_name,c\n3,FRANCE,{french}\n3,,{french}\n,,{french}\n");
    let sets = "select count(*) as groups, count(s_nationkey) as by_s, count(n_nationkey) as by_n, \
                sum(c) as c from (select s_nationkey, n_nationkey, count(*) as c from supplier \
                join nation on s_nationkey = n_nationkey \
                group by grouping sets ((s_nationkey), (n_nationkey))) t \
                where s_nationkey is null or n_nationkey is null";
    let suppliers = single_node_value(&reference, "select count(*) from supplier").await;
    let nations: u64 = nations.parse().unwrap();
    let suppliers: u64 = suppliers.parse().unwrap();
    let expected_sets = format!(
        "groups,by_s,by_n,c\n{},{nations},{nations},{}\n",
        2 * nations,
        2 * suppliers
    );
    for (what, pairs) in [
        ("staged", &SMALL_TASKS[..]),
        (
            "one task, one-row batches",
            &[
                ("squall.query.single_task_bytes", "1000000000000"),
                ("datafusion.execution.batch_size", "1"),
            ][..],
        ),
    ] {
        let engine = engine(&data.path, pairs).await;
        assert_eq!(squall_csv(&engine, rollup).await, expected, "{what}");
        assert_eq!(squall_csv(&engine, sets).await, expected_sets, "{what}");
    }
}

/// `ROLLUP` and `CUBE` naming an expression twice answer as their grouping
/// sets written out (a set that comes out twice gives its rows twice, as
/// Trino and DuckDB answer); DataFusion refused them ("duplicate qualified
/// field name"). Staged, against single-node DataFusion on the written-out
/// sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollup_and_cube_may_repeat_an_expression() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "20000")]).await;
    for (sql, sets) in [
        (
            "group by rollup (n_regionkey, n_nationkey % 2, n_regionkey)",
            "group by grouping sets ((n_regionkey, n_nationkey % 2), \
             (n_regionkey, n_nationkey % 2), (n_regionkey), ())",
        ),
        (
            "group by cube (n_regionkey, n_regionkey)",
            "group by grouping sets ((n_regionkey), (n_regionkey), (n_regionkey), ())",
        ),
    ] {
        let query = |group: &str| {
            format!(
                "select n_regionkey, count(*) as n, sum(s_acctbal) as s from supplier \
                 join nation on s_nationkey = n_nationkey {group} order by 1, 2, 3"
            )
        };
        let expected = single_node_csv(&reference, &query(sets)).await;
        assert!(expected.lines().count() > 6, "{expected}");
        assert_eq!(squall_csv(&engine, &query(sql)).await, expected, "{sql}");
    }
}

/// Ordered aggregates (`string_agg(x, ',' ORDER BY x)`) by grouping sets:
/// their input sorted, each set's rows ordered. They were refused ("does
/// not satisfy order requirements") once the grouping-set guard sat below
/// the aggregation and a sort went under it. Staged and one task, against
/// single-node DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_aggregates_by_grouping_sets() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let staged = engine(&data.path, &SMALL_TASKS).await;
    let one_task = engine(&data.path, &ONE_TASK).await;
    for sql in [
        "select n_regionkey, string_agg(n_name, ',' order by n_name desc) as names \
         from nation group by rollup (n_regionkey) order by 1, 2",
        "select n_regionkey, r_name, string_agg(cast(n_regionkey as varchar), '' order by n_regionkey) as keys, \
         count(*) as n from nation join region on n_regionkey = r_regionkey \
         group by cube (n_regionkey, r_name) order by 1, 2, 3",
        "select s_nationkey, string_agg(s_name, ',' order by s_acctbal, s_name) as names from supplier \
         where s_nationkey < 3 group by grouping sets ((s_nationkey), ()) order by 1, 2",
    ] {
        let expected = single_node_csv(&reference, sql).await;
        assert!(expected.lines().count() > 3, "{expected}");
        assert_eq!(squall_csv(&staged, sql).await, expected, "staged: {sql}");
        assert_eq!(
            squall_csv(&one_task, sql).await,
            expected,
            "one task: {sql}"
        );
    }
}

/// A grouping set's expression squall rewrites to Trino's value (a DOUBLE
/// or DECIMAL cast to an integer rounds; a TIMESTAMP cast to text is
/// Trino's text) keeps its column's name above the aggregation: the
/// rewrite renamed it and the query failed ("No field named
/// supplier.s_nationkey"). Staged and one task, against single-node
/// DataFusion on the values written out (`CAST(round(x) AS INT)`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewritten_grouping_set_expressions_keep_their_names() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let query = |bucket: &str| {
        format!(
            "select s_nationkey, {bucket} as b, count(*) as n from supplier \
             where s_nationkey < 4 group by rollup (s_nationkey, {bucket}) \
             having count(*) > 0 order by 1, 2, 3"
        )
    };
    let expected =
        single_node_csv(&reference, &query("cast(round(s_acctbal / 1000) as int)")).await;
    assert!(expected.lines().count() > 10, "{expected}");
    let texts = "select count(*) as n, count(t) as with_text, substr(min(t), 1, 23) as first from \
                 (select s_nationkey, cast(cast(date '1995-01-01' as timestamp) as varchar) as t, \
                 count(*) from supplier group by cube (s_nationkey, \
                 cast(cast(date '1995-01-01' as timestamp) as varchar))) x";
    let nations = single_node_value(
        &reference,
        "select count(distinct s_nationkey) from supplier",
    )
    .await;
    let nations: u64 = nations.parse().unwrap();
    let expected_texts = format!(
        "n,with_text,first\n{},{},1995-01-01 00:00:00.000\n",
        2 * nations + 2,
        nations + 1
    );
    for (what, pairs) in [("staged", &SMALL_TASKS[..]), ("one task", &ONE_TASK[..])] {
        let engine = engine(&data.path, pairs).await;
        let sql = query("cast(s_acctbal / 1000 as int)");
        assert_eq!(squall_csv(&engine, &sql).await, expected, "{what}: {sql}");
        assert_eq!(squall_csv(&engine, texts).await, expected_texts, "{what}");
    }
}
