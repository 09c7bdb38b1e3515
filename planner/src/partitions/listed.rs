//! [`ListedPartitionsTable`]: a Parquet table whose partitions a catalog
//! lists (the Glue Data Catalog), each with its values and its own
//! location, rather than folders found by listing the table's root.
//!
//! Only the listed partitions exist, as in Athena: a folder under the table
//! that the catalog does not list is not read. Planning a scan evaluates
//! the WHERE clause's partition-only conjuncts over the listed values
//! (one row per partition), lists the files of the partitions kept (one
//! LIST per partition, 16 at once) and plans an ordinary Parquet scan whose
//! files carry their partition values, so the rest of the engine (task
//! splitting, workers) sees what a listing table gives. The file schema is
//! read from one file's footer (the catalog's column types only when no
//! partition holds a file yet).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::helpers::expr_applicable_for_cols;
use datafusion::datasource::listing::{ListingTableUrl, PartitionedFile};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::table_schema::TableSchemaBuilder;
use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use object_store::{ObjectMeta, ObjectStore};

use crate::error::PlannerError;

/// One partition as a catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPartition {
    /// Its values of the partition columns, as text (`None` is null).
    pub values: Vec<Option<String>>,
    /// Where its files are (`s3://bucket/prefix/`).
    pub location: String,
}

/// A table of listed partitions (see the module documentation).
#[derive(Debug)]
pub struct ListedPartitionsTable {
    name: String,
    store_url: ObjectStoreUrl,
    file_schema: SchemaRef,
    partition_fields: Vec<FieldRef>,
    schema: SchemaRef,
    locations: Vec<ListingTableUrl>,
    /// One row per partition: its values, in the partition columns' types.
    values: RecordBatch,
}

/// How many partitions are listed at once when a scan is planned.
const LIST_CONCURRENCY: usize = 16;

impl ListedPartitionsTable {
    /// The table `name` with partition `columns` and `partitions`;
    /// `declared` is the catalog's schema of the file columns, used only
    /// when no partition holds a file.
    pub async fn try_new(
        ctx: &SessionContext,
        name: &str,
        columns: &[(String, DataType)],
        partitions: &[ListedPartition],
        declared: SchemaRef,
    ) -> Result<Self> {
        let bad = |location: &str, message: String| PlannerError::Table {
            table: name.to_string(),
            location: location.to_string(),
            message,
        };
        let mut locations = Vec::with_capacity(partitions.len());
        let mut store_url: Option<ObjectStoreUrl> = None;
        for p in partitions {
            if p.values.len() != columns.len() {
                return Err(bad(
                    &p.location,
                    format!(
                        "partition has {} values for {} partition columns",
                        p.values.len(),
                        columns.len()
                    ),
                )
                .into());
            }
            let url = ListingTableUrl::parse(&p.location)?;
            let this = url.object_store();
            match &store_url {
                Some(first) if *first != this => {
                    return Err(bad(
                        &p.location,
                        format!(
                            "partitions are in two stores: {} and {}",
                            first.as_str(),
                            this.as_str()
                        ),
                    )
                    .into());
                }
                _ => store_url = Some(this),
            }
            locations.push(url);
        }
        let partition_fields: Vec<FieldRef> = columns
            .iter()
            .map(|(n, t)| Arc::new(Field::new(n, t.clone(), true)))
            .collect();
        let arrays = columns
            .iter()
            .enumerate()
            .map(|(i, (column, ty))| {
                let scalars = partitions
                    .iter()
                    .map(|p| match &p.values[i] {
                        Some(v) => ScalarValue::try_from_string(v.clone(), ty).map_err(|e| {
                            bad(
                                &p.location,
                                format!("partition value {v:?} of {column} is not a {ty}: {e}"),
                            )
                            .into()
                        }),
                        None => ScalarValue::try_from(ty),
                    })
                    .collect::<Result<Vec<_>>>()?;
                if scalars.is_empty() {
                    return Ok(arrow::array::new_empty_array(ty));
                }
                ScalarValue::iter_to_array(scalars)
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let values_schema = Arc::new(Schema::new(partition_fields.clone()));
        let values = RecordBatch::try_new_with_options(
            values_schema,
            arrays,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(partitions.len())),
        )?;
        let store_url = store_url.unwrap_or_else(ObjectStoreUrl::local_filesystem);
        let store = ctx.runtime_env().object_store(&store_url)?;
        let mut file_schema = declared;
        for url in &locations {
            if let Some(meta) = list_files(store.as_ref(), url).await?.into_iter().next() {
                let state = ctx.state();
                file_schema = ParquetFormat::default()
                    .with_options(state.table_options().parquet.clone())
                    .infer_schema(&state, &store, &[meta])
                    .await
                    .map_err(|e| bad(url.as_str(), format!("reading the schema: {e}")))?;
                break;
            }
        }
        let mut fields: Vec<FieldRef> = file_schema
            .fields()
            .iter()
            .filter(|f| !columns.iter().any(|(c, _)| c == f.name()))
            .cloned()
            .collect();
        let file_schema = Arc::new(Schema::new(fields.clone()));
        fields.extend(partition_fields.iter().cloned());
        Ok(Self {
            name: name.to_string(),
            store_url,
            file_schema,
            partition_fields,
            schema: Arc::new(Schema::new(fields)),
            locations,
            values,
        })
    }

    /// Partitions listed.
    pub fn partitions(&self) -> usize {
        self.locations.len()
    }

    fn partition_names(&self) -> Vec<&str> {
        self.partition_fields
            .iter()
            .map(|f| f.name().as_str())
            .collect()
    }
}

/// How a table of partitions (`names`) applies `filters`: exactly those on
/// its partition columns alone (they choose the files), the others after
/// the scan.
pub(crate) fn partition_pushdown(
    names: &[&str],
    filters: &[&Expr],
) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| match expr_applicable_for_cols(names, f) {
            true => TableProviderFilterPushDown::Exact,
            false => TableProviderFilterPushDown::Inexact,
        })
        .collect()
}

