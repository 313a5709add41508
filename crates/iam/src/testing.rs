//! How IAM's tests read a desired.toml whose `[s3]` the S3 crate reads: a stand-in for that
//! crate, which claims the section and says what a build needs of the cache, as the catalog's
//! S3 description does, so a derived policy holds what it takes from another crate.

use std::path::Path;

use reconcile_core::Desired;
use reconcile_core::describe::{Access, Catalog, Description};
use reconcile_core::desired::{Claim, Read};
use serde_json::{Value, json};

static CACHE: Description = Description {
    name: "cache",
    kinds: &[],
    sections: &[Claim {
        name: "s3",
        after: Some("ecr"),
        types: |_| Ok(()),
        read: |_| Read { model: None, errors: Vec::new(), findings: Vec::new() },
        schema: || Value::Null,
    }],
    desired: |_, _, _| Ok(Vec::new()),
    access: Access {
        // Its length matters to the boundary's size test: every character of a project's name
        // counts twice (its log group and the group's streams), so the rest must let the
        // policy's size reach IAM's limit exactly.
        runner: |_, _| {
            vec![
                json!({ "Sid": "WhatTheCachesCrateSays", "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["*"] }),
            ]
        },
        ..Access::NONE
    },
    trail: &[],
    terraform: &[],
};

/// The stand-in alone.
pub static CATALOG: Catalog = Catalog(&[&CACHE]);

/// `text` as desired.toml, with the stand-in's section.
pub fn parse(text: &str) -> Desired {
    Desired::parse_claimed(Path::new("desired.toml"), text, &CATALOG.claims()).expect("a valid desired.toml")
}
