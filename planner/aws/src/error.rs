//! [`AwsError`]: the one error type of squall-aws: what the aws backend
//! itself can fail with, each variant naming the setting, bucket, object or
//! location involved (a secret by its name, never its value). SDK and
//! object-store errors are carried as sources.
//! It becomes a `DataFusionError` where the engine's `Result` is the
//! currency, keeping whose fault it is: a missing or malformed setting is
//! `Configuration`, an object that cannot be read or written `External`.

use datafusion::error::DataFusionError;

/// What squall-aws itself can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    /// A setting the aws backend needs is missing.
    #[error("{setting} ({variable}) is not set: {why}, e.g. {example}")]
    MissingSetting {
        setting: &'static str,
        variable: &'static str,
        why: &'static str,
        example: &'static str,
    },
    /// A location that is not `s3://bucket/prefix`.
    #[error("{location:?} {problem}")]
    BadLocation {
        location: String,
        problem: &'static str,
    },
    /// An S3 client for a bucket that cannot be built.
    #[error("S3 bucket {bucket}: {source}")]
    Bucket {
        bucket: String,
        #[source]
        source: object_store::Error,
    },
    /// An object (query state, a result page, a task payload) that cannot
    /// be read or written.
    #[error("{what} {location}: {source}")]
    Object {
        what: &'static str,
        location: String,
        #[source]
        source: object_store::Error,
    },
    /// The Glue Data Catalog refused or could not give a database's tables.
    #[error("Glue database {database}{}: {message}", match .table { Some(t) => format!(", table {t}"), None => String::new() })]
    Glue {
        database: String,
        table: Option<String>,
        message: String,
    },
    /// A stored document that does not decode.
    #[error("{what}: {message}")]
    Corrupt { what: &'static str, message: String },
    /// A Secrets Manager secret that cannot be read or holds no usable value.
    #[error("secret {secret} {problem}")]
    Secret { secret: String, problem: String },
}

impl From<AwsError> for DataFusionError {
    fn from(e: AwsError) -> Self {
        match e {
            AwsError::MissingSetting { .. } | AwsError::BadLocation { .. } => {
                DataFusionError::Configuration(e.to_string())
            }
            AwsError::Bucket { .. }
            | AwsError::Object { .. }
            | AwsError::Glue { .. }
            | AwsError::Corrupt { .. }
            | AwsError::Secret { .. } => DataFusionError::External(Box::new(e)),
        }
    }
}
