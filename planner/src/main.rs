//! The `squall` command: wiring only; see `squall_planner::cli`.

fn main() -> std::process::ExitCode {
    squall_planner::cli::main()
}
