//! S3 through the `object_store` crate: one `AmazonS3` per bucket, signed
//! with credentials from `aws-config`, and a DataFusion object-store
//! registry that creates them on first use, so any `s3://bucket` in a
//! catalog, a plan or a task resolves.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::error::Result;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::aws::{AmazonS3Builder, AwsCredential};
use object_store::{CredentialProvider, ObjectStore};
use url::Url;

use crate::env::AwsEnv;
use crate::error::AwsError;

/// Credentials from the `aws-config` chain (cached and refreshed by it).
#[derive(Debug)]
struct SdkCredentials {
    provider: aws_credential_types::provider::SharedCredentialsProvider,
}

#[async_trait]
impl CredentialProvider for SdkCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        use aws_credential_types::provider::ProvideCredentials;
        let c = self.provider.provide_credentials().await.map_err(|e| {
            object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            }
        })?;
        Ok(Arc::new(AwsCredential {
            key_id: c.access_key_id().to_string(),
            secret_key: c.secret_access_key().to_string(),
            token: c.session_token().map(str::to_string),
        }))
    }
}

/// An S3 object store for `bucket`.
pub fn s3_store(env: &AwsEnv, bucket: &str) -> Result<Arc<dyn ObjectStore>> {
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(env.region());
    if let Some(provider) = env.sdk.credentials_provider() {
        builder = builder.with_credentials(Arc::new(SdkCredentials { provider }));
    }
    if let Some(endpoint) = &env.s3_endpoint {
        builder = builder
            .with_endpoint(endpoint)
            .with_allow_http(endpoint.starts_with("http://"))
            .with_virtual_hosted_style_request(false);
    }
    let store = builder.build().map_err(|source| AwsError::Bucket {
        bucket: bucket.to_string(),
        source,
    })?;
    Ok(Arc::new(store))
}

/// Object-store registry that serves `s3://bucket` URLs with [`s3_store`]
/// (created once per bucket) and everything else as DataFusion's default.
#[derive(Debug)]
pub struct S3Registry {
    env: AwsEnv,
    stores: RwLock<HashMap<String, Arc<dyn ObjectStore>>>,
    fallback: DefaultObjectStoreRegistry,
}

impl S3Registry {
    pub fn new(env: AwsEnv) -> Self {
        Self {
            env,
            stores: RwLock::default(),
            fallback: DefaultObjectStoreRegistry::new(),
        }
    }
}

impl ObjectStoreRegistry for S3Registry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        if url.scheme() == "s3" {
            let bucket = url.host_str().unwrap_or_default().to_string();
            return self.stores.write().ok()?.insert(bucket, store);
        }
        self.fallback.register_store(url, store)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        if url.scheme() != "s3" {
            return self.fallback.get_store(url);
        }
        let bucket = url
            .host_str()
            .ok_or_else(|| AwsError::BadLocation {
                location: url.to_string(),
                problem: "names no bucket",
            })?
            .to_string();
        if let Some(store) = self
            .stores
            .read()
            .ok()
            .and_then(|s| s.get(&bucket).cloned())
        {
            return Ok(store);
        }
        let store = s3_store(&self.env, &bucket)?;
        if let Ok(mut stores) = self.stores.write() {
            stores.insert(bucket, Arc::clone(&store));
        }
        Ok(store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.fallback.deregister_store(url)
    }
}

/// Split `s3://bucket/prefix` into (`s3://bucket`, `prefix`).
pub fn split_s3_url(location: &str) -> Result<(String, String)> {
    let bad = |problem| AwsError::BadLocation {
        location: location.to_string(),
        problem,
    };
    let rest = location
        .strip_prefix("s3://")
        .ok_or_else(|| bad("is not an s3:// location"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad("names no bucket").into());
    }
    Ok((
        format!("s3://{bucket}"),
        prefix.trim_matches('/').to_string(),
    ))
}

/// A runtime whose object-store registry resolves any `s3://bucket`.
pub fn aws_runtime(env: &AwsEnv) -> Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>> {
    let budget = squall_core::config::SquallConfig::from_env()?.process_memory_bytes;
    let mut builder = squall_planner::engine::runtime_builder()
        .with_object_store_registry(Arc::new(S3Registry::new(env.clone())))
        .with_memory_pool(squall_core::memory::process_pool(budget));
    // Spill files go to the function's /tmp: stop at 90% of it with
    // DataFusion's error naming the limit, not at a full disk.
    if let Some(bytes) = crate::env::tmp_limit_bytes() {
        builder = builder.with_max_temp_directory_size(bytes);
    }
    builder.build_arc()
}
