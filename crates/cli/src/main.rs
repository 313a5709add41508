//! The `reconcile` binary: a thin shell over the library crates.

mod args;
mod aws;
mod commands;
mod error;
mod exit;
mod github;
mod lock;
mod output;
mod usage;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = args::Args::parse();
    output::init_logging(args.verbose, args.color);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: failed to start the async runtime: {error}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(commands::run(args)) {
        Ok(code) => ExitCode::from(code),
        // A reader that went away (`reconcile plan | head`) is not an error.
        Err(error) if error.is_broken_pipe() => ExitCode::from(exit::OK),
        // The one place errors are printed.
        Err(error) => {
            for line in error.render() {
                eprintln!("{line}");
            }
            ExitCode::from(error.exit_code())
        }
    }
}
