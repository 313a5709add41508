//! `schema`, `completions` and `man`: what the command line and desired.toml are, for editors,
//! shells and `man`. No desired.toml needed.

use clap::CommandFactory;

use crate::args::Args;
use crate::error::CliError;
use crate::exit;
use crate::output::out;

/// The JSON Schema of desired.toml.
pub fn schema() -> Result<u8, CliError> {
    out(&format!("{}\n", reconcile_core::json::to_pretty(&reconcile_core::desired::schema())))?;
    Ok(exit::OK)
}

/// A completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Result<u8, CliError> {
    clap_complete::generate(shell, &mut Args::command(), "reconcile", &mut std::io::stdout());
    Ok(exit::OK)
}

/// The man page of `reconcile` and of each subcommand, one after another.
pub fn man() -> Result<u8, CliError> {
    let mut command = Args::command();
    // Built, so each subcommand carries the global flags it accepts.
    command.build();
    let mut stdout = std::io::stdout().lock();
    clap_mangen::Man::new(command.clone()).render(&mut stdout)?;
    for sub in command.get_subcommands() {
        let name = format!("reconcile-{}", sub.get_name());
        let sub = sub.clone().name(name.clone()).bin_name(name);
        clap_mangen::Man::new(sub).render(&mut stdout)?;
    }
    Ok(exit::OK)
}
