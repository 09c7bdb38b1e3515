//! Runs `tests/trino_client.py`: the real `trino` Python client against
//! `squall serve`. A missing `trino` module is a failure that says how to
//! install it, never a skip.

use crate::python_client::run_trino_script;

#[test]
fn trino_python_client_against_squall_serve() {
    run_trino_script("trino_client.py", "trino client: all checks passed");
}
