//! [`HiveFolderValues`]: a partitioned listing table that reads its
//! folders' values as Hive and Spark write them.
//!
//! Escaped values. Hive and Spark escape a partition value's `:`, `=`,
//! `'`, `*` and a few other characters in its folder name (`ts=10%3A00`
//! for `10:00`). DataFusion reads those names back decoded, but for
//! `ts = '10:00'` it lists only the prefix it builds from the literal,
//! escaping fewer characters than Hive (`ts=10:00/`): no folder has that
//! name, and the query answers as if the table were empty. This wrapper
//! hands DataFusion such an equality as the same test written
//! `ts IN ('10:00')`, which it evaluates on every listed folder's decoded
//! value instead (partitions are still pruned, by value rather than by
//! prefix).
//!
//! Values spelled otherwise. A folder `month=01` holds the BIGINT 1, whose
//! prefix DataFusion spells `month=1/`: an equality on such a column is
//! an `IN` test too (the layout names the columns, `spelled_otherwise`).
//!
//! Null values. Hive and Spark write a null partition value as the folder
//! `key=__HIVE_DEFAULT_PARTITION__` (DataFusion's `COPY ... PARTITIONED
//! BY`, and so squall's, as `key=`); Hive, Spark, Trino and Athena read it
//! back as NULL, DataFusion as a string. A partition column with such a
//! folder is listed as text (see `TableLayout::listed_columns`) and
//! presented here, nullable, in the type its other values give, as
//! `cast(nullif(nullif(column, marker), '') AS type)`: a projection above
//! the scan computes it, and the partition filters DataFusion evaluates on
//! folder names see the same expression (`region IS NULL` keeps those
//! folders, `region <> 'EU'` drops them), except a text column's equality
//! with a value, which the markers never satisfy and which DataFusion
//! turns into a listed prefix.

use std::borrow::Cow;
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, Constraints, DFSchema};
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::functions::expr_fn::nullif;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{
    BinaryExpr, Expr, LogicalPlan, Operator, TableProviderFilterPushDown,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::prelude::{cast, lit, when};

use super::{HIVE_NULL, is_null_folder};

/// Characters Hive escapes in a partition folder name that DataFusion's
/// prefix does not (it escapes controls, space, `%`, `/`, `?` and `#`).
fn hive_escapes(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '*' | ':' | '=' | '\\' | '{' | '[' | ']' | '^' | '\x7f'
    )
}

/// See the module docs.
#[derive(Debug)]
pub struct HiveFolderValues {
    inner: Arc<dyn TableProvider>,
    partition_columns: Vec<String>,
    /// The partition columns the inner table reads as text (where a
    /// folder may hold the null marker), with the type they are presented in.
    text_columns: Vec<(String, DataType)>,
    /// The inner table's schema, its text partition columns nullable and
    /// in their presented types.
    schema: SchemaRef,
    /// The partition columns whose folder names are not all their values'
    /// text (`month=01`): an equality is tested on values, never listed
    /// as a prefix.
    spelled_otherwise: Vec<String>,
}

impl HiveFolderValues {
    /// `inner` partitioned by `partition_columns` (name and presented type,
    /// outermost first); a column the inner table reads as text and that
    /// is presented as a number or a date holds the null marker in a folder.
    pub fn new(inner: Arc<dyn TableProvider>, partition_columns: &[(String, DataType)]) -> Self {
        let inner_schema = inner.schema();
        let text_columns: Vec<(String, DataType)> = partition_columns
            .iter()
            .filter(|(c, _)| {
                inner_schema
                    .field_with_name(c)
                    .is_ok_and(|f| *f.data_type() == DataType::Utf8)
            })
            .cloned()
            .collect();
        let fields: Vec<_> = inner_schema
            .fields()
            .iter()
            .map(|f| match text_columns.iter().find(|(c, _)| c == f.name()) {
                Some((_, ty)) => Arc::new(
                    f.as_ref()
                        .clone()
                        .with_data_type(ty.clone())
                        .with_nullable(true),
                ),
                None => Arc::clone(f),
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            inner_schema.metadata().clone(),
        ));
        Self {
            inner,
            partition_columns: partition_columns.iter().map(|(c, _)| c.clone()).collect(),
            text_columns,
            schema,
            spelled_otherwise: Vec::new(),
        }
    }

    /// This table, its `columns`' folder names not all their values' text
    /// (`TableLayout::spelled_otherwise`).
    pub fn with_spelled_otherwise(mut self, columns: &[String]) -> Self {
        self.spelled_otherwise = columns.to_vec();
        self
    }

