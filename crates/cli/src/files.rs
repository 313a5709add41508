//! Reading the files a run is given: desired.toml, a bake file, a saved plan, earlier usage
//! reports. Each is read whole, with a bound, so `/dev/zero` and its kind are refused rather
//! than read for ever.
//!
//! A pull request writes the repository, symbolic links included, so what a file inside it
//! names is read only inside it: a path desired.toml gives is relative and stays in the
//! repository, and a file inside the repository is followed only to somewhere inside. A path an
//! operator types that lies outside the repository is theirs to choose. Nothing here quotes a
//! file it read in an error.

use std::path::{Component, Path, PathBuf};

use anyhow::Context;
use reconcile_core::Desired;
use reconcile_render::saved::{self, SavedPlan};

use crate::error::CliError;

/// The largest file read: a thousand repositories take about 40 KiB of desired.toml, so this is
/// room for any real account, and a bound for `--desired /dev/zero` and its kind.
pub const FILE_LIMIT: u64 = 1024 * 1024;

/// The most a saved plan may hold: a plan of every resource desired.toml may declare
/// ([`reconcile_core::desired::MAX_DECLARED`]), each about 1 KB with its change, with room.
pub const PLAN_LIMIT: u64 = 32 * 1024 * 1024;

/// The repository a run reads from: desired.toml's directory, or the git work tree above it.
#[derive(Debug, Clone)]
pub struct Repository {
    /// As reached from the path desired.toml was given by, and with every link resolved.
    lexical: PathBuf,
    canonical: PathBuf,
}

impl Repository {
    /// The repository of the desired.toml at `desired`, which must itself be inside it (a
    /// `desired.toml` that is a link out of it is refused).
    pub fn of(desired: &Path) -> Result<Repository, CliError> {
        let fail = |why: String| CliError::Input(vec![format!("failed to read {}: {why}", desired.display())]);
        let absolute = lexical(desired).map_err(|e| fail(e.to_string()))?;
        let directory = absolute.parent().unwrap_or(Path::new("/")).to_owned();
        let lexical = directory.ancestors().find(|dir| dir.join(".git").exists()).unwrap_or(&directory).to_owned();
        let canonical = lexical.canonicalize().map_err(|e| fail(e.to_string()))?;
        let repository = Repository { lexical, canonical };
        repository.confine(desired).map_err(fail)?;
        Ok(repository)
    }

    /// Where `path`, named by a file of the repository (relative to that file's directory, as
    /// joined), really is, if that is inside the repository: no `..` out, no link out.
    pub fn named(&self, path: &Path) -> Result<PathBuf, String> {
        let absolute = lexical(path).map_err(|e| e.to_string())?;
        if !(absolute.starts_with(&self.lexical) || absolute.starts_with(&self.canonical)) {
            return Err(format!("it is outside the repository ({})", self.canonical.display()));
        }
        self.confine(path)
    }

    /// Where `path`, typed on the command line, really is: anywhere when it lies outside the
    /// repository; inside it, only if it stays inside (a link into it, committed by a pull
    /// request, may not lead out).
    pub fn typed(&self, path: &Path) -> Result<PathBuf, String> {
        let absolute = lexical(path).map_err(|e| e.to_string())?;
        let parent = absolute.parent().and_then(|p| p.canonicalize().ok());
        let inside = absolute.starts_with(&self.lexical)
            || absolute.starts_with(&self.canonical)
            || parent.is_some_and(|p| p.starts_with(&self.canonical));
        if inside { self.confine(path) } else { Ok(path.to_owned()) }
    }

    /// `path` with every link resolved, if that is inside the repository.
    fn confine(&self, path: &Path) -> Result<PathBuf, String> {
        let real = path.canonicalize().map_err(|e| e.to_string())?;
        if !real.starts_with(&self.canonical) {
            return Err(format!(
                "it is a link that leads out of the repository ({}); reconcile reads no file outside it",
                self.canonical.display()
            ));
        }
        Ok(real)
    }
}

/// `path` made absolute against the working directory, `.` and `..` taken away by their
/// meaning as written (not by following links).
fn lexical(path: &Path) -> std::io::Result<PathBuf> {
    let joined = if path.is_absolute() { path.to_owned() } else { std::env::current_dir()?.join(path) };
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    Ok(normal)
}

/// desired.toml, parsed and validated, with its text (which a saved plan fingerprints).
pub fn load_desired(path: &Path) -> Result<(Desired, String), CliError> {
    let text =
        read_capped(path).map_err(|why| CliError::Input(vec![format!("failed to read {}: {why}", path.display())]))?;
    match crate::catalog::parse_desired(path, &text) {
        Ok(desired) => Ok((desired, text)),
        Err(errors) => Err(CliError::Input(errors.0.iter().map(ToString::to_string).collect())),
    }
}

