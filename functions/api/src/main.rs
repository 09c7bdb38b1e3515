//! The API Lambda function (skeleton): answers every request with 503 until
//! the router is wired to the AWS query service.

use lambda_http::http::StatusCode;
use lambda_http::{Error, Request, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    squall_aws::functions::init_tracing();
    lambda_http::run(service_fn(|_request: Request| async move {
        Ok::<_, Error>((StatusCode::SERVICE_UNAVAILABLE, "squall api: not wired yet"))
    }))
    .await
}
