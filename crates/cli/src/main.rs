//! The `reconcile` binary: a thin shell over the library crates.

mod args;
mod aws;
mod commands;
mod exit;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = args::Args::parse();
    output::init_logging(args.verbose);
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
        Err(error)
            if error.chain().any(|cause| {
                cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::from(exit::OK)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}
