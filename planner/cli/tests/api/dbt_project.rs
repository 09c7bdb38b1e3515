//! Runs `tests/dbt_project.py`: dbt with the dbt-trino adapter against
//! `squall serve`, the project in `tests/dbt/` seeded, built twice and
//! tested, its models checked against DuckDB. A missing dbt is a failure
//! that says how to install it, never a skip.

use crate::python_client::run_trino_script;

#[test]
fn dbt_trino_builds_and_tests_a_project_on_squall_serve() {
    run_trino_script("dbt_project.py", "dbt project: all checks passed");
}
