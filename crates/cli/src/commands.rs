//! The subcommands: read desired.toml, talk to AWS through the engine, print, pick an exit code.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use clap::CommandFactory;
use reconcile_core::engine::{self, ApplyOptions, DesiredResources};
use reconcile_core::markdown::GITHUB_COMMENT_LIMIT;
use reconcile_core::{
    Account, Action, Desired, DesiredResource, Finding, Plan, ReconcileError, Reconciler, ResourceKind, json, render,
    report, saved,
};

use crate::args::{Args, Command, Format, OutputsFormat};
use crate::aws::{Aws, Purpose};
use crate::error::CliError;
use crate::exit;
use crate::output::{ApplyPrinter, Output, color_on, out};

pub async fn run(args: Args) -> Result<u8, CliError> {
    let output = Output::new(color_on(args.color, std::io::stdout().is_terminal()));
    // Commands that need no desired.toml.
    match &args.command {
        Command::Schema => {
            out(&format!("{}\n", json::to_pretty(&reconcile_core::desired::schema())))?;
            return Ok(exit::OK);
        }
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut Args::command(), "reconcile", &mut std::io::stdout());
            return Ok(exit::OK);
        }
        Command::Man => {
            man_pages()?;
            return Ok(exit::OK);
        }
        // Unattended apply without --auto-approve is refused before anything else happens; a
        // saved plan was approved when it was reviewed.
        Command::Apply { auto_approve: false, plan_file: None, .. } if !std::io::stdin().is_terminal() => {
            return Err(CliError::Other(anyhow::anyhow!(
                "apply is not running on a terminal, so it cannot ask for approval; pass --auto-approve"
            )));
        }
        _ => {}
    }

    // Bad input stops here, before any AWS call, and before even the AWS configuration is read.
    let (desired, desired_text) = load_desired(&args.desired)?;
    // What is derived from desired.toml (such as the IAM policy and its size) is checked with a
    // stand-in account id: ids are always 12 digits, so sizes hold.
    let stand_in = Account::new("000000000000", &desired.region);
    desired_resources(&desired, &stand_in, &crate::github::GithubSide::Undeclared).map_err(|errors| {
        CliError::Input(errors.iter().map(|error| format!("{}: {error}", args.desired.display())).collect())
    })?;
    let bake = match args.command.bake().or(desired.bake.as_deref()) {
        Some(path) => Some(load_bake(path)?),
        None => None,
    };
    let prune = match args.command.prune() {
        true => Some(reconcile_ecr::Prune {
            marker: reconcile_ecr::prune_marker(&desired).map_err(|why| CliError::Input(vec![why]))?,
            force_delete_images: args.command.force_delete_images(),
        }),
        false => None,
    };
    if let Command::Validate { .. } = args.command {
        let mut findings: Vec<Finding> = desired.findings.iter().map(|finding| finding.to_finding()).collect();
        if let Some(bake) = &bake {
            let check = bake.check(&desired, None);
            if !check.accounts.is_empty() {
                let accounts: Vec<&str> = check.accounts.iter().map(String::as_str).collect();
                eprintln!(
                    "{}: {} references to ECR in {} checked, naming account {}.",
                    bake.name,
                    check.checked,
                    desired.region,
                    accounts.join(", ")
                );
            }
            findings.extend(check.findings);
        }
        Finding::rank(&mut findings);
        for finding in &findings {
            eprintln!("{}", finding_line(finding));
        }
        refuse_on(&findings)?;
        out(&format!(
            "{} is valid: region {}, {} ECR repositories, {} S3 buckets, {} IAM roles, {} CodeBuild projects.\n",
            args.desired.display(),
            desired.region,
            desired.ecr.repositories.len(),
            desired.s3.buckets.len(),
            desired.iam.roles.len(),
            desired.codebuild.projects.len(),
        ))?;
        return Ok(exit::OK);
    }

    let purpose = if matches!(args.command, Command::Apply { .. }) { Purpose::Apply } else { Purpose::Read };
    let aws = Aws::load(&desired.region, purpose, args.parallelism).await;
    let github = crate::github::GithubSide::connect(&desired)?;
    let context = PlanContext {
        desired: &desired,
        github: &github,
        bake: bake.as_ref(),
        prune: prune.clone(),
        force_delete_images: args.command.force_delete_images(),
        when_unreadable: match args.command {
            Command::Apply { .. } => engine::WhenUnreadable::PlanTheRest,
            _ => engine::WhenUnreadable::Fail,
        },
    };
    match args.command {
        Command::Plan { format, detailed_exitcode, out, .. } => {
            let Planned { plan, .. } = make_plan(&aws, &context).await?;
            let refused = refuse_on(&plan.findings);
            // Saved before it is printed, so a reader that goes away cannot lose it; never when
            // refused, so a refused plan cannot be applied.
            if let (Some(path), Ok(())) = (&out, &refused) {
                let saved = json::to_pretty(&saved::to_json(&plan, &desired_text));
                std::fs::write(path, saved + "\n")
                    .with_context(|| format!("failed to write the plan to {}", path.display()))?;
            }
            print_plan(&output, &plan, format, "plan")?;
            refused?;
            if let Some(path) = &out {
                eprintln!(
                    "Saved the plan to {}: `reconcile apply {}` carries out exactly it.",
                    path.display(),
                    path.display()
                );
            }
            Ok(if detailed_exitcode && plan.has_changes() { exit::CHANGES } else { exit::OK })
        }
        Command::Apply { plan_file, auto_approve, allow_delete, format, lock_timeout, .. } => {
            let approval = Approval { auto_approve, allow_delete };
            // A first look, without the lock: an apply with nothing to do writes nothing, not
            // even a lock object, so a scheduled apply of an account that matches stays read-only.
            if plan_file.is_none() {
                let Planned { plan, reconcilers, .. } = make_plan(&aws, &context).await?;
                if !plan.has_changes() {
                    return apply(&output, &aws, &plan, &reconcilers, approval, format).await;
                }
            }
            // Then locked before the plan that is applied is made, as Terraform does: a plan read
            // while another apply was changing the account would be applied after it, stale.
            let account = aws.account().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
            let lock = crate::lock::apply_lock(&aws, &desired, &account);
            let locked = match &lock {
                Some(lock) => crate::lock::take_lock(&aws, lock, Duration::from_secs(lock_timeout)).await?,
                None => {
                    tracing::info!("desired.toml declares no bucket, so this apply runs without a lock");
                    false
                }
            };
            let result = match plan_file {
                Some(path) => {
                    let approval = Approval { auto_approve: true, allow_delete };
                    apply_saved(&output, &aws, &context, &desired_text, &path, approval, format).await
                }
                None => match make_plan(&aws, &context).await {
                    Ok(Planned { plan, reconcilers, .. }) => {
                        apply(&output, &aws, &plan, &reconcilers, approval, format).await
                    }
                    Err(error) => Err(error),
                },
            };
            if let (true, Some(lock)) = (locked, &lock) {
                lock.release().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
            }
            result
        }
        Command::Unlock => crate::lock::unlock(&aws, &desired).await,
        Command::Drift { format, .. } => {
            let Planned { mut plan, reconcilers, resources } = make_plan(&aws, &context).await?;
            let unmanaged = engine::survey(&reconcilers, &resources).await.map_err(CliError::aws(&aws.endpoint))?;
            plan.findings.extend(unmanaged);
            reconcile_core::Finding::rank(&mut plan.findings);
            // What the registry holds and costs: it only informs, the exit code is drift's.
            let account = Account::new(&plan.account, &plan.region);
            let registry = crate::usage::registry_usage(&aws, &account, &desired).await?;
            tracing::info!("drift: {}", aws.requests);
            crate::usage::print_drift(&output, &plan, &registry, format)?;
            Ok(if plan.account_differs() { exit::CHANGES } else { exit::OK })
        }
        Command::Outputs { format } => outputs(&aws, &desired, format).await,
        Command::Usage { format, since } => crate::usage::usage(&aws, &desired, format, &since).await,
        Command::Validate { .. } | Command::Schema | Command::Completions { .. } | Command::Man => {
            unreachable!("handled above")
        }
    }
}

