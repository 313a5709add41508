//! The binary's one error type: every way a command can fail, with its exit code and the
//! lines it prints. `main` prints it, once, in one place.
//!
//! AWS failures are rendered by kind, so the reader gets one line that says what failed, on
//! which resource, and what to do: no credentials, an unreachable endpoint, access denied (the
//! caller, the action and the resource), throttling. Never an SDK `Debug` dump.

use std::path::PathBuf;

use reconcile_core::{ErrorKind, ReconcileError};

use crate::exit;

#[derive(Debug)]
pub enum CliError {
    /// desired.toml could not be read or holds problems: one line each, with file and line.
    Input(Vec<String>),
    /// AWS, or a reconciler's check, failed: one line each.
    Aws {
        errors: Vec<ReconcileError>,
        /// Where requests went: the overridden endpoint, or AWS in the region.
        endpoint: String,
    },
    /// Refused by a safety check before any write.
    Refused(String),
    /// An input refused before it is used, as a safety check refuses: a bake file that would
    /// expand past a bound.
    RefusedInput(String),
    /// `unlock` refused: the lock's process still runs on this host.
    RefusedUnlock(String),
    /// Refused because of error findings about desired.toml (already shown): code and address.
    RefusedFindings(Vec<String>),
    /// A saved plan that no longer matches what it was made against.
    Stale { path: PathBuf, reasons: Vec<String> },
    /// An apply that ran and did not fully succeed: its report already said what failed.
    ApplyFailed,
    /// The person at the prompt did not say yes.
    Cancelled,
    /// Interrupted by a signal (its exit code): the report already said what was done.
    Interrupted(u8),
    /// Anything else: a file that cannot be read or written, a closed stdout.
    Other(anyhow::Error),
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> Self {
        CliError::Other(error)
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        CliError::Other(error.into())
    }
}

impl CliError {
    pub fn aws(endpoint: &str) -> impl FnOnce(Vec<ReconcileError>) -> CliError + '_ {
        move |errors| CliError::Aws { errors, endpoint: endpoint.to_owned() }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Input(_) | CliError::Aws { .. } | CliError::ApplyFailed | CliError::Cancelled => exit::ERROR,
            CliError::Other(_) => exit::ERROR,
            CliError::Refused(_)
            | CliError::RefusedInput(_)
            | CliError::RefusedFindings(_)
            | CliError::RefusedUnlock(_) => exit::REFUSED,
            CliError::Stale { .. } => exit::STALE_PLAN,
            CliError::Interrupted(code) => *code,
        }
    }

    /// Whether it is only a reader that went away (`reconcile plan | head`): not an error.
    pub fn is_broken_pipe(&self) -> bool {
        let CliError::Other(error) = self else { return false };
        error.chain().any(|cause| {
            cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        })
    }

    /// What to print to stderr, one line per entry.
    pub fn render(&self) -> Vec<String> {
        match self {
            CliError::Input(lines) => lines.iter().map(|line| format!("error: {line}")).collect(),
            CliError::Aws { errors, endpoint } => errors.iter().map(|error| render_aws(error, endpoint)).collect(),
            CliError::Refused(why) => vec![format!("error: refusing to apply: {why}")],
            CliError::RefusedInput(why) => vec![format!("error: refused: {why}")],
            CliError::RefusedUnlock(why) => vec![format!("error: refusing to break the apply lock: {why}")],
            CliError::RefusedFindings(findings) => {
                // The plan or validate lists them all, and what resolves them; a line counts them
                // by code (each entry is `CODE` or `CODE on ADDRESS`).
                let mut codes: Vec<(&str, usize)> = Vec::new();
                for code in findings.iter().filter_map(|f| f.split_whitespace().next()) {
                    match codes.iter_mut().find(|(c, _)| *c == code) {
                        Some((_, n)) => *n += 1,
                        None => codes.push((code, 1)),
                    }
                }
                // One of a code is named with what it is about; more are counted.
                let counted: Vec<String> = codes
                    .iter()
                    .map(|(code, n)| match n {
                        1 => findings
                            .iter()
                            .find(|f| f.split_whitespace().next() == Some(code))
                            .cloned()
                            .unwrap_or_default(),
                        n => format!("{code} x{n}"),
                    })
                    .collect();
                vec![format!(
                    "error: refused: {} error finding(s) about desired.toml ({}); each says what resolves it, and \
                     `reconcile explain {}` says more",
                    findings.len(),
                    counted.join(", "),
                    codes[0].0
                )]
            }
            CliError::Stale { path, reasons } => {
                let mut lines =
                    vec![format!("error: the saved plan {} is stale, so nothing was changed:", path.display())];
                lines.extend(reasons.iter().map(|reason| format!("  - {reason}")));
                lines.push("Make a new plan and review it again.".to_owned());
                lines
            }
            CliError::ApplyFailed | CliError::Interrupted(_) => Vec::new(),
            CliError::Cancelled => vec![String::new(), "Apply cancelled.".to_owned()],
            CliError::Other(error) => vec![format!("error: {error:#}")],
        }
    }
}

/// One AWS failure as one line, by what kind of failure it is.
fn render_aws(error: &ReconcileError, endpoint: &str) -> String {
    // GitHub's errors already say what to do, in GitHub's terms.
    if error.source.as_ref().is_some_and(|source| source.is::<reconcile_github::GithubError>()) {
        return format!("error: {error}");
    }
    let on = error.address.as_ref().map_or_else(String::new, |address| format!("{address}: "));
    let operation = &error.operation;
    match error.kind {
        ErrorKind::Unauthenticated => format!(
            "error: {on}failed to {operation}: no valid AWS credentials ({}); set AWS_PROFILE, or \
             AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or renew the session (`aws sso login`)",
            error.reason
        ),
        ErrorKind::Unreachable => format!(
            "error: {on}failed to {operation}: cannot reach {endpoint} ({}); check AWS_ENDPOINT_URL, the region \
             and the network",
            error.reason
        ),
        ErrorKind::Timeout => format!(
            "error: {on}failed to {operation}: {endpoint} did not answer in time; check AWS_ENDPOINT_URL, the region \
             and the network"
        ),
        ErrorKind::Throttled => format!(
            "error: {on}failed to {operation}: AWS kept throttling it ({}); run it again later, when fewer other \
             clients are calling the same API, or give it longer with --throttle-deadline",
            error.reason
        ),
        ErrorKind::AccessDenied => match AccessDenied::parse(&error.reason) {
            Some(denied) => format!(
                "error: {on}failed to {operation}: access denied: {} may not {} on {}; grant it `{}` in its IAM policy",
                denied.caller, denied.action, denied.resource, denied.action
            ),
            None => format!(
                "error: {on}failed to {operation}: access denied ({}); the credentials lack the permission it needs",
                error.reason
            ),
        },
        ErrorKind::InvalidChange | ErrorKind::Other => format!("error: {error}"),
    }
}

/// What AWS says when a caller lacks a permission:
/// `User: <caller> is not authorized to perform: <action> on resource: <resource>[ because ...]`.
struct AccessDenied<'a> {
    caller: &'a str,
    action: &'a str,
    resource: &'a str,
}

impl<'a> AccessDenied<'a> {
    fn parse(message: &'a str) -> Option<AccessDenied<'a>> {
        let rest = message.strip_prefix("User: ")?;
        let (caller, rest) = rest.split_once(" is not authorized to perform: ")?;
        let (action, rest) = rest.split_once(" on resource: ")?;
        let resource = rest.split(" because ").next()?.trim_end_matches('.');
        Some(AccessDenied { caller, action, resource })
    }
}
