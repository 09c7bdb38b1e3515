//! The `squall` command: wiring only; see `squall_cli::cli`.

fn main() -> std::process::ExitCode {
    squall_cli::cli::main()
}
