//! The guard on an outer join's padded sides: what it reports, where the
//! rule puts it, and that it survives the plan codec.

use arrow::array::Int64Array;
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_expr::expressions::col;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::physical_plan::displayable;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::*;

fn table(names: [&str; 2], rows: &[(i64, i64)]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new(names[0], DataType::Int64, true),
        Field::new(names[1], DataType::Int64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .unwrap()
}

/// A context planning with the rule in front of DataFusion's, over
/// `t(a, b)` and `u(a, c)`.
async fn context(guarded: bool) -> SessionContext {
    let mut rules = PhysicalOptimizer::new().rules;
    if guarded {
        rules.insert(0, Arc::new(GuardNullableSides));
    }
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(SessionConfig::new().with_target_partitions(3))
        .with_physical_optimizer_rules(rules)
        .build();
    let ctx = SessionContext::new_with_state(state);
    ctx.register_batch("t", table(["a", "b"], &[(1, 10), (2, 20), (3, 30)]))
        .unwrap();
    ctx.register_batch("u", table(["a", "c"], &[(1, 1), (2, 2), (4, 1)]))
        .unwrap();
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

fn find<'a>(plan: &'a Arc<dyn ExecutionPlan>, name: &str) -> Vec<&'a Arc<dyn ExecutionPlan>> {
    let mut found = Vec::new();
    if plan.name() == name {
        found.push(plan);
    }
    for child in plan.children() {
        found.extend(find(child, name));
    }
    found
}

#[tokio::test]
async fn it_reports_no_constants_and_keeps_the_rest() {
    let ctx = context(false).await;
    let filtered = plan(&ctx, "select a, b from t where b = 20 and a = b - 18").await;
    let schema = filtered.schema();
    let b = col("b", &schema).unwrap();
    assert!(
        filtered
            .equivalence_properties()
            .is_expr_constant(&b)
            .is_some(),
        "the filter makes b constant: {}",
        filtered.equivalence_properties()
    );
    let guard: Arc<dyn ExecutionPlan> =
        Arc::new(NullableSideExec::try_new(Arc::clone(&filtered)).unwrap());
    let eq = guard.equivalence_properties();
    assert!(eq.is_expr_constant(&b).is_none(), "{eq}");
    assert_eq!(guard.schema(), filtered.schema());
    assert_eq!(
        guard.output_partitioning().partition_count(),
        filtered.output_partitioning().partition_count()
    );
}

#[tokio::test]
async fn the_rule_guards_each_padded_side_and_nothing_else() {
    let ctx = context(true).await;
    for (sql, guards) in [
        (
            "select t.b, u.c from t left join u on t.a = u.a and u.c = 1",
            1,
        ),
        (
            "select t.b, u.c from t right join u on t.a = u.a and t.b = 10",
            1,
        ),
        ("select t.b, u.c from t full join u on t.a = u.a", 2),
        ("select t.b, u.c from t join u on t.a = u.a", 0),
        ("select t.b from t where a in (select a from u)", 0),
    ] {
        let plan = plan(&ctx, sql).await;
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert_eq!(
            find(&plan, "NullableSideExec").len(),
            guards,
            "{sql}\n{text}"
        );
    }
}

#[tokio::test]
async fn a_padded_sides_filter_no_longer_streams_the_groups_above() {
    let sql = "select u.c, count(*) from t left join u on t.a = u.a and u.c = 1 \
               group by u.c order by u.c";
    let unguarded = plan(&context(false).await, sql).await;
    let text = displayable(unguarded.as_ref()).indent(true).to_string();
    assert!(
        text.contains("ordering_mode=Sorted"),
        "DataFusion's own plan, as this guard assumes it: {text}"
    );
    let ctx = context(true).await;
    let guarded = plan(&ctx, sql).await;
    let text = displayable(guarded.as_ref()).indent(true).to_string();
    assert!(!text.contains("ordering_mode=Sorted"), "{text}");
    assert!(text.contains("SortExec"), "the ORDER BY is kept: {text}");
    let batches = datafusion::physical_plan::collect(guarded, ctx.task_ctx())
        .await
        .unwrap();
    let csv = arrow::util::pretty::pretty_format_batches(&batches)
        .unwrap()
        .to_string();
    // t's three rows: a = 1 matches u(1, 1); 2 and 3 match nothing with c = 1.
    let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows[1..], ["| 1 | 1        |", "|   | 2        |"], "{csv}");
}

#[tokio::test]
async fn it_survives_the_plan_codec() {
    let ctx = context(true).await;
    let plan = plan(
        &ctx,
        "select t.b, u.c from t left join u on t.a = u.a and u.c = 1",
    )
    .await;
    // Memory tables are not encodable; a plan over an empty source is.
    let schema = Arc::new(Schema::new(vec![Field::new("c", DataType::Int64, true)]));
    let leaf: Arc<dyn ExecutionPlan> =
        Arc::new(datafusion::physical_plan::empty::EmptyExec::new(schema));
    let guarded: Arc<dyn ExecutionPlan> = Arc::new(NullableSideExec::try_new(leaf).unwrap());
    let bytes = crate::codec::encode_plan(Arc::clone(&guarded)).unwrap();
    let decoded = crate::codec::decode_plan(&bytes, &ctx.task_ctx()).unwrap();
    assert_eq!(decoded.name(), "NullableSideExec");
    assert_eq!(decoded.schema(), guarded.schema());
    assert!(!find(&plan, "NullableSideExec").is_empty());
}
