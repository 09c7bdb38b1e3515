//! The axum [`Router`] of the Trino client protocol, written against
//! [`QueryService`] only.
//!
//! ```text
//! POST   /v1/statement                              submit; -> QUEUED, nextUri = queued/…/1
//! GET    /v1/statement/queued/{id}/{slug}/{token}   long-poll while QUEUED; then nextUri = executing/…/0
//! GET    /v1/statement/executing/{id}/{slug}/{n}    long-poll while RUNNING; when FINISHED page n:
//!                                                   columns, data, nextUri = executing/…/n+1 until the last page
//! DELETE /v1/statement/{queued|executing}/…         cancel -> 204
//! GET    /v1/query/{id}                             the query's summary (infoUri)
//! DELETE /v1/query/{id}                             kill the query (Trino's kill endpoint) -> 204
//! GET    /v1/info                                   server info, unauthenticated (health checks)
//! ```
//!
//! Long polls wait at most [`ApiOptions::max_wait`] for the state to change,
//! so a client polling a running query is answered about once a second,
//! always well within API Gateway's 30-second limit. While a query runs its
//! executing token stays the same; once it has finished, the executing
//! token is the page number.
//!
//! Status codes: 200 with `error` in the body for a failed query (as Trino
//! does); 400 for an empty or non-UTF-8 SQL body, a malformed session
//! header, and a page token that is not a number or names no page of the
//! query; 404 for an unknown (or evicted) query id, a wrong slug, or an
//! unknown path; 405 for a wrong method (with `Allow`); 401 without valid
//! credentials; 204 for a cancel or a kill. Every error body is a Trino-shaped
//! `QueryResults` with state `FAILED` and an `error`.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::header::{ALLOW, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::auth::ApiAuth;
use crate::encoding::encode_rows;
use crate::error::ServerError;
use crate::protocol::{ErrorInfo, QueryResults, StatementStats, columns, error_results};
use crate::query_error::{self, ErrorCode, QueryError};
use crate::service::{QueryService, QueryState, QueryStatus};
use crate::session::{session_from_headers, set_session_header};
use crate::uris::BaseUri;

/// How the API behaves. There is no `Default`: authentication is always chosen.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    pub auth: ApiAuth,
    /// Longest a poll waits for a state change (default 1 s).
    pub max_wait: Duration,
    /// Path prefix of generated URIs when no `X-Forwarded-Prefix` is sent
    /// (an API Gateway stage such as `/prod`); default none.
    pub path_prefix: String,
    /// Largest SQL text accepted (default 1 MiB).
    pub max_sql_bytes: usize,
}

impl ApiOptions {
    pub fn new(auth: ApiAuth) -> Self {
        Self {
            auth,
            max_wait: Duration::from_secs(1),
            path_prefix: String::new(),
            max_sql_bytes: 1 << 20,
        }
    }
}

struct Api {
    service: Arc<dyn QueryService>,
    options: ApiOptions,
}

type Shared = State<Arc<Api>>;

/// The protocol's routes over `service`.
pub fn router(service: Arc<dyn QueryService>, options: ApiOptions) -> Router {
    let limit = options.max_sql_bytes;
    let api = Arc::new(Api { service, options });
    let protected = Router::new()
        .route(
            "/v1/statement",
            post(submit).fallback(|| not_allowed("POST")),
        )
        .route(
            "/v1/statement/queued/{id}/{slug}/{token}",
            get(queued)
                .delete(cancel)
                .fallback(|| not_allowed("GET, DELETE")),
        )
        .route(
            "/v1/statement/executing/{id}/{slug}/{token}",
            get(executing)
                .delete(cancel)
                .fallback(|| not_allowed("GET, DELETE")),
        )
        .route(
            "/v1/query/{id}",
            get(query_info)
                .delete(kill)
                .fallback(|| not_allowed("GET, DELETE")),
        )
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&api),
            require_auth,
        ));
    Router::new()
        .merge(protected)
        .route("/v1/info", get(server_info).fallback(|| not_allowed("GET")))
        .fallback(unknown_path)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(api)
}

fn base(api: &Api, headers: &HeaderMap) -> BaseUri {
    BaseUri::from_headers(headers, &api.options.path_prefix)
}

