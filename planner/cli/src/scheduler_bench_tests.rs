//! The scheduler benchmark schedules what it says, through the real loop.
#![allow(clippy::unwrap_used)]

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_of_every_stage_is_scheduled_once() {
    let run = run(2_503, 3, &[]).await.unwrap();
    assert_eq!((run.tasks, run.stages, run.messages), (2_503, 3, 2_503));
    assert!(
        run.line().starts_with("scheduled 2503 tasks in "),
        "{}",
        run.line()
    );
    let one = run_one_stage().await;
    assert_eq!(one.tasks, 1);
}

async fn run_one_stage() -> SchedulerRun {
    run(
        1,
        5,
        &[("squall.task.launch_concurrency".into(), "1".into())],
    )
    .await
    .unwrap()
}
