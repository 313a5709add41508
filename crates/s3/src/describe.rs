//! What this crate says of itself to everything that goes over every kind: its kinds, its
//! desired resources, what a CI role needs on the cache bucket, and what CloudTrail records of
//! it.

use reconcile_core::describe::{Access, Description, Index, KindTrail, Runner};
use reconcile_core::terraform::Mapping;
use reconcile_core::{Account, Desired};
use serde_json::{Value, json};

use crate::S3Kind;
use crate::section::{APPLY_LOCK_KEY, Bucket, declared};

/// Every event that changes a bucket's settings, as CloudTrail names them (`PutBucketLifecycle`
/// for `PutBucketLifecycleConfiguration`, `PutBucketPublicAccessBlock` for
/// `PutPublicAccessBlock`).
const BUCKET_EVENTS: &[&str] = &[
    "CreateBucket",
    "DeleteBucket",
    "PutBucketPolicy",
    "DeleteBucketPolicy",
    "PutBucketAcl",
    "PutBucketVersioning",
    "PutBucketPublicAccessBlock",
    "DeleteBucketPublicAccessBlock",
    "PutBucketEncryption",
    "DeleteBucketEncryption",
    "PutBucketOwnershipControls",
    "DeleteBucketOwnershipControls",
    "PutBucketTagging",
    "DeleteBucketTagging",
    "PutBucketReplication",
    "DeleteBucketReplication",
    "PutBucketWebsite",
    "DeleteBucketWebsite",
    "PutBucketLogging",
];

/// The reconciler the AWS backend builds.
pub fn reconciler(clients: &reconcile_aws::Clients<'_>) -> Box<dyn reconcile_core::Reconciler> {
    let s3 = crate::S3Reconciler::new(client(clients), clients.account.clone()).with_parallelism(clients.limit("s3"));
    Box::new(match clients.destroy {
        Some(destroy) => s3.destroying(destroy),
        None => s3,
    })
}

/// An S3 client (the apply lock's too).
pub fn client(clients: &reconcile_aws::Clients<'_>) -> aws_sdk_s3::Client {
    // An endpoint override (an emulator) cannot serve virtual-hosted bucket names.
    let config = reconcile_aws::configure!(
        aws_sdk_s3::config::Builder::from(clients.sdk).force_path_style(clients.endpoint_overridden()),
        clients.interceptor,
        clients.pacing,
        "s3"
    );
    aws_sdk_s3::Client::from_conf(config)
}

pub const DESCRIPTION: Description = Description {
    name: "s3",
    kinds: S3Kind::KINDS,
    sections: &[crate::section::CLAIM],
    desired: |desired, account, _| crate::desired(desired, account),
    access: Access { reads, cost_reads, writes, administers, runner, lock, ..Access::NONE },
    trail: &[
        KindTrail {
            kind: crate::BUCKET,
            events: BUCKET_EVENTS,
            other_fields: None,
            removals: &["DeleteBucket"],
            findings: &[(crate::FOREIGN_BUCKET_ACCESS, &["PutBucketPolicy", "PutBucketAcl"])],
            global: false,
            index: Index::Complete,
            names,
        },
        KindTrail {
            kind: crate::BUCKET_LIFECYCLE,
            events: &["PutBucketLifecycle", "DeleteBucketLifecycle"],
            other_fields: Some(&["PutBucketLifecycle", "DeleteBucketLifecycle"]),
            removals: &["DeleteBucketLifecycle"],
            findings: &[],
            global: false,
            index: Index::Complete,
            names,
        },
    ],
    fields: &[crate::bucket::FIELDS, crate::lifecycle::FIELDS],
    terraform: &[
        Mapping { kind: crate::BUCKET, map: crate::bucket::terraform, unmapped: "" },
        Mapping { kind: crate::BUCKET_LIFECYCLE, map: crate::lifecycle::terraform, unmapped: "" },
    ],
    generate: crate::section::generate,
    variables: reconcile_core::describe::derives_no_variables,
};

fn names(name: &str, parameters: &Value, _: &Account) -> bool {
    parameters.get("bucketName").and_then(Value::as_str) == Some(name)
}

const READS: [&str; 12] = [
    "s3:ListBucket",
    "s3:GetBucketTagging",
    "s3:GetBucketPublicAccessBlock",
    "s3:GetEncryptionConfiguration",
    "s3:GetBucketPolicy",
    "s3:GetBucketOwnershipControls",
    "s3:GetBucketAcl",
    "s3:GetBucketVersioning",
    "s3:GetReplicationConfiguration",
    "s3:GetBucketWebsite",
    "s3:GetBucketLogging",
    "s3:GetLifecycleConfiguration",
];

/// `DeleteBucketTagging` needs `s3:PutBucketTagging`, `DeleteBucketReplication`
/// `s3:PutReplicationConfiguration`, `DeleteBucketLifecycle` `s3:PutLifecycleConfiguration`.
///
/// Never a bucket's expiry (`s3:PutLifecycleConfiguration`, which deletes its objects) or its ACL
/// (`s3:PutBucketAcl`, who may reach them): those changes are an administrator's
/// (`Reconciler::administrators_only`), and a bucket that declares an expiry is made with it, so
/// by an administrator too.
const WRITES: [&str; 9] = [
    "s3:PutBucketTagging",
    "s3:PutBucketPublicAccessBlock",
    "s3:PutEncryptionConfiguration",
    "s3:DeleteBucketPolicy",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketVersioning",
    "s3:PutReplicationConfiguration",
    "s3:DeleteBucketWebsite",
    "s3:PutBucketLogging",
];
const LOCK_WRITES: [&str; 3] = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"];

