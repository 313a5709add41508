//! The `reconcile` binary: everything it does is the `reconcile_cli` library's.

fn main() -> std::process::ExitCode {
    reconcile_cli::main()
}