/// A finding as one line of `validate`'s output.
fn finding_line(finding: &Finding) -> String {
    let severity = match finding.severity {
        reconcile_core::Severity::Warning => "warning",
        reconcile_core::Severity::Error => "error",
    };
    let overridden = finding
        .overridden_by
        .as_ref()
        .map(|key| format!(" (overridden: `{key} = true` on the resource)"))
        .unwrap_or_default();
    format!("{severity}: [{}] {}{overridden}", finding.code, finding.message)
}

/// Refuses (exit 3) when an error finding is about desired.toml itself.
fn refuse_on(findings: &[Finding]) -> Result<(), CliError> {
    let refusing: Vec<String> = findings
        .iter()
        .filter(|finding| finding.refuses())
        .map(|finding| match &finding.address {
            Some(address) => format!("{} on {address}", finding.code),
            None => finding.code.clone(),
        })
        .collect();
    if refusing.is_empty() { Ok(()) } else { Err(CliError::RefusedFindings(refusing)) }
}

/// A bake file, read, for the cross-check.
struct BakeFile {
    /// The path as given, for messages.
    name: String,
    references: Vec<reconcile_core::bake::Reference>,
}

impl BakeFile {
    fn check(&self, desired: &Desired, account: Option<&str>) -> reconcile_core::bake::Check {
        let declared = desired.ecr.repositories.iter().map(|r| r.name.as_str()).collect();
        reconcile_core::bake::check(&self.name, &self.references, &declared, &desired.region, account)
    }
}

