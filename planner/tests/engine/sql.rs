//! Statements beyond TPC-H.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assorted_sql_matches_datafusion() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    let queries = [
        "select 1 as one, 'a' as s",
        "values (1, 'x'), (2, null)",
        "select count(*) from lineitem where l_quantity > 1000",
        "select * from nation where n_nationkey < 0",
        "select n_name, r_name from nation left join region on n_regionkey = r_regionkey and r_name like 'A%' order by n_name",
        "select r_name, (select count(*) from nation n where n.n_regionkey = r.r_regionkey) c from region r order by 1",
        "select c_mktsegment, count(*), avg(c_acctbal) from customer group by c_mktsegment order by 1",
        "select o_orderpriority, count(distinct o_custkey) from orders group by 1 order by 1",
        "select * from (select l_orderkey, row_number() over (partition by l_orderkey order by l_linenumber desc) rn from lineitem) where rn = 1 order by l_orderkey limit 20",
        "select n_name from nation union all select r_name from region order by 1",
        "select s_name from supplier where s_suppkey not in (select ps_suppkey from partsupp where ps_availqty < 10) order by 1 limit 5",
        "select c_custkey from customer where not exists (select 1 from orders where o_custkey = c_custkey) order by 1 limit 10",
        "select p_brand, sum(p_retailprice) from part full outer join partsupp on p_partkey = ps_partkey and ps_supplycost > 999 group by p_brand order by 1 limit 5",
        "select l_shipmode, min(l_shipdate), max(l_commitdate) from lineitem group by l_shipmode order by l_shipmode",
        "select count(*) from orders cross join region",
    ];
    for sql in queries {
        let expected = single_node_csv(&reference, sql).await;
        let actual = squall_csv(&engine, sql).await;
        assert_same(sql, &expected, &actual, sql);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_explain_and_errors() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    engine
        .sql("set squall.shuffle.partitions = 3")
        .await
        .unwrap();
    let r = engine
        .sql("explain select l_returnflag, count(*) from lineitem group by 1")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains("Stage s1"), "{text}");
    assert!(text.contains("ShuffleWriteExec: hash="), "{text}");
    assert!(
        text.contains("hash x3, 3 tasks"),
        "SET must reach the planner: {text}"
    );

    let r = engine
        .sql("explain analyze select count(*) from orders")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains("profile") && text.contains("stage"), "{text}");

    let err = engine
        .sql("select nope from lineitem")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
    let err = engine
        .sql("select * from missing_table")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing_table"), "{err}");
    let err = engine
        .sql("set squall.no_such_knob = 1")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_knob"), "{err}");
    assert!(engine.sql("").await.is_err());
}
