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

/// What spill files may take of the function's /tmp: 90% of `SQUALL_TMP_MB`
/// (the template sets it to the function's ephemeral storage), if set.
pub fn tmp_limit_bytes() -> Option<u64> {
    tmp_limit_from(std::env::var("SQUALL_TMP_MB").ok().as_deref())
}

fn tmp_limit_from(mb: Option<&str>) -> Option<u64> {
    let mb: u64 = mb?.trim().parse().ok().filter(|&m| m > 0)?;
    Some(mb * 1024 * 1024 / 10 * 9)
}

#[cfg(test)]
mod tests {
    use super::tmp_limit_from;

    #[test]
    fn tmp_limit_is_nine_tenths_of_the_storage() {
        assert_eq!(
            tmp_limit_from(Some("4096")),
            Some(4096 * 1024 * 1024 / 10 * 9)
        );
        assert_eq!(tmp_limit_from(None), None);
        assert_eq!(tmp_limit_from(Some("0")), None);
        assert_eq!(tmp_limit_from(Some("lots")), None);
    }
}
