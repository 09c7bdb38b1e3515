//! The coordinator Lambda function: wiring only; see `squall_aws::functions::CoordinatorFunction`.

use lambda_runtime::{Error, LambdaEvent, service_fn};
use squall_aws::functions::{CoordinatorFunction, CoordinatorRequest};

fn main() -> Result<(), Error> {
    squall_aws::functions::init_tracing();
    squall_aws::functions::runtime()?.block_on(lambda_runtime::run(service_fn(
        |event: LambdaEvent<CoordinatorRequest>| async move {
            Ok::<_, Error>(CoordinatorFunction.handle(event.payload).await)
        },
    )))
}
