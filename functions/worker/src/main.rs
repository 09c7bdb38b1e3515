//! The worker Lambda function: wiring only; see `squall_aws::functions::WorkerFunction`.

use lambda_runtime::{Error, LambdaEvent, service_fn};

fn main() -> Result<(), Error> {
    squall_aws::functions::init_tracing();
    squall_aws::functions::runtime()?.block_on(async {
        let worker = squall_aws::functions::WorkerFunction::from_env().await?;
        let worker = &worker;
        lambda_runtime::run(service_fn(
            move |event: LambdaEvent<serde_json::Value>| async move {
                Ok::<_, Error>(worker.handle(event.payload).await)
            },
        ))
        .await
    })
}
