//! [`AwsService`]: the [`QueryService`] of the aws backend — what the api
//! Lambda function and `squall serve --backend aws` run. It holds nothing
//! in memory that a query needs: every call reads the query's state in S3
//! (an `ObjectQueryStore`, `squall_aws::state`), so any number of API
//! instances serve any query.
//!
//! ```text
//! submit  parse (no catalog) ─bad─> record FAILED (the client reads the error on its next GET)
//!         SET/RESET SESSION ──────> record FINISHED with result = true and the session change
//!         otherwise ──────────────> record QUEUED, invoke the coordinator function (Event)
//! status  status.json (+ the cancel marker while the query runs: a requested cancel reads CANCELED)
//! wait    status every squall.state_poll_ms until the state changes or the long poll ends
//! page    status.json (cached once the query has ended) + one ranged GET of result.arrow
//! cancel  writes the cancel marker; the coordinator stops the query, its workers stop
//! ```
//!
//! Lambda accepts an event invocation within milliseconds; `cargo lambda
//! watch` answers it only when the function returns, so submit waits at most
//! `squall.coordinator_start_wait_ms` and lets the invocation go on in the
//! background (recording FAILED if it fails later). What this module does
//! not do: run queries (the coordinator function does) or talk to AWS APIs
//! directly (`squall_aws` does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use axum::Router;
use datafusion::prelude::SessionConfig;
use futures::StreamExt;
use squall_aws::AwsEnv;
use squall_aws::functions::CoordinatorRequest;
use squall_aws::lambda::{FunctionStarter, Start};
use squall_aws::state::{
    ErrorKind, ObjectQueryStore, QueryFailure, QueryRecord, QueryStore, state_store_at,
};
use squall_core::config::SquallConfig;
use squall_planner::paging::PageLimits;

use crate::auth::ApiAuth;
use crate::error::ServerError;
use crate::query_error::QueryError;
use crate::router::{ApiOptions, router};
use crate::service::{
    Page, QueryService, QueryState, QueryStatus, SessionInfo, Submitted, check_one_statement,
};
use crate::session::{answer_session_statement, parse_session_statement, session_statement_result};

/// Records of ended queries kept in memory (they never change again).
const ENDED_CACHE: usize = 1024;

/// How to build an [`AwsService`].
#[derive(Debug, Clone, Default)]
pub struct AwsOptions {
    /// Catalog location queries run against (`s3://bucket/prefix`); `None`
    /// leaves it to the coordinator function (`SQUALL_DEFAULT_CATALOG`).
    pub catalog: Option<String>,
    pub page_limits: PageLimits,
    /// Settings over the `SQUALL_*` environment: for this service (the state
    /// location, the coordinator function, the waits) and for every query
    /// (sent to the coordinator before the client's session properties).
    pub settings: Vec<(String, String)>,
}

/// The query service over S3 state and the coordinator function.
pub struct AwsService {
    state: ObjectQueryStore,
    starter: FunctionStarter,
    catalog: Option<String>,
    settings: Vec<(String, String)>,
    page_limits: PageLimits,
    poll: Duration,
    /// Defaults a `SET SESSION` is checked against.
    defaults: SessionConfig,
    ended: Mutex<HashMap<String, Arc<Ended>>>,
}

/// An ended query's record and, when it finished, its decoded schema.
struct Ended {
    record: QueryRecord,
    schema: Option<SchemaRef>,
}

