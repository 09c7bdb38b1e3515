//! An [`Engine`] on the aws backend: S3 for data and exchange objects, one
//! SQS queue per query for completion messages, Lambda for tasks. The
//! process that holds it is the coordinator (the `squall` command with
//! `--backend aws`, or the coordinator function). With
//! `squall.state_location` set, tasks of an ended or cancelled query are
//! stopped through stop markers there (see [`crate::lambda`]).

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::object_store::ObjectStoreUrl;
use squall_core::config::SquallConfig;
use squall_planner::backend::Backend;
use squall_planner::engine::session_config;
use squall_planner::{Engine, EngineOptions};

use crate::env::AwsEnv;
use crate::error::AwsError;
use crate::glue::register_glue_catalog;
use crate::lambda::LambdaInvoker;
use crate::s3::{aws_runtime, split_s3_url};
use crate::sqs::SqsQueue;
use crate::state::state_store_at;

/// An engine on the embedded backend (tasks in this process, exchange on
/// local disk) that also reads tables in S3: when the catalog, or the
/// locations SQL may name (`squall.catalog.allowed_roots`), are `s3://`
/// ones (or anywhere, `*`, with an AWS configuration in the environment),
/// `s3://bucket` URLs resolve with the AWS configuration of the
/// environment (credentials, region, `AWS_ENDPOINT_URL_S3`). Otherwise the
/// plain embedded engine: no AWS configuration is loaded (without a
/// region, loading it asks the instance metadata service).
pub async fn embedded_engine(options: EngineOptions) -> Result<Engine> {
    let squall = SquallConfig::from_session(&session_config(&options.settings)?);
    let in_s3 = |location: &str| location.trim().starts_with("s3://");
    let anywhere = squall
        .catalog
        .allowed_roots
        .split(',')
        .any(|r| r.trim() == "*");
    let names_s3 = options.catalog.as_deref().is_some_and(in_s3)
        || squall.catalog.allowed_roots.split(',').any(in_s3)
        || (anywhere && aws_configured());
    if !names_s3 {
        return Engine::local(options).await;
    }
    let env = AwsEnv::load().await;
    let stores = Arc::new(crate::s3::S3Registry::new(env));
    Engine::local_with_stores(options, Some(stores)).await
}

/// Whether the environment holds an AWS configuration to load (a region,
/// a profile or keys in variables, or `~/.aws/config` or `credentials`):
/// with roots allowed anywhere, SQL may name `s3://` locations.
fn aws_configured() -> bool {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    [
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
    ]
    .iter()
    .any(|v| set(v))
        || std::env::var_os("HOME").is_some_and(|home| {
            let aws = std::path::Path::new(&home).join(".aws");
            aws.join("config").exists() || aws.join("credentials").exists()
        })
}

/// An engine on the aws backend, configured by `squall.*` settings
/// (environment first, then `options.settings`), for one request: a
/// request's last statement whose effect would live only in the engine's
/// memory (`CREATE TABLE`, ...) is refused ([`Engine::for_one_request`]).
pub async fn aws_engine(options: EngineOptions) -> Result<Engine> {
    let squall = SquallConfig::from_session(&session_config(&options.settings)?);
    if squall.exchange_location.is_empty() {
        return Err(AwsError::MissingSetting {
            setting: "squall.exchange_location",
            variable: "SQUALL_EXCHANGE_LOCATION",
            why: "the aws backend writes exchange objects there",
            example: "s3://bucket/exchange",
        }
        .into());
    }
    // After the settings are checked: without a region, loading the AWS
    // configuration asks the instance metadata service, and logs its
    // refusal three times, before a missing setting could be said.
    let env = AwsEnv::load().await;
    let runtime = aws_runtime(&env)?;
    let (exchange_url, exchange_prefix) = split_s3_url(&squall.exchange_location)?;
    let exchange_store = runtime.object_store(ObjectStoreUrl::parse(&exchange_url)?)?;
    let payloads = if squall.payload_location.is_empty() {
        None
    } else {
        let (url, prefix) = split_s3_url(&squall.payload_location)?;
        let store = runtime.object_store(ObjectStoreUrl::parse(&url)?)?;
        Some((store, url, prefix))
    };
    let queue: Arc<SqsQueue> = Arc::new(SqsQueue::new(&env, &squall.queue_prefix));
    let mut invoker = LambdaInvoker::new(
        &env,
        queue.clone(),
        &squall.worker_function,
        squall.inline_payload_bytes,
        payloads,
    )
    .with_answer_wait(std::time::Duration::from_millis(
        squall.task.invoke_answer_ms,
    ))
    .with_max_unanswered(squall.task.max_unanswered_invokes)
    .with_launcher_concurrency(squall.task.launch_concurrency);
    // With a state location, tasks still running when their query ends stop.
    if !squall.state_location.is_empty() {
        invoker = invoker.with_stop_markers(state_store_at(&env, &squall.state_location)?);
    }
    let backend = Backend {
        exchange_store,
        exchange_url,
        exchange_prefix,
        queue: Arc::clone(&queue) as _,
        invoker: Arc::new(invoker),
    };
    // A Glue catalog is registered here, where the SDK is; every other
    // catalog location by the engine itself.
    let glue = options
        .catalog
        .as_deref()
        .and_then(|c| c.strip_prefix("glue://"))
        .map(|db| db.trim_matches('/').to_string());
    if let Some(database) = glue {
        let options = EngineOptions {
            catalog: None,
            ..options
        };
        let engine = Engine::with_backend(options, runtime, backend).await?;
        register_glue_catalog(&env, &engine, &database).await?;
        return Ok(engine.for_one_request());
    }
    Ok(Engine::with_backend(options, runtime, backend)
        .await?
        .for_one_request())
}
