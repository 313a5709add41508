//! `schema`, `completions` and `man`: what the command line and desired.toml are, for editors,
//! shells and `man`. No desired.toml needed.

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::args::Args;
use crate::error::CliError;
use crate::exit;
use crate::output::out;

/// The JSON Schema of desired.toml.
pub fn schema() -> Result<u8, CliError> {
    out(&format!(
        "{}\n",
        reconcile_core::json::to_pretty(&reconcile_core::desired::schema(&crate::catalog::CATALOG.claims()))
    ))?;
    Ok(exit::OK)
}

/// A completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Result<u8, CliError> {
    clap_complete::generate(shell, &mut Args::command(), "reconcile", &mut std::io::stdout());
    Ok(exit::OK)
}

/// The man page of `reconcile` and of each subcommand: one after another on stdout, or one file
/// each in `dir`.
pub fn man(dir: Option<&Path>) -> Result<u8, CliError> {
    let mut command = Args::command();
    // Built, so each subcommand carries the global flags it accepts.
    command.build();
    let mut pages = vec![("reconcile".to_owned(), command.clone())];
    for sub in command.get_subcommands() {
        let name = format!("reconcile-{}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name.clone()).bin_name(name)));
    }
    match dir {
        None => {
            let mut stdout = std::io::stdout().lock();
            for (_, page) in pages {
                clap_mangen::Man::new(page).render(&mut stdout)?;
            }
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
            for (name, page) in pages {
                let mut roff = Vec::new();
                clap_mangen::Man::new(page).render(&mut roff)?;
                let path = dir.join(format!("{name}.1"));
                std::fs::write(&path, roff).with_context(|| format!("failed to write {}", path.display()))?;
            }
        }
    }
    Ok(exit::OK)
}