fn unavailable(e: impl std::fmt::Display) -> ServerError {
    ServerError::Unavailable {
        message: e.to_string(),
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Query ids are what this service generates (lowercase hex); anything else
/// names no query and never becomes part of an S3 key.
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

impl AwsService {
    /// A service configured by the environment (`SQUALL_STATE_LOCATION`,
    /// `SQUALL_COORDINATOR_FUNCTION`, the `AWS_*` variables) and `options`.
    pub async fn from_env(options: AwsOptions) -> Result<Self, ServerError> {
        Self::with_aws_env(&AwsEnv::load().await, options)
    }

    /// [`Self::from_env`] with AWS configuration already loaded.
    pub fn with_aws_env(env: &AwsEnv, options: AwsOptions) -> Result<Self, ServerError> {
        let defaults = squall_planner::engine::session_config(&options.settings)?;
        let squall = SquallConfig::from_session(&defaults);
        let state = state_store_at(env, &squall.state_location)?;
        let starter = FunctionStarter::new(
            env,
            &squall.coordinator_function,
            Duration::from_millis(squall.coordinator_start_wait_ms),
        );
        Ok(Self {
            state,
            starter,
            catalog: options.catalog,
            settings: options.settings,
            page_limits: options.page_limits,
            poll: Duration::from_millis(squall.state_poll_ms.max(10)),
            defaults,
            ended: Mutex::new(HashMap::new()),
        })
    }

    /// The query's record; cached once it has ended.
    async fn record(&self, id: &str) -> Result<Arc<Ended>, ServerError> {
        let not_found = || ServerError::QueryNotFound {
            query_id: id.to_string(),
        };
        if !valid_id(id) {
            return Err(not_found());
        }
        if let Some(e) = self.ended.lock().ok().and_then(|m| m.get(id).cloned()) {
            return Ok(e);
        }
        let record = self
            .state
            .read_record(id)
            .await
            .map_err(unavailable)?
            .ok_or_else(not_found)?;
        let schema = match (&record.state, &record.result) {
            (QueryState::Finished, Some(index)) => {
                Some(index.decode_schema().map_err(|e| ServerError::Internal {
                    message: format!("query {id}: stored result schema: {e}"),
                })?)
            }
            _ => None,
        };
        let ended = Arc::new(Ended { record, schema });
        if ended.record.state.is_done()
            && let Ok(mut cache) = self.ended.lock()
        {
            if cache.len() >= ENDED_CACHE {
                cache.clear();
            }
            cache.insert(id.to_string(), Arc::clone(&ended));
        }
        Ok(ended)
    }

    async fn write(&self, record: &QueryRecord) -> Result<(), ServerError> {
        self.state.write_record(record).await.map_err(unavailable)
    }

    /// Answers `SET SESSION` / `RESET SESSION` / `USE` without a coordinator.
    async fn session_statement(
        &self,
        record: &mut QueryRecord,
        statement: crate::session::SessionStatement,
    ) -> Result<(), ServerError> {
        record.start();
        match answer_session_statement(&self.defaults, statement) {
            Ok((update_type, update)) => {
                let batch = session_statement_result()?;
                let index = self
                    .state
                    .write_result(
                        &record.query_id,
                        &batch.schema(),
                        futures::stream::iter([Ok(batch)]).boxed(),
                    )
                    .await
                    .map_err(unavailable)?;
                record.update_type = Some(update_type.to_string());
                record.session_set = update.set;
                record.session_clear = update.clear;
                record.session_catalog = update.catalog;
                record.session_schema = update.schema;
                record.finish(index);
            }
            Err(e) => record.fail(QueryFailure::from_datafusion(&e)),
        }
        Ok(())
    }
}

/// Records that the coordinator of a query could not be started, unless the
/// query has ended meanwhile.
async fn record_start_failure(state: &ObjectQueryStore, query_id: &str, message: String) {
    tracing::warn!(query_id, %message, "starting the coordinator failed");
    let record = match state.read_record(query_id).await {
        Ok(Some(r)) if !r.state.is_done() => r,
        Ok(_) => return,
        Err(e) => {
            tracing::error!(%e, query_id, "reading the query's record failed");
            return;
        }
    };
    let mut record = record;
    record.fail(QueryFailure::new(ErrorKind::Internal, message));
    if let Err(e) = state.write_record(&record).await {
        tracing::error!(%e, query_id, "recording a failed start failed");
    }
}

#[async_trait]
impl QueryService for AwsService {
    async fn submit(&self, sql: String, session: SessionInfo) -> Result<Submitted, ServerError> {
        let (id, slug) = (new_id(), new_id());
        let mut record = QueryRecord::queued(&id, &slug, &sql);
        record.update_type = crate::update_type::of(&sql).map(str::to_string);
        let submitted = Submitted {
            id: id.clone(),
            slug: slug.clone(),
        };
        if let Some(statement) = parse_session_statement(&sql) {
            self.session_statement(&mut record, statement).await?;
            self.write(&record).await?;
            return Ok(submitted);
        }
        let checked = check_one_statement(&sql).and_then(|()| {
            session
                .properties
                .iter()
                .try_for_each(|(k, _)| squall_planner::limits::check_session_setting(k))
        });
        if let Err(e) = checked {
            record.fail(QueryFailure::from_datafusion(&e));
            self.write(&record).await?;
            return Ok(submitted);
        }
        self.write(&record).await?;
        let request = CoordinatorRequest {
            query_id: id.clone(),
            sql,
            catalog: self.catalog.clone(),
            settings: self.settings.clone(),
            identity: session.identity(),
            session: session.properties,
            slug,
            page_rows: Some(self.page_limits.rows),
            page_bytes: Some(self.page_limits.bytes),
            handoff: None,
        };
        let payload = serde_json::to_vec(&request).map_err(|e| ServerError::Internal {
            message: format!("encoding the coordinator request of query {id}: {e}"),
        })?;
        match self.starter.start(payload).await {
            Ok(Start::Accepted) => {}
            Ok(Start::Pending(invocation)) => {
                let state = self.state.clone();
                tokio::spawn(async move {
                    match invocation.await {
                        Ok(Ok(())) => {}
                        Ok(Err(message)) => record_start_failure(&state, &id, message).await,
                        Err(e) => {
                            record_start_failure(
                                &state,
                                &id,
                                format!("coordinator invocation: {e}"),
                            )
                            .await
                        }
                    }
                });
            }
            Err(message) => record_start_failure(&self.state, &id, message).await,
        }
        Ok(submitted)
    }

    async fn status(&self, id: &str) -> Result<QueryStatus, ServerError> {
        let ended = self.record(id).await?;
        let mut status = QueryStatus::of_record(&ended.record, ended.schema.clone());
        if !status.state.is_done() && self.state.cancel_requested(id).await.map_err(unavailable)? {
            // The coordinator records CANCELED once it has stopped the query.
            status.state = QueryState::Canceled;
            status.error = Some(QueryError::canceled());
        }
        Ok(status)
    }

    /// Query state lives in S3: read it every `squall.state_poll_ms`.
    fn poll_interval(&self) -> Duration {
        self.poll
    }

    async fn page(&self, id: &str, token: u64) -> Result<Page, ServerError> {
        let ended = self.record(id).await?;
        let (index, schema) = match (&ended.record.result, &ended.schema) {
            (Some(index), Some(schema)) if ended.record.state == QueryState::Finished => {
                (index, schema)
            }
            _ => {
                return Err(ServerError::NotFinished {
                    query_id: id.to_string(),
                    state: ended.record.state.as_str(),
                });
            }
        };
        let n = crate::service::page_number(id, token, index.pages.len())?;
        let batch = self
            .state
            .read_page(id, schema, &index.pages[n])
            .await
            .map_err(unavailable)?;
        Ok(Page {
            batch,
            next: (n + 1 < index.pages.len()).then_some(n as u64 + 1),
        })
    }

    async fn cancel(&self, id: &str) -> Result<(), ServerError> {
        let ended = self.record(id).await?;
        if ended.record.state.is_done() {
            return Ok(());
        }
        self.state.request_cancel(id).await.map_err(unavailable)
    }
}

/// The router the api Lambda function serves, configured by its environment:
///
/// | variable | what |
/// |---|---|
/// | `SQUALL_STATE_LOCATION`, `SQUALL_COORDINATOR_FUNCTION` | where state is, what runs queries |
/// | `SQUALL_DEFAULT_CATALOG` | the catalog location queries run against |
/// | `SQUALL_API_PATH_PREFIX` | path in front of `/v1` in generated URIs (a function URL behind a proxy, `cargo lambda watch`'s `/lambda-url/api`) |
/// | `SQUALL_API_TOKEN_SECRET` | a Secrets Manager secret (name or ARN) whose value is the bearer token / basic password to require; read once, here, and start-up fails naming the secret if it cannot be (the template's `ApiAuth=Token`) |
/// | `SQUALL_API_TOKEN` | the token itself, for local use only: a Lambda environment is readable in the console |
///
/// With neither, requests are not checked: IAM authorization at API Gateway
/// (the template's `ApiAuth=IAM`) has authenticated them.
pub async fn api_function_router() -> Result<Router, ServerError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let env = AwsEnv::load().await;
    let auth = api_auth(
        &env,
        var("SQUALL_API_TOKEN_SECRET").as_deref(),
        var("SQUALL_API_TOKEN"),
    )
    .await?;
    let service = AwsService::with_aws_env(
        &env,
        AwsOptions {
            catalog: var("SQUALL_DEFAULT_CATALOG"),
            ..AwsOptions::default()
        },
    )?;
    let mut options = ApiOptions::new(auth);
    if let Some(prefix) = var("SQUALL_API_PATH_PREFIX") {
        options.path_prefix = prefix;
    }
    Ok(router(Arc::new(service), options))
}

/// How the API authenticates, from its two token sources: the Secrets
/// Manager secret `secret` (name or ARN; read now, once, its string value
/// the token), or `token` itself; neither means no check. Both at once is
/// refused, as is a secret that cannot be read (the error names it).
pub async fn api_auth(
    env: &AwsEnv,
    secret: Option<&str>,
    token: Option<String>,
) -> Result<ApiAuth, ServerError> {
    match (secret, token) {
        (Some(secret), Some(_)) => Err(ServerError::TwoTokens {
            secret: secret.to_string(),
        }),
        (Some(secret), None) => {
            let token = squall_aws::secrets::read_secret_string(env, secret)
                .await
                .map_err(|source| ServerError::TokenSecret { source })?;
            tracing::info!(secret, "API token read from Secrets Manager");
            Ok(ApiAuth::Token(token))
        }
        (None, Some(token)) => Ok(ApiAuth::Token(token)),
        (None, None) => Ok(ApiAuth::None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query_error::{
        GENERIC_INTERNAL_ERROR, SYNTAX_ERROR, TABLE_NOT_FOUND, USER_CANCELED,
    };

    #[test]
    fn recorded_errors_map_like_engine_errors() {
        let e = QueryFailure::new(
            ErrorKind::Syntax,
            "Expected: an SQL statement, found: selec at Line: 1, Column: 1",
        );
        let q = QueryError::from_failure(&e);
        assert_eq!((q.code, q.location), (SYNTAX_ERROR, Some((1, 1))));
        let q = QueryError::from_failure(&QueryFailure::new(
            ErrorKind::Plan,
            "table 'datafusion.public.nope' not found",
        ));
        assert_eq!(q.code, TABLE_NOT_FOUND);
        assert_eq!(
            QueryError::from_failure(&QueryFailure::canceled()).code,
            USER_CANCELED
        );
        let q =
            QueryError::from_failure(&QueryFailure::new(ErrorKind::Internal, "coordinator down"));
        assert_eq!(
            (q.code, q.message.as_str()),
            (GENERIC_INTERNAL_ERROR, "coordinator down")
        );
    }

    #[test]
    fn only_generated_ids_name_queries() {
        assert!(valid_id(&new_id()));
        for bad in ["", "../x", "a/b", "q1 ", &"a".repeat(65)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }
}
