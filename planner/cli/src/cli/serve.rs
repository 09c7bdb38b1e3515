//! `squall serve`: the HTTP API (Trino client protocol) on a local port,
//! over the embedded engine or the aws query service, open on loopback or
//! behind a token (given, or read from a Secrets Manager secret as the
//! deployed api function reads it).

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use squall_aws::AwsEnv;
use squall_core::config::SquallConfig;
use squall_planner::EngineOptions;
use squall_server::ServerError;
use squall_server::auth::{ApiAuth, check_bind};
use squall_server::aws::{AwsOptions, AwsService, api_auth};
use squall_server::embedded::{EmbeddedOptions, EmbeddedService};
use squall_server::router::{ApiOptions, router};
use squall_server::serve::serve_until_stopped;
use squall_server::service::QueryService;

/// Where `squall serve` takes its token from (at most one of them).
pub(super) struct ServeAuth {
    /// The token itself (`--token`, `SQUALL_API_TOKEN`).
    pub token: Option<String>,
    /// A Secrets Manager secret holding it (`--token-secret`, `SQUALL_API_TOKEN_SECRET`).
    pub token_secret: Option<String>,
}

/// `squall serve`: checks the address and auth before building anything,
/// then serves until Ctrl-C or SIGTERM, and then stops its queries and
/// exits within a few seconds.
pub(super) async fn serve_command(
    host: &str,
    port: u16,
    backend: &str,
    catalog: Option<String>,
    auth: ServeAuth,
    config: Vec<(String, String)>,
) -> std::result::Result<ExitCode, ServerError> {
    let addr = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| ServerError::Io {
            context: format!("resolving {host}"),
            source,
        })?
        .next()
        .ok_or_else(|| ServerError::BadRequest {
            message: format!("{host} resolves to no address"),
        })?;
    let token = auth.token.filter(|t| !t.is_empty());
    let auth = match auth.token_secret.filter(|s| !s.is_empty()) {
        Some(secret) => api_auth(&AwsEnv::load().await, Some(&secret), token).await?,
        None => token.map_or(ApiAuth::None, ApiAuth::Token),
    };
    check_bind(&addr, &auth)?;
    let service: Arc<dyn QueryService> = match backend {
        "local" => {
            let engine = squall_aws::embedded_engine(EngineOptions {
                catalog,
                settings: config,
            })
            .await?;
            let squall = SquallConfig::from_session(&engine.context().copied_config());
            Arc::new(EmbeddedService::new(
                Arc::new(engine),
                EmbeddedOptions::from_config(&squall),
            ))
        }
        "aws" => Arc::new(
            AwsService::from_env(AwsOptions {
                catalog,
                settings: config,
                ..AwsOptions::default()
            })
            .await?,
        ),
        other => {
            return Err(ServerError::BadRequest {
                message: format!("unknown backend {other:?} (expected local or aws)"),
            });
        }
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Io {
            context: format!("binding {addr}"),
            source,
        })?;
    let local = listener.local_addr().map_err(|source| ServerError::Io {
        context: "reading the bound address".into(),
        source,
    })?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{local}");
        let _ = out.flush();
    }
    let auth_note = if matches!(auth, ApiAuth::None) {
        "no authentication (loopback only)"
    } else {
        "token required"
    };
    eprintln!("squall serve: {auth_note}; Ctrl-C stops");
    serve_until_stopped(
        listener,
        router(Arc::clone(&service), ApiOptions::new(auth)),
        service,
        shutdown_signal(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM where there are signals.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => ctrl_c.await,
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}
