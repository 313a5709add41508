//! The subcommands: read desired.toml, talk to AWS through the engine, print, pick an exit code.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use reconcile_core::engine::{self, ApplyOptions, Outcome};
use reconcile_core::{Account, Desired, Plan, Reconciler, render};

use crate::args::{Args, Command, Format};
use crate::aws::Aws;
use crate::exit;
use crate::output::ApplyPrinter;

pub async fn run(args: Args) -> anyhow::Result<u8> {
    // Unattended apply without --auto-approve is refused before anything else happens.
    if let Command::Apply { auto_approve: false, .. } = args.command
        && !std::io::stdin().is_terminal()
    {
        eprintln!("error: apply is not running on a terminal, so it cannot ask for approval; pass --auto-approve");
        return Ok(exit::ERROR);
    }
    // Bad input stops here, before any AWS call.
    let desired = match load_desired(&args.desired) {
        Ok(desired) => desired,
        Err(code) => return Ok(code),
    };
    let aws = Aws::load(&desired.region).await;
    // What is derived from desired.toml (such as the IAM policy and its size) is checked before
    // any AWS call too, with a stand-in account id: ids are always 12 digits, so sizes hold.
    let stand_in = Account::new("000000000000", &desired.region);
    if let Err(errors) = engine::desired_resources(&aws.reconcilers(&stand_in), &desired, &stand_in) {
        for error in errors {
            eprintln!("error: {}: {error}", args.desired.display());
        }
        return Ok(exit::ERROR);
    }
    match args.command {
        Command::Validate => {
            for warning in &desired.warnings {
                eprintln!("warning: [{}] {}", warning.code, warning.location);
            }
            println!(
                "{} is valid: region {}, {} ECR repositories, {} S3 buckets, {} IAM roles, {} CodeBuild projects.",
                args.desired.display(),
                desired.region,
                desired.ecr.repositories.len(),
                desired.s3.buckets.len(),
                desired.iam.roles.len(),
                desired.codebuild.projects.len(),
            );
            Ok(exit::OK)
        }
        Command::Plan { format, detailed_exitcode } => {
            let (_aws, plan, _) = make_plan(aws, &desired).await?;
            match format {
                Format::Text => print!("{}", render::text(&plan)),
                Format::Json => {
                    println!("{}", reconcile_core::json::to_pretty(&render::json(&plan)))
                }
            }
            Ok(if detailed_exitcode && plan.has_changes() { exit::CHANGES } else { exit::OK })
        }
        Command::Apply { auto_approve, allow_delete } => {
            let (aws, plan, reconcilers) = make_plan(aws, &desired).await?;
            apply(&aws, &plan, &reconcilers, auto_approve, allow_delete).await
        }
    }
}

fn load_desired(path: &Path) -> Result<Desired, u8> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: failed to read {}: {error}", path.display());
            return Err(exit::ERROR);
        }
    };
    Desired::parse(path, &text).map_err(|errors| {
        for error in &errors.0 {
            eprintln!("error: {error}");
        }
        exit::ERROR
    })
}

async fn make_plan(aws: Aws, desired: &Desired) -> anyhow::Result<(Aws, Plan, Vec<Box<dyn Reconciler>>)> {
    let account = aws.account().await?;
    let reconcilers = aws.reconcilers(&account);
    let plan = engine::plan(&reconcilers, desired, &account).await.map_err(|errors| {
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("planning failed:\n  {}", messages.join("\n  "))
    })?;
    tracing::info!("plan: {}", aws.requests);
    Ok((aws, plan, reconcilers))
}

async fn apply(
    aws: &Aws,
    plan: &Plan,
    reconcilers: &[Box<dyn Reconciler>],
    auto_approve: bool,
    allow_delete: bool,
) -> anyhow::Result<u8> {
    print!("{}", render::text(plan));
    if !plan.has_changes() {
        return Ok(exit::OK);
    }
    let has_deletes = plan.changes.iter().any(|c| c.action.is_destructive());
    if has_deletes && !allow_delete {
        eprintln!("error: refusing to apply: the plan deletes or replaces resources; pass --allow-delete to allow it");
        return Ok(exit::REFUSED);
    }
    if !auto_approve && !confirm()? {
        println!("\nApply cancelled.");
        return Ok(exit::ERROR);
    }
    println!();
    let options = ApplyOptions { allow_delete, concurrency: engine::DEFAULT_CONCURRENCY };
    let report = match engine::apply(reconcilers, plan, options, &ApplyPrinter).await {
        Ok(report) => report,
        Err(refusal) => {
            eprintln!("error: refusing to apply: {refusal}");
            return Ok(exit::REFUSED);
        }
    };
    tracing::info!("plan and apply: {}", aws.requests);

    println!();
    if report.succeeded() {
        let summary = plan.summary();
        println!(
            "Apply complete! Resources: {} created, {} updated, {} deleted.",
            summary.create, summary.update, summary.delete
        );
        return Ok(exit::OK);
    }
    let (mut applied, mut failed, mut skipped) = (0, 0, 0);
    for (address, _, outcome, _) in &report.results {
        match outcome {
            Outcome::Applied => applied += 1,
            Outcome::Failed(error) => {
                failed += 1;
                eprintln!("error: {address}: failed to {}: {}", error.operation, error.reason);
            }
            Outcome::Skipped { .. } => skipped += 1,
        }
    }
    println!(
        "Apply failed: {applied} applied, {failed} failed, {skipped} skipped. Run apply again once the cause is fixed."
    );
    Ok(exit::ERROR)
}

fn confirm() -> anyhow::Result<bool> {
    print!("\nDo you want to perform these actions? Only 'yes' will be accepted: ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).context("failed to read the answer")?;
    Ok(answer.trim() == "yes")
}
