//! Window functions over grouped aggregates across exchanges, and the
//! planning-time check that every stage plan keeps its properties.
//!
//! The query shape: a CTE aggregating a join of lineitem, orders, customer
//! and nation, with two window functions of different `PARTITION BY` lists
//! over the aggregate (`rank()` ordered within a prefix of the keys,
//! `avg(sum(..))` over all of them), joined to itself twice (the row before
//! and after in rank order). DataFusion plans the window operators against
//! what it knows of their input — a key that is a constant (a filter on it)
//! or equal to another (a join key grouped on both sides) needs no sort —
//! so the exchange reads below them must report the same.

use squall_planner::plan_check::encode_checked;

use crate::common::*;

/// `rank()` over (a, b, c) ordered by (yr, mo) and `avg(sum(x))` over
/// (a, b, c, yr), with `filter` in the CTE; then the CTE joined to itself
/// twice on the keys and adjacent ranks.
fn window_query(keys: [&str; 3], filter: &str, outer: &str) -> String {
    let [a, b, c] = keys;
    format!(
        "with v as (
            select {a} as a, {b} as b, {c} as c,
                   extract(year from o_orderdate) as yr, extract(month from o_orderdate) as mo,
                   sum(l_extendedprice * (1 - l_discount)) as revenue,
                   avg(sum(l_extendedprice * (1 - l_discount))) over
                       (partition by {a}, {b}, {c}, extract(year from o_orderdate)) as avg_yearly,
                   rank() over (partition by {a}, {b}, {c}
                       order by extract(year from o_orderdate), extract(month from o_orderdate)) as rn
            from lineitem
                join orders on l_orderkey = o_orderkey
                join customer on o_custkey = c_custkey
                join nation on c_nationkey = n_nationkey
            where {filter}
            group by {a}, {b}, {c}, extract(year from o_orderdate), extract(month from o_orderdate)
        )
        select cur.a, cur.b, cur.c, cur.yr, cur.mo, cur.revenue, cur.avg_yearly,
               prev.revenue as prev_revenue, next.revenue as next_revenue
        from v cur
            join v prev on cur.a = prev.a and cur.b = prev.b and cur.c = prev.c and cur.rn = prev.rn + 1
            join v next on cur.a = next.a and cur.b = next.b and cur.c = next.c and cur.rn = next.rn - 1
        where {outer}
        order by cur.a, cur.b, cur.c, cur.yr, cur.mo"
    )
}

/// Variants of the shape: a constant key, keys equal through the join,
/// a constant year, and none of these.
pub fn window_queries() -> Vec<(&'static str, String)> {
    vec![
        // DataFusion orders the window's output by its partition key and
        // the aggregate both ways (it is constant within a partition) and
        // plans the DISTINCT on those orders, which no exchange keeps: the
        // plan runs whole.
        (
            "distinct rows of a window aggregate",
            "select distinct c_nationkey, sum(c_acctbal) over (partition by c_nationkey) s \
             from customer order by 1"
                .to_string(),
        ),
        (
            "a constant partition key (a filter on it)",
            window_query(
                ["n_name", "c_mktsegment", "o_orderpriority"],
                "n_name = 'FRANCE'",
                "cur.yr = 1995 and cur.avg_yearly > 0",
            ),
        ),
        (
            "partition keys equal through the join",
            window_query(
                ["n_nationkey", "c_nationkey", "c_mktsegment"],
                "o_orderstatus = 'F'",
                "cur.avg_yearly > 0 and cur.revenue > cur.avg_yearly",
            ),
        ),
        (
            "a constant year",
            window_query(
                ["n_name", "c_mktsegment", "o_orderpriority"],
                "extract(year from o_orderdate) = 1996 and n_regionkey = 3",
                "cur.mo between 2 and 11",
            ),
        ),
        (
            "no constant or equal keys",
            window_query(
                ["n_name", "c_mktsegment", "o_orderpriority"],
                "extract(year from o_orderdate) between 1994 and 1996",
                "cur.yr = 1995 and abs(cur.revenue - cur.avg_yearly) > 0.1 * cur.avg_yearly",
            ),
        ),
    ]
}