/// Reads the bake file, resolving its variables from the environment as bake does.
fn load_bake(path: &Path) -> Result<BakeFile, CliError> {
    let name = path.display().to_string();
    let fail = |why: String| CliError::Input(vec![format!("{name}: {why}")]);
    let text = read_capped(path).map_err(|why| fail(format!("failed to read the bake file: {why}")))?;
    let lookup = |variable: &str| {
        if std::env::var_os("BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP").is_some_and(|v| v == "1") {
            return None;
        }
        std::env::var(variable).ok()
    };
    let references = reconcile_core::bake::read(&text, &lookup).map_err(fail)?;
    Ok(BakeFile { name, references })
}

/// What a plan is made from besides AWS.
struct PlanContext<'a> {
    desired: &'a Desired,
    github: &'a crate::github::GithubSide,
    bake: Option<&'a BakeFile>,
    prune: Option<reconcile_ecr::Prune>,
    /// `apply --force-delete-images`, for a saved plan made with --prune.
    force_delete_images: bool,
    /// Whether a service that cannot be read fails the plan (plan, drift) or only its own
    /// resources and what depends on them (apply).
    when_unreadable: engine::WhenUnreadable,
}

/// Every desired resource of every resource crate, keyed by address. Pure: no AWS.
fn desired_resources(
    desired: &Desired,
    account: &Account,
    github: &crate::github::GithubSide,
) -> Result<DesiredResources, Vec<ReconcileError>> {
    let crates: [DesiredFn; 5] = [
        reconcile_iam::desired,
        reconcile_s3::desired,
        reconcile_ecr::desired,
        reconcile_codebuild::desired,
        reconcile_github::desired,
    ];
    let mut resources = DesiredResources::new();
    let mut errors = Vec::new();
    for desired_of in crates {
        match desired_of(desired, account) {
            Ok(list) => resources.extend(list.into_iter().map(|r| (r.address.clone(), r))),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    github.shape(&mut resources);
    Ok(resources)
}

/// A reconciler per resource crate: AWS's four, and GitHub's when it can be checked.
fn reconcilers(
    aws: &Aws,
    account: &Account,
    prune: Option<reconcile_ecr::Prune>,
    context: &PlanContext<'_>,
) -> Vec<Box<dyn Reconciler>> {
    let mut reconcilers = aws.reconcilers(account, prune);
    reconcilers.extend(context.github.reconciler(context.desired));
    reconcilers
}

type DesiredFn = fn(&Desired, &Account) -> Result<Vec<DesiredResource>, ReconcileError>;

/// The man page of `reconcile` and of each subcommand, one after another.
fn man_pages() -> Result<(), CliError> {
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
    Ok(())
}

/// The largest desired.toml read: a thousand repositories take about 40 KiB, so this is room
/// for any real account, and a bound for `--desired /dev/zero` and its kind.
const DESIRED_LIMIT: u64 = 1024 * 1024;

fn load_desired(path: &Path) -> Result<(Desired, String), CliError> {
    let text =
        read_capped(path).map_err(|why| CliError::Input(vec![format!("failed to read {}: {why}", path.display())]))?;
    match Desired::parse(path, &text) {
        Ok(desired) => Ok((desired, text)),
        Err(errors) => Err(CliError::Input(errors.0.iter().map(ToString::to_string).collect())),
    }
}

/// A text file of at most [`DESIRED_LIMIT`] bytes (desired.toml, a bake file): `/dev/zero` and
/// its kind are refused rather than read for ever.
pub(crate) fn read_capped(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    file.take(DESIRED_LIMIT + 1).read_to_end(&mut bytes).map_err(|error| error.to_string())?;
    if bytes.len() as u64 > DESIRED_LIMIT {
        return Err(format!("it is larger than {} MiB, more than any account needs", DESIRED_LIMIT >> 20));
    }
    // TOML is UTF-8 without a byte-order mark; some Windows editors add one, and a file that
    // differs from its own review by an invisible character is refused with the fix.
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err("it starts with a UTF-8 byte-order mark; save it as UTF-8 without one".to_owned());
    }
    String::from_utf8(bytes)
        .map_err(|error| format!("it is not UTF-8 text (invalid byte at offset {})", error.utf8_error().valid_up_to()))
}

/// A plan, with the reconcilers and desired resources it was made from, for what comes next.
struct Planned {
    plan: Plan,
    reconcilers: Vec<Box<dyn Reconciler>>,
    resources: DesiredResources,
}

async fn make_plan(aws: &Aws, context: &PlanContext<'_>) -> Result<Planned, CliError> {
    let desired = context.desired;
    let account = aws.account().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    let resources = desired_resources(desired, &account, context.github).map_err(CliError::aws(&aws.endpoint))?;
    let reconcilers = reconcilers(aws, &account, context.prune.clone(), context);
    let mut plan = engine::plan_with(&reconcilers, desired, &resources, &account, context.when_unreadable)
        .await
        .map_err(CliError::aws(&aws.endpoint))?;
    if let Some(finding) = context.github.finding() {
        plan.findings.push(finding);
        Finding::rank(&mut plan.findings);
    }
    if let Some(bake) = context.bake {
        plan.findings.extend(bake.check(desired, Some(&account.id)).findings);
        Finding::rank(&mut plan.findings);
    }
    tracing::info!("plan: {}", aws.requests);
    Ok(Planned { plan, reconcilers, resources })
}

fn print_plan(output: &Output, plan: &Plan, format: Format, command: &str) -> Result<(), CliError> {
    match format {
        Format::Text => out(&output.paint(&render::styled_text(plan)))?,
        Format::Json => out(&format!("{}\n", json::to_pretty(&render::json(plan))))?,
        Format::Markdown => {
            let comment = reconcile_core::markdown::titled(plan, GITHUB_COMMENT_LIMIT, command);
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(())
}

/// Appends Markdown to the GitHub Actions job summary, when running in one.
pub(crate) fn step_summary(markdown: &str) -> Result<(), CliError> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return Ok(()) };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("failed to open $GITHUB_STEP_SUMMARY ({})", Path::new(&path).display()))?;
    writeln!(file, "{markdown}").context("failed to write $GITHUB_STEP_SUMMARY")?;
    Ok(())
}

