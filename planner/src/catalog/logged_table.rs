//! [`LoggedTable`]: a catalog folder holding a table whose metadata names
//! its files, a Delta Lake table (its log, [`super::delta_log`]) or an
//! Iceberg table (its metadata, [`super::iceberg`]): the live files only,
//! each with the partition values the log gives it, in the columns and
//! types of the table's schema, in its order.
//!
//! Each query's scan first brings the table up to date (for Delta, one
//! listing of the log from the version read last and a GET per newer
//! commit; for Iceberg, a look for the next metadata file's number), so
//! a server sees commits as they land, as it sees files added to
//! a folder. A later commit that adds columns is read with the columns the
//! table was registered with (the new ones are seen once the table is
//! registered again: by the aws backend's next request, by a restarted
//! server); one that changes a column's type or the partitioning fails the
//! query saying so. Planning keeps the files whose partition values pass
//! the WHERE clause's partition-only conjuncts and whose statistics allow
//! the rest ([`super::delta_stats`]), and plans an ordinary Parquet scan
//! of them, so the rest of the engine (task splitting, workers) sees what
//! a listing table gives.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{ScalarValue, Statistics};
use datafusion::datasource::TableType;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::listing::helpers::expr_applicable_for_cols;
use datafusion::datasource::physical_plan::FileScanConfigBuilder;
use datafusion::datasource::table_schema::TableSchemaBuilder;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::prelude::SessionContext;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use super::deletes::{DeletionVector, FileDeletes, attach_deletions};
use super::delta_log::{LogFormat, Snapshot, TravelTo};
use super::{bare, present_lowercase, table_error};
use crate::partitions::listed::{file_groups, partition_pushdown, rows_passing};

/// A Delta or Iceberg table (see the module documentation).
#[derive(Debug)]
pub(crate) struct LoggedTable {
    name: String,
    url: String,
    store_url: ObjectStoreUrl,
    root: Path,
    file_schema: SchemaRef,
    partition_fields: Vec<FieldRef>,
    /// The table's columns in its schema's order, as users see them.
    schema: SchemaRef,
    /// The columns as the scan makes them: the files' then the partition
    /// columns (DataFusion's order).
    scan_schema: SchemaRef,
    /// Each of `schema`'s columns' index in `scan_schema`.
    order: Vec<usize>,
    live: tokio::sync::Mutex<Arc<Live>>,
    /// When the snapshot was read, while no scan has used it: the first
    /// scan of the statement that registered the table uses it as it is
    /// (read moments before), later ones bring it up to date.
    opened: std::sync::Mutex<Option<std::time::Instant>>,
    /// Read as of a point in its history (`FOR VERSION AS OF`): never
    /// brought up to date.
    pinned: bool,
}

/// How long after a table's registration its first scan uses the snapshot
/// the registration read without listing its log again.
const FRESH_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// A snapshot's files as a scan reads them.
#[derive(Debug)]
struct Live {
    snapshot: Arc<Snapshot>,
    files: Vec<PartitionedFile>,
    /// The log's statistics of each of `files`.
    stats: Vec<Option<Arc<str>>>,
    /// Where each of `files`' deleted rows are, if it has any.
    deletions: Vec<Option<DeletionVector>>,
    /// Each of `files`' path as the log names it, and its Iceberg data
    /// sequence number (which position delete files apply to it).
    names: Vec<(String, i64)>,
    /// One row per file: its partition values, in their types.
    values: RecordBatch,
    /// Rows in all, when the log counts every file's.
    rows: Option<u64>,
}

/// Registers the Delta (or Iceberg, as `format` says) table under `root`
/// of the store at `store_url` as `name` (`url` names the same place for
/// errors).
pub(super) async fn register_table(
    ctx: &SessionContext,
    name: &str,
    url: &str,
    store_url: &ObjectStoreUrl,
    root: &Path,
    format: LogFormat,
) -> Result<()> {
    let store = ctx.runtime_env().object_store(store_url)?;
    let table = LoggedTable::open(store.as_ref(), name, url, store_url, root, format).await?;
    ctx.register_table(bare(name), Arc::new(table))?;
    present_lowercase(ctx, name)
}

/// `snapshot` brought up to its table's latest version, if newer.
async fn refreshed(
    snapshot: &Snapshot,
    store: &dyn ObjectStore,
    store_url: &ObjectStoreUrl,
    root: &Path,
) -> std::result::Result<Option<Snapshot>, super::delta_log::LogError> {
    match snapshot.format {
        LogFormat::Delta => {
            snapshot
                .refreshed(store, root, lists_in_order(store_url))
                .await
        }
        LogFormat::Iceberg => {
            super::iceberg::refreshed(snapshot, store, root, lists_in_order(store_url)).await
        }
    }
}

