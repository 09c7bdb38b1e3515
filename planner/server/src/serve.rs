//! Serving a router on a listener until a shutdown signal.
//!
//! The caller binds the listener and chooses the signal, so tests start a
//! real server on `127.0.0.1:0` in process and stop it with a oneshot, and
//! `squall serve` stops on Ctrl-C or SIGTERM. On shutdown no new connection
//! is accepted and requests in flight finish (a long poll lasts at most
//! `ApiOptions::max_wait`).

use std::future::Future;

use axum::Router;
use tokio::net::TcpListener;

use crate::error::ServerError;

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| ServerError::Io {
            context: "serving HTTP".into(),
            source,
        })
}
