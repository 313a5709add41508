//! `reconcile apply`: the session's apply protocol, answering to a terminal or a CI job: the plan
//! and the progress on stdout (stderr when the report is JSON or Markdown), the prompt on the
//! terminal, SIGINT and SIGTERM.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Context;
use futures::future::BoxFuture;
use reconcile_core::Plan;
use reconcile_core::engine::{ApplyEvents, ApplyReport};
use reconcile_render::plan as render;

use crate::args::{ColorChoice, Format};
use crate::aws::Aws;
use crate::error::CliError;
use crate::output::{ApplyPrinter, Output, color_on, out, print_report};
use crate::session::{ApplyRequest, Console, Interrupts, PlanFrom, Session};

/// Refuses an apply (or a destroy: `command`) that would have to ask and cannot: not on a
/// terminal, without `--auto-approve` (a saved plan was approved when it was reviewed).
pub fn can_ask(command: &str, auto_approve: bool, saved: bool) -> Result<(), CliError> {
    if auto_approve || saved || std::io::stdin().is_terminal() {
        return Ok(());
    }
    Err(CliError::Other(anyhow::anyhow!(
        "{command} is not running on a terminal, so it cannot ask for approval; pass --auto-approve"
    )))
}

/// `reconcile apply`: unattended without --auto-approve is refused before anything else
/// happens; a saved plan was approved when it was reviewed.
pub async fn exec(args: crate::args::ApplyArgs, context: &super::Context) -> Result<u8, CliError> {
    let crate::args::ApplyArgs {
        plan_file,
        auto_approve,
        allow_delete,
        format,
        force_delete_images,
        lock_timeout,
        shown,
        bake,
        prune,
    } = args;
    can_ask("apply", auto_approve, plan_file.is_some())?;
    let load = crate::session::Load {
        bake: bake.bake.as_deref(),
        prune: prune.prune,
        force_delete_images,
        ..Default::default()
    };
    let session = context.session(context.inputs(load)?, crate::aws::Purpose::Apply).await?;
    let request = ApplyRequest {
        plan: plan_file.as_deref().map_or(PlanFrom::Fresh, PlanFrom::Saved),
        auto_approve,
        allow_delete,
        lock_timeout: std::time::Duration::from_secs(lock_timeout),
        shown_in_public: shown.public(),
    };
    run(&session, context.color, format, request, false).await
}

/// `reconcile destroy`.
pub async fn exec_destroy(args: crate::args::DestroyArgs, context: &super::Context) -> Result<u8, CliError> {
    let crate::args::DestroyArgs { plan_file, auto_approve, format, force_delete_images, empty_buckets, lock_timeout } =
        args;
    can_ask("destroy", auto_approve, plan_file.is_some())?;
    let load = crate::session::Load { force_delete_images, destroy: true, empty_buckets, ..Default::default() };
    let session = context.session(context.inputs(load)?, crate::aws::Purpose::Apply).await?;
    let request = ApplyRequest {
        plan: plan_file.as_deref().map_or(PlanFrom::Fresh, PlanFrom::Saved),
        auto_approve,
        // The command is the flag: it deletes, and nothing else.
        allow_delete: true,
        lock_timeout: std::time::Duration::from_secs(lock_timeout),
        // What it deletes is what desired.toml declares: shown whole.
        shown_in_public: false,
    };
    run(&session, context.color, format, request, true).await
}

pub async fn run(
    session: &Session<Aws>,
    color: ColorChoice,
    format: Format,
    request: ApplyRequest<'_>,
    destroy: bool,
) -> Result<u8, CliError> {
    // With a machine-readable report, stdout carries only the report.
    let progress_to_stderr = format != Format::Text;
    let console = Terminal {
        output: Output::new(color_on(color, std::io::stdout().is_terminal())),
        format,
        destroy,
        printer: ApplyPrinter::new(progress_to_stderr, true),
        progress_to_stderr,
    };
    session.apply(&console, request).await
}

/// The process's terminal (or a CI job's log) as an apply's console.
struct Terminal {
    output: Output,
    format: Format,
    /// Asks as Terraform's destroy does.
    destroy: bool,
    printer: ApplyPrinter,
    progress_to_stderr: bool,
}

impl Console for Terminal {
    fn plan(&self, plan: &Plan) -> Result<(), CliError> {
        self.printer.applying(plan);
        let text = self.output.paint(&render::styled_text(plan));
        if self.progress_to_stderr {
            // The plan's own colour escapes are kept: its values were made printable as it was
            // rendered.
            let _ = std::io::stderr().lock().write_all(crate::output::redacted(&text).as_bytes());
        } else {
            out(&text)?;
        }
        Ok(())
    }

    fn approve(&self) -> BoxFuture<'static, Result<bool, CliError>> {
        // Read on a thread of its own, so a signal at the prompt is heard while it waits (and the
        // process can end without waiting for a line that never comes).
        let (sender, answer) = tokio::sync::oneshot::channel();
        let asked = out(if self.destroy {
            "\nDo you really want to destroy all these resources? There is no undo. Only 'yes' will be accepted: "
        } else {
            "\nDo you want to perform these actions? Only 'yes' will be accepted: "
        });
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = std::io::stdin().lock().read_line(&mut line).map(|_| line.trim() == "yes");
            let _ = sender.send(read);
        });
        Box::pin(async move {
            asked?;
            let read = answer.await.context("the prompt's reader went away")?;
            Ok(read.context("failed to read the answer")?)
        })
    }

    fn interrupts(&self) -> Result<Interrupts, CliError> {
        Interrupts::signals()
    }

    fn events(&self) -> &dyn ApplyEvents {
        &self.printer
    }

    fn tick(&self) {
        self.printer.tick();
    }

    fn line(&self, text: &str) {
        self.printer.line(text);
    }

    fn warn(&self, text: &str) {
        crate::output::err(text);
    }

    fn finish(&self) {
        self.printer.finish();
    }

    fn report(&self, plan: &Plan, report: &ApplyReport) -> Result<(), CliError> {
        print_report(plan, report, self.format)
    }
}