#[derive(Clone, Copy)]
struct Approval {
    auto_approve: bool,
    allow_delete: bool,
}

async fn apply(
    output: &Output,
    aws: &Aws,
    plan: &Plan,
    reconcilers: &[Box<dyn Reconciler>],
    approval: Approval,
    format: Format,
) -> Result<u8, CliError> {
    // With a machine-readable report, stdout carries only the report.
    let progress_to_stderr = format != Format::Text;
    let plan_text = output.paint(&render::styled_text(plan));
    if progress_to_stderr {
        eprint!("{plan_text}");
    } else {
        print!("{plan_text}");
    }
    refuse_on(&plan.findings)?;
    if !plan.has_changes() {
        // A machine-readable report is still a report: one of nothing done (or of what could
        // not even be read).
        let report = engine::ApplyReport { unreadable: engine::unreadable(plan), ..engine::ApplyReport::default() };
        print_report(plan, &report, format)?;
        return if report.succeeded() { Ok(exit::OK) } else { Err(CliError::ApplyFailed) };
    }
    if plan.changes.iter().any(|c| c.action.is_destructive()) && !approval.allow_delete {
        return Err(CliError::Refused(
            "the plan deletes or replaces resources; pass --allow-delete to allow it".to_owned(),
        ));
    }
    if !approval.auto_approve && !confirm()? {
        return Err(CliError::Cancelled);
    }
    engine::preflight(reconcilers, plan, approval.allow_delete)
        .map_err(|refusal| CliError::Refused(refusal.to_string()))?;
    let printer = ApplyPrinter::new(progress_to_stderr, true);
    printer.line("");
    run_apply(aws, plan, reconcilers, approval, format, &printer).await
}

