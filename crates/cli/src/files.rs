//! Reading the files a run is given: desired.toml, a bake file, a saved plan, earlier usage
//! reports. Each is read whole, with a bound, so `/dev/zero` and its kind are refused rather
//! than read for ever.

use std::path::Path;

use anyhow::Context;
use reconcile_core::Desired;
use reconcile_core::saved::{self, SavedPlan};

use crate::error::CliError;

/// The largest file read: a thousand repositories take about 40 KiB of desired.toml, so this is
/// room for any real account, and a bound for `--desired /dev/zero` and its kind.
const FILE_LIMIT: u64 = 1024 * 1024;

/// desired.toml, parsed and validated, with its text (which a saved plan fingerprints).
pub fn load_desired(path: &Path) -> Result<(Desired, String), CliError> {
    let text =
        read_capped(path).map_err(|why| CliError::Input(vec![format!("failed to read {}: {why}", path.display())]))?;
    match Desired::parse(path, &text) {
        Ok(desired) => Ok((desired, text)),
        Err(errors) => Err(CliError::Input(errors.0.iter().map(ToString::to_string).collect())),
    }
}

/// A saved plan (`plan --out`), read back; whether it still holds is the session's to check.
pub fn read_saved(path: &Path) -> Result<SavedPlan, CliError> {
    let text = std::fs::read_to_string(path).with_context(|| format!("failed to read the plan {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not a JSON plan", path.display()))?;
    Ok(saved::from_json(&value).map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))?)
}

/// A text file of at most [`FILE_LIMIT`] bytes (desired.toml, a bake file, a usage report).
pub fn read_capped(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    file.take(FILE_LIMIT + 1).read_to_end(&mut bytes).map_err(|error| error.to_string())?;
    if bytes.len() as u64 > FILE_LIMIT {
        return Err(format!("it is larger than {} MiB, more than any account needs", FILE_LIMIT >> 20));
    }
    // TOML is UTF-8 without a byte-order mark; some Windows editors add one, and a file that
    // differs from its own review by an invisible character is refused with the fix.
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err("it starts with a UTF-8 byte-order mark; save it as UTF-8 without one".to_owned());
    }
    String::from_utf8(bytes)
        .map_err(|error| format!("it is not UTF-8 text (invalid byte at offset {})", error.utf8_error().valid_up_to()))
}
