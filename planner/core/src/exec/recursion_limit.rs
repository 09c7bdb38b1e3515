//! A ceiling on the iterations of a recursive query (`WITH RECURSIVE`).
//!
//! DataFusion runs a recursive term again as long as its last run made
//! rows, so a recursion that never stops making them (`select n + 1 from
//! t` without a bound) ran until the statement's timeout, by default never,
//! in one task no retry could end otherwise. Each recursive term is wrapped
//! in a [`RecursionLimitExec`] that counts its runs; past
//! `squall.query.max_recursion_depth` the query fails naming the query
//! name and the setting, as Trino's `max_recursion_depth` does (its limit
//! is 10; PostgreSQL and DuckDB have none). The node wraps plans where
//! they run (a worker's task, a statement answered in the coordinator),
//! like the pacing nodes: it is never planned or shipped.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::recursive_query::RecursiveQueryExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

/// How the error of a recursion past the limit starts (a data failure:
/// another attempt recurses as deep).
pub const RECURSION_TOO_DEEP: &str = "recursion depth limit exceeded";

/// `plan` with the recursive term of each recursive query limited to
/// `max_depth` runs (0 = no limit).
pub fn limit_recursion(
    plan: Arc<dyn ExecutionPlan>,
    max_depth: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    if max_depth == 0 {
        return Ok(plan);
    }
    let limited = plan.transform_up(|node| {
        let Some(recursive) = node.downcast_ref::<RecursiveQueryExec>() else {
            return Ok(Transformed::no(node));
        };
        let term = Arc::new(RecursionLimitExec {
            input: Arc::clone(recursive.recursive_term()),
            name: recursive.name().to_string(),
            max_depth,
            runs: Arc::new(AtomicUsize::new(0)),
        });
        let limited = RecursiveQueryExec::try_new(
            recursive.name().to_string(),
            node.schema(),
            Arc::clone(recursive.static_term()),
            term,
            recursive.is_distinct(),
        )?;
        Ok(Transformed::yes(Arc::new(limited) as _))
    })?;
    Ok(limited.data)
}

/// Counts the runs of the recursive term it wraps and fails the one past
/// the limit. The count survives the term's reset between iterations
/// (`reset_state` rebuilds the node through `with_new_children`).
#[derive(Debug)]
pub struct RecursionLimitExec {
    input: Arc<dyn ExecutionPlan>,
    name: String,
    max_depth: usize,
    runs: Arc<AtomicUsize>,
}

impl DisplayAs for RecursionLimitExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "RecursionLimitExec: {} runs of {}",
            self.max_depth, self.name
        )
    }
}

impl ExecutionPlan for RecursionLimitExec {
    fn name(&self) -> &str {
        "RecursionLimitExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "RecursionLimitExec takes one child".into(),
            ));
        }
        Ok(Arc::new(Self {
            input: children.remove(0),
            name: self.name.clone(),
            max_depth: self.max_depth,
            runs: Arc::clone(&self.runs),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let runs = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        if runs > self.max_depth {
            return Err(DataFusionError::Execution(format!(
                "{RECURSION_TOO_DEEP}: the recursive query {} still made rows after {} \
                 iterations (squall.query.max_recursion_depth; 0 = no limit): a recursion \
                 needs a condition that ends it, such as WHERE n < 100 in its recursive part",
                self.name, self.max_depth
            )));
        }
        self.input.execute(partition, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn run(sql: &str, max_depth: usize) -> Result<String> {
        let ctx = SessionContext::new();
        let df = ctx.sql(sql).await?;
        let task = Arc::new(df.task_ctx());
        let plan = limit_recursion(df.create_physical_plan().await?, max_depth)?;
        let batches = datafusion::physical_plan::collect(plan, task).await?;
        Ok(arrow::util::pretty::pretty_format_batches(&batches)?.to_string())
    }

    #[tokio::test]
    async fn a_recursion_past_the_limit_fails_and_one_within_it_answers() {
        let bounded = "with recursive t(n) as (select 1 union all select n + 1 from t where n < 100) \
                       select count(*) c, sum(n) s from t";
        // 99 runs make rows and the 100th makes none.
        let out = run(bounded, 100).await.unwrap();
        assert!(out.contains("| 100 | 5050 |"), "{out}");
        let out = run(bounded, 0).await.unwrap();
        assert!(out.contains("| 100 | 5050 |"), "{out}");
        let e = run(bounded, 99).await.unwrap_err().to_string();
        assert!(
            e.contains(RECURSION_TOO_DEEP) && e.contains("recursive query t ") && e.contains("99"),
            "{e}"
        );
        let endless = "with recursive t(n) as (select 1 union all select n + 1 from t) \
                       select count(*) from t";
        let e = run(endless, 1000).await.unwrap_err().to_string();
        assert!(e.contains("squall.query.max_recursion_depth"), "{e}");
    }
}