/// Whether the store lists keys in order: S3 does, a local folder does not.
fn lists_in_order(store_url: &ObjectStoreUrl) -> bool {
    store_url.as_str().starts_with("s3://")
}

#[path = "logged_cache.rs"]
mod cache;
use cache::{remember, remembered};

impl LoggedTable {
    /// The table under `root`, its log (Delta) or metadata (Iceberg) read
    /// now, or brought up to date from the process's last reading of it.
    pub(super) async fn open(
        store: &dyn ObjectStore,
        name: &str,
        url: &str,
        store_url: &ObjectStoreUrl,
        root: &Path,
        format: LogFormat,
    ) -> Result<Self> {
        let snapshot = match remembered(store_url, root).filter(|s| s.format == format) {
            Some(known) => refreshed(&known, store, store_url, root)
                .await
                .map(|newer| newer.map(Arc::new).unwrap_or(known)),
            None => match format {
                LogFormat::Delta => Snapshot::read(store, root, lists_in_order(store_url)).await,
                LogFormat::Iceberg => super::iceberg::read(store, root).await,
            }
            .map(Arc::new),
        };
        let snapshot = snapshot
            .and_then(|s| s.check().map(|()| s))
            .map_err(|why| table_error(name, url, why))?;
        remember(store_url, root, &snapshot);
        tracing::info!(
            table = name,
            version = snapshot.version,
            files = snapshot.files.len(),
            "a table whose metadata names its files: its live files read"
        );
        Self::try_new(name, url, store_url, root, snapshot)
    }

