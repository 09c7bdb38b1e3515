//! Tests of pacing: paced joins give the same rows as unpaced ones (probe
//! slices included, for every join type), and a nested-loop join that
//! matches nothing yields to its runtime while it runs.

use std::time::Duration;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::{collect, displayable};
use datafusion::prelude::{SessionConfig, SessionContext};

use super::*;

/// A table `name` of one Int64 column `col` holding `0..rows`, in batches of 8192.
fn table(ctx: &SessionContext, name: &str, col: &str, rows: i64) {
    let schema = Arc::new(Schema::new(vec![Field::new(col, DataType::Int64, false)]));
    let batches: Vec<RecordBatch> = (0..rows)
        .step_by(8192)
        .map(|start| {
            let values = Int64Array::from_iter_values(start..(start + 8192).min(rows));
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(values)]).unwrap()
        })
        .collect();
    let mem = MemTable::try_new(schema, vec![batches]).unwrap();
    ctx.register_table(name, Arc::new(mem)).unwrap();
}

fn context(left_rows: i64, right_rows: i64) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    table(&ctx, "a", "x", left_rows);
    table(&ctx, "b", "y", right_rows);
    ctx
}

async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

#[tokio::test]
async fn paced_joins_give_the_same_rows() {
    let ctx = context(300, 500);
    for sql in [
        "select x, y from a join b on x + y < 40 order by x, y",
        "select x, y from a left join b on x > y + 250 order by x, y",
        "select x, y from a right join b on x > y - 3 and x < y order by x, y",
        "select x, y from a full join b on x = y * 7 + 1 or x > 298 order by x, y",
        "select count(*) from a left anti join b on x > y + 100",
        "select count(*), sum(x * y) from a, b where x < 5",
        "select count(*) from a join b on x = y",
    ] {
        let unpaced = collect(plan(&ctx, sql).await, ctx.task_ctx())
            .await
            .unwrap();
        // 7 pairs per slice: probe batches cut into slices of one row.
        let paced = pace_plan_with(plan(&ctx, sql).await, 7).unwrap();
        let shown = displayable(paced.as_ref()).indent(true).to_string();
        assert!(shown.contains("PaceExec"), "{sql}: not paced:\n{shown}");
        let paced = collect(paced, ctx.task_ctx()).await.unwrap();
        assert_eq!(
            pretty_format_batches(&paced).unwrap().to_string(),
            pretty_format_batches(&unpaced).unwrap().to_string(),
            "{sql}"
        );
    }
}

#[tokio::test]
async fn a_nested_loop_join_slices_its_probe_side_by_the_build_rows() {
    let ctx = context(1000, 8192);
    let sql = "select count(*) from a, b where x + y < 0";
    let paced = pace_plan_with(plan(&ctx, sql).await, 100_000).unwrap();
    let shown = displayable(paced.as_ref()).indent(true).to_string();
    assert!(shown.contains("NestedLoopJoinExec"), "{shown}");
    assert!(shown.contains("CountRowsExec"), "{shown}");
    assert!(
        shown.contains("probe slices of at most 100000 pairs"),
        "{shown}"
    );
    let out = collect(paced, ctx.task_ctx()).await.unwrap();
    assert_eq!(
        out[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0),
        0
    );
}

#[tokio::test]
async fn a_nested_loop_join_that_matches_nothing_yields_while_it_runs() {
    // 50 k × 8 k pairs in one probe batch: unpaced, the join runs them all in
    // one poll and a timer of this (single-threaded) runtime cannot fire
    // before the join is done.
    let ctx = context(50_000, 8192);
    let sql = "select count(*) from a, b where x + y < 0";
    let paced = pace_plan(plan(&ctx, sql).await).unwrap();
    let out = run_checking_it_yields(&ctx, paced, "the join").await;
    assert_eq!(out[0].num_rows(), 1);
}

/// `plan`'s rows, after checking that a timer of this (single-threaded)
/// runtime fires while it runs: it yields.
async fn run_checking_it_yields(
    ctx: &SessionContext,
    plan: Arc<dyn ExecutionPlan>,
    what: &str,
) -> Vec<RecordBatch> {
    let run = collect(plan, ctx.task_ctx());
    tokio::pin!(run);
    let timer_fired = tokio::select! {
        biased;
        _ = tokio::time::sleep(Duration::from_millis(20)) => true,
        r = &mut run => { r.unwrap(); false }
    };
    assert!(timer_fired, "{what} ran to its end without yielding");
    run.await.unwrap()
}

/// The rows of `sql` run unpaced, as a table.
async fn unpaced_rows(ctx: &SessionContext, sql: &str) -> String {
    let rows = collect(plan(ctx, sql).await, ctx.task_ctx()).await.unwrap();
    pretty_format_batches(&rows).unwrap().to_string()
}

#[tokio::test]
async fn an_unnest_of_a_long_array_yields_while_it_runs() {
    // One input row, 20 million output rows: unpaced, the aggregate above
    // pulls every unnested batch in one poll, since the unnest never polls
    // its input again.
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    let sql = "select count(*), sum(x) from (select unnest(range(0, 20000000)) as x)";
    let paced = pace_plan(plan(&ctx, sql).await).unwrap();
    let shown = displayable(paced.as_ref()).indent(true).to_string();
    assert!(shown.contains("PaceExec"), "not paced:\n{shown}");
    let out = run_checking_it_yields(&ctx, paced, "the unnest").await;
    assert_eq!(
        pretty_format_batches(&out).unwrap().to_string(),
        unpaced_rows(&ctx, sql).await
    );
}

#[tokio::test]
async fn windows_sorts_and_aggregates_yield_between_their_input_batches() {
    // Every row of a partition is a peer of the others, so the window holds
    // the partition until it ends and draws the sort's batches, always
    // ready, one poll after another, its work per batch growing with the
    // partition: unpaced, it yielded only when tokio's budget of 128 polls
    // ran out, seconds apart on a large partition. Each loop over an input
    // (the window's, the sort's, the aggregate's, the task's own) now yields
    // once it has run 10 ms; the rows are the same.
    let ctx = SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(64),
    );
    table(&ctx, "a", "x", 20_000);
    let sql = "select count(*), max(m) from \
               (select max(x) over (partition by k order by j desc) as m from \
               (select x, x % 2 as k, x % 2 + 1 as j from a))";
    let paced = pace_plan(plan(&ctx, sql).await).unwrap();
    let shown = displayable(paced.as_ref()).indent(true).to_string();
    let lines: Vec<&str> = shown.lines().map(str::trim_start).collect();
    for consumer in ["AggregateExec", "BoundedWindowAggExec", "SortExec"] {
        let at = lines
            .iter()
            .position(|l| l.starts_with(consumer))
            .unwrap_or_else(|| panic!("no {consumer}:\n{shown}"));
        assert!(
            lines[at + 1].starts_with("PaceExec"),
            "{consumer}'s input not paced:\n{shown}"
        );
    }
    assert!(lines[0].starts_with("PaceExec"), "{shown}");
    let out = run_checking_it_yields(&ctx, paced, "the window").await;
    assert_eq!(
        pretty_format_batches(&out).unwrap().to_string(),
        unpaced_rows(&ctx, sql).await
    );
}
