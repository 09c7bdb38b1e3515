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
