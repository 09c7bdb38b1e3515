//! The `squall` command: wiring only; see `squall_server::cli`.

fn main() -> std::process::ExitCode {
    squall_server::cli::main()
}
