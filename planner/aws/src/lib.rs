//! # squall-aws
//!
//! The `aws` backend: the engine's seams over AWS services, and the handlers
//! the Lambda functions run. This is the only crate that links the AWS SDKs.
//!
//! | seam | here |
//! |---|---|
//! | object store | S3 through `object_store` ([`s3`]), credentials and region from `aws-config` |
//! | completion queue | one SQS queue per query ([`sqs::SqsQueue`]) |
//! | invoker | Lambda `Invoke`, event mode ([`lambda::LambdaInvoker`]) |
//! | secrets | Secrets Manager `GetSecretValue` at start-up ([`secrets`]: the api function's token) |
//!
//! Pointing the backend at emulators (moto for S3 and SQS, `cargo lambda
//! watch` for Lambda) is configuration only: the standard
//! `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL_SQS`,
//! `AWS_ENDPOINT_URL_LAMBDA` variables (`AWS_ENDPOINT_URL` also reaches
//! Secrets Manager, which moto serves too). There is no second code path.
//!
//! # Layout
//!
//! - [`env`]: loading the AWS configuration once per process.
//! - [`error`]: [`AwsError`], the crate's one error type.
//! - [`s3`]: S3 object stores and a registry that creates them per bucket.
//! - [`sqs`], [`lambda`]: the queue and invoker seams; [`launcher`]: the
//!   worker's side of tree invocation (a launcher invocation starting a
//!   batch of tasks).
//! - [`secrets`]: reading a Secrets Manager secret once (the api function's token).
//! - [`engine`]: an [`squall_planner::Engine`] over these seams.
//! - [`glue`]: the Glue Data Catalog as a catalog (`glue://DATABASE`).
//! - [`state`]: query state in S3 (records, results by page, cancel and stop
//!   markers), shared by the API, the coordinator function and the workers.
//! - [`functions`]: what the worker and coordinator Lambda functions run.
//! - [`handoff`]: the coordinator function handing a query over to a fresh
//!   invocation of itself, and the claim that keeps a duplicate from running it.

pub mod engine;
pub mod env;
pub mod error;
pub mod functions;
pub mod glue;
pub mod handoff;
pub mod lambda;
pub mod launcher;
pub mod s3;
pub mod secrets;
pub mod sqs;
pub mod state;

pub use engine::{aws_engine, embedded_engine};
pub use env::AwsEnv;
pub use error::AwsError;

pub use squall_core::error::error_chain;
