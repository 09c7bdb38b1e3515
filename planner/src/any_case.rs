//! [`LowercaseColumns`]: a catalog table whose files name columns in mixed
//! case (`UserId`, `OrderDate`, as Spark, pandas and most application
//! exports write them), presented with lowercase names, as Trino, Hive and
//! Athena present them.
//!
//! DataFusion folds an unquoted identifier to lowercase and then matches
//! names exactly, so `select UserId from users` and `select userid from
//! users` both failed on a file column `UserId` ("No field named userid"),
//! and only `"UserId"` read it; Trino and DuckDB answer both. Presented
//! lowercase, the column is found however the query writes it unquoted
//! (and quoted in lowercase). A projection above the scan renames the
//! file's columns; filters pushed into the scan, and rows inserted, are
//! written with the file's names. A table whose names would collide once
//! lowercased (`id` and `ID` in one file) keeps its names as they are.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Constraints, Statistics};
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};

/// See the module docs.
#[derive(Debug)]
pub struct LowercaseColumns {
    inner: Arc<dyn TableProvider>,
    schema: SchemaRef,
    /// Lowercase name to the file's name, for the columns that differ.
    file_names: HashMap<String, String>,
}

impl LowercaseColumns {
    /// `inner` presented with lowercase column names; `None` when its
    /// names are lowercase already, or would collide once lowercased.
    pub fn wrap(inner: Arc<dyn TableProvider>) -> Option<Self> {
        let schema = inner.schema();
        let mut file_names = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for field in schema.fields() {
            let lower = field.name().to_lowercase();
            if !seen.insert(lower.clone()) {
                return None;
            }
            if lower != *field.name() {
                file_names.insert(lower, field.name().clone());
            }
        }
        if file_names.is_empty() {
            return None;
        }
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_name(f.name().to_lowercase()))
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        Some(Self {
            inner,
            schema,
            file_names,
        })
    }

    /// `filter` written with the file's column names.
    fn with_file_names(&self, filter: &Expr) -> Result<Expr> {
        filter
            .clone()
            .transform(|e| match e {
                Expr::Column(c) => match self.file_names.get(&c.name) {
                    Some(name) => Ok(Transformed::yes(Expr::Column(
                        datafusion::common::Column::new(c.relation, name),
                    ))),
                    None => Ok(Transformed::no(Expr::Column(c))),
                },
                other => Ok(Transformed::no(other)),
            })
            .map(|t| t.data)
    }

    /// `plan`'s columns renamed by `name` (a projection of columns only).
    fn renamed(
        plan: Arc<dyn ExecutionPlan>,
        name: impl Fn(&str) -> String,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = plan.schema();
        let exprs: Vec<ProjectionExpr> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                ProjectionExpr::new(
                    Arc::new(PhysicalColumn::new(f.name(), i)) as _,
                    name(f.name()),
                )
            })
            .collect();
        Ok(Arc::new(ProjectionExec::try_new(exprs, plan)?))
    }
}

#[async_trait]
impl TableProvider for LowercaseColumns {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.inner.get_table_definition()
    }

    fn get_logical_plan(&self) -> Option<Cow<'_, LogicalPlan>> {
        self.inner.get_logical_plan()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let filters: Vec<Expr> = filters
            .iter()
            .map(|f| self.with_file_names(f))
            .collect::<Result<_>>()?;
        let plan = self.inner.scan(state, projection, &filters, limit).await?;
        Self::renamed(plan, str::to_lowercase)
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let filters: Vec<Expr> = filters
            .iter()
            .map(|f| self.with_file_names(f))
            .collect::<Result<_>>()?;
        self.inner
            .supports_filters_pushdown(&filters.iter().collect::<Vec<_>>())
    }

    /// `INSERT INTO`: the rows go to the files under the files' names.
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = Self::renamed(input, |n| {
            self.file_names
                .get(n)
                .cloned()
                .unwrap_or_else(|| n.to_string())
        })?;
        self.inner.insert_into(state, input, insert_op).await
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;
    use datafusion::datasource::empty::EmptyTable;
    use datafusion::prelude::{col, lit};

    fn table(names: &[&str]) -> Arc<dyn TableProvider> {
        let fields: Vec<Field> = names
            .iter()
            .map(|n| Field::new(*n, DataType::Int64, true))
            .collect();
        Arc::new(EmptyTable::new(Arc::new(Schema::new(fields))))
    }

    #[test]
    fn mixed_case_names_are_presented_lowercase_and_filters_use_the_files_names() {
        assert!(LowercaseColumns::wrap(table(&["a", "b_c"])).is_none());
        assert!(LowercaseColumns::wrap(table(&["id", "ID"])).is_none());
        let t = LowercaseColumns::wrap(table(&["UserId", "name", "Signup Date"])).unwrap();
        let names: Vec<&String> = t.schema.fields().iter().map(|f| f.name()).collect();
        assert_eq!(names, ["userid", "name", "signup date"]);
        let file_column = Expr::Column(datafusion::common::Column::new_unqualified("UserId"));
        let f = t
            .with_file_names(&col("userid").gt(lit(3)).and(col("name").is_null()))
            .unwrap();
        assert_eq!(f, file_column.gt(lit(3)).and(col("name").is_null()));
    }
}
