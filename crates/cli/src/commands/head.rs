//! `reconcile head`: the trusted pull-request workflow's first step. desired.toml and the bake
//! file it names are read from the pull request's head commit, in its head repository, through
//! GitHub's contents API, as data: the trusted job decides from the pull request's own files,
//! never from what the pull request's workflow run (whose copy of the check it wrote) concluded
//! or handed on. They are written into a directory of their own, where reconcile's file rules
//! hold as for any repository.

use std::path::{Component, Path, PathBuf};

use reconcile_github::contents::file_at;

use crate::commands::comment::check_commit;
use crate::error::CliError;
use crate::exit;
use crate::files::FILE_LIMIT;
use crate::github::{COMMENT_TOKENS, conversation_in, split_repository};
use crate::output::out;

pub struct Request {
    pub head_sha: String,
    pub head_repository: String,
    pub out: PathBuf,
    pub base: Option<PathBuf>,
}

pub async fn run(request: &Request) -> Result<u8, CliError> {
    let input = |why: String| CliError::Input(vec![why]);
    check_commit("--head-sha", &request.head_sha)?;
    split_repository(&request.head_repository).map_err(|why| input(format!("--head-repository: {why}")))?;
    if request.out.exists() && !std::fs::read_dir(&request.out).is_ok_and(|mut entries| entries.next().is_none()) {
        return Err(input(format!("--out: {} is not an empty directory", request.out.display())));
    }
    let api = conversation_in(None, Some(&request.head_repository), COMMENT_TOKENS)?;
    let sha = &request.head_sha;
    let read = |path: String| {
        let api = &api;
        async move {
            file_at(api, &path, sha, FILE_LIMIT)
                .await
                .map_err(|error| CliError::Other(anyhow::Error::new(error)))?
                .ok_or_else(|| input(format!("{path}: commit {sha} of {} has no such file", request.head_repository)))
        }
    };
    let desired = read("desired.toml".to_owned()).await?;
    let bake = match bake_path(&desired)? {
        Some(path) => Some((read(path.clone()).await?, path)),
        None => None,
    };
    std::fs::create_dir_all(&request.out).map_err(|e| input(format!("--out: {}: {e}", request.out.display())))?;
    write(&request.out, "desired.toml", &desired)?;
    // A bake file that is desired.toml itself (validate refuses it) is written once.
    if let Some((text, path)) = bake.as_ref().filter(|(_, path)| path != "desired.toml") {
        write(&request.out, path, text)?;
    }
    let changed = match &request.base {
        Some(base) => changed(base, &desired, bake.as_ref())?,
        None => true,
    };
    out(&format!("changed={changed}\n"))?;
    Ok(exit::OK)
}

/// The bake file desired.toml names, if it names one: a path inside the repository, read as
/// the contents API names files (no `.`, `..` or leading `/`). Anything else is left to
/// `validate`, which says where it is wrong.
fn bake_path(desired: &str) -> Result<Option<String>, CliError> {
    let Ok(document) = desired.parse::<toml_edit::DocumentMut>() else { return Ok(None) };
    let Some(bake) = document.get("bake").and_then(toml_edit::Item::as_str) else { return Ok(None) };
    let inside = Path::new(bake).components().all(|c| matches!(c, Component::Normal(_))) && !bake.contains('\\');
    if !inside || bake.is_empty() {
        return Err(CliError::Input(vec![format!(
            "desired.toml: `bake = {}` is not a path inside the repository",
            bake.escape_debug()
        )]));
    }
    Ok(Some(bake.to_owned()))
}

/// Writes `text` at `relative` (checked inside) under `dir`, a new regular file.
fn write(dir: &Path, relative: &str, text: &str) -> Result<(), CliError> {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| CliError::Input(vec![format!("{}: {e}", parent.display())]))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| CliError::Input(vec![format!("{}: {e}", path.display())]))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|e| CliError::Input(vec![format!("{}: {e}", path.display())]))
}

/// Whether the head's desired.toml or bake file differs from the base's (`base` and the bake
/// file the base's desired.toml names beside it).
fn changed(base: &Path, desired: &str, bake: Option<&(String, String)>) -> Result<bool, CliError> {
    let base_desired =
        crate::files::read_capped(base).map_err(|why| CliError::Input(vec![format!("--base: {why}")]))?;
    if base_desired != desired {
        return Ok(true);
    }
    // The same desired.toml names the same bake file.
    let Some((text, path)) = bake else { return Ok(false) };
    let beside = base.parent().unwrap_or(Path::new(".")).join(path);
    Ok(!crate::files::read_capped(&beside).is_ok_and(|base_bake| base_bake == *text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bake_path_is_one_inside_the_repository_or_none() {
        assert_eq!(bake_path("bake = \"rocm-bake.hcl\"\n").unwrap(), Some("rocm-bake.hcl".to_owned()));
        assert_eq!(bake_path("bake = \"ci/bake.hcl\"\n").unwrap(), Some("ci/bake.hcl".to_owned()));
        assert_eq!(bake_path("region = \"us-east-1\"\n").unwrap(), None);
        assert_eq!(bake_path("not toml [").unwrap(), None, "validate says where");
        for outside in ["../secrets", "/etc/passwd", "./x", "a/../../b", "", "a\\\\..\\\\b"] {
            assert!(bake_path(&format!("bake = \"{outside}\"\n")).is_err(), "{outside}");
        }
    }
}
