//! Secrets the stack keeps in AWS Secrets Manager, read by the functions
//! that need them: today the api function's token (`SQUALL_API_TOKEN_SECRET`
//! names the secret; its `SecretString` is the token itself, as
//! `GenerateSecretString` in `sam-template.yaml` creates it).
//!
//! A secret is read once, when a process starts, with the process's AWS
//! configuration ([`AwsEnv`]: the Lambda role in the cloud; `AWS_ENDPOINT_URL`
//! points the client at moto locally, which serves Secrets Manager beside S3
//! and SQS). What this module does not do: cache, rotate or log secret
//! values; a rotated token takes effect when a new instance starts.

use crate::env::AwsEnv;
use crate::error::AwsError;

/// The string value of secret `secret_id` (a name or an ARN), surrounding
/// whitespace removed. Fails, naming the secret, when it cannot be read, has
/// only a binary value, or is empty.
pub async fn read_secret_string(env: &AwsEnv, secret_id: &str) -> Result<String, AwsError> {
    let fail = |problem: String| AwsError::Secret {
        secret: secret_id.to_string(),
        problem,
    };
    let out = aws_sdk_secretsmanager::Client::new(&env.sdk)
        .get_secret_value()
        .secret_id(secret_id)
        .send()
        .await
        .map_err(|e| fail(format!("could not be read: {}", crate::error_chain(&e))))?;
    let value = out
        .secret_string()
        .ok_or_else(|| fail("has no string value (SecretString)".to_string()))?
        .trim();
    if value.is_empty() {
        return Err(fail("is empty".to_string()));
    }
    Ok(value.to_string())
}