async fn check_windows(data: &std::path::Path, partitions: &[usize]) {
    let reference = single_node(data).await;
    let queries = window_queries();
    let mut expected = Vec::new();
    for (_, sql) in &queries {
        expected.push(single_node_csv(&reference, sql).await);
    }
    let mut failures = Vec::new();
    for &n in partitions {
        let n = n.to_string();
        let engine = engine(
            data,
            &[
                ("squall.shuffle.partitions", n.as_str()),
                ("squall.scan.target_task_bytes", "200000"),
            ],
        )
        .await;
        for ((what, sql), expected) in queries.iter().zip(&expected) {
            let actual = match engine.sql(sql).await {
                Ok(r) => squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap(),
                Err(e) => {
                    failures.push(format!("{n} partitions, {what}: {e}"));
                    continue;
                }
            };
            assert!(
                expected.lines().count() > 2,
                "{what}: the reference answer is (almost) empty:\n{expected}"
            );
            let c = squall_tpch::compare::compare_csv(expected, &actual, Some(sql)).unwrap();
            if !c.ok {
                failures.push(format!("{n} partitions, {what}: {}", c.message));
            }
        }
        assert_eq!(count_files(engine.exchange_root()), 0);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_queries_match_datafusion_at_sf001() {
    check_windows(&sf001_small_groups().path, &[1, 2, 3]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_queries_match_datafusion_at_sf01() {
    check_windows(&sf01().path, &[2, 4]).await;
}

/// Every staged plan of the TPC-H suite, the assorted SQL and the window
/// queries, at several partition counts: each stage plan round-trips
/// through the task codec with every node's properties unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_staged_plan_keeps_its_properties_through_the_codec() {
    let data = sf001_small_groups();
    let mut queries: Vec<String> = (1..=22)
        .map(|q| squall_tpch::query(q).unwrap().to_string())
        .collect();
    queries.extend(ASSORTED_SQL.iter().map(|s| s.to_string()));
    queries.extend(window_queries().into_iter().map(|(_, sql)| sql));
    let mut checked = 0;
    for n in ["1", "2", "3", "5"] {
        let engine = engine(
            &data.path,
            &[
                ("squall.shuffle.partitions", n),
                ("squall.scan.target_task_bytes", "100000"),
            ],
        )
        .await;
        let ctx = engine.context().task_ctx();
        for sql in &queries {
            let staged = engine
                .plan_stages(sql)
                .await
                .unwrap_or_else(|e| panic!("{n} partitions: {e}\n{sql}"));
            let plans = encode_checked(&staged, &ctx)
                .unwrap_or_else(|e| panic!("{n} partitions: {e}\n{sql}"));
            assert_eq!(plans.len(), staged.stages.len());
            checked += plans.len();
        }
    }
    assert!(checked > 500, "only {checked} stage plans checked");
}

/// A window aggregate's FILTER, which DataFusion drops, filters its rows:
/// equal to the condition written into its argument, staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_window_aggregates_count_only_their_rows() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    assert_eq!(
        squall_csv(
            &engine,
            "select o_orderkey, sum(o_totalprice) filter (where o_orderstatus = 'F') \
             over (partition by o_custkey) as s, count(*) filter (where o_orderpriority = '1-URGENT') \
             over (partition by o_custkey order by o_orderkey) as c \
             from orders where o_custkey < 40 order by 1"
        )
        .await,
        single_node_csv(
            &reference,
            "select o_orderkey, sum(case when o_orderstatus = 'F' then o_totalprice end) \
             over (partition by o_custkey) as s, count(case when o_orderpriority = '1-URGENT' then 1 end) \
             over (partition by o_custkey order by o_orderkey) as c \
             from orders where o_custkey < 40 order by 1"
        )
        .await
    );
    let err = engine
        .sql("select array_agg(o_orderkey) filter (where o_orderstatus = 'F') over () from orders")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("FILTER (WHERE ...) on the window function array_agg"),
        "{err}"
    );
}

/// A named window refined in `OVER (w ...)` or referred to as `OVER (w)`
/// is that window (DataFusion dropped it: `sum(n) OVER (w)` summed the
/// whole table), staged, against the same windows written out, which
/// single-node DataFusion answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_windows_refined_in_over_keep_their_partitions() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    let named = "select l_orderkey, l_linenumber, sum(l_quantity) over (w) as s, \
                 last_value(l_linenumber) over (w rows between current row and unbounded following) as lv, \
                 count(*) over (v order by l_linenumber) as c, rank() over w as r \
                 from lineitem where l_orderkey < 200 \
                 window w as (partition by l_orderkey order by l_linenumber), v as (partition by l_orderkey) \
                 order by 1, 2";
    let written = "select l_orderkey, l_linenumber, \
                   sum(l_quantity) over (partition by l_orderkey order by l_linenumber) as s, \
                   last_value(l_linenumber) over (partition by l_orderkey order by l_linenumber \
                     rows between current row and unbounded following) as lv, \
                   count(*) over (partition by l_orderkey order by l_linenumber) as c, \
                   rank() over (partition by l_orderkey order by l_linenumber) as r \
                   from lineitem where l_orderkey < 200 order by 1, 2";
    let expected = single_node_csv(&reference, written).await;
    assert_same(
        "named windows",
        &expected,
        &squall_csv(&engine, named).await,
        named,
    );
    let e = engine
        .sql("select sum(n_nationkey) over (w order by n_name) from nation window w as (order by n_regionkey)")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("already has an ORDER BY"), "{e}");
}