/// The rows of `values` (one per partition or file: its partition values)
/// that `filters`, conjuncts over those columns only, keep.
pub(crate) fn rows_passing(
    state: &dyn Session,
    values: &RecordBatch,
    filters: &[Expr],
) -> Result<Vec<usize>> {
    let Some(filter) = conjunction(filters.iter().cloned()) else {
        return Ok((0..values.num_rows()).collect());
    };
    let df_schema = DFSchema::try_from(values.schema())?;
    let expr = state.create_physical_expr(filter, &df_schema)?;
    let mask = expr.evaluate(values)?.into_array(values.num_rows())?;
    let mask = mask.as_boolean();
    Ok((0..mask.len())
        .filter(|&i| mask.is_valid(i) && mask.value(i))
        .collect())
}

/// `files` dealt round-robin into one file group per target partition.
pub(crate) fn file_groups(state: &dyn Session, files: Vec<PartitionedFile>) -> Vec<FileGroup> {
    let groups = state
        .config()
        .target_partitions()
        .clamp(1, files.len().max(1));
    let mut grouped = vec![Vec::new(); groups];
    for (i, f) in files.into_iter().enumerate() {
        grouped[i % groups].push(f);
    }
    grouped.into_iter().map(FileGroup::new).collect()
}

/// The files of one partition: every file but hidden, bookkeeping and
/// empty ones, whatever its name, as Athena reads a partition of a table
/// the catalog declares Parquet (its CTAS writes names without `.parquet`).
async fn list_files(store: &dyn ObjectStore, url: &ListingTableUrl) -> Result<Vec<ObjectMeta>> {
    let objects: Vec<ObjectMeta> =
        store
            .list(Some(url.prefix()))
            .try_collect()
            .await
            .map_err(|e| PlannerError::Object {
                what: "listing partition",
                location: url.to_string(),
                source: e,
            })?;
    let depth = url.prefix().parts().count();
    Ok(objects
        .into_iter()
        .filter(|m| m.size > 0 && super::DataFiles::AllVisible.holds(&m.location, depth))
        .collect())
}

#[async_trait]
impl TableProvider for ListedPartitionsTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(partition_pushdown(&self.partition_names(), filters))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let names = self.partition_names();
        let partition_filters: Vec<Expr> = filters
            .iter()
            .filter(|f| expr_applicable_for_cols(&names, f))
            .cloned()
            .collect();
        let kept = rows_passing(state, &self.values, &partition_filters)?;
        let store = state.runtime_env().object_store(&self.store_url)?;
        let listed: Vec<(usize, Vec<ObjectMeta>)> = futures::stream::iter(kept)
            .map(|i| {
                let store = Arc::clone(&store);
                let url = self.locations[i].clone();
                async move {
                    Ok::<_, datafusion::error::DataFusionError>((
                        i,
                        list_files(store.as_ref(), &url).await?,
                    ))
                }
            })
            .buffered(LIST_CONCURRENCY)
            .try_collect()
            .await?;
        let mut files = Vec::new();
        for (i, metas) in listed {
            let values: Vec<ScalarValue> = self
                .values
                .columns()
                .iter()
                .map(|c| ScalarValue::try_from_array(c, i))
                .collect::<Result<_>>()?;
            for meta in metas {
                let mut file: PartitionedFile = meta.into();
                file.partition_values.clone_from(&values);
                files.push(file);
            }
        }
        if files.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.schema.project(p)?),
                None => Arc::clone(&self.schema),
            };
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        let format = ParquetFormat::default().with_options(state.table_options().parquet.clone());
        let table_schema = TableSchemaBuilder::from(&self.file_schema)
            .with_table_partition_cols(self.partition_fields.clone())
            .build();
        let config =
            FileScanConfigBuilder::new(self.store_url.clone(), format.file_source(table_schema))
                .with_file_groups(file_groups(state, files))
                .with_projection_indices(projection.cloned())?
                .with_limit(limit)
                .build();
        tracing::debug!(table = %self.name, "scan planned over listed partitions");
        format.create_physical_plan(state, config).await
    }
}
