//! The AWS configuration of a process, loaded once: region and credentials
//! through `aws-config` (environment, profiles, SSO, the Lambda role, IMDS)
//! and the endpoint overrides that point clients at emulators.

use aws_config::{BehaviorVersion, SdkConfig};

/// Loaded AWS configuration plus the S3 endpoint override, if any.
#[derive(Clone, Debug)]
pub struct AwsEnv {
    pub sdk: SdkConfig,
    /// `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`: an emulator or S3-compatible store.
    pub s3_endpoint: Option<String>,
}

impl AwsEnv {
    pub async fn load() -> Self {
        let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
        let s3_endpoint = std::env::var("AWS_ENDPOINT_URL_S3")
            .ok()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok())
            .filter(|s| !s.is_empty());
        Self { sdk, s3_endpoint }
    }

    pub fn region(&self) -> String {
        self.sdk
            .region()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "us-east-1".to_string())
    }
}
