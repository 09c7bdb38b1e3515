use super::*;

use arrow::util::pretty::pretty_format_batches;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::displayable;
use datafusion::prelude::{CsvReadOptions, SessionContext};

/// Customers and orders, q22's shape: customers without orders whose balance
/// is above the average. The tables are CSV files, which have no
/// statistics, so DataFusion cannot tell which side of a join is smaller.
async fn context(rules: bool) -> (SessionContext, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let n = 2_000i64;
    for (name, rows) in [
        (
            "customers",
            (0..n)
                .map(|i| {
                    let balance = if i % 7 == 0 {
                        String::new()
                    } else {
                        ((i * 37) % 1000 - 100).to_string()
                    };
                    format!("{i},{}-{i},{balance}\n", 10 + i % 20)
                })
                .collect::<Vec<_>>(),
        ),
        (
            "orders",
            (0..n)
                .filter(|i| i % 3 == 0)
                .map(|i| format!("{i}\n"))
                .collect(),
        ),
    ] {
        let table = dir.path().join(name);
        std::fs::create_dir(&table).unwrap();
        let header = if name == "customers" {
            "c_id,c_phone,c_balance\n"
        } else {
            "o_cust\n"
        };
        for (part, chunk) in rows.chunks(500).enumerate() {
            std::fs::write(
                table.join(format!("{part}.csv")),
                format!("{header}{}", chunk.concat()),
            )
            .unwrap();
        }
    }
    // squall's planning settings (uncorrelated scalar subqueries as joins).
    let config = crate::engine::session_config(&[])
        .unwrap()
        .with_target_partitions(4);
    let mut builder = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features();
    if rules {
        builder = builder.with_physical_optimizer_rules(physical_optimizer_rules());
    }
    let ctx = SessionContext::new_with_state(builder.build());
    for name in ["customers", "orders"] {
        let path = dir.path().join(name);
        ctx.register_csv(name, path.to_str().unwrap(), CsvReadOptions::new())
            .await
            .unwrap();
    }
    (ctx, dir)
}

const QUERIES: &[&str] = &[
    "SELECT substr(c_phone, 1, 2) AS code, count(*) AS n, sum(c_balance) AS total \
     FROM customers WHERE NOT EXISTS (SELECT 1 FROM orders WHERE o_cust = c_id) \
     AND c_balance > (SELECT avg(c_balance) FROM customers WHERE c_balance > 0) \
     GROUP BY code ORDER BY code",
    "SELECT c_id, c_balance FROM customers WHERE c_id NOT IN (SELECT o_cust FROM orders) \
     AND c_balance >= (SELECT max(c_balance) - 20 FROM customers) ORDER BY c_id",
    // The scalar side is empty: no row passes.
    "SELECT count(*) FROM customers WHERE NOT EXISTS (SELECT 1 FROM orders WHERE o_cust = c_id) \
     AND c_balance > (SELECT max(c_balance) FROM customers WHERE c_id < 0)",
];

async fn physical_plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    let frame = ctx.sql(sql).await.unwrap();
    frame.create_physical_plan().await.unwrap()
}

/// The nested-loop joins of `sql`'s physical plan, as (left, right) at most one row.
async fn nested_loop_sides(ctx: &SessionContext, sql: &str) -> Vec<(bool, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![physical_plan(ctx, sql).await];
    while let Some(p) = stack.pop() {
        if let Some(j) = p.downcast_ref::<NestedLoopJoinExec>() {
            out.push((at_most_one_row(j.left()), at_most_one_row(j.right())));
        }
        stack.extend(p.children().into_iter().cloned());
    }
    out
}

async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test]
async fn the_one_row_side_is_built_and_the_rows_are_the_same() {
    let ((plain, _a), (ruled, _b)) = (context(false).await, context(true).await);
    for sql in QUERIES {
        // Without the rule, DataFusion keeps the big side as the build side
        // (its statistics are unknown): the case the rule is for.
        let before = nested_loop_sides(&plain, sql).await;
        assert!(before.contains(&(false, true)), "{sql}: {before:?}");
        let sides = nested_loop_sides(&ruled, sql).await;
        assert!(
            !sides.is_empty() && sides.iter().all(|s| *s == (true, false)),
            "{sql}: {sides:?}"
        );
        assert_eq!(rows(&plain, sql).await, rows(&ruled, sql).await, "{sql}");
    }
}

#[tokio::test]
async fn a_join_with_two_big_sides_is_left_alone() {
    let (ctx, _dir) = context(true).await;
    let sql =
        "SELECT count(*) FROM customers a JOIN customers b ON a.c_balance < b.c_balance - 990";
    let plan = physical_plan(&ctx, sql).await;
    let text = displayable(plan.as_ref()).indent(true).to_string();
    assert!(text.contains("NestedLoopJoinExec"), "{text}");
    assert_eq!(
        rows(&ctx, sql).await,
        rows(&context(false).await.0, sql).await
    );
}
