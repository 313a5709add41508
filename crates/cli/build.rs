//! Stamps the binary with the commit it was built from (and `-dirty` when tracked files differ
//! from it) and its target, for `reconcile --version` and the plans it makes.
//! `RECONCILE_BUILD_COMMIT` wins (a release built from an archive has no `.git`).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=RECONCILE_BUILD_COMMIT");
    let commit = match std::env::var("RECONCILE_BUILD_COMMIT") {
        Ok(commit) if !commit.is_empty() => commit,
        _ => {
            let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
            // `--no-optional-locks`: a plain `git status` rewrites the index of a fresh checkout,
            // which this script watches, so the next cargo run would build the binary again.
            let status = ["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"];
            let dirty = git(&status).is_some_and(|s| !s.is_empty());
            if dirty { format!("{commit}-dirty") } else { commit }
        }
    };
    // Built again when the commit moves or a tracked file changes.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/index");
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{reference}");
        }
    }
    println!("cargo:rustc-env=RECONCILE_COMMIT={commit}");
    println!("cargo:rustc-env=RECONCILE_TARGET={}", std::env::var("TARGET").unwrap_or_default());
}
