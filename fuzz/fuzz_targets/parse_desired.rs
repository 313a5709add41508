//! Fuzzes reading desired.toml: any bytes at all must end in a parsed file or in located
//! errors, never in a panic, a hang or unbounded memory; with a section a crate claims
//! (`[fuzzed]`), read by the crate's own type as a claimed section is.

#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use reconcile_core::Desired;
use reconcile_core::desired::{Claim, Section};

/// A crate's own section: tables of numbers.
type Fuzzed = BTreeMap<String, BTreeMap<String, u32>>;

fn check(section: &Section) -> Vec<reconcile_core::desired::DesiredError> {
    section.parse::<Fuzzed>().err().map(|errors| errors.0).unwrap_or_default()
}

const CLAIM: Claim = Claim { name: "fuzzed", check, schema: || Default::default() };

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Desired::parse_claimed(Path::new("desired.toml"), text, &[&CLAIM]) {
        Ok(desired) => {
            if let Some(section) = desired.section("fuzzed") {
                assert!(section.parse::<Fuzzed>().is_ok(), "a section its check passed reads");
            }
            // What a valid file declares renders without panicking.
            for bucket in &desired.s3.buckets {
                let _ = bucket.name.render("123456789012", &desired.region);
            }
        }
        Err(errors) => {
            assert!(!errors.0.is_empty());
            let _ = errors.to_string();
        }
    }
});
