//! Every way out of the binary: stdout, stderr lines, log lines and the GitHub Actions job
//! summary, each written for its medium and with nothing [`never_show`] was given; colour on
//! terminals; apply progress.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use reconcile_core::engine::{ApplyEvents, ApplyReport, Outcome};
use reconcile_core::plan::{Action, Change, Plan, Takeover};
use reconcile_core::redact::Redactor;
use reconcile_core::text::printable;
use reconcile_core::{Address, Progress, json};
use reconcile_render::comment::GITHUB_COMMENT_LIMIT;
use reconcile_render::plan::Styled;
use reconcile_render::{plan as render, report};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::prelude::*;

use crate::args::{ColorChoice, Format};
use crate::error::CliError;

/// Logs go to stderr, so stdout stays the plan (or its JSON) alone.
/// The crates below reconcile that log wire traffic.
const SDK_TARGETS: [&str; 13] = [
    "aws_config",
    "aws_runtime",
    "aws_sigv4",
    "aws_smithy_runtime",
    "aws_smithy_runtime_api",
    "aws_smithy_http_client",
    "aws_smithy_types",
    "aws_sdk_codebuild",
    "hyper",
    "hyper_util",
    "h2",
    "rustls",
    "octocrab",
];

/// Logs are coloured by the same rule as the rest, judged on stderr, where they go.
pub fn init_logging(verbose: u8, color: ColorChoice) {
    // Without `-v` only reconcile's own warnings: the SDK's (every credential provider that
    // found nothing, with its whole error) come before reconcile's own line about the same
    // failure, and a newcomer reads them first.
    let default = match verbose {
        0 => "off,reconcile=warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_env("RECONCILE_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    // At trace level the SDK and the HTTP stack log whole request and response bodies, and a
    // CreateWebhook response holds the webhook's secret: no level may print one, so their trace
    // events are dropped whatever RECONCILE_LOG asks.
    let no_wire_bodies = filter_fn(|metadata| {
        *metadata.level() != tracing::Level::TRACE || !SDK_TARGETS.iter().any(|t| metadata.target().starts_with(t))
    });
    let ansi = color_on(color, std::io::stderr().is_terminal());
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(move || LogWriter { ansi })
        .with_ansi(ansi)
        .with_target(false)
        .with_filter(filter.and(no_wire_bodies));
    tracing_subscriber::registry().with(layer).init();
}

/// Whether to colour a stream: `always`, or `auto` on a terminal without `NO_COLOR` set.
pub fn color_on(choice: ColorChoice, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// The values no byte the run writes may hold (a bake file's values from the environment),
/// added as they are read. Every way out below takes them out.
static NEVER_SHOWN: Mutex<Option<Redactor>> = Mutex::new(None);

/// From now on, no output holds any value of `redactor`, whole or in part.
pub fn never_show(redactor: &Redactor) {
    let mut never = NEVER_SHOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    never.get_or_insert_with(Redactor::default).extend(redactor);
}

/// `text` without any value [`never_show`] was given.
pub fn redacted(text: &str) -> String {
    let never = NEVER_SHOWN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match never.as_ref() {
        Some(redactor) => redactor.redact(text).into_owned(),
        None => text.to_owned(),
    }
}

/// Writes to stdout, flushed, returning the error rather than panicking as `print!` does, so a
/// reader that went away (`reconcile plan | head`) ends the run quietly (see `main`). The text
/// was made for its medium (a terminal's escapes, JSON's, Markdown's); here only what must never
/// be shown is taken out.
pub fn out(text: &str) -> std::io::Result<()> {
    let text = redacted(text);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Writes one line to stderr: every hidden character in it (a line break, an escape, a
/// bidirectional control) shown escaped, so it stays one line on a terminal and in a job log,
/// where a line of its own starting `::` would be a workflow command; and nothing never shown.
pub fn err(line: &str) {
    let line = redacted(line);
    let _ = writeln!(std::io::stderr().lock(), "{}", printable(&line));
}

/// A progress line on a terminal's stderr, written over the last one (`\r`); `None` clears it.
/// Only reconcile's own counts go here, never a value read from AWS or a file.
pub fn progress(line: Option<&str>) {
    let mut stderr = std::io::stderr().lock();
    let _ = match line {
        Some(line) => write!(stderr, "\r{}", printable(&redacted(line))),
        None => write!(stderr, "\r\x1b[2K"),
    };
    let _ = stderr.flush();
}

/// [`err`] for each line of `text`, our own line breaks kept.
pub fn err_lines(text: &str) {
    for line in text.lines() {
        err(line);
    }
}

/// One log event as one line: every hidden character escaped, but the colour escapes tracing
/// writes itself when `ansi` (`ESC [ digits ; m`), and one line break at the end.
fn log_line(event: &str, ansi: bool) -> String {
    let body = event.strip_suffix('\n').unwrap_or(event);
    let mut line = String::with_capacity(body.len() + 1);
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && ansi && chars.peek() == Some(&'[') {
            let sgr: String = chars.clone().take_while(|c| *c != 'm').collect();
            if sgr.len() < 16 && sgr[1..].bytes().all(|b| b.is_ascii_digit() || b == b';') {
                line.push(c);
                line.extend(chars.by_ref().take(sgr.len() + 1));
                continue;
            }
        }
        line.push_str(&printable(&c.to_string()));
    }
    line.push('\n');
    line
}

/// Log lines, as [`err`] writes lines: tracing formats a whole event and writes it at once, so
/// each write is one event, which may hold a live value.
struct LogWriter {
    /// Whether the log is coloured: its own SGR escapes are kept.
    ansi: bool,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = log_line(&redacted(&String::from_utf8_lossy(buf)), self.ansi);
        std::io::stderr().lock().write_all(line.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// A plan in `format` on stdout; in Markdown, also to the job summary. `command` titles the
/// Markdown (`plan`, `drift`).
pub fn print_plan(output: &Output, plan: &Plan, format: Format, command: &str) -> Result<(), CliError> {
    match format {
        Format::Text => out(&output.paint(&render::styled_text(plan)))?,
        Format::Json => out(&format!("{}\n", json::to_pretty(&render::json(plan))))?,
        Format::Markdown => {
            let comment = reconcile_render::comment::titled(plan, GITHUB_COMMENT_LIMIT, command);
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(())
}

/// What an apply did, in `format` on stdout; in Markdown, also to the job summary.
pub fn print_report(plan: &Plan, report: &ApplyReport, format: Format) -> Result<(), CliError> {
    match format {
        // The text plan already says when there was nothing to do.
        Format::Text if report.results.is_empty() && report.unreadable.is_empty() => {}
        Format::Text => out(&report::text(plan, report))?,
        Format::Json => out(&format!("{}\n", json::to_pretty(&report::json(plan, report))))?,
        Format::Markdown => {
            let comment = report::markdown(plan, report);
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(())
}

/// Whether text output is coloured.
pub struct Output {
    color: bool,
}

impl Output {
    pub fn new(color: bool) -> Output {
        Output { color }
    }

    /// The styled text, with its styles shown as ANSI escapes when colour is on.
    pub fn paint(&self, text: &Styled) -> String {
        if !self.color {
            return text.plain();
        }
        let mut painted = String::new();
        for (style, span) in text.spans() {
            if style.is_plain() {
                painted.push_str(span);
            } else {
                painted.push_str(&format!("{}{span}{}", style.render(), style.render_reset()));
            }
        }
        painted
    }
}

/// Prints one line per resource as apply starts and finishes it, Terraform-style, with elapsed
/// time; to stderr when stdout carries a machine-readable report. On a terminal, a spinner line
/// under them shows what is still in flight.
pub struct ApplyPrinter {
    to_stderr: bool,
    /// `Some` when a spinner is drawn: the resources in flight, and whether the line is shown.
    spinner: Option<Mutex<Spinner>>,
    /// The changes of the plan being applied that take their resource over: said as such.
    takeovers: Mutex<std::collections::BTreeMap<Address, Takeover>>,
}

#[derive(Default)]
struct Spinner {
    in_flight: BTreeSet<String>,
    frame: usize,
    shown: bool,
}

const SPINNER_FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// Clears the current terminal line.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl ApplyPrinter {
    /// `spinner` asks for a spinner; it is drawn only when stdout is a terminal that carries
    /// the progress.
    pub fn new(to_stderr: bool, spinner: bool) -> ApplyPrinter {
        let spinner =
            (spinner && !to_stderr && std::io::stdout().is_terminal()).then(|| Mutex::new(Spinner::default()));
        ApplyPrinter { to_stderr, spinner, takeovers: Mutex::default() }
    }

    /// The plan about to be applied: its takeovers are said as imports and re-marks.
    pub fn applying(&self, plan: &Plan) {
        *self.takeovers.lock().expect("never poisoned") = plan.takeovers.clone();
    }

    fn words(&self, change: &Change) -> (&'static str, &'static str, &'static str) {
        match self.takeovers.lock().expect("never poisoned").get(&change.address) {
            // As Terraform says an import.
            Some(Takeover::Import) => ("Importing...", "Import complete", "Import failed"),
            Some(Takeover::Remark) => ("Re-marking...", "Re-marking complete", "Re-marking failed"),
            None => words(change.action),
        }
    }

    /// Progress is best effort: a closed stdout must not stop an apply halfway.
    pub fn line(&self, text: &str) {
        if self.to_stderr {
            err(text);
            return;
        }
        match &self.spinner {
            Some(spinner) => {
                let mut spinner = spinner.lock().expect("never poisoned");
                let clear = if spinner.shown { CLEAR_LINE } else { "" };
                spinner.shown = false;
                let _ = out(&format!("{clear}{text}\n"));
            }
            None => {
                let _ = out(&format!("{text}\n"));
            }
        }
    }

    /// Redraws the spinner line; call it every tick while apply runs.
    pub fn tick(&self) {
        let Some(spinner) = &self.spinner else { return };
        let mut spinner = spinner.lock().expect("never poisoned");
        if spinner.in_flight.is_empty() {
            return;
        }
        spinner.frame = (spinner.frame + 1) % SPINNER_FRAMES.len();
        let first = spinner.in_flight.iter().next().cloned().unwrap_or_default();
        let others = match spinner.in_flight.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        let _ = out(&format!("{CLEAR_LINE}{} applying {first}{others}", SPINNER_FRAMES[spinner.frame]));
        spinner.shown = true;
    }

    /// Clears the spinner line when apply is done.
    pub fn finish(&self) {
        if let Some(spinner) = &self.spinner {
            let mut spinner = spinner.lock().expect("never poisoned");
            if spinner.shown {
                let _ = out(CLEAR_LINE);
                spinner.shown = false;
            }
        }
    }

    fn track(&self, address: &Address, running: bool) {
        if let Some(spinner) = &self.spinner {
            let mut spinner = spinner.lock().expect("never poisoned");
            if running {
                spinner.in_flight.insert(address.to_string());
            } else {
                spinner.in_flight.remove(&address.to_string());
            }
        }
    }
}

fn words(action: Action) -> (&'static str, &'static str, &'static str) {
    match action {
        Action::Create => ("Creating...", "Creation complete", "Creation failed"),
        Action::Update => ("Modifying...", "Modifications complete", "Modification failed"),
        Action::Replace => ("Replacing...", "Replacement complete", "Replacement failed"),
        Action::Delete => ("Destroying...", "Destruction complete", "Destruction failed"),
    }
}

impl Progress for ApplyPrinter {
    fn note(&self, address: &Address, message: &str) {
        self.line(&format!("{address}: {message}"));
    }
}

impl ApplyEvents for ApplyPrinter {
    fn started(&self, change: &Change) {
        self.line(&format!("{}: {}", change.address, self.words(change).0));
        self.track(&change.address, true);
    }

    fn finished(&self, change: &Change, outcome: &Outcome, elapsed: Duration) {
        self.track(&change.address, false);
        let (_, done, failed) = self.words(change);
        let address = &change.address;
        let seconds = elapsed.as_secs_f64();
        self.line(&match outcome {
            Outcome::Applied => format!("{address}: {done} after {seconds:.1}s"),
            Outcome::Adopted => format!(
                "{address}: Adopted after {seconds:.1}s: it already existed, so it was brought to the desired state"
            ),
            Outcome::Failed(error) => {
                let reason = reconcile_core::text::printable(&error.reason);
                format!("{address}: {failed} after {seconds:.1}s: failed to {}: {reason}", error.operation)
            }
            Outcome::Skipped { because } => format!("{address}: Skipped, because {because} did not apply"),
            Outcome::NotStarted => format!("{address}: Not started (interrupted)"),
            Outcome::Left { why } => format!("{address}: Left for an administrator: {why}"),
        });
    }
}

/// Appends Markdown to the GitHub Actions job summary (`$GITHUB_STEP_SUMMARY`), when running in a
/// job: every Markdown report is also put there.
pub fn step_summary(markdown: &str) -> Result<(), CliError> {
    use anyhow::Context;
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return Ok(()) };
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(&path).with_context(|| {
            format!("failed to open $GITHUB_STEP_SUMMARY ({})", std::path::Path::new(&path).display())
        })?;
    writeln!(file, "{}", redacted(markdown)).context("failed to write $GITHUB_STEP_SUMMARY")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_event_is_one_line_whatever_a_value_in_it_holds() {
        let event = "\u{1b}[2mdebug\u{1b}[0m read `x\n::error::pwned\u{7}\u{202e}`\n";
        assert_eq!(log_line(event, true), "\u{1b}[2mdebug\u{1b}[0m read `x\\u{a}::error::pwned\\u{7}\\u{202e}`\n");
        // Without colour, tracing writes no escape: any is a value's.
        assert_eq!(log_line("a\u{1b}[2Jb\n", false), "a\\u{1b}[2Jb\n");
        // An escape that is not a colour is a value's, colour or not.
        assert_eq!(log_line("a\u{1b}[2Jb", true), "a\\u{1b}[2Jb\n");
    }

    #[test]
    fn what_is_never_shown_is_taken_out_of_every_way_out() {
        let mut redactor = Redactor::default();
        redactor.add("TOKEN", "s3cr3t-value-for-the-test");
        never_show(&redactor);
        assert_eq!(redacted("x s3cr3t-value-for-the-test y, and value-for-the"), "x ${TOKEN} y, and ${TOKEN}");
    }
}
