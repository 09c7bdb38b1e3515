//! [`HiveEscapedValues`]: a partitioned listing table whose equality
//! filters on partition columns still find folders Hive escaped.
//!
//! Hive and Spark escape a partition value's `:`, `=`, `'`, `*` and a few
//! other characters in its folder name (`ts=10%3A00` for `10:00`).
//! DataFusion reads those names back decoded, but for `ts = '10:00'` it
//! lists only the prefix it builds from the literal, escaping fewer
//! characters than Hive (`ts=10:00/`): no folder has that name, and the
//! query answers as if the table were empty. This wrapper hands DataFusion
//! such an equality as the same test written `ts IN ('10:00')`, which it
//! evaluates on every listed folder's decoded value instead (partitions
//! are still pruned, by value rather than by prefix).

use std::borrow::Cow;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Constraints;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{
    BinaryExpr, Expr, LogicalPlan, Operator, TableProviderFilterPushDown,
};
use datafusion::physical_plan::ExecutionPlan;

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
pub struct HiveEscapedValues {
    inner: Arc<dyn TableProvider>,
    partition_columns: Vec<String>,
}

impl HiveEscapedValues {
    pub fn new(inner: Arc<dyn TableProvider>, partition_columns: Vec<String>) -> Self {
        Self {
            inner,
            partition_columns,
        }
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
                            && v.to_string().chars().any(hive_escapes) =>
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
impl TableProvider for HiveEscapedValues {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
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
            .map(|f| self.rewrite(f).into_owned())
            .collect();
        self.inner.scan(state, projection, &filters, limit).await
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
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
        let table = HiveEscapedValues::new(Arc::new(EmptyTable::new(schema)), vec!["ts".into()]);
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
}
