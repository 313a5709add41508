//! The live acceptance suite and its sweeper (docs/live-testing.md).
//!
//! The suite runs the user's path end to end against an account: the `reconcile` binary as a
//! user runs it, out-of-band changes made with the SDK, each step's time and request count
//! printed, and `destroy` at the end, after which nothing of the run may be left. Every name it
//! makes carries a run prefix and every resource a run tag ([`names`]), so runs never collide
//! and the sweeper ([`sweep`]) finds what an interrupted one left. Against a sandbox account it
//! is opt-in (`scripts/live-test.sh`); the test command runs the same suite against the
//! emulator, so it cannot rot.

pub mod names;
pub mod suite;
pub mod sweep;

/// Why the suite or the sweeper stopped.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// It did not run: no credentials, or no sandbox account to hold them to.
    #[error("the live suite did not run: {0}")]
    NotRun(String),
    #[error("{0}")]
    Failed(String),
}

pub(crate) fn fail(why: String) -> Failure {
    Failure::Failed(why)
}

/// Whether the credentials of `sdk` are the sandbox account's: nothing the suite or the sweeper
/// does may reach another account, whose resources could be named like a run's.
pub async fn in_sandbox(sdk: &aws_types::SdkConfig, sandbox: &str) -> Result<(), Failure> {
    use aws_credential_types::provider::ProvideCredentials;
    let Some(credentials) = sdk.credentials_provider() else {
        return Err(Failure::NotRun("no AWS credentials in the standard chain".to_owned()));
    };
    if let Err(error) = credentials.provide_credentials().await {
        return Err(Failure::NotRun(format!("no AWS credentials: {}", chain(&error))));
    }
    let caller = aws_sdk_sts::Client::new(sdk)
        .get_caller_identity()
        .send()
        .await
        .map_err(|error| fail(format!("no usable AWS credentials: {}", chain(&error))))?;
    let account = caller.account().unwrap_or_default();
    if account != sandbox {
        return Err(fail(format!(
            "the credentials are for account {account}, not the sandbox account {sandbox} it was given: nothing done"
        )));
    }
    Ok(())
}

/// What the suite's outcome makes of the process: its exit code (0 for a pass, and for a run
/// that did not happen only when `skip_allowed`) and what to print.
pub fn outcome(result: &Result<(), Failure>, skip_allowed: bool) -> (u8, Option<String>) {
    match result {
        Ok(()) => (0, None),
        Err(failure @ Failure::NotRun(_)) if skip_allowed => (0, Some(failure.to_string())),
        Err(failure @ Failure::NotRun(_)) => {
            (1, Some(format!("{failure} (pass --skip-without-credentials where that is expected)")))
        }
        Err(failure) => (1, Some(failure.to_string())),
    }
}

/// An error and its causes, as reconcile says them everywhere.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    reconcile_core::reconciler::error_chain(error)
}
