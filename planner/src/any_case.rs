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
//!
//! Fields of structs (also in lists and maps) are presented lowercase too
//! (`userinfo.name` of a file's `UserInfo.Name`; Trino's and Glue's row
//! fields are lowercase): such a column is cast to its lowercase type above
//! the scan (Arrow casts a struct's fields by position when their names
//! differ; DataFusion's cast refuses, so the cast is squall's
//! `squall_json_cast`, which casts what is not text as Arrow does), and a
//! filter on it is applied there, not in the scan.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
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
    /// The columns (lowercase names) whose struct fields are renamed.
    nested: std::collections::HashSet<String>,
}

/// `t` with the names of its structs' fields lowercase (in lists and maps
/// too); a struct whose names would collide keeps them.
fn lowercase_fields(t: &DataType) -> DataType {
    let field = |f: &Arc<Field>, name: String| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_name(name)
                .with_data_type(lowercase_fields(f.data_type())),
        )
    };
    match t {
        DataType::Struct(fields) => {
            let mut seen = std::collections::HashSet::new();
            let unique = fields.iter().all(|f| seen.insert(f.name().to_lowercase()));
            DataType::Struct(Fields::from(
                fields
                    .iter()
                    .map(|f| {
                        let name = if unique {
                            f.name().to_lowercase()
                        } else {
                            f.name().clone()
                        };
                        field(f, name)
                    })
                    .collect::<Vec<_>>(),
            ))
        }
        DataType::List(f) => DataType::List(field(f, f.name().clone())),
        DataType::LargeList(f) => DataType::LargeList(field(f, f.name().clone())),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f, f.name().clone()), *n),
        DataType::Map(f, sorted) => DataType::Map(field(f, f.name().clone()), *sorted),
        other => other.clone(),
    }
}

impl LowercaseColumns {
    /// The table it presents.
    pub fn inner(&self) -> &Arc<dyn TableProvider> {
        &self.inner
    }

    /// `inner` presented with lowercase column names; `None` when its
    /// names are lowercase already, or would collide once lowercased.
    pub fn wrap(inner: Arc<dyn TableProvider>) -> Option<Self> {
        let schema = inner.schema();
        let mut file_names = HashMap::new();
        let mut nested = std::collections::HashSet::new();
        let mut seen = std::collections::HashSet::new();
        // Names that would collide once lowercased stay as they are (the
        // fields of their structs may still be lowercased).
        let unique = schema
            .fields()
            .iter()
            .all(|f| seen.insert(f.name().to_lowercase()));
        let mut fields = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            let name = if unique {
                f.name().to_lowercase()
            } else {
                f.name().clone()
            };
            if name != *f.name() {
                file_names.insert(name.clone(), f.name().clone());
            }
            let data_type = lowercase_fields(f.data_type());
            if &data_type != f.data_type() {
                nested.insert(name.clone());
            }
            fields.push(f.as_ref().clone().with_name(name).with_data_type(data_type));
        }
        if file_names.is_empty() && nested.is_empty() {
            return None;
        }
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        Some(Self {
            inner,
            schema,
            file_names,
            nested,
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

    /// Whether `filter` reads a column whose struct fields are renamed.
    fn reads_nested(&self, filter: &Expr) -> bool {
        filter
            .column_refs()
            .iter()
            .any(|c| self.nested.contains(&c.name))
    }

    /// `plan`'s columns renamed by `name` and cast to the type `as_type`
    /// gives (a projection of columns, cast where the type differs).
    fn renamed(
        state: &dyn Session,
        plan: Arc<dyn ExecutionPlan>,
        name: impl Fn(&str) -> String,
        as_type: impl Fn(&str) -> Option<DataType>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        use datafusion::physical_expr::ScalarFunctionExpr;
        use datafusion::physical_expr::expressions::Literal;
        use datafusion::scalar::ScalarValue;
        let schema = plan.schema();
        let config = Arc::new(state.config_options().clone());
        let cast = Arc::new(squall_core::trino_udfs::json_cast::json_cast());
        let exprs: Vec<ProjectionExpr> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let column = Arc::new(PhysicalColumn::new(f.name(), i)) as _;
                let expr = match as_type(f.name()) {
                    Some(t) if &t != f.data_type() => {
                        let args = vec![
                            column,
                            Arc::new(Literal::new(ScalarValue::from(t.to_string()))) as _,
                            Arc::new(Literal::new(ScalarValue::from(false))) as _,
                        ];
                        Arc::new(ScalarFunctionExpr::try_new(
                            Arc::clone(&cast),
                            args,
                            &schema,
                            Arc::clone(&config),
                        )?) as _
                    }
                    _ => column,
                };
                Ok(ProjectionExpr::new(expr, name(f.name())))
            })
            .collect::<Result<_>>()?;
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
            .filter(|f| !self.reads_nested(f))
            .map(|f| self.with_file_names(f))
            .collect::<Result<_>>()?;
        let plan = self.inner.scan(state, projection, &filters, limit).await?;
        let ours = |file_name: &str| {
            self.file_names
                .iter()
                .find(|(_, f)| f.as_str() == file_name)
                .map(|(ours, _)| ours.clone())
                .unwrap_or_else(|| file_name.to_string())
        };
        Self::renamed(state, plan, ours, |file_name| {
            self.schema
                .field_with_name(&ours(file_name))
                .ok()
                .map(|f| f.data_type().clone())
        })
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // A filter on a column whose fields are renamed is applied above the
        // scan, where the names are ours.
        let plain: Vec<(usize, &&Expr)> = filters
            .iter()
            .enumerate()
            .filter(|(_, f)| !self.reads_nested(f))
            .collect();
        let plain_filters: Vec<Expr> = plain
            .iter()
            .map(|(_, f)| self.with_file_names(f))
            .collect::<Result<_>>()?;
        let answers = self
            .inner
            .supports_filters_pushdown(&plain_filters.iter().collect::<Vec<_>>())?;
        let mut out = vec![TableProviderFilterPushDown::Unsupported; filters.len()];
        for ((i, _), a) in plain.iter().zip(answers) {
            out[*i] = a;
        }
        Ok(out)
    }

    /// `INSERT INTO`: the rows go to the files under the files' names.
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let file_schema = self.inner.schema();
        let file_name = |n: &str| {
            self.file_names
                .get(n)
                .cloned()
                .unwrap_or_else(|| n.to_string())
        };
        let input = Self::renamed(state, input, file_name, |n| {
            file_schema
                .field_with_name(&file_name(n))
                .ok()
                .map(|f| f.data_type().clone())
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
        // Fields of a struct, in a list too.
        let item = Field::new(
            "item",
            DataType::Struct(Fields::from(vec![Field::new("Sku", DataType::Utf8, true)])),
            true,
        );
        let nested = Arc::new(EmptyTable::new(Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("Items", DataType::List(Arc::new(item)), true),
        ]))));
        let t = LowercaseColumns::wrap(nested).unwrap();
        assert_eq!(
            t.schema.field(1).data_type().to_string(),
            "List(Struct(\"sku\": Utf8))"
        );
        assert!(t.reads_nested(&col("items").is_null()) && !t.reads_nested(&col("id").is_null()));
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
