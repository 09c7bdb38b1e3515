//! Key filters where TPC-H at SF 0.1 is planned as SF1000 would be
//! (broadcast thresholds scaled down, so build sides are shuffled): a filter
//! follows its keys through a join into the stage that scans them, and a
//! filtered aggregation in a join's stage gets a stage that publishes keys.

use std::path::Path;

use crate::common::*;

/// An engine over `data` with SF1000's join planning at SF 0.1 (the
/// thresholds `bench/model.py settings` scales), always staged.
async fn planned_as_sf1000(data: &Path) -> squall_planner::Engine {
    engine(
        data,
        &[
            (
                "datafusion.optimizer.hash_join_single_partition_threshold",
                "1677",
            ),
            (
                "datafusion.optimizer.hash_join_single_partition_threshold_rows",
                "52",
            ),
            ("squall.query.single_task_bytes", "0"),
            ("squall.bloom.max_build_rows", "4611686018427387904"),
        ],
    )
    .await
}

/// Runs TPC-H query `q` on `engine` over `data`: some row is dropped by a
/// key filter, and the answer is DataFusion's and TPC-H's.
async fn answers_right_with_rows_dropped(engine: &squall_planner::Engine, data: &Path, q: usize) {
    let sql = squall_tpch::query(q).unwrap();
    let r = engine.sql(sql).await.unwrap();
    let p = r.profile.clone().unwrap();
    assert!(p.bloom_rows_dropped > 0, "q{q:02}: no row dropped");
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    let reference = single_node(data).await;
    assert_same(
        &format!("q{q:02} vs DataFusion"),
        &single_node_csv(&reference, sql).await,
        &actual,
        sql,
    );
    assert_same(
        &format!("q{q:02} vs the answers"),
        squall_tpch::expected_answer(0.1, q).unwrap(),
        &actual,
        sql,
    );
}

/// A filter follows its keys through an inner join into the stage that
/// writes the side they come from: TPC-H Q7 at SF0.1 planned as SF1000
/// would be (nation broadcast, supplier and lineitem shuffled) drops
/// the suppliers of other nations in the supplier scan's stage, before they
/// meet lineitem, not after the shuffle of that join's output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_follows_its_keys_through_a_join_into_the_stage_that_scans_them() {
    let data = sf01();
    let engine = planned_as_sf1000(&data.path).await;
    let sql = squall_tpch::query(7).unwrap();
    let explain = squall_csv(&engine, &format!("explain {sql}")).await;
    let supplier_stage = explain
        .split("Stage s")
        .find(|s| s.contains("projection=[s_suppkey, s_nationkey]"))
        .unwrap_or_else(|| panic!("no stage scans supplier:\n{explain}"));
    assert!(
        supplier_stage.contains("after key filter of")
            && supplier_stage.contains("KeyFilterExec: keys=[s_nationkey"),
        "the nation filter is not applied where supplier is scanned:\n{explain}"
    );
    answers_right_with_rows_dropped(&engine, &data.path, 7).await;
}

/// An aggregation finished in a join's own stage and thinned by a filter
/// (TPC-H Q18's `o_orderkey IN (SELECT l_orderkey ... GROUP BY l_orderkey
/// HAVING sum(l_quantity) > 300)`, its semi join partitioned as at scale)
/// gets a stage of its own, which publishes the keys left: the orders and
/// lineitem scans then shuffle the rows of those few orders only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_aggregation_in_a_join_stage_publishes_its_keys() {
    let data = sf01();
    let engine = planned_as_sf1000(&data.path).await;
    let sql = squall_tpch::query(18).unwrap();
    let explain = squall_csv(&engine, &format!("explain {sql}")).await;
    assert!(
        explain.contains("join_type=RightSemi") && !explain.contains("mode=broadcast"),
        "the semi join is not partitioned:\n{explain}"
    );
    let having = explain
        .split("Stage s")
        .find(|s| s.contains("FilterExec: sum(lineitem.l_quantity)"))
        .unwrap_or_else(|| panic!("no stage filters the groups:\n{explain}"));
    assert!(
        having.contains("publishes key filter on [l_orderkey"),
        "the filtered groups publish no keys:\n{explain}"
    );
    let filtered_scans = explain
        .split("Stage s")
        .filter(|s| s.contains("[scan") && s.contains("KeyFilterExec"))
        .count();
    assert_eq!(filtered_scans, 2, "orders and lineitem scans:\n{explain}");
    answers_right_with_rows_dropped(&engine, &data.path, 18).await;
}

