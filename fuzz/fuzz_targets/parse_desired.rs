//! Fuzzes reading desired.toml: any bytes at all must end in a parsed file or in located
//! errors, never in a panic, a hang or unbounded memory; with the sections the resource crates
//! claim, and one more (`[fuzzed]`), read by its own type as a claimed section is.

#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use reconcile_core::Desired;
use reconcile_core::desired::{Claim, Section, schema_of};

/// A crate's own section: tables of numbers.
type Fuzzed = BTreeMap<String, BTreeMap<String, u32>>;

const CLAIM: Claim = Claim {
    name: "fuzzed",
    after: None,
    types: Section::types::<Fuzzed>,
    publishes: Claim::NOTHING,
    read: |section| section.read(|_, raw: Fuzzed, _| raw),
    schema: schema_of::<Fuzzed>,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Desired::parse_claimed(
        Path::new("desired.toml"),
        text,
        &[
            &CLAIM,
            &reconcile_ecr::CLAIM,
            &reconcile_ecr::USAGE_CLAIM,
            &reconcile_s3::CLAIM,
            &reconcile_iam::CLAIM,
            &reconcile_codebuild::CLAIM,
            &reconcile_github::CLAIM,
            &reconcile_iam::CI_CLAIM,
        ],
    ) {
        Ok(desired) => {
            if let Some(section) = desired.section("fuzzed") {
                assert!(section.model::<Fuzzed>().is_some(), "a section its check passed is kept");
            }
            // What a valid file declares renders without panicking.
            for bucket in &reconcile_s3::declared(&desired).buckets {
                let _ = bucket.name.render("123456789012", &desired.region);
            }
            let _ = reconcile_ecr::declared(&desired).names();
            // What the sections published refers to what they declare.
            let projects = &reconcile_codebuild::declared(&desired).projects;
            let published = desired.referred(reconcile_core::desired::Topic::Project).count();
            assert_eq!(published, projects.len(), "each project is published");
        }
        Err(errors) => {
            assert!(!errors.0.is_empty());
            let _ = errors.to_string();
        }
    }
});