    fn try_new(
        name: &str,
        url: &str,
        store_url: &ObjectStoreUrl,
        root: &Path,
        snapshot: Arc<Snapshot>,
    ) -> Result<Self> {
        let meta = &snapshot.metadata;
        let is_partition = |n: &str| meta.partition_columns.iter().any(|c| c == n);
        let nullable = |f: &FieldRef| Arc::new(f.as_ref().clone().with_nullable(true));
        let file_fields: Vec<FieldRef> = meta
            .schema
            .fields()
            .iter()
            .filter(|f| !is_partition(f.name()))
            .map(nullable)
            .collect();
        let partition_fields = meta
            .partition_columns
            .iter()
            .map(|c| {
                meta.schema
                    .field_with_name(c)
                    .map(|f| Arc::new(f.clone().with_nullable(true)))
                    .map_err(|_| {
                        table_error(
                            name,
                            url,
                            format!("its partition column {c} is not in its Delta schema"),
                        )
                    })
            })
            .collect::<Result<Vec<FieldRef>>>()?;
        let mut scan_fields = file_fields.clone();
        scan_fields.extend(partition_fields.iter().cloned());
        let scan_schema = Arc::new(Schema::new(scan_fields));
        let fields: Vec<FieldRef> = meta.schema.fields().iter().map(nullable).collect();
        let order = fields
            .iter()
            .map(|f| scan_schema.index_of(f.name()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let live = Live::new(snapshot, &partition_fields, name, url)?;
        Ok(Self {
            name: name.to_string(),
            url: url.to_string(),
            store_url: store_url.clone(),
            root: root.clone(),
            file_schema: Arc::new(Schema::new(file_fields)),
            partition_fields,
            schema: Arc::new(Schema::new(fields)),
            scan_schema,
            order,
            live: tokio::sync::Mutex::new(Arc::new(live)),
            opened: std::sync::Mutex::new(Some(std::time::Instant::now())),
            pinned: false,
        })
    }

    /// The store its files are in.
    pub(crate) fn store_url(&self) -> &ObjectStoreUrl {
        &self.store_url
    }

    /// This table as of `at` (a version or snapshot id, or a time), read
    /// now with `store`: a table of its own, never brought up to date.
    pub(crate) async fn travelled(&self, store: &dyn ObjectStore, at: TravelTo) -> Result<Self> {
        let format = self.live.lock().await.snapshot.format;
        let snapshot = match format {
            LogFormat::Delta => {
                Snapshot::read_at(store, &self.root, lists_in_order(&self.store_url), Some(at))
                    .await
            }
            LogFormat::Iceberg => super::iceberg::read_at(store, &self.root, Some(at)).await,
        };
        let snapshot = snapshot
            .and_then(|s| s.check().map(|()| s))
            .map_err(|why| self.error(why))?;
        let mut table = Self::try_new(
            &self.name,
            &self.url,
            &self.store_url,
            &self.root,
            Arc::new(snapshot),
        )?;
        table.pinned = true;
        Ok(table)
    }

    fn error(&self, message: impl std::fmt::Display) -> DataFusionError {
        table_error(&self.name, &self.url, message)
    }

    /// The table now: the snapshot read last, brought up to date.
    async fn current(&self, state: &dyn Session) -> Result<Arc<Live>> {
        let store = state.runtime_env().object_store(&self.store_url)?;
        let mut live = self.live.lock().await;
        let opened = self.opened.lock().ok().and_then(|mut o| o.take());
        if self.pinned || opened.is_some_and(|at| at.elapsed() < FRESH_FOR) {
            return Ok(Arc::clone(&live));
        }
        let newer = refreshed(&live.snapshot, store.as_ref(), &self.store_url, &self.root)
            .await
            .map_err(|why| self.error(why))?;
        if let Some(snapshot) = newer {
            snapshot.check().map_err(|why| self.error(why))?;
            self.check_schema(&snapshot)?;
            let snapshot = Arc::new(snapshot);
            remember(&self.store_url, &self.root, &snapshot);
            *live = Arc::new(Live::new(
                snapshot,
                &self.partition_fields,
                &self.name,
                &self.url,
            )?);
        }
        Ok(Arc::clone(&live))
    }

    /// Refuses a snapshot whose partitioning or column types differ from
    /// the registered table's (added columns are not read, see above).
    fn check_schema(&self, snapshot: &Snapshot) -> Result<()> {
        let meta = &snapshot.metadata;
        let names: Vec<&String> = self.partition_fields.iter().map(|f| f.name()).collect();
        if meta.partition_columns.iter().collect::<Vec<_>>() != names {
            return Err(self.error(format!(
                "its partition columns changed at version {} ({} now)",
                snapshot.version,
                meta.partition_columns.join(", ")
            )));
        }
        for field in self.schema.fields() {
            match meta.schema.field_with_name(field.name()) {
                Ok(now) if now.data_type() == field.data_type() => {}
                Ok(now) => {
                    return Err(self.error(format!(
                        "its column {} changed type at version {} ({} to {})",
                        field.name(),
                        snapshot.version,
                        field.data_type(),
                        now.data_type()
                    )));
                }
                Err(_) => {
                    return Err(self.error(format!(
                        "its column {} is gone at version {}",
                        field.name(),
                        snapshot.version
                    )));
                }
            }
        }
        Ok(())
    }

    fn partition_names(&self) -> Vec<&str> {
        self.partition_fields
            .iter()
            .map(|f| f.name().as_str())
            .collect()
    }
}

impl Live {
    fn new(
        snapshot: Arc<Snapshot>,
        partition_fields: &[FieldRef],
        name: &str,
        url: &str,
    ) -> Result<Self> {
        let files: Vec<_> = snapshot.files.values().collect();
        let arrays = partition_fields
            .iter()
            .map(|field| {
                let ty = field.data_type();
                let scalars =
                    files
                        .iter()
                        .map(|f| {
                            match f.partition_values.get(logged_name(field)).cloned().flatten() {
                            // An empty value is NULL but in a string column.
                            Some(v) if !(v.is_empty() && *ty != DataType::Utf8) => partition_value(
                                &v, ty,
                            )
                            .map_err(|e| {
                                table_error(
                                    name,
                                    url,
                                    format!(
                                        "file {}: partition value {v:?} of {} is not a {ty}: {e}",
                                        f.location,
                                        field.name()
                                    ),
                                )
                            }),
                            _ => ScalarValue::try_from(ty),
                        }
                        })
                        .collect::<Result<Vec<_>>>()?;
                match scalars.is_empty() {
                    true => Ok(arrow::array::new_empty_array(ty)),
                    false => ScalarValue::iter_to_array(scalars),
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let values = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(partition_fields.to_vec())),
            arrays,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(files.len())),
        )?;
        // Position delete files make the files' counts of rows too high.
        let rows = match snapshot.position_deletes.is_empty() {
            true => files.iter().map(|f| f.rows).sum::<Option<u64>>(),
            false => None,
        };
        let files = files
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let meta = ObjectMeta {
                    location: f.location.clone(),
                    last_modified: chrono_millis(f.modified),
                    size: f.size,
                    e_tag: None,
                    version: None,
                };
                let mut file: PartitionedFile = meta.into();
                file.partition_values = values
                    .columns()
                    .iter()
                    .map(|c| ScalarValue::try_from_array(c, i))
                    .collect::<Result<_>>()?;
                Ok(file)
            })
            .collect::<Result<Vec<_>>>()?;
        let stats = snapshot.files.values().map(|f| f.stats.clone()).collect();
        let deletions = snapshot
            .files
            .values()
            .map(|f| f.deletion_vector.clone())
            .collect();
        let names = snapshot
            .files
            .iter()
            .map(|(name, f)| (name.clone(), f.sequence))
            .collect();
        Ok(Self {
            snapshot,
            files,
            stats,
            deletions,
            names,
            values,
            rows,
        })
    }
}