/// A join side built from other stages' outputs publishes through the
/// smallest of them: TPC-H Q17 planned as at scale joins parts with their
/// line items (both shuffled) in the stage that also finishes the average
/// quantity per part, so no stage's output is that side. The parts' stage
/// publishes its keys once, and both line-item scans apply them: the one
/// joined with the parts and the one aggregated per part (lineitem rows of
/// other parts dropped before the partial aggregation, not shuffled).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_side_built_from_stages_publishes_through_the_smallest() {
    let data = sf01();
    let engine = planned_as_sf1000(&data.path).await;
    let sql = squall_tpch::query(17).unwrap();
    let explain = squall_csv(&engine, &format!("explain {sql}")).await;
    let stages: Vec<&str> = explain.split("Stage s").collect();
    let part = stages
        .iter()
        .find(|s| s.contains("projection=[p_partkey, p_brand, p_container]"))
        .unwrap_or_else(|| panic!("no stage scans part:\n{explain}"));
    assert!(
        part.contains("publishes key filter on [p_partkey"),
        "the parts publish no keys:\n{explain}"
    );
    let lineitem_scans: Vec<&&str> = stages
        .iter()
        .filter(|s| s.contains("[scan") && s.contains("projection=[l_partkey"))
        .collect();
    assert_eq!(lineitem_scans.len(), 2, "two line-item scans:\n{explain}");
    for s in &lineitem_scans {
        assert!(
            s.contains("KeyFilterExec: keys=[l_partkey"),
            "a line-item scan applies no filter:\n{explain}"
        );
    }
    let aggregated = lineitem_scans
        .iter()
        .find(|s| s.contains("AggregateExec: mode=Partial"))
        .unwrap_or_else(|| panic!("no line-item scan aggregates:\n{explain}"));
    let (agg_at, filter_at) = (
        aggregated.find("AggregateExec").unwrap(),
        aggregated.find("KeyFilterExec").unwrap(),
    );
    assert!(
        agg_at < filter_at,
        "the filter is not below the partial aggregation:\n{explain}"
    );
    answers_right_with_rows_dropped(&engine, &data.path, 17).await;
}

/// The same shape beyond TPC-H's own queries: orders above one and a half
/// times their customer's average, for the customers of one segment. The
/// customers' stage publishes; both orders scans (the one joined with the
/// customers and the one averaged per customer) apply it, and the answer
/// is DataFusion's, with filters on and off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_group_average_joined_back_is_filtered_on_both_scans() {
    let data = sf01();
    let engine = planned_as_sf1000(&data.path).await;
    let sql = "select count(*), sum(o.o_totalprice) from customer c join orders o \
               on o.o_custkey = c.c_custkey where c.c_mktsegment = 'BUILDING' \
               and o.o_totalprice > (select 1.5 * avg(o2.o_totalprice) from orders o2 \
               where o2.o_custkey = c.c_custkey)";
    let explain = squall_csv(&engine, &format!("explain {sql}")).await;
    let filtered_orders = explain
        .split("Stage s")
        .filter(|s| {
            s.contains("[scan")
                && s.contains("projection=[o_custkey, o_totalprice]")
                && s.contains("KeyFilterExec: keys=[o_custkey")
        })
        .count();
    assert_eq!(filtered_orders, 2, "both orders scans filtered:\n{explain}");
    let reference = single_node(&data.path).await;
    let expected = single_node_csv(&reference, sql).await;
    let r = engine.sql(sql).await.unwrap();
    assert!(
        r.profile.clone().unwrap().bloom_rows_dropped > 0,
        "no row dropped"
    );
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert_same("filters on vs DataFusion", &expected, &actual, sql);
}
