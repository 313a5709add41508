//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Plan and apply the ROCm nightly's AWS account (CodeBuild runner, ECR, S3 cache, IAM role)
/// from a desired-state file. AWS credentials, region and endpoint come from the standard
/// AWS configuration chain (AWS_PROFILE, AWS_ENDPOINT_URL, ...); desired.toml's region wins.
#[derive(Debug, Parser)]
#[command(name = "reconcile", version)]
pub struct Args {
    /// The desired-state file.
    #[arg(long, global = true, default_value = "desired.toml", value_name = "PATH")]
    pub desired: PathBuf,

    /// Log what is being done to stderr (-v: info, -vv: debug). RECONCILE_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check desired.toml without any AWS call.
    Validate,
    /// Show what apply would change. Never writes.
    Plan {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Exit 0 when there are no changes, 1 on error, 2 when there are changes.
        #[arg(long)]
        detailed_exitcode: bool,
    },
    /// Make the account match desired.toml.
    Apply {
        /// Apply without asking. Required when not run from a terminal.
        #[arg(long)]
        auto_approve: bool,
        /// Allow the plan's deletes to be carried out; without it, a plan with deletes is refused.
        #[arg(long)]
        allow_delete: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}