/// The name the log gives `field` in files' partition values and
/// statistics: its physical name under column mapping, else its name.
pub(super) fn logged_name(field: &arrow::datatypes::Field) -> &str {
    field
        .metadata()
        .get(squall_core::case_blind::FILE_COLUMN)
        .map_or(field.name().as_str(), String::as_str)
}

/// A partition value as Delta writes it, in the column's type (a
/// timestamp's text is UTC).
fn partition_value(text: &str, ty: &DataType) -> Result<ScalarValue> {
    ScalarValue::try_from_string(text.to_string(), ty)
}

fn chrono_millis(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

#[async_trait]
impl TableProvider for LoggedTable {
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

    /// squall does not write these tables: a commit is the writer's.
    async fn insert_into(
        &self,
        _state: &dyn Session,
        _input: Arc<dyn ExecutionPlan>,
        _insert_op: datafusion::logical_expr::dml::InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let format = match self.live.lock().await.snapshot.format {
            LogFormat::Delta => "a Delta Lake table",
            LogFormat::Iceberg => "an Iceberg table",
        };
        Err(self.error(format!(
            "it is {format}, which squall reads but does not write: write it with its \
             own writers (Spark, delta-rs, pyiceberg, Trino), and squall's next query reads \
             the new commit"
        )))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let live = self.current(state).await?;
        let names = self.partition_names();
        let (partition_filters, data_filters): (Vec<Expr>, Vec<Expr>) = filters
            .iter()
            .cloned()
            .partition(|f| expr_applicable_for_cols(&names, f));
        let mut kept = rows_passing(state, &live.values, &partition_filters)?;
        let total = kept.len();
        // The files' statistics are parsed only when a filter can use them.
        if !data_filters.is_empty() {
            let stats: Vec<Option<&str>> = kept.iter().map(|&i| live.stats[i].as_deref()).collect();
            let may_match =
                super::delta_stats::may_match(state, &self.schema, &data_filters, &stats)?;
            let mut matches = may_match.into_iter();
            kept.retain(|_| matches.next().unwrap_or(true));
        }
        if kept.len() < total {
            tracing::debug!(
                table = %self.name,
                skipped = total - kept.len(),
                "files skipped by the Delta log's statistics"
            );
        }
        if kept.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.schema.project(p)?),
                None => Arc::clone(&self.schema),
            };
            return Ok(Arc::new(EmptyExec::new(schema)));
        }
        let mut files: Vec<PartitionedFile> = kept.iter().map(|&i| live.files[i].clone()).collect();
        let deletes: Vec<FileDeletes<'_>> = kept
            .iter()
            .map(|&i| FileDeletes {
                vector: live.deletions[i].as_ref(),
                name: &live.names[i].0,
                sequence: live.names[i].1,
            })
            .collect();
        let position_deletes = &live.snapshot.position_deletes;
        if deletes.iter().any(|d| d.vector.is_some()) || !position_deletes.is_empty() {
            let store = state.runtime_env().object_store(&self.store_url)?;
            attach_deletions(&store, &self.root, &mut files, &deletes, position_deletes)
                .await
                .map_err(|why| self.error(why))?;
        }
        let mut statistics = Statistics::new_unknown(&self.scan_schema);
        if kept.len() == live.files.len()
            && let Some(rows) = live.rows
        {
            statistics.num_rows = Precision::Exact(rows as usize);
        }
        let bytes: u64 = kept.iter().map(|&i| live.files[i].object_meta.size).sum();
        statistics.total_byte_size = Precision::Inexact(bytes as usize);
        let format = ParquetFormat::default().with_options(state.table_options().parquet.clone());
        let table_schema = TableSchemaBuilder::from(&self.file_schema)
            .with_table_partition_cols(self.partition_fields.clone())
            .build();
        let config =
            FileScanConfigBuilder::new(self.store_url.clone(), format.file_source(table_schema))
                .with_file_groups(file_groups(state, files))
                .with_statistics(statistics)
                .with_projection_indices(Some(match projection {
                    Some(p) => p.iter().map(|&i| self.order[i]).collect(),
                    None => self.order.clone(),
                }))?
                .with_limit(limit)
                .with_expr_adapter(Some(Arc::new(
                    squall_core::case_blind::CaseBlindAdapterFactory,
                )))
                .build();
        tracing::debug!(
            table = %self.name,
            version = live.snapshot.version,
            files = kept.len(),
            "scan planned over a logged table's live files"
        );
        format.create_physical_plan(state, config).await
    }
}