fn json_response(status: StatusCode, body: &QueryResults) -> Response {
    (status, Json(body)).into_response()
}

/// A protocol error as a Trino-shaped response.
fn error_response(
    base: &BaseUri,
    id: &str,
    status: StatusCode,
    code: ErrorCode,
    message: String,
) -> Response {
    let info = if id.is_empty() {
        format!("{}/v1/info", base.as_str())
    } else {
        base.info(id)
    };
    json_response(status, &error_results(id, info, code, message))
}

fn service_error(base: &BaseUri, id: &str, e: &ServerError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let code = match e {
        ServerError::QueryNotFound { .. } | ServerError::PreparedStatementNotFound { .. } => {
            query_error::NOT_FOUND
        }
        ServerError::InvalidToken { .. }
        | ServerError::BadRequest { .. }
        | ServerError::NotFinished { .. } => query_error::GENERIC_USER_ERROR,
        _ => query_error::GENERIC_INTERNAL_ERROR,
    };
    if status.is_server_error() {
        tracing::warn!(query_id = id, error = %e, "request failed");
    }
    error_response(base, id, status, code, e.to_string())
}

/// A path the router matched but could not read (bad percent-encoding).
fn path_rejected(base: &BaseUri, rejection: &PathRejection) -> Response {
    error_response(
        base,
        "",
        StatusCode::BAD_REQUEST,
        query_error::GENERIC_USER_ERROR,
        format!("malformed path: {}", rejection.body_text()),
    )
}

async fn require_auth(State(api): Shared, request: Request, next: Next) -> Response {
    if api.options.auth.allows(request.headers()) {
        return next.run(request).await;
    }
    let b = base(&api, request.headers());
    let mut response = error_response(
        &b,
        "",
        StatusCode::UNAUTHORIZED,
        query_error::PERMISSION_DENIED,
        "authentication required: send Authorization: Bearer <token> (or Basic with the token as password)".into(),
    );
    // Both challenges in one header value (RFC 9110 allows a list): behind
    // API Gateway, lambda_http keeps only the first of repeated headers.
    response.headers_mut().insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"squall\", Basic realm=\"squall\""),
    );
    response
}

async fn not_allowed(allow: &'static str) -> Response {
    let mut response = error_response(
        &BaseUri::from_headers(&HeaderMap::new(), ""),
        "",
        StatusCode::METHOD_NOT_ALLOWED,
        query_error::NOT_SUPPORTED,
        format!("method not allowed; allowed: {allow}"),
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

async fn unknown_path(State(api): Shared, headers: HeaderMap, uri: Uri) -> Response {
    let b = base(&api, &headers);
    error_response(
        &b,
        "",
        StatusCode::NOT_FOUND,
        query_error::NOT_FOUND,
        format!("no such resource: {}", uri.path()),
    )
}

async fn server_info() -> Response {
    Json(json!({
        "nodeVersion": {"version": format!("squall-{}", env!("CARGO_PKG_VERSION"))},
        "environment": "squall",
        "coordinator": true,
        "starting": false,
    }))
    .into_response()
}

async fn submit(
    State(api): Shared,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let b = base(&api, &headers);
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            return error_response(
                &b,
                "",
                rejection.status(),
                query_error::GENERIC_USER_ERROR,
                rejection.body_text(),
            );
        }
    };
    let Ok(sql) = String::from_utf8(body.to_vec()) else {
        let e = ServerError::BadRequest {
            message: "SQL statement is not UTF-8".into(),
        };
        return service_error(&b, "", &e);
    };
    if sql.trim().is_empty() {
        let e = ServerError::BadRequest {
            message: "SQL statement is empty".into(),
        };
        return service_error(&b, "", &e);
    }
    let session = match session_from_headers(&headers) {
        Ok(s) => s,
        Err(e) => return service_error(&b, "", &e),
    };
    // A prepared statement's EXECUTE or DESCRIBE runs as the statement the
    // client holds under its name (`crate::prepared`).
    let sql = match crate::prepared::parse(&sql) {
        Some(prepared) => match crate::prepared::from_headers(&headers)
            .and_then(|statements| crate::prepared::rewrite(&sql, &prepared, &statements))
        {
            Ok(rewritten) => rewritten,
            Err(e) => return service_error(&b, "", &e),
        },
        None => sql,
    };
    // A parameterized query (`EXECUTE IMMEDIATE '...' USING ...`) runs as
    // its statement with the parameters in place.
    let sql = match crate::execute_immediate::expand(&sql) {
        Ok(Some(expanded)) => expanded,
        Ok(None) => sql,
        Err(e) => return service_error(&b, "", &e),
    };
    // Logs show the statement's shape and digest, never its literals.
    let fingerprint = crate::redact::fingerprint(&sql);
    let user = session.user.clone();
    let submitted = match api.service.submit(sql, session).await {
        Ok(s) => s,
        Err(e) => return service_error(&b, "", &e),
    };
    tracing::info!(
        query_id = %submitted.id,
        %user,
        sql_digest = %fingerprint.digest,
        sql_shape = %fingerprint.shape,
        "query submitted"
    );
    let status = match api.service.status(&submitted.id).await {
        Ok(s) => s,
        Err(e) => return service_error(&b, &submitted.id, &e),
    };
    let mut results = results_for(&b, &status);
    results.next_uri = Some(b.queued(&submitted.id, &submitted.slug, 1));
    respond(&status, results)
}

