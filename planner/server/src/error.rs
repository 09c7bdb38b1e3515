//! [`ServerError`]: the one error type of squall-server.
//!
//! It covers what can go wrong around a query — an unknown query id, a page
//! token that names no page, a malformed request, a refused bind, an API
//! token that cannot be had, a backend that cannot be reached — and never
//! the query's own failure: a query that
//! fails (bad SQL, a task that ran out of retries) is a *successful* service
//! call whose status is `FAILED` with a [`QueryError`](crate::query_error::QueryError).
//! The router turns each variant into an HTTP status and a Trino-shaped body
//! ([`ServerError::http_status`]).

use std::net::SocketAddr;

/// What can go wrong around a query (not inside it).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No such query: never submitted, evicted, or a wrong slug.
    #[error("query {query_id} not found")]
    QueryNotFound { query_id: String },
    /// A page token that is not a number or names no page of the query.
    #[error("invalid page token {token:?} for query {query_id}")]
    InvalidToken { query_id: String, token: String },
    /// Pages were asked of a query that has not finished.
    #[error("query {query_id} has no result yet (state {state})")]
    NotFinished {
        query_id: String,
        state: &'static str,
    },
    /// A malformed request (empty SQL, a body that is not UTF-8, a bad header).
    #[error("{message}")]
    BadRequest { message: String },
    /// `EXECUTE`, `DESCRIBE` or `DEALLOCATE PREPARE` of a name the client
    /// sent no prepared statement for.
    #[error("Prepared statement not found: {name}")]
    PreparedStatementNotFound { name: String },
    /// Binding a non-loopback address without authentication.
    #[error(
        "refusing to serve on {addr} without authentication: set a token (--token or \
         SQUALL_API_TOKEN), or bind a loopback address such as 127.0.0.1"
    )]
    InsecureBind { addr: SocketAddr },
    /// The API's token cannot be had: its Secrets Manager secret cannot be
    /// read (the api function then refuses to start).
    #[error("the API token: {source}")]
    TokenSecret {
        #[source]
        source: squall_aws::AwsError,
    },
    /// A token and a secret holding one are both configured.
    #[error(
        "both a token (SQUALL_API_TOKEN, --token) and a token secret ({secret}: \
         SQUALL_API_TOKEN_SECRET, --token-secret) are set: set one"
    )]
    TwoTokens { secret: String },
    /// The backend cannot take the request now (try again later).
    #[error("service unavailable: {message}")]
    Unavailable { message: String },
    /// A bug or a broken backend.
    #[error("internal error: {message}")]
    Internal { message: String },
    /// The engine could not be built (a bad catalog or setting).
    #[error(transparent)]
    Engine(#[from] datafusion::error::DataFusionError),
    /// An I/O failure outside a query (binding, accepting connections).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl ServerError {
    /// The HTTP status the router answers this error with.
    ///
    /// Unknown queries are 404, malformed requests and bad page tokens 400,
    /// an unknown prepared statement a failed query's 200,
    /// pages of an unfinished query 409, an unavailable backend 503 (the
    /// Trino clients retry 503), everything else 500.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::QueryNotFound { .. } => 404,
            // Trino fails the query (a document with its error, 200).
            Self::PreparedStatementNotFound { .. } => 200,
            Self::InvalidToken { .. } | Self::BadRequest { .. } => 400,
            Self::NotFinished { .. } => 409,
            Self::Unavailable { .. } => 503,
            Self::InsecureBind { .. }
            | Self::TokenSecret { .. }
            | Self::TwoTokens { .. }
            | Self::Internal { .. }
            | Self::Engine(_)
            | Self::Io { .. } => 500,
        }
    }
}
