//! A stage the plan holds twice runs once (`squall.query.reuse_stages`,
//! `squall_planner::stages::reuse_stages`): a view or CTE named twice, a
//! self-join of one, a UNION of two filters of one. Answers equal
//! single-node DataFusion's with and without it, over many tasks; a query
//! calling a volatile function keeps both copies; a stage read twice
//! applies no key filter, which would drop rows its other reader needs.

use crate::common::*;

const REUSED: &str = "run once";

async fn engine_with(data: &std::path::Path, reuse: &str) -> squall_planner::Engine {
    engine(
        data,
        &[
            ("squall.scan.target_task_bytes", "100000"),
            ("squall.shuffle.partitions", "4"),
            ("squall.scan.clustered_aggregation", "false"),
            ("squall.query.reuse_stages", reuse),
        ],
    )
    .await
}

async fn explained(engine: &squall_planner::Engine, sql: &str) -> String {
    squall_csv(engine, &format!("explain {sql}")).await
}

/// TPC-H Q15's shape: the suppliers' revenues, and their maximum.
const REVENUE: &str = "with revenue as (select l_suppkey as supplier_no, \
     sum(l_extendedprice * (1 - l_discount)) as total_revenue from lineitem \
     where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-04-01' \
     group by l_suppkey) ";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_planned_twice_runs_once() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let reused = engine_with(&data.path, "true").await;
    let copied = engine_with(&data.path, "false").await;
    let revenue_max = format!(
        "{REVENUE}select s_suppkey, s_name, total_revenue from supplier, revenue \
         where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) \
         from revenue) order by s_suppkey"
    );
    // The same aggregation joined with itself: both sides hashed, or one
    // built and broadcast while the other is probed.
    let self_join = "with t as (select l_orderkey as k, count(*) as n, sum(l_quantity) as q \
         from lineitem group by l_orderkey) select count(*), sum(a.n * b.n), sum(a.q - b.q) \
         from t a join t b on a.k = b.k";
    let shifted = "with t as (select o_custkey as c, count(*) as n from orders \
         group by o_custkey) select count(*), sum(a.n + b.n) from t a join t b on a.c = b.c + 1";
    // Both branches of a UNION read the one aggregation's partitions.
    let union = "with t as (select l_suppkey as s, count(*) as n from lineitem \
         group by l_suppkey) select count(*), sum(n), sum(s) from (select * from t \
         where n > 55 union all select * from t where n < 65)";
    // The revenue stage is read by the maximum and by a join with a few
    // suppliers, whose keys would filter it: the maximum needs them all.
    let filtered = format!(
        "{REVENUE}select (select max(total_revenue) from revenue) as m, count(*), \
         sum(total_revenue) from supplier join revenue on s_suppkey = supplier_no \
         where s_nationkey = 3"
    );
    for sql in [
        revenue_max.as_str(),
        self_join,
        shifted,
        union,
        filtered.as_str(),
    ] {
        let plan = explained(&reused, sql).await;
        assert!(plan.contains(REUSED), "{sql}\n{plan}");
        let stages = |p: &str| p.lines().filter(|l| l.starts_with("Stage s")).count();
        let copies = explained(&copied, sql).await;
        assert!(!copies.contains(REUSED), "{sql}\n{copies}");
        assert!(stages(&plan) < stages(&copies), "{plan}\n{copies}");
        for line in plan.lines().filter(|l| l.contains(REUSED)) {
            assert!(!line.contains("after key filter"), "{sql}\n{plan}");
        }
        let expected = single_node_csv(&reference, sql).await;
        assert_same("reused", &expected, &squall_csv(&reused, sql).await, sql);
        assert_same("copied", &expected, &squall_csv(&copied, sql).await, sql);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_calling_a_volatile_function_both_run() {
    let data = sf001_small_groups();
    let engine = engine_with(&data.path, "true").await;
    // Each copy draws its own numbers: the join on them finds (almost
    // surely) nothing, where one run of both would match every row.
    let sql = "with t as (select l_orderkey as k, l_linenumber as n, random() as r \
         from lineitem) select count(*) from t a join t b on a.k = b.k and a.n = b.n \
         and a.r = b.r";
    let plan = explained(&engine, sql).await;
    assert!(!plan.contains(REUSED), "{plan}");
    assert_eq!(squall_csv(&engine, sql).await, "count(*)\n0\n", "{sql}");
}

/// Embedded, with no limit on what one task reads, a query runs as one task
/// (DataFusion's whole plan, every copy in it) unless staging saves a
/// quarter of its reads: Q15's shape stays staged, its line-item
/// aggregation run once; a query whose copies scan a small table (nation)
/// beside a large one runs as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_a_query_stays_staged_when_its_copies_read_much() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(data.path.to_string_lossy().to_string()),
        settings: vec![],
    })
    .await
    .expect("engine");
    let revenue_max = format!(
        "{REVENUE}select s_suppkey, s_name, total_revenue from supplier, revenue \
         where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) \
         from revenue) order by s_suppkey"
    );
    let small_copies = "with n as (select n_nationkey as k, n_name as name from nation \
         where n_regionkey < 3) select a.name, count(*), sum(l_quantity) from lineitem \
         join supplier on l_suppkey = s_suppkey join n a on s_nationkey = a.k \
         join n b on a.k = b.k and a.name = b.name group by a.name order by 1";
    // Staged, both run a stage once for two.
    let staging = engine_with(&data.path, "true").await;
    for sql in [revenue_max.as_str(), small_copies] {
        let plan = explained(&staging, sql).await;
        assert!(plan.contains(REUSED), "{sql}\n{plan}");
    }
    for (sql, staged) in [(revenue_max.as_str(), true), (small_copies, false)] {
        let plan = explained(&engine, sql).await;
        assert_eq!(plan.contains(REUSED), staged, "{sql}\n{plan}");
        assert_eq!(
            plan.contains("single (one process)"),
            !staged,
            "{sql}\n{plan}"
        );
        let expected = single_node_csv(&reference, sql).await;
        assert_same("embedded", &expected, &squall_csv(&engine, sql).await, sql);
    }
}
