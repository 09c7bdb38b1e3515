//! # squall-server
//!
//! squall's HTTP API: the Trino client REST protocol, so the Trino CLI and
//! JDBC driver, the `trino` Python client, Superset and dbt talk to squall
//! unchanged. `squall serve` (the `squall-cli` crate) runs it on a local
//! port, the api Lambda function behind API Gateway; this crate holds no
//! command-line code.
//!
//! ```text
//!  client ── POST /v1/statement ──> router ── submit ──> QueryService ──> engine / coordinator
//!         <── {id, nextUri, stats} ──┘                      │
//!  client ── GET nextUri ─────────> router ── status/wait ──┤  (state, progress, error)
//!         <── {columns, data, nextUri?} ── encoding <── page ┘  (Arrow batch of one page)
//!  client ── DELETE nextUri ──────> router ── cancel ──> the query's tasks stop
//! ```
//!
//! The router is written against the [`QueryService`] trait only. The
//! embedded implementation ([`EmbeddedService`]) keeps each query's state and
//! result in memory; the aws one ([`AwsService`]) keeps them in S3 and starts
//! a coordinator function, behind the same trait. The same router runs in
//! `squall serve` and, through `lambda_http`, in the api Lambda function
//! ([`aws::api_function_router`]).
//!
//! # Layout
//!
//! - [`service`]: the [`QueryService`] trait and what it speaks (status, pages, session).
//! - [`admission`]: the cap on running queries and the bounded FIFO queue behind it.
//! - [`embedded`]: [`EmbeddedService`], the trait over an in-process `squall_planner::Engine`.
//! - [`aws`]: [`AwsService`], the trait over query state in S3 and the coordinator function.
//! - [`paging`]: cutting a result into pages bounded by rows and bytes
//!   (`squall_planner::paging`, shared with the coordinator function).
//! - [`redact`]: SQL as the logs show it (literals replaced, a digest).
//! - [`query_error`]: Trino error names, codes and types, and how engine errors map to them.
//! - [`types`]: Arrow types as Trino types (`decimal(15,2)`, `varchar`, typeSignature).
//! - [`encoding`]: Arrow values as Trino's JSON value encodings.
//! - [`protocol`]: the JSON documents of the protocol (`QueryResults`, `StatementStats`, …).
//! - [`session`]: `X-Trino-*` request headers and `SET SESSION` statements.
//! - [`uris`]: absolute `nextUri`/`infoUri` from `Host` and `X-Forwarded-*` headers.
//! - [`auth`]: bearer/basic authentication and the refusal to expose an open endpoint.
//! - [`router`]: the axum [`Router`](axum::Router) of the protocol's endpoints.
//! - [`serve`]: serving a router on a listener until a shutdown signal.
//! - [`error`]: [`ServerError`], the crate's one error type.

pub mod admission;
pub mod auth;
pub mod aws;
pub mod embedded;
pub mod encoding;
pub mod error;
pub mod execute_immediate;
pub use squall_planner::paging;
pub mod prepared;
pub mod protocol;
pub mod query_error;
pub mod redact;
pub mod router;
pub mod serve;
pub mod service;
pub mod session;
/// Arrow types as Trino types (shared with the catalog's `information_schema`).
pub use squall_planner::trino_types as types;
pub mod update_type;
pub mod uris;

pub use auth::ApiAuth;
pub use aws::{AwsOptions, AwsService};
pub use embedded::{EmbeddedOptions, EmbeddedService};
pub use error::ServerError;
pub use router::{ApiOptions, router};
pub use serve::serve;
pub use service::{Page, QueryService, QueryState, QueryStatus, SessionInfo, Submitted};