/// A saved plan (`plan --out`) at `real`, named `name` in messages, read back; whether it still
/// holds is the session's to check.
pub fn read_saved(name: &Path, real: &Path) -> Result<SavedPlan, CliError> {
    let name = name.display();
    let text =
        read_capped_to(real, PLAN_LIMIT).map_err(|why| anyhow::anyhow!("failed to read the plan {name}: {why}"))?;
    let value: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("{name} is not a JSON plan"))?;
    drop(text);
    let mut saved =
        saved::from_json(&value, &crate::catalog::CATALOG.kinds()).map_err(|why| anyhow::anyhow!("{name}: {why}"))?;
    // Apply plans again and holds the file to it by fingerprints: what the file observed and
    // declared is `show`'s, and is let go before the account is read again.
    saved.plan.observed.clear();
    saved.view = None;
    Ok(saved)
}

/// What a file that is not a regular one is, for messages.
fn file_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    }
}

/// Writes `text` to `path` whole or not at all, and never through a link: a temporary file
/// beside it, created new, renamed over it (a link at `path` is replaced, not followed).
pub fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    write_with_mode(path, text, None)
}

/// Replaces desired.toml at `path` with `text` (an edit of `read`, what was read of it), the way
/// an editor saves: through a link to the file it names (which stays a link), with the file's
/// mode, and in its line endings (CRLF stays CRLF). Refused, and nothing written, when the file
/// is read-only or no longer holds `read` (someone saved it meanwhile: their edit is kept).
pub fn rewrite(path: &Path, read: &str, text: &str) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    let refused = |why: String| CliError::RefusedInput(format!("{}: {why}; nothing was written", path.display()));
    let real = path.canonicalize().map_err(|e| refused(format!("failed to resolve it: {e}")))?;
    let mode = std::fs::metadata(&real).map_err(|e| refused(e.to_string()))?.permissions().mode() & 0o7777;
    if mode & 0o200 == 0 {
        return Err(refused(format!("it is read-only (mode {mode:o})")));
    }
    let now = read_capped(&real).map_err(|why| refused(format!("failed to read it again: {why}")))?;
    if now != read {
        return Err(refused("it changed since it was read (saved by someone else meanwhile)".to_owned()));
    }
    let crlf = read.matches("\r\n").count() * 2 > read.matches('\n').count();
    let text = if crlf { text.replace("\r\n", "\n").replace('\n', "\r\n") } else { text.to_owned() };
    write_with_mode(&real, &text, Some(mode))
}

fn write_with_mode(path: &Path, text: &str, mode: Option<u32>) -> Result<(), CliError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut file| {
            if let Some(mode) = mode {
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
            file.write_all(text.as_bytes()).and_then(|()| file.sync_all())
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    Ok(written.with_context(|| format!("failed to write {}", path.display()))?)
}

/// A regular text file of at most [`FILE_LIMIT`] bytes (desired.toml, a bake file, a usage
/// report). Opened without blocking and then looked at: a FIFO (which would wait for a writer
/// for ever), a device or a directory is refused at once.
pub fn read_capped(path: &Path) -> Result<String, String> {
    read_capped_to(path, FILE_LIMIT)
}

/// The same, of at most `limit` bytes.
pub fn read_capped_to(path: &Path, limit: u64) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| error.to_string())?;
    let kind = file.metadata().map_err(|error| error.to_string())?.file_type();
    if !kind.is_file() {
        return Err(format!("it is not a regular file, but {}", file_kind(kind)));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|error| error.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("it is larger than {} MiB, more than any account needs", limit >> 20));
    }
    // TOML is UTF-8 without a byte-order mark; some Windows editors add one, and a file that
    // differs from its own review by an invisible character is refused with the fix.
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err("it starts with a UTF-8 byte-order mark; save it as UTF-8 without one".to_owned());
    }
    String::from_utf8(bytes)
        .map_err(|error| format!("it is not UTF-8 text (invalid byte at offset {})", error.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_saved_by_someone_else_meanwhile_is_not_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("desired.toml");
        std::fs::write(&path, "region = \"us-east-1\"\n# their edit\n").unwrap();
        let refused = rewrite(&path, "region = \"us-east-1\"\n", "region = \"us-east-1\"\n[ecr]\n").unwrap_err();
        assert!(
            matches!(&refused, CliError::RefusedInput(why) if why.ends_with("it changed since it was read (saved by someone else meanwhile); nothing was written")),
            "{refused:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "region = \"us-east-1\"\n# their edit\n");
        // As read, it is written, in its line endings.
        std::fs::write(&path, "a = 1\r\n").unwrap();
        rewrite(&path, "a = 1\r\n", "a = 1\nb = 2\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 1\r\nb = 2\r\n");
    }
}
