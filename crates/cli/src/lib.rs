//! The `reconcile` command line: the one crate that knows about terminals, environment
//! variables, signals and exit codes, over the library crates that know AWS and plans.
//!
//! `session` is a run's protocol; `commands` are the subcommands, one file each, that parse,
//! call the session and print.

mod args;
mod attribution;
mod aws;
mod backend;
mod catalog;
mod commands;
mod costs;
mod declare;
mod error;
mod exit;
mod files;
mod generate;
mod github;
mod import;
mod lock;
mod output;
mod registry;
mod session;
mod terraform;

use std::process::ExitCode;

pub use catalog::{CATALOG, parse_desired};

/// What `reconcile --version` says after the name: the version, the commit it was built from
/// (`-dirty` when tracked files differed from it), and the target.
pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("RECONCILE_COMMIT"), ", ", env!("RECONCILE_TARGET"), ")");

/// What every plan names as having made it.
pub const PLANNED_BY: &str =
    concat!("reconcile ", env!("CARGO_PKG_VERSION"), " (commit ", env!("RECONCILE_COMMIT"), ")");

use clap::Parser;

/// Whether `reconcile ARGS` is a command line the binary accepts (a subcommand and its flags),
/// without running it: what a test holds every command line of the docs to. `--help` and
/// `--version` are accepted; so, unless the line is `whole`, is one that only leaves out a
/// required argument or the last flag's value (prose naming `reconcile head`); any other error
/// is said.
pub fn accepts(args: &[&str], whole: bool) -> Result<(), String> {
    use clap::error::ErrorKind;
    match args::Args::try_parse_from(std::iter::once("reconcile").chain(args.iter().copied())) {
        Ok(_) => Ok(()),
        Err(error) if !error.use_stderr() => Ok(()),
        Err(error)
            if !whole
                && (error.kind() == ErrorKind::MissingRequiredArgument
                    || (error.kind() == ErrorKind::InvalidValue
                        && args.last().is_some_and(|a| a.starts_with("--")))) =>
        {
            Ok(())
        }
        Err(error) => Err(error.render().to_string()),
    }
}

/// Runs `reconcile` with the process's arguments; the one place errors are printed.
pub fn main() -> ExitCode {
    // clap exits 2 on a usage error, which the workflows read as "changes" (plan
    // --detailed-exitcode) or "drift": a usage error is an error, 1, as docs/reference/exit-codes.md says.
    let args = match args::Args::try_parse() {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { exit::ERROR } else { exit::OK });
        }
    };
    output::init_logging(args.verbose, args.color);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            output::err(&format!("error: failed to start the async runtime: {error}"));
            return ExitCode::from(exit::ERROR);
        }
    };
    let result = runtime.block_on(commands::run(args));
    // A prompt still waiting for a line, or changes dropped by a second interruption, are not
    // waited for.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        // A reader that went away (`reconcile plan | head`) is not an error.
        Err(error) if error.is_broken_pipe() => ExitCode::from(exit::OK),
        Err(error) => {
            for line in error.render() {
                output::err(&line);
            }
            ExitCode::from(error.exit_code())
        }
    }
}
