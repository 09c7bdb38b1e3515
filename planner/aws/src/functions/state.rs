//! Query state in S3, written by the coordinator and read by the API:
//!
//! ```text
//! {state_location}/{query_id}/status.json   QueryStatus (state, error, rows, profile)
//! {state_location}/{query_id}/result.arrow  the result, one Arrow IPC stream
//! ```

use std::sync::Arc;

use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use squall_core::config::SquallConfig;
use squall_planner::QueryResult;

use crate::engine::aws_runtime;
use crate::env::AwsEnv;
use crate::s3::split_s3_url;

/// Where a query stands, as the API reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryStatus {
    /// RUNNING, FINISHED or FAILED.
    pub state: String,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub rows: u64,
    #[serde(default)]
    pub profile: Option<serde_json::Value>,
}

impl QueryStatus {
    pub fn running() -> Self {
        Self {
            state: "RUNNING".into(),
            error: None,
            rows: 0,
            profile: None,
        }
    }

    pub fn finished(result: &QueryResult) -> Self {
        Self {
            state: "FINISHED".into(),
            error: None,
            rows: result.batches.iter().map(|b| b.num_rows() as u64).sum(),
            profile: result
                .profile
                .as_ref()
                .and_then(|p| serde_json::to_value(p).ok()),
        }
    }

    pub fn failed(message: &str) -> Self {
        Self {
            state: "FAILED".into(),
            error: Some(message.to_string()),
            rows: 0,
            profile: None,
        }
    }
}

/// Reads and writes query state under `squall.state_location`.
pub struct StateStore {
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

impl StateStore {
    pub async fn from_env() -> Result<Self> {
        let squall = SquallConfig::from_env()?;
        if squall.state_location.is_empty() {
            return Err(DataFusionError::Configuration(
                "squall.state_location (SQUALL_STATE_LOCATION) is not set".into(),
            ));
        }
        let env = AwsEnv::load().await;
        let runtime = aws_runtime(&env)?;
        let (url, prefix) = split_s3_url(&squall.state_location)?;
        let store = runtime.object_store(ObjectStoreUrl::parse(&url)?)?;
        Ok(Self { store, prefix })
    }

    fn key(&self, query_id: &str, name: &str) -> Path {
        Path::from(format!("{}/{query_id}/{name}", self.prefix).trim_start_matches('/'))
    }

    pub async fn write_status(&self, query_id: &str, status: &QueryStatus) -> Result<()> {
        let body =
            serde_json::to_vec(status).map_err(|e| DataFusionError::External(Box::new(e)))?;
        self.store
            .put(&self.key(query_id, "status.json"), PutPayload::from(body))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(())
    }

    pub async fn read_status(&self, query_id: &str) -> Result<Option<QueryStatus>> {
        match self.store.get(&self.key(query_id, "status.json")).await {
            Ok(r) => {
                let bytes = r
                    .bytes()
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                Ok(Some(
                    serde_json::from_slice(&bytes)
                        .map_err(|e| DataFusionError::External(Box::new(e)))?,
                ))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(DataFusionError::External(Box::new(e))),
        }
    }

    pub async fn write_result(&self, query_id: &str, result: &QueryResult) -> Result<()> {
        let mut writer = StreamWriter::try_new(Vec::new(), &result.schema)?;
        for b in &result.batches {
            writer.write(b)?;
        }
        writer.finish()?;
        let bytes = writer.into_inner()?;
        self.store
            .put(&self.key(query_id, "result.arrow"), PutPayload::from(bytes))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(())
    }

    pub async fn read_result(&self, query_id: &str) -> Result<Vec<RecordBatch>> {
        let bytes = self
            .store
            .get(&self.key(query_id, "result.arrow"))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .bytes()
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let reader = StreamReader::try_new(std::io::Cursor::new(bytes), None)?;
        Ok(reader.collect::<std::result::Result<Vec<_>, _>>()?)
    }
}