    /// The presented type of `column` when the inner table reads it as text.
    fn text_column(&self, column: &str) -> Option<&DataType> {
        self.text_columns
            .iter()
            .find(|(c, _)| c == column)
            .map(|(_, ty)| ty)
    }

    /// A text partition column's folder value as presented: NULL for the
    /// marker, cast to the column's type.
    fn presented(&self, column: Column, ty: &DataType) -> Expr {
        let value = nullif(nullif(Expr::Column(column), lit(HIVE_NULL)), lit(""));
        match ty {
            DataType::Utf8 => value,
            ty => cast(value, ty.clone()),
        }
    }

    /// `filter` for DataFusion's evaluation on folder names: escaped
    /// equalities as `IN` tests, and the text columns seen through
    /// `nullif` wherever the null marker could pass for a value.
    fn rewrite_for_folders(&self, filter: &Expr) -> Result<Expr> {
        let filter = self.rewrite(filter).into_owned();
        self.read_null_markers(filter)
    }

    /// `filter`'s conjuncts with each text partition column `c` read as
    /// `nullif(c, marker)`, except `c = 'value'`, which the marker never
    /// passes and which DataFusion lists as a prefix.
    fn read_null_markers(&self, filter: Expr) -> Result<Expr> {
        if self.text_columns.is_empty() {
            return Ok(filter);
        }
        if let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) = filter
        {
            return Ok(self
                .read_null_markers(*left)?
                .and(self.read_null_markers(*right)?));
        }
        if let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) = &filter
            && let (Expr::Column(c), Expr::Literal(v, _)) | (Expr::Literal(v, _), Expr::Column(c)) =
                (left.as_ref(), right.as_ref())
            && self.text_column(&c.name) == Some(&DataType::Utf8)
            && !v.is_null()
            && !is_null_folder(&v.to_string())
        {
            return Ok(filter);
        }
        let read = filter.transform(|e| match e {
            Expr::Column(c) => match self.text_column(&c.name).cloned() {
                Some(ty) => Ok(Transformed::yes(self.presented(c, &ty))),
                None => Ok(Transformed::no(Expr::Column(c))),
            },
            other => Ok(Transformed::no(other)),
        })?;
        // DataFusion keeps a folder whose filter value is NULL as if it
        // were true (it reads the value, not its validity): NULL is false.
        Ok(match read.transformed {
            true => Expr::IsTrue(Box::new(read.data)),
            false => read.data,
        })
    }

    /// `plan` with each text partition column among its columns replaced,
    /// under its name, by `text(column, presented type)`; `plan` itself
    /// when it has none.
    fn map_text_columns(
        &self,
        state: &dyn Session,
        plan: Arc<dyn ExecutionPlan>,
        text: impl Fn(Column, &DataType) -> Result<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = plan.schema();
        if !schema
            .fields()
            .iter()
            .any(|f| self.text_column(f.name()).is_some())
        {
            return Ok(plan);
        }
        let df_schema = DFSchema::try_from(Arc::clone(&schema))?;
        let columns = schema
            .fields()
            .iter()
            .map(|f| {
                let column = Column::from_name(f.name());
                let expr = match self.text_column(f.name()) {
                    Some(ty) => text(column, ty)?,
                    None => Expr::Column(column),
                };
                Ok(ProjectionExpr::new(
                    state.create_physical_expr(expr, &df_schema)?,
                    f.name().clone(),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(ProjectionExec::try_new(columns, plan)?))
    }

    /// `filter` with each `partition column = 'value needing escapes'` as
    /// the equal `IN` test.
    fn rewrite<'a>(&self, filter: &'a Expr) -> Cow<'a, Expr> {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = filter else {
            return Cow::Borrowed(filter);
        };
        match op {
            Operator::And => {
                let (l, r) = (self.rewrite(left), self.rewrite(right));
                if matches!((&l, &r), (Cow::Borrowed(_), Cow::Borrowed(_))) {
                    return Cow::Borrowed(filter);
                }
                Cow::Owned(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(l.into_owned()),
                    Operator::And,
                    Box::new(r.into_owned()),
                )))
            }
            Operator::Eq => {
                let (column, literal) = match (left.as_ref(), right.as_ref()) {
                    (Expr::Column(c), lit @ Expr::Literal(v, _))
                    | (lit @ Expr::Literal(v, _), Expr::Column(c))
                        if self.partition_columns.contains(&c.name)
                            && (v.to_string().chars().any(hive_escapes)
                                || self.spelled_otherwise.contains(&c.name)) =>
                    {
                        (c.clone(), lit.clone())
                    }
                    _ => return Cow::Borrowed(filter),
                };
                Cow::Owned(Expr::InList(InList::new(
                    Box::new(Expr::Column(column)),
                    vec![literal],
                    false,
                )))
            }
            _ => Cow::Borrowed(filter),
        }
    }
}

