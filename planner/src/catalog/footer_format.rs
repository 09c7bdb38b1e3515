//! Parquet as a catalog table reads it: DataFusion's `ParquetFormat`, whose
//! planning statistics come from the process's footer cache.
//!
//! With `collect_statistics` on, DataFusion's planning reads each scanned
//! file's footer for its statistics (join order and build sides depend on
//! them): a 512 KiB tail, and with a metadata cache a second GET for the
//! page index, into a cache that lives as long as the runtime, which the
//! aws backend builds per request. squall's planning reads the same
//! footers again to split scans ([`crate::split`]). Here the statistics
//! and sort order come from the footer cache planning splits scans with
//! (one GET of about the footer's size per file, once per process): a
//! warm coordinator reads no footer for a query's planning.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::Statistics;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::physical_plan::parquet::metadata::{
    DFParquetMetadata, ordering_from_parquet_metadata,
};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSinkConfig, FileSource};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result;
use datafusion::physical_expr::{LexOrdering, LexRequirement};
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};
use parquet::file::metadata::ParquetMetaData;

use crate::split::{FooterCache, footer_hint};

/// `inner`, with statistics from the footer cache.
#[derive(Debug)]
pub(crate) struct FooterFormat {
    inner: ParquetFormat,
    /// The URL of the store the table's files are in (the cache's key).
    store_url: String,
    /// The largest footer this table's reads have met: the tail the next
    /// read fetches ([`footer_hint`]).
    largest: AtomicU64,
}

impl FooterFormat {
    pub(crate) fn new(inner: ParquetFormat, store_url: &str) -> Self {
        Self {
            inner,
            store_url: store_url.to_string(),
            largest: AtomicU64::new(0),
        }
    }

    async fn footer(
        &self,
        store: &Arc<dyn ObjectStore>,
        object: &ObjectMeta,
    ) -> Result<Arc<ParquetMetaData>> {
        let seen = self.largest.load(Ordering::Relaxed);
        let hint = footer_hint((seen > 0).then_some(seen));
        let (footer, len) = FooterCache::shared()
            .footer_in(store, &self.store_url, object, hint)
            .await?;
        self.largest.fetch_max(len.unwrap_or(0), Ordering::Relaxed);
        Ok(footer)
    }
}

#[async_trait]
impl FileFormat for FooterFormat {
    fn get_ext(&self) -> String {
        self.inner.get_ext()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        self.inner.get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.inner.compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        self.inner.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        let footer = self.footer(store, object).await?;
        DFParquetMetadata::statistics_from_parquet_metadata(&footer, &table_schema)
    }

    async fn infer_ordering(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Option<LexOrdering>> {
        let footer = self.footer(store, object).await?;
        ordering_from_parquet_metadata(&footer, &table_schema)
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.create_physical_plan(state, conf).await
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner
            .create_writer_physical_plan(input, state, conf, order_requirements)
            .await
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        self.inner.file_source(table_schema)
    }
}