fn statement(sid: &str, actions: &[&str], resources: Vec<String>) -> Value {
    json!({ "Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources })
}

fn bucket_arn(account: &Account, bucket: &Bucket) -> String {
    reconcile_aws::arn(account, "s3", &bucket.name.render(&account.id, &account.region))
}

fn reads(desired: &Desired, account: &Account) -> Vec<Value> {
    let buckets: Vec<String> = declared(desired).buckets.iter().map(|b| bucket_arn(account, b)).collect();
    if buckets.is_empty() {
        return Vec::new();
    }
    vec![statement("TheCompilerCacheBucketsSettings", &READS, buckets)]
}

/// What the cache stores each day, for the nights' cost and for a plan that changes its expiry:
/// CloudWatch has no resource to scope to.
fn cost_reads(desired: &Desired, _: &Account) -> Vec<Value> {
    if declared(desired).buckets.is_empty() {
        return Vec::new();
    }
    vec![statement(
        "WhatTheCacheStoresEachDay",
        &["cloudwatch:ListMetrics", "cloudwatch:GetMetricStatistics"],
        vec!["*".to_owned()],
    )]
}

/// A bucket's expiry and ACL (and so making one that declares an expiry), and a destroy's
/// emptying and deleting of the declared buckets.
fn administers(desired: &Desired, account: &Account) -> Vec<Value> {
    let buckets: Vec<String> = declared(desired).buckets.iter().map(|b| bucket_arn(account, b)).collect();
    if buckets.is_empty() {
        return Vec::new();
    }
    let objects = buckets.iter().map(|bucket| format!("{bucket}/*")).collect();
    vec![
        statement(
            "TheBucketsExpiryAclAndDestroy",
            &[
                "s3:CreateBucket",
                "s3:TagResource",
                "s3:PutLifecycleConfiguration",
                "s3:PutBucketAcl",
                "s3:ListBucketVersions",
                "s3:DeleteBucket",
            ],
            buckets,
        ),
        statement("EmptyTheBucketsOnDestroy", &["s3:DeleteObject", "s3:DeleteObjectVersion"], objects),
    ]
}

fn writes(desired: &Desired, account: &Account) -> Vec<Value> {
    let mut statements = Vec::new();
    let buckets: Vec<String> = declared(desired).buckets.iter().map(|b| bucket_arn(account, b)).collect();
    if !buckets.is_empty() {
        statements.push(statement("TheCompilerCacheBucket", &WRITES, buckets));
    }
    let unexpiring: Vec<String> = declared(desired)
        .buckets
        .iter()
        .filter(|b| b.lifecycle_rules.is_none())
        .map(|b| bucket_arn(account, b))
        .collect();
    if !unexpiring.is_empty() {
        // A bucket is made with its tags (the mark among them), which S3 authorizes as
        // `s3:TagResource` besides.
        statements.push(statement("MakeTheBucketsWithoutAnExpiry", &["s3:CreateBucket", "s3:TagResource"], unexpiring));
    }
    statements
}

/// The apply lock's object, in the first bucket declared.
fn lock(desired: &Desired, account: &Account) -> Vec<Value> {
    let Some(bucket) = declared(desired).lock_bucket() else { return Vec::new() };
    let lock = format!("{}/{APPLY_LOCK_KEY}", bucket_arn(account, bucket));
    vec![statement("TheApplyLock", &LOCK_WRITES, vec![lock])]
}

/// What a build on the runner needs of the compiler cache: its objects, and never the apply
/// lock's.
fn runner(desired: &Desired, account: &Account, _: &Runner) -> Vec<Value> {
    let mut statements = Vec::new();
    let buckets: Vec<String> = declared(desired).buckets.iter().map(|b| bucket_arn(account, b)).collect();
    if !buckets.is_empty() {
        statements.push(json!({
            "Sid": "CacheObjects",
            "Effect": "Allow",
            "Action": ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            "Resource": buckets.iter().map(|b| format!("{b}/*")).collect::<Vec<_>>(),
        }));
        statements.push(json!({
            "Sid": "CacheBucket",
            "Effect": "Allow",
            "Action": ["s3:GetBucketLocation", "s3:ListBucket"],
            "Resource": buckets,
        }));
    }
    // The apply lock lives in the cache bucket, whose objects the role may write: a build runs
    // code from the nightly's repository, and must not hold, forge or delete the lock of the
    // applies that change the account. An explicit deny, which no allow overrides.
    if let Some(bucket) = declared(desired).lock_bucket() {
        let lock = APPLY_LOCK_KEY.rsplit_once('/').map_or(APPLY_LOCK_KEY, |(prefix, _)| prefix);
        statements.push(json!({
            "Sid": "NotTheApplyLock",
            "Effect": "Deny",
            "Action": ["s3:*"],
            "Resource": [format!("{}/{lock}/*", bucket_arn(account, bucket))],
        }));
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_a_bucket_by_its_name() {
        let account = Account::new("123456789012", "us-east-1");
        assert!(names("b", &json!({ "bucketName": "b", "policy": "" }), &account));
        assert!(!names("b", &json!({ "bucketName": "c" }), &account));
    }
}
