//! Exit codes: the one place they are defined, one meaning each. docs/reference/exit-codes.md
//! lists the same table (a test holds the two together).

/// Success; for `plan --detailed-exitcode`, no changes.
pub const OK: u8 = 0;
/// An error: bad input, an AWS failure, a failed apply.
pub const ERROR: u8 = 1;
/// A difference found, which is not an error: `plan --detailed-exitcode` has changes, `drift`
/// found the account differs, `apply` as a CI role left changes only an administrator makes,
/// `declare --check` or `import --check` would change desired.toml.
pub const CHANGES: u8 = 2;
/// Refused by a safety check before any write, such as a delete without `--allow-delete`.
pub const REFUSED: u8 = 3;
/// A saved plan no longer matches the account or desired.toml; nothing was changed.
pub const STALE_PLAN: u8 = 4;
/// `apply` interrupted by SIGINT (128 + 2): what was running finished, nothing more started.
pub const INTERRUPTED: u8 = 130;
/// `apply` interrupted by SIGTERM (128 + 15), as CI sends on cancel.
pub const TERMINATED: u8 = 143;
