//! [`DeepTopKAsSort`]: a sort that keeps its first `k` rows for a large `k`
//! (`ORDER BY ... LIMIT 10 OFFSET 1000000`, a client paging deep into a
//! sorted result) sorts its input whole and then takes `k` rows.
//!
//! DataFusion plans any sort under a limit as a top-k heap. Each time the
//! rows the heap refers to grow past twice `k`, it sorts and copies its `k`
//! rows into a new batch: for small `k` that is rare and cheap, but for
//! `k` in the millions it sorts millions of rows again and again (SF1
//! lineitem by `l_comment`, offset 1,000,000: 16 s against DuckDB's 2 s;
//! offset 100,000 already 2 s). A full sort (which spills when it must)
//! and a limit on each of its partitions give the same rows.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::limit::LocalLimitExec;
use datafusion::physical_plan::sorts::sort::SortExec;

/// The largest `k` left to DataFusion's top-k heap. Measured on the SF1
/// query above (release build): `k` = 10,000 0.47 s top-k / 1.29 s sorted
/// whole, 100,000 1.54 / 1.29 s, 1,000,000 16.0 / 2.1 s; under this the
/// heap also holds less memory (280-330 MB against 610-770 MB).
pub const TOPK_MAX_ROWS: usize = 100_000;

/// The rule; see the module docs.
#[derive(Debug, Default)]
pub struct DeepTopKAsSort;

impl PhysicalOptimizerRule for DeepTopKAsSort {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(sort) = node.downcast_ref::<SortExec>() else {
                return Ok(Transformed::no(node));
            };
            match sort.fetch() {
                Some(k) if k > TOPK_MAX_ROWS => {
                    let whole = Arc::new(sort.with_fetch(None));
                    Ok(Transformed::yes(Arc::new(LocalLimitExec::new(whole, k))))
                }
                _ => Ok(Transformed::no(node)),
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "squall_deep_topk_as_sort"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
    use datafusion::physical_plan::empty::EmptyExec;

    fn sort(fetch: Option<usize>) -> Arc<dyn ExecutionPlan> {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let input = Arc::new(EmptyExec::new(Arc::clone(&schema)));
        let order = LexOrdering::new(vec![PhysicalSortExpr::new_default(
            col("x", &schema).unwrap(),
        )])
        .unwrap();
        Arc::new(SortExec::new(order, input).with_fetch(fetch))
    }

    #[test]
    fn only_sorts_keeping_more_than_the_heap_limit_sort_whole() {
        let rule = DeepTopKAsSort;
        let config = ConfigOptions::default();
        for kept in [sort(None), sort(Some(10)), sort(Some(TOPK_MAX_ROWS))] {
            let out = rule.optimize(Arc::clone(&kept), &config).unwrap();
            assert!(Arc::ptr_eq(&out, &kept));
        }
        let out = rule
            .optimize(sort(Some(TOPK_MAX_ROWS + 1)), &config)
            .unwrap();
        let limit = out
            .downcast_ref::<LocalLimitExec>()
            .expect("a limit on top");
        assert_eq!(limit.fetch(), TOPK_MAX_ROWS + 1);
        let whole = limit
            .input()
            .downcast_ref::<SortExec>()
            .expect("a sort below");
        assert_eq!(whole.fetch(), None);
    }
}
