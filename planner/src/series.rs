//! `generate_series` and `range` as tables whose plans a worker decodes as
//! they were planned.
//!
//! DataFusion's series tables plan a `LazyMemoryExec` with the query's
//! projection applied inside it and an ordering declared on it; its plan
//! codec encodes neither (it writes the projected schema beside the
//! unprojected generator), so a worker's decoded plan differed from the
//! planned one: `select * from generate_series(1, 3)` failed planning, and
//! `select count(*) from range(1000000)` failed in every attempt
//! (`number of columns(1) must match number of fields(0)`). These wrappers
//! plan the same generator with neither, and the projection above it.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::memory::LazyMemoryExec;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::prelude::SessionContext;

/// Wrap the session's `generate_series` and `range`, if it has them.
pub fn register(ctx: &SessionContext) {
    for name in ["generate_series", "range"] {
        if let Ok(f) = ctx.table_function(name) {
            ctx.register_udtf(
                name,
                Arc::new(Series {
                    inner: Arc::clone(f.function()),
                }),
            );
        }
    }
}

#[derive(Debug)]
struct Series {
    inner: Arc<dyn TableFunctionImpl>,
}

impl TableFunctionImpl for Series {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        Ok(Arc::new(SeriesTable {
            inner: self.inner.call_with_args(args)?,
        }))
    }
}

#[derive(Debug)]
struct SeriesTable {
    inner: Arc<dyn TableProvider>,
}

#[async_trait]
impl TableProvider for SeriesTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let planned = self.inner.scan(state, None, filters, limit).await?;
        let Some(lazy) = planned.downcast_ref::<LazyMemoryExec>() else {
            return Err(DataFusionError::Internal(format!(
                "a series table planned {}, not a LazyMemoryExec",
                planned.name()
            )));
        };
        let schema = planned.schema();
        let plain: Arc<dyn ExecutionPlan> = Arc::new(LazyMemoryExec::try_new(
            Arc::clone(&schema),
            lazy.generators().clone(),
        )?);
        let Some(columns) = projection else {
            return Ok(plain);
        };
        let exprs = columns.iter().map(|&i| {
            ProjectionExpr::new(
                Arc::new(Column::new(schema.field(i).name(), i)) as _,
                schema.field(i).name().to_string(),
            )
        });
        Ok(Arc::new(ProjectionExec::try_new(exprs, plain)?))
    }
}