/// The query's status, if `slug` is its slug.
async fn lookup(api: &Api, id: &str, slug: &str) -> Result<QueryStatus, ServerError> {
    let status = api.service.status(id).await?;
    if status.slug != slug {
        return Err(ServerError::QueryNotFound {
            query_id: id.to_string(),
        });
    }
    Ok(status)
}

fn parse_token(id: &str, token: &str) -> Result<u64, ServerError> {
    token.parse().map_err(|_| ServerError::InvalidToken {
        query_id: id.to_string(),
        token: token.to_string(),
    })
}

async fn queued(
    State(api): Shared,
    path: Result<Path<(String, String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let b = base(&api, &headers);
    let Path((id, slug, token)) = match path {
        Ok(p) => p,
        Err(rejection) => return path_rejected(&b, &rejection),
    };
    let result = async {
        let token = parse_token(&id, &token)?;
        let mut status = lookup(&api, &id, &slug).await?;
        if status.state == QueryState::Queued {
            status = api
                .service
                .wait(&id, QueryState::Queued, api.options.max_wait)
                .await?;
        }
        Ok::<_, ServerError>((token, status))
    }
    .await;
    let (token, status) = match result {
        Ok(r) => r,
        Err(e) => return service_error(&b, &id, &e),
    };
    let mut results = results_for(&b, &status);
    results.next_uri = match status.state {
        QueryState::Queued => Some(b.queued(&id, &slug, token.saturating_add(1))),
        QueryState::Running | QueryState::Finished => Some(b.executing(&id, &slug, 0)),
        QueryState::Failed | QueryState::Canceled => None,
    };
    respond(&status, results)
}

async fn executing(
    State(api): Shared,
    path: Result<Path<(String, String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let b = base(&api, &headers);
    let Path((id, slug, token)) = match path {
        Ok(p) => p,
        Err(rejection) => return path_rejected(&b, &rejection),
    };
    let result = async {
        let token = parse_token(&id, &token)?;
        let mut status = lookup(&api, &id, &slug).await?;
        if !status.state.is_done() {
            status = api
                .service
                .wait(&id, status.state, api.options.max_wait)
                .await?;
        }
        let page = if status.state == QueryState::Finished {
            Some(api.service.page(&id, token).await?)
        } else {
            None
        };
        Ok::<_, ServerError>((token, status, page))
    }
    .await;
    let (token, status, page) = match result {
        Ok(r) => r,
        Err(e) => return service_error(&b, &id, &e),
    };
    let mut results = results_for(&b, &status);
    match page {
        None if status.state.is_done() => results.next_uri = None,
        None => results.next_uri = Some(b.executing(&id, &slug, token)),
        Some(page) => {
            let schema = status.schema.clone().unwrap_or_else(|| page.batch.schema());
            results.columns = Some(columns(&schema));
            if page.batch.num_rows() > 0 {
                match encode_rows(&page.batch) {
                    Ok(rows) => results.data = Some(rows),
                    Err(e) => {
                        let e = ServerError::Internal {
                            message: format!("encoding page {token} of query {id}: {e}"),
                        };
                        return service_error(&b, &id, &e);
                    }
                }
            }
            results.next_uri = page.next.map(|n| b.executing(&id, &slug, n));
        }
    }
    respond(&status, results)
}

async fn cancel(
    State(api): Shared,
    path: Result<Path<(String, String, String)>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let b = base(&api, &headers);
    let Path((id, slug, token)) = match path {
        Ok(p) => p,
        Err(rejection) => return path_rejected(&b, &rejection),
    };
    let result = async {
        parse_token(&id, &token)?;
        lookup(&api, &id, &slug).await?;
        api.service.cancel(&id).await
    }
    .await;
    cancelled(&b, &id, result, "query cancelled by client")
}

/// 204 after a cancel, or the error that kept it from happening.
fn cancelled(b: &BaseUri, id: &str, result: Result<(), ServerError>, what: &str) -> Response {
    match result {
        Ok(()) => {
            tracing::info!(query_id = %id, "{what}");
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => service_error(b, id, &e),
    }
}

/// `DELETE /v1/query/{id}`: Trino's kill-query endpoint (what the Trino
/// JavaScript client's `cancel(queryId)` sends). The same cancel as a
/// DELETE on `nextUri`, by id alone; 404 for an unknown query.
async fn kill(
    State(api): Shared,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let b = base(&api, &headers);
    let Path(id) = match path {
        Ok(p) => p,
        Err(rejection) => return path_rejected(&b, &rejection),
    };
    let result = async {
        api.service.status(&id).await?;
        api.service.cancel(&id).await
    }
    .await;
    cancelled(&b, &id, result, "query killed by client")
}

async fn query_info(
    State(api): Shared,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let b = base(&api, &headers);
    let Path(id) = match path {
        Ok(p) => p,
        Err(rejection) => return path_rejected(&b, &rejection),
    };
    let status = match api.service.status(&id).await {
        Ok(s) => s,
        Err(e) => return service_error(&b, &id, &e),
    };
    let error = status.error.as_ref().map(ErrorInfo::from);
    Json(json!({
        "queryId": status.id,
        "state": status.state.as_str(),
        "query": status.query,
        "self": b.info(&status.id),
        "queryStats": StatementStats::from_status(&status),
        "errorCode": error.as_ref().map(|e| json!({"code": e.error_code, "name": e.error_name, "type": e.error_type})),
        "failureInfo": error.map(|e| e.failure_info),
    }))
    .into_response()
}

/// The document for a status, without `nextUri` or data.
fn results_for(base: &BaseUri, status: &QueryStatus) -> QueryResults {
    QueryResults {
        id: status.id.clone(),
        info_uri: base.info(&status.id),
        next_uri: None,
        columns: None,
        data: None,
        stats: StatementStats::from_status(status),
        error: status.error.as_ref().map(ErrorInfo::from).or_else(|| {
            // A done, unsuccessful query always carries an error.
            matches!(status.state, QueryState::Failed | QueryState::Canceled)
                .then(|| ErrorInfo::from(&QueryError::canceled()))
        }),
        warnings: Vec::new(),
        update_type: status.update_type.clone(),
        update_count: status.update_count,
    }
}

/// 200 with the document, and the session headers the query asks for.
fn respond(status: &QueryStatus, results: QueryResults) -> Response {
    let mut response = json_response(StatusCode::OK, &results);
    let headers = response.headers_mut();
    for (name, value) in &status.session.set {
        if let Ok(v) = HeaderValue::from_str(&set_session_header(name, value)) {
            headers.append(HeaderName::from_static("x-trino-set-session"), v);
        }
    }
    for name in &status.session.clear {
        if let Ok(v) = HeaderValue::from_str(name) {
            headers.append(HeaderName::from_static("x-trino-clear-session"), v);
        }
    }
    if let Some((header, value)) = crate::prepared::response_headers(status)
        && let Ok(v) = HeaderValue::from_str(&value)
    {
        headers.insert(HeaderName::from_static(header), v);
    }
    let used = [
        ("x-trino-set-catalog", &status.session.catalog),
        ("x-trino-set-schema", &status.session.schema),
    ];
    for (header, value) in used {
        if let Some(v) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(header), v);
        }
    }
    response
}
