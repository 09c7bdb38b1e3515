//! The api Lambda function: wiring only. It serves squall's HTTP API (the
//! Trino client protocol; see `squall_server::router`) over the aws query
//! service (`squall_server::AwsService`) through `lambda_http`, behind API
//! Gateway (HTTP API, payload 2.0) or a function URL. A start-up failure
//! (e.g. a token secret that cannot be read) is logged and ends the process,
//! which Lambda reports as an init error.

fn main() -> Result<(), lambda_http::Error> {
    squall_aws::functions::init_tracing();
    squall_aws::functions::runtime()?.block_on(async {
        let app = squall_server::aws::api_function_router()
            .await
            .inspect_err(|e| tracing::error!(error = %e, "the api function cannot start"))?;
        lambda_http::run(app).await
    })
}
