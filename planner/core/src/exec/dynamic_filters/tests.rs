//! Tests of run-time filters inside a task: the same rows with and without
//! them (every join type, NULL keys included), rows removed where they would
//! go into a hash table, and none removed along a chain of probes.

use arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::{collect, displayable};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

use super::*;

/// A session planned like squall's: dynamic filters off, 4 partitions.
fn planning_config() -> SessionConfig {
    let mut config = SessionConfig::new().with_target_partitions(4);
    let opts = config.options_mut();
    opts.optimizer.enable_dynamic_filter_pushdown = false;
    opts.optimizer.enable_join_dynamic_filter_pushdown = false;
    opts.optimizer.enable_topk_dynamic_filter_pushdown = false;
    opts.optimizer.enable_aggregate_dynamic_filter_pushdown = false;
    opts.optimizer.repartition_file_min_size = 0;
    config
}

/// Parquet tables in `dir`: `customer` (c_key, c_group), `orders` (o_key,
/// o_cust, o_price), `lines` (l_order, l_qty), `picks` (p_key, NULLs
/// included), written in several row groups.
async fn tables(dir: &std::path::Path) -> SessionContext {
    let writer = SessionContext::new();
    let tables = [
        (
            "customer",
            "select value as c_key, value % 7 as c_group from generate_series(1, 3000)",
        ),
        (
            "orders",
            "select value as o_key, (value * 13) % 3000 + 1 as o_cust, value % 1000 as o_price \
             from generate_series(1, 40000)",
        ),
        (
            "lines",
            "select value / 4 + 1 as l_order, value % 50 as l_qty from generate_series(0, 159999)",
        ),
        (
            "picks",
            "select case when value % 11 = 0 then null else value * 97 end as p_key \
             from generate_series(1, 300)",
        ),
    ];
    let mut props = datafusion::config::TableParquetOptions::default();
    props.global.max_row_group_size = 4096;
    for (name, sql) in tables {
        let path = dir.join(name);
        std::fs::create_dir_all(&path).unwrap();
        writer
            .sql(sql)
            .await
            .unwrap()
            .write_parquet(
                path.join("part-0.parquet").to_str().unwrap(),
                datafusion::dataframe::DataFrameWriteOptions::new(),
                Some(props.clone()),
            )
            .await
            .unwrap();
    }
    let ctx = SessionContext::new_with_config(planning_config());
    for (name, _) in tables {
        ctx.register_parquet(
            name,
            dir.join(name).to_str().unwrap(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
    }
    ctx
}

/// The rows of `sql`, sorted, as text; and, with filters linked, the rows
/// the plan's [`DynamicFilterExec`]s removed.
async fn run(ctx: &SessionContext, sql: &str, linked: bool) -> (String, usize, String) {
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let mut config = planning_config();
    let plan = if linked {
        enable_dynamic_filters(config.options_mut());
        link_dynamic_filters(plan, config.options()).unwrap()
    } else {
        plan
    };
    let task = SessionContext::new_with_config_rt(config, ctx.runtime_env()).task_ctx();
    let batches = collect(Arc::clone(&plan), task).await.unwrap();
    let mut lines: Vec<String> = pretty_format_batches(&batches)
        .unwrap()
        .to_string()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    let mut removed = 0;
    plan.apply(|node| {
        if node.downcast_ref::<DynamicFilterExec>().is_some() {
            removed += node
                .metrics()
                .and_then(|m| m.sum_by_name("rows_removed"))
                .map_or(0, |v| v.as_usize());
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    let shown = displayable(plan.as_ref()).indent(true).to_string();
    (lines.join("\n"), removed, shown)
}

#[tokio::test]
async fn filtered_plans_give_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = tables(dir.path()).await;
    for sql in [
        "select c_group, count(*), sum(o_price) from orders join customer on o_cust = c_key \
         where c_group = 3 group by c_group",
        "select count(*), sum(l_qty) from lines join orders on l_order = o_key where o_price < 5",
        "select count(*) from orders where o_key in (select p_key from picks)",
        "select count(*) from orders where o_key not in (select p_key from picks)",
        "select count(*) from orders where not exists \
         (select 1 from picks where p_key = o_key)",
        "select count(*), count(p_key) from orders left join picks on o_key = p_key",
        "select count(*), count(o_key) from orders right join picks on o_key = p_key",
        "select count(*), count(o_key), count(p_key) from orders full join picks on o_key = p_key",
        "select o_key, o_price from orders join picks on o_key = p_key order by o_price desc, o_key limit 7",
        "select c_key, o_key, sum(l_qty) as q from customer join orders on c_key = o_cust \
         join lines on o_key = l_order where o_key in \
         (select l_order from lines group by l_order having sum(l_qty) > 180) \
         group by c_key, o_key order by q desc, o_key limit 10",
    ] {
        let (plain, _, _) = run(&ctx, sql, false).await;
        let (filtered, _, plan) = run(&ctx, sql, true).await;
        assert_eq!(plain, filtered, "{sql}\n{plan}");
    }
}

#[tokio::test]
async fn rows_bound_for_a_hash_table_are_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = tables(dir.path()).await;
    // Few orders pass the subquery; DataFusion's plan joins orders to the
    // lines before the semi join, so without the filter every order goes
    // into that join's hash table (or through its probe into another).
    let sql = "select o_key, sum(l_qty) from orders join lines on o_key = l_order \
               where o_key in (select l_order from lines group by l_order \
               having sum(l_qty) > 180) group by o_key";
    let (plain, none, _) = run(&ctx, sql, false).await;
    let (filtered, removed, plan) = run(&ctx, sql, true).await;
    assert_eq!(plain, filtered);
    assert_eq!(none, 0);
    assert!(plan.contains("DynamicFilterExec"), "{plan}");
    assert!(removed > 1_000, "{removed} rows removed\n{plan}");
}

#[tokio::test]
async fn a_probe_straight_into_its_join_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = tables(dir.path()).await;
    // The lines are only probed against the orders' keys: filtering them
    // first would look every key up twice. The filter prunes row groups.
    let sql = "select count(*), sum(l_qty) from lines join orders on l_order = o_key \
               where o_price = 7";
    let (_, removed, plan) = run(&ctx, sql, true).await;
    assert_eq!(removed, 0, "{plan}");
    assert!(!plan.contains("DynamicFilterExec"), "{plan}");
    assert!(plan.contains("DynamicFilter ["), "{plan}");
}

#[test]
fn a_join_over_other_partitions_publishes_no_filter() {
    // A partitioned join whose inputs are not this task's hash
    // repartitions (squall's exchange partitions) keeps no filter: its
    // routing of probe rows would not match their partitions.
    use datafusion::common::{JoinType, NullEquality};
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_plan::empty::EmptyExec;
    use datafusion::physical_plan::joins::utils::JoinOn;
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("k", arrow::datatypes::DataType::Int64, true),
    ]));
    let side = || -> Arc<dyn ExecutionPlan> {
        Arc::new(EmptyExec::new(Arc::clone(&schema)).with_partitions(4))
    };
    let on: JoinOn = vec![(
        Arc::new(Column::new("k", 0)) as _,
        Arc::new(Column::new("k", 0)) as _,
    )];
    let join = HashJoinExec::try_new(
        side(),
        side(),
        on,
        None,
        &JoinType::Inner,
        None,
        PartitionMode::Partitioned,
        NullEquality::NullEqualsNothing,
        false,
    )
    .unwrap();
    let plan: Arc<dyn ExecutionPlan> = Arc::new(join);
    assert!(!hash_partitioned_here(plan.children()[0]));
    let mut config = planning_config();
    enable_dynamic_filters(config.options_mut());
    let linked = link_dynamic_filters(Arc::clone(&plan), config.options()).unwrap();
    assert!(linked.dynamic_expressions_produced().is_empty());
    // Over this task's own hash repartitions it may.
    let hashed = |input: Arc<dyn ExecutionPlan>| -> Arc<dyn ExecutionPlan> {
        Arc::new(
            RepartitionExec::try_new(
                input,
                Partitioning::Hash(vec![Arc::new(Column::new("k", 0))], 4),
            )
            .unwrap(),
        )
    };
    assert!(hash_partitioned_here(&hashed(side())));
    let over_hashed = plan
        .replace_children(
            vec![hashed(side()), hashed(side())],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
        .unwrap();
    assert!(
        over_hashed
            .children()
            .into_iter()
            .all(hash_partitioned_here)
    );
}