/// The apply itself, once approved and locked.
async fn run_apply(
    aws: &Aws,
    plan: &Plan,
    reconcilers: &[Box<dyn Reconciler>],
    approval: Approval,
    format: Format,
    printer: &ApplyPrinter,
) -> Result<u8, CliError> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let options = ApplyOptions { allow_delete: approval.allow_delete, concurrency: aws.parallelism, stop: Some(&stop) };
    let applying = engine::apply(reconcilers, plan, options, printer);
    tokio::pin!(applying);
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(120));
    let mut signals = Signals::new()?;
    let mut interrupted: Option<u8> = None;
    let result = loop {
        tokio::select! {
            result = &mut applying => break result,
            _ = ticks.tick() => printer.tick(),
            code = signals.next() => {
                if interrupted.is_some() {
                    // A second interruption: whoever sent it wants out now.
                    eprintln!("\nInterrupted again: stopping at once; changes in flight may be half made (apply again to finish).");
                    exit_now(code);
                }
                interrupted = Some(code);
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                printer.line("Interrupted: starting no more changes, letting the running ones finish (interrupt again to stop at once).");
            }
        }
    };
    printer.finish();
    let report = result.map_err(|refusal| CliError::Refused(refusal.to_string()))?;
    tracing::info!("plan and apply: {}", aws.requests);
    printer.line("");
    print_report(plan, &report, format)?;
    match interrupted {
        Some(code) => Err(CliError::Interrupted(code)),
        None if report.succeeded() => Ok(exit::OK),
        None => Err(CliError::ApplyFailed),
    }
}

/// SIGINT and SIGTERM, as the exit codes a shell gives them (130 and 143).
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals, CliError> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| signal(kind).context("failed to listen for SIGINT and SIGTERM");
        Ok(Signals { interrupt: listen(SignalKind::interrupt())?, terminate: listen(SignalKind::terminate())? })
    }

    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => exit::INTERRUPTED,
            _ = self.terminate.recv() => exit::TERMINATED,
        }
    }
}

/// Leaves at once, on a second interruption: the one place the binary exits without returning
/// to `main`, because waiting for the changes in flight is exactly what was refused.
#[expect(clippy::exit, reason = "a second interruption means: do not wait for anything")]
fn exit_now(code: u8) -> ! {
    std::process::exit(i32::from(code))
}

