//! How a section's tests read a desired.toml: accepted, refused (each message with its key
//! path, without its place), or what it warns about. One copy for core's sections and every
//! crate's own, which names the claims the file is read with.

use std::path::Path;

use crate::desired::{Claim, Desired};
use crate::plan::Severity;

/// desired.toml files read with these claims (a crate's own section; none for core's).
pub struct Files(pub &'static [&'static Claim]);

impl Files {
    /// The file parsed as `desired.toml`, or every error as printed.
    pub fn parse(&self, text: &str) -> Result<Desired, String> {
        Desired::parse_claimed(Path::new("desired.toml"), text, self.0).map_err(|errors| errors.to_string())
    }

    /// The messages of a refused file, with their key paths, without their places.
    pub fn refusals(&self, text: &str) -> Vec<String> {
        let errors = self.parse(text).expect_err("refused");
        errors.lines().map(|line| line.splitn(4, ':').nth(3).unwrap_or(line).trim().to_owned()).collect()
    }

    /// The findings of an accepted file: `code severity key-path: message`.
    pub fn findings(&self, text: &str) -> Vec<String> {
        let desired = self.parse(text).expect("accepted");
        desired
            .findings
            .iter()
            .map(|f| {
                let severity = if f.severity == Severity::Error { "error" } else { "warning" };
                format!("{} {severity} {}: {}", f.code, f.location.key_path, f.location.message)
            })
            .collect()
    }

    /// For each `(file, refusal)`: the file is refused with exactly that one message.
    pub fn each_refused_as(&self, cases: impl IntoIterator<Item = (String, String)>) {
        for (text, expected) in cases {
            assert_eq!(self.refusals(&text), [expected.as_str()], "for\n{text}");
        }
    }
}