/// `IGNORE NULLS` of `lag`, `lead`, `first_value`, `last_value` and
/// `nth_value` ignores NULLs in tasks too, and their windows computed in
/// reverse (to share a sort with a window ordered the other way) keep their
/// direction: DataFusion drops both from a stage plan's protobuf, so tasks
/// respected NULLs (`lag(x) IGNORE NULLS` was NULL after every NULL) and
/// `lag` beside a descending window answered `lead`'s values. Staged, as
/// single-node DataFusion answers; under the names written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_functions_keep_ignore_nulls_and_direction_in_tasks() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    let x = "case when l_linenumber % 3 = 0 then l_partkey end";
    let w = "partition by l_orderkey order by l_linenumber";
    let sql = format!(
        "select l_orderkey, l_linenumber, lag({x}) ignore nulls over ({w}) as lg, \
         lead({x}, 1, -1) ignore nulls over ({w}) as ld, \
         first_value({x}) ignore nulls over ({w} rows between unbounded preceding and unbounded following) as fv, \
         last_value({x}) ignore nulls over ({w} rows between unbounded preceding and current row) as lv, \
         last_value({x}) ignore nulls over (partition by l_orderkey order by l_linenumber desc) as rv, \
         nth_value({x}, 2) ignore nulls over ({w}) as nv, lag({x}) over ({w}) as kept, \
         lead(l_partkey, 2) over ({w}) as ld2, nth_value(l_partkey, 2) over ({w}) as nv2 \
         from lineitem where l_orderkey < 2000 order by 1, 2"
    );
    let expected = single_node_csv(&reference, &sql).await;
    let staged = squall_csv(&engine, &sql).await;
    assert_eq!(staged, expected, "{sql}");
    // Each column has rows where ignoring NULLs answers otherwise.
    let respected = single_node_csv(&reference, &sql.replace(" ignore nulls", "")).await;
    assert_ne!(staged, respected);
    let named = squall_csv(
        &engine,
        "select lag(n_name) ignore nulls over (order by n_nationkey) from nation limit 1",
    )
    .await;
    assert!(
        named.starts_with("lag(n_name) IGNORE NULLS OVER (ORDER BY n_nationkey)\n"),
        "{named}"
    );
}

/// `lag` and `lead` with a negative offset are refused naming the function,
/// as Trino refuses them (DataFusion answered `lag(x, -1)` with
/// `lead(x, 1)`'s values); a zero or positive one answers as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_lag_and_lead_offsets_are_refused() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for sql in [
        "select lag(n_name, -1) over (order by n_nationkey) from nation",
        "select lead(n_name, -2, 'x') over (order by n_nationkey) from nation",
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains("offset must be at least 0"), "{sql}: {err}");
    }
    let sql = "select n_nationkey, lag(n_nationkey, 0) over (order by n_nationkey) as same, \
               lead(n_nationkey, 1) over (order by n_nationkey) as next \
               from nation order by n_nationkey limit 2";
    assert_eq!(
        squall_csv(&engine, sql).await,
        "n_nationkey,same,next\n0,0,1\n1,1,2\n"
    );
}

/// A window partitioned by a column a filter makes constant by the files'
/// statistics (`n_regionkey <= 0`, its least value 0) is planned with a
/// sort on its ORDER BY keys only; a task's own scans may not report the
/// constant, and the window refused to run ("Expects PARTITION BY
/// expression to be ordered"). Its task sorts by the partition keys too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_over_columns_constant_by_statistics_run_in_tasks() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&[][..], &one_task[..]] {
        let engine = engine(&data.path, pairs).await;
        for sql in [
            "select n_name, rank() over (partition by n_regionkey order by n_name) as r \
             from (select * from nation order by n_nationkey desc limit 20) t \
             where n_regionkey <= 0 and exists (select 1 from customer c where c.c_nationkey = t.n_nationkey) \
             order by 1",
            "select c_name, rank() over (partition by c_nationkey order by c_acctbal, c_name) as r \
             from (select * from customer order by c_custkey desc limit 700) t \
             where c_nationkey <= 0 and exists (select 1 from orders o where o.o_custkey = t.c_custkey) \
             order by 1",
        ] {
            let expected = single_node_csv(&reference, sql).await;
            assert!(expected.lines().count() > 2, "{sql}: {expected}");
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}