fn print_report(plan: &Plan, report: &engine::ApplyReport, format: Format) -> Result<(), CliError> {
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

/// Carries out a saved plan, after checking that neither desired.toml nor any resource it
/// touches has moved since it was made.
async fn apply_saved(
    output: &Output,
    aws: &Aws,
    context: &PlanContext<'_>,
    desired_text: &str,
    path: &Path,
    approval: Approval,
    format: Format,
) -> Result<u8, CliError> {
    let text = std::fs::read_to_string(path).with_context(|| format!("failed to read the plan {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not a JSON plan", path.display()))?;
    let saved = saved::from_json(&value).map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))?;
    let account = aws.account().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    if saved.plan.account != account.id || saved.plan.region != account.region {
        return Err(CliError::Stale {
            path: path.to_owned(),
            reasons: vec![format!(
                "it was made for account {} in {}, but these credentials are for account {} in {}",
                saved.plan.account, saved.plan.region, account.id, account.region
            )],
        });
    }
    let desired = context.desired;
    // desired.toml's own refusals hold for a saved plan too (a refused plan is never saved).
    let mut findings: Vec<Finding> = desired.findings.iter().map(|finding| finding.to_finding()).collect();
    findings.extend(context.bake.into_iter().flat_map(|bake| bake.check(desired, Some(&account.id)).findings));
    refuse_on(&findings)?;
    // A plan made with --prune holds repository deletes: seeing those repositories again needs
    // the same look beyond the declared, whether or not --prune is given again.
    let prunes =
        saved.plan.changes.iter().any(|c| c.address.kind == ResourceKind::EcrRepository && c.action == Action::Delete);
    let prune = match (&context.prune, prunes) {
        (None, true) => Some(reconcile_ecr::Prune {
            marker: reconcile_ecr::prune_marker(desired).map_err(|why| CliError::Input(vec![why]))?,
            force_delete_images: context.force_delete_images,
        }),
        (prune, _) => prune.clone(),
    };
    let reconcilers = reconcilers(aws, &account, prune, context);
    let resources = desired_resources(desired, &account, context.github).map_err(CliError::aws(&aws.endpoint))?;
    // Everything the plan touches or claims to have fingerprinted, seen again now; with a
    // replacement, everything declared, so that whoever asked for it (the GitHub side, for the
    // CodeBuild webhook) can ask again, or not.
    let replaces = saved.plan.changes.iter().any(|change| change.action == Action::Replace);
    let addresses: Vec<_> = saved
        .observed_fingerprints
        .keys()
        .chain(saved.plan.changes.iter().map(|change| &change.address))
        .chain(resources.keys().filter(|_| replaces))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let engine::Seen { observed: now, replace } =
        engine::observe_again(&reconcilers, &resources, &addresses).await.map_err(CliError::aws(&aws.endpoint))?;
    let mut reasons = saved::staleness(&saved, desired_text, &now);
    // Only when nothing moved can the changes be derived again and compared with the file's.
    if reasons.is_empty() {
        reasons = saved::tampering(&saved, &resources, &now, |address, desired, observed| {
            engine::change_for(&reconcilers, address, desired, observed, replace.contains(address))
        });
    }
    if !reasons.is_empty() {
        return Err(CliError::Stale { path: path.to_owned(), reasons });
    }
    // Approved when it was reviewed: no prompt.
    apply(output, aws, &saved.plan, &reconcilers, approval, format).await
}

fn confirm() -> Result<bool, CliError> {
    out("\nDo you want to perform these actions? Only 'yes' will be accepted: ")?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).context("failed to read the answer")?;
    Ok(answer.trim() == "yes")
}

/// `value` as one word for a POSIX shell: as it is when every character is inert, else in single
/// quotes. These lines are meant to be pasted into a shell, so a value such as
/// `gfx1201; rm -rf / $(id)` must stay a value. Control characters cannot be quoted safely for
/// every terminal, so they are refused.
fn shell_quoted(value: &str) -> Result<String, CliError> {
    if value.chars().any(char::is_control) {
        return Err(CliError::Other(anyhow::anyhow!("a variable's value holds a control character: {value:?}")));
    }
    let inert = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c);
    if !value.is_empty() && value.chars().all(inert) {
        return Ok(value.to_owned());
    }
    Ok(format!("'{}'", value.replace('\'', r"'\''")))
}

/// The repository variables that wire the nightly's GitHub repository to this account, in the
/// runbook's order: `NIGHTLY_ENABLED` last, because setting it turns the nightly on.
async fn outputs(aws: &Aws, desired: &Desired, format: OutputsFormat) -> Result<u8, CliError> {
    desired
        .codebuild
        .projects
        .first()
        .context("desired.toml declares no CodeBuild project, so there is no CODEBUILD_PROJECT to print")?;
    let account = aws.account().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    // The same derivation the GitHub reconciler sets them from.
    let variables = reconcile_core::variables::derived(desired, &account);
    match format {
        OutputsFormat::Text => {
            for (name, value) in &variables {
                out(&format!("gh variable set {name:<17} --body {}\n", shell_quoted(value)?))?;
            }
        }
        OutputsFormat::Json => {
            let list: Vec<serde_json::Value> =
                variables.iter().map(|(name, value)| serde_json::json!({ "name": name, "value": value })).collect();
            out(&format!("{}\n", json::to_pretty(&serde_json::Value::Array(list))))?;
        }
    }
    Ok(exit::OK)
}
