//! Serving a router on a listener until a shutdown signal.
//!
//! The caller binds the listener and chooses the signal, so tests start a
//! real server on `127.0.0.1:0` in process and stop it with a oneshot, and
//! `squall serve` stops on Ctrl-C or SIGTERM. On shutdown no new connection
//! is accepted and requests in flight finish (a long poll lasts at most
//! `ApiOptions::max_wait`).
//!
//! ```text
//! signal ──> service.shutdown(QUERY_GRACE): refuse new statements, stop every query
//!            (FAILED, SERVER_SHUTTING_DOWN; pollers are answered with it), wait for cleanup
//!        ──> stop accepting; requests in flight finish
//!        ──> return, at the latest SHUTDOWN_GRACE after the signal
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use crate::error::ServerError;
use crate::service::QueryService;

/// Longest a shutdown waits for stopped queries to clean up.
pub const QUERY_GRACE: Duration = Duration::from_secs(3);

/// Longest from the shutdown signal to the return of [`serve_until_stopped`].
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

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

/// Serves `router` until `signal`; then stops `service`'s queries and the
/// server (see the module docs), within [`SHUTDOWN_GRACE`] of the signal.
pub async fn serve_until_stopped(
    listener: TcpListener,
    router: Router,
    service: Arc<dyn QueryService>,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let signalled = Arc::new(tokio::sync::Notify::new());
    let shutdown = {
        let signalled = Arc::clone(&signalled);
        async move {
            signal.await;
            signalled.notify_one();
            tracing::info!("shutting down");
            service.shutdown(QUERY_GRACE).await;
        }
    };
    tokio::select! {
        served = serve(listener, router, shutdown) => served,
        _ = async {
            signalled.notified().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!(
                grace_secs = SHUTDOWN_GRACE.as_secs(),
                "requests still in flight at the end of the shutdown grace; stopping anyway"
            );
            Ok(())
        }
    }
}

/// The HTTP API over an embedded engine on `127.0.0.1:0`, behind a fresh
/// bearer token: what `squall loadtest` and `squall fuzz` run against.
pub struct LoopbackServer {
    pub addr: std::net::SocketAddr,
    pub token: String,
    pub service: std::sync::Arc<crate::embedded::EmbeddedService>,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), ServerError>>,
}

impl LoopbackServer {
    /// Serve `engine` (with admission as its `squall.server.*` settings say).
    pub async fn start(engine: squall_planner::Engine) -> Result<Self, ServerError> {
        use crate::auth::ApiAuth;
        use crate::embedded::{EmbeddedOptions, EmbeddedService};
        use crate::router::{ApiOptions, router};

        let squall =
            squall_core::config::SquallConfig::from_session(&engine.context().copied_config());
        let service = std::sync::Arc::new(EmbeddedService::new(
            std::sync::Arc::new(engine),
            EmbeddedOptions::from_config(&squall),
        ));
        let token = uuid::Uuid::new_v4().simple().to_string();
        let listener =
            TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|source| ServerError::Io {
                    context: "binding 127.0.0.1:0".into(),
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Io {
            context: "reading the bound address".into(),
            source,
        })?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(
            service.clone(),
            ApiOptions::new(ApiAuth::Token(token.clone())),
        );
        let server = tokio::spawn(serve(listener, app, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            addr,
            token,
            service,
            stop,
            server,
        })
    }

    /// Stop accepting connections and wait for requests in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}