#[async_trait]
impl TableProvider for HiveFolderValues {
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
            .map(|f| self.rewrite_for_folders(f))
            .collect::<Result<_>>()?;
        let plan = self.inner.scan(state, projection, &filters, limit).await?;
        // The folders' values as presented: NULL for the markers, typed.
        self.map_text_columns(state, plan, |c, ty| Ok(self.presented(c, ty)))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    /// `INSERT INTO`: the rows' text partition columns go to the inner
    /// table as the folder names it reads, NULL as Hive's marker.
    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // (DataFusion's coalesce is planned only as a CASE.)
        let input = self.map_text_columns(state, input, |c, _| {
            let column = Expr::Column(c);
            when(column.clone().is_null(), lit(HIVE_NULL)).otherwise(cast(column, DataType::Utf8))
        })?;
        self.inner.insert_into(state, input, insert_op).await
    }

    fn statistics(&self) -> Option<datafusion::common::Statistics> {
        self.inner.statistics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::datasource::empty::EmptyTable;
    use datafusion::prelude::{col, lit};

    #[test]
    fn only_equalities_on_partition_values_hive_escapes_are_rewritten() {
        let schema = Arc::new(arrow::datatypes::Schema::empty());
        let table = HiveFolderValues::new(
            Arc::new(EmptyTable::new(schema)),
            &[("ts".into(), DataType::Utf8)],
        );
        let escaped = col("ts").eq(lit("10:00"));
        assert_eq!(
            table.rewrite(&escaped).into_owned(),
            col("ts").in_list(vec![lit("10:00")], false)
        );
        let both = escaped.clone().and(col("x").eq(lit(1)));
        assert_eq!(
            table.rewrite(&both).into_owned(),
            col("ts")
                .in_list(vec![lit("10:00")], false)
                .and(col("x").eq(lit(1)))
        );
        for untouched in [
            col("ts").eq(lit("2024-01-01")),
            col("other").eq(lit("10:00")),
            col("ts").gt(lit("10:00")),
        ] {
            assert!(
                matches!(table.rewrite(&untouched), Cow::Borrowed(_)),
                "{untouched}"
            );
        }
    }

    #[test]
    fn text_partition_columns_are_read_through_nullif_except_in_equalities() {
        use arrow::datatypes::Field;
        // region: text; year: an integer with a null folder (read as text);
        // month: an integer without one.
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("region", DataType::Utf8, false),
            Field::new("year", DataType::Utf8, false),
            Field::new("month", DataType::Int64, false),
        ]));
        let table = HiveFolderValues::new(
            Arc::new(EmptyTable::new(schema)),
            &[
                ("region".into(), DataType::Utf8),
                ("year".into(), DataType::Int64),
                ("month".into(), DataType::Int64),
            ],
        );
        let presented = table.schema();
        assert_eq!(presented.field(1).data_type(), &DataType::Int64);
        assert!(presented.field(0).is_nullable() && presented.field(1).is_nullable());
        assert!(!presented.field(2).is_nullable());
        let read = |e: Expr| table.read_null_markers(e).unwrap();
        let seen = nullif(nullif(col("region"), lit(HIVE_NULL)), lit(""));
        for kept in [
            col("region").eq(lit("EU")),
            lit("EU").eq(col("region")),
            col("month").gt(lit(3)),
        ] {
            assert_eq!(read(kept.clone()), kept);
        }
        assert_eq!(
            read(col("region").not_eq(lit("EU"))),
            Expr::IsTrue(Box::new(seen.clone().not_eq(lit("EU"))))
        );
        assert_eq!(
            read(col("region").eq(lit(HIVE_NULL))),
            Expr::IsTrue(Box::new(seen.clone().eq(lit(HIVE_NULL))))
        );
        assert_eq!(
            read(col("region").eq(lit("EU")).and(col("region").is_null())),
            col("region")
                .eq(lit("EU"))
                .and(Expr::IsTrue(Box::new(seen.is_null())))
        );
        let year = cast(
            nullif(nullif(col("year"), lit(HIVE_NULL)), lit("")),
            DataType::Int64,
        );
        assert_eq!(
            read(col("year").eq(lit(2020i64))),
            Expr::IsTrue(Box::new(year.eq(lit(2020i64))))
        );
    }
}
