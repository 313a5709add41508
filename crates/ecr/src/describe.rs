//! What this crate says of itself to everything that goes over every kind: its kinds, its
//! desired resources, what a CI role needs on its repositories, and what CloudTrail records of
//! them.

use reconcile_core::describe::{Access, Description, Index, KindTrail, PutBack, arn_names};
use reconcile_core::terraform::Mapping;
use reconcile_core::{Account, Action, Desired};
use serde_json::{Value, json};

use crate::EcrKind;

/// The reconciler the AWS backend builds: it prices what a lifecycle policy frees at the
/// declared storage price, prunes when `--prune` says how, and in a run that only reads reads
/// the registry once however many times it is built.
pub fn reconciler(clients: &reconcile_aws::Clients<'_>) -> Box<dyn reconcile_core::Reconciler> {
    let ecr = ecr_reconciler(clients).with_price(crate::price_per_gb_month(clients.desired));
    let ecr = match clients.prune.clone() {
        Some(prune) => ecr.pruning(prune),
        None => ecr,
    };
    Box::new(match clients.destroy {
        Some(destroy) => ecr.destroying(destroy),
        None => ecr,
    })
}

/// The ECR reconciler alone, for what only it can tell (`usage`, the drift check's registry).
pub fn ecr_reconciler(clients: &reconcile_aws::Clients<'_>) -> crate::EcrReconciler {
    let config = reconcile_aws::configure!(
        aws_sdk_ecr::config::Builder::from(clients.sdk),
        clients.interceptor,
        clients.pacing,
        "ecr"
    );
    let reconciler = crate::EcrReconciler::new(aws_sdk_ecr::Client::from_conf(config), clients.account.clone())
        .with_parallelism(clients.limit("ecr"))
        .marked_as(clients.desired.mark());
    match clients.shared {
        Some(shared) => reconciler.reading_once(shared.get()),
        None => reconciler,
    }
}

pub const DESCRIPTION: Description = Description {
    name: "ecr",
    kinds: EcrKind::KINDS,
    sections: &[crate::section::CLAIM, crate::USAGE_CLAIM],
    desired: |desired, account, _| crate::desired(desired, account),
    access: Access {
        reads,
        survey_reads,
        writes,
        administers,
        runner: crate::runner::runner,
        put_back: &[PutBack {
            kind: crate::LIFECYCLE_POLICY,
            actions: &[Action::Create, Action::Update],
            writes: lifecycle_put_back,
        }],
        ..Access::NONE
    },
    trail: &[
        KindTrail {
            kind: crate::REPOSITORY,
            events: &[
                "CreateRepository",
                "DeleteRepository",
                "PutImageTagMutability",
                "PutImageScanningConfiguration",
                "SetRepositoryPolicy",
                "DeleteRepositoryPolicy",
                "TagResource",
                "UntagResource",
            ],
            other_fields: None,
            removals: &["DeleteRepository"],
            findings: &[
                (crate::FOREIGN_REPOSITORY_ACCESS, &["SetRepositoryPolicy"]),
                (crate::UNDECLARED_REPOSITORY, &["CreateRepository"]),
                (crate::UNDECLARED_REPOSITORY_WITHOUT_POLICY, &["CreateRepository"]),
                // Who wrote the mark: a create's tags, or tagging one that exists.
                (crate::MARKED_UNDECLARED, &["TagResource", "CreateRepository"]),
            ],
            global: false,
            index: Index::Partial,
            names,
        },
        KindTrail {
            kind: crate::LIFECYCLE_POLICY,
            events: &["PutLifecyclePolicy", "DeleteLifecyclePolicy"],
            other_fields: None,
            removals: &["DeleteLifecyclePolicy"],
            findings: &[(crate::LIVE_TAGGED_EXPIRY, &["PutLifecyclePolicy"])],
            global: false,
            index: Index::Partial,
            names,
        },
    ],
    fields: &[crate::repository::FIELDS, crate::lifecycle::FIELDS],
    terraform: &[
        Mapping { kind: crate::REPOSITORY, map: crate::repository::terraform, unmapped: "" },
        Mapping { kind: crate::LIFECYCLE_POLICY, map: crate::lifecycle::terraform, unmapped: "" },
    ],
    generate: crate::generate::generate,
    variables: |_, account| vec![("ECR_REGISTRY", crate::registry(account))],
};

/// A call names a repository by `repositoryName` (in this account's registry: another's is
/// named by `registryId`) or by its ARN (`TagResource`).
fn names(name: &str, parameters: &Value, account: &Account) -> bool {
    let text = |key: &str| parameters.get(key).and_then(Value::as_str);
    if text("registryId").is_some_and(|registry| registry != account.id) {
        return false;
    }
    text("repositoryName") == Some(name)
        || text("resourceArn").is_some_and(|arn| arn_names(arn, account, true, &format!("repository/{name}")))
}

/// What a plan reads of a repository: its settings come with the registry's listing
/// (`ecr:DescribeRepositories`, which IAM cannot scope: a public plan names no repository it did
/// not declare), the rest per repository.
const READS: [&str; 4] =
    ["ecr:GetLifecyclePolicy", "ecr:GetRepositoryPolicy", "ecr:ListTagsForResource", "ecr:DescribeImages"];

/// What apply writes: desired.toml declares no repository policy, so apply only ever deletes
/// one; every declared repository has a lifecycle policy, so apply only ever puts one.
const WRITES: [&str; 6] = [
    "ecr:CreateRepository",
    "ecr:PutLifecyclePolicy",
    "ecr:DeleteRepositoryPolicy",
    "ecr:UntagResource",
    "ecr:PutImageTagMutability",
    "ecr:PutImageScanningConfiguration",
];

fn every_repository(account: &Account) -> Vec<String> {
    vec![reconcile_aws::arn(account, "ecr", "repository/*")]
}

/// The registry's listing, and each repository this deployment manages: those carrying its mark
/// (so declaring one more, the second use of this tool, changes no CI policy). Never another
/// team's repository's policy, tags, lifecycle or images, nor another deployment's.
fn reads(desired: &Desired, account: &Account) -> Vec<Value> {
    if crate::declared(desired).repositories.is_empty() {
        return Vec::new();
    }
    let (key, value) = desired.mark();
    vec![
        json!({ "Sid": "ListTheRegistry", "Effect": "Allow", "Action": ["ecr:DescribeRepositories"], "Resource": every_repository(account) }),
        json!({
            "Sid": "ReadTheRepositoriesMarkedAsReconciles",
            "Effect": "Allow",
            "Action": READS,
            "Resource": every_repository(account),
            "Condition": { "StringEquals": { format!("aws:ResourceTag/{key}"): value } },
        }),
    ]
}

/// Every repository of the registry, not only reconcile's: the drift check looks for undeclared
/// ones without a policy, apply's `--prune` for undeclared ones carrying its tag.
fn survey_reads(desired: &Desired, account: &Account) -> Vec<Value> {
    if crate::declared(desired).repositories.is_empty() {
        return Vec::new();
    }
    vec![
        json!({ "Sid": "EveryRepositoryOfTheRegistry", "Effect": "Allow", "Action": READS, "Resource": every_repository(account) }),
    ]
}

/// A destroy's (the declared repositories and their lifecycle policies deleted), an import's (a
/// declared repository someone else made, marked as this deployment's, after which the writes
/// granted by the mark reach it), and a prune's (a repository desired.toml no longer declares
/// that carries the mark: which cannot tell one this deployment made from one someone else
/// marked, so deleting it is never a CI role's).
fn administers(desired: &Desired, account: &Account) -> Vec<Value> {
    let arn = |name: &str| reconcile_aws::arn(account, "ecr", &format!("repository/{name}"));
    let repositories: Vec<String> = crate::declared(desired).repositories.iter().map(|r| arn(&r.name)).collect();
    if repositories.is_empty() {
        return Vec::new();
    }
    let (key, value) = desired.mark();
    vec![
        json!({
            "Sid": "DestroyOrImportTheDeclaredRepositories",
            "Effect": "Allow",
            "Action": ["ecr:DeleteLifecyclePolicy", "ecr:DeleteRepository", "ecr:TagResource"],
            "Resource": repositories,
        }),
        json!({
            "Sid": "PruneTheRepositoriesReconcileManages",
            "Effect": "Allow",
            "Action": ["ecr:DeleteRepository"],
            "Resource": every_repository(account),
            "Condition": { "StringEquals": { format!("aws:ResourceTag/{key}"): value } },
        }),
    ]
}

/// Every repository is granted by this deployment's mark, not by name, so declaring one more
/// (the second use of this tool, after a bake target is added) changes no CI policy, and the
/// apply role applies it. Only a repository made with the mark may be made; only one carrying it
/// changed or tagged (keeping the mark: no other is taken over by tagging it, which is an
/// administrator's import); its mark is never taken off; and none is ever deleted (a prune and
/// a destroy are an administrator's: see [`administers`]).
fn writes(desired: &Desired, account: &Account) -> Vec<Value> {
    if crate::declared(desired).repositories.is_empty() {
        return Vec::new();
    }
    let (key, value) = desired.mark();
    let marked = json!({ "StringEquals": { format!("aws:ResourceTag/{key}"): value } });
    let writes: Vec<&str> =
        WRITES.iter().copied().filter(|a| *a != "ecr:CreateRepository" && *a != "ecr:UntagResource").collect();
    vec![
        json!({
            "Sid": "TheRepositoriesReconcileManages",
            "Effect": "Allow",
            "Action": writes,
            "Resource": every_repository(account),
            "Condition": marked,
        }),
        json!({
            "Sid": "TagTheRepositoriesReconcileManagesKeepingTheMark",
            "Effect": "Allow",
            "Action": ["ecr:TagResource"],
            "Resource": every_repository(account),
            "Condition": {
                "StringEquals": { format!("aws:ResourceTag/{key}"): value },
                "StringEqualsIfExists": { format!("aws:RequestTag/{key}"): value },
            },
        }),
        json!({
            "Sid": "UntagTheRepositoriesReconcileManagesButNotTheMark",
            "Effect": "Allow",
            "Action": ["ecr:UntagResource"],
            "Resource": every_repository(account),
            "Condition": {
                "StringEquals": { format!("aws:ResourceTag/{key}"): value },
                "ForAllValues:StringNotEquals": { "aws:TagKeys": [key] },
            },
        }),
        // ECR authorizes the tags of a create as `ecr:TagResource` on the new repository too,
        // which IAM cannot tell from marking one that exists unmarked, and naming the
        // repositories would make every bake target added an administrator's change: taking one
        // over that way is refused to CI by the run itself (an import is an administrator's), a
        // mark so written gives nothing a pull request's public plan shows nor anything a CI
        // role deletes, and the deny below keeps another deployment's repositories out of reach.
        json!({
            "Sid": "MakeRepositoriesMarkedAsReconciles",
            "Effect": "Allow",
            "Action": ["ecr:CreateRepository", "ecr:TagResource"],
            "Resource": every_repository(account),
            "Condition": { "StringEquals": { format!("aws:RequestTag/{key}"): value } },
        }),
        json!({
            "Sid": "NeverAnotherDeploymentsRepositories",
            "Effect": "Deny",
            "Action": ["ecr:TagResource", "ecr:UntagResource"],
            "Resource": every_repository(account),
            "Condition": {
                // A mark (`StringLike "*"`: any value), and not this deployment's.
                "StringLike": { format!("aws:ResourceTag/{key}"): "*" },
                "StringNotEquals": { format!("aws:ResourceTag/{key}"): value },
            },
        }),
    ]
}

/// Putting a lifecycle policy back (deleted, or changed by hand): on a repository that carries
/// this deployment's mark, by the mark as the apply role's writes are (so that a bake target
/// added changes no CI policy); never on an unmarked repository nor another deployment's.
fn lifecycle_put_back(desired: &Desired, account: &Account) -> Vec<Value> {
    if crate::declared(desired).repositories.is_empty() {
        return Vec::new();
    }
    let (key, value) = desired.mark();
    vec![json!({
        "Sid": "PutTheLifecyclePoliciesBack",
        "Effect": "Allow",
        "Action": ["ecr:PutLifecyclePolicy"],
        "Resource": every_repository(account),
        "Condition": { "StringEquals": { format!("aws:ResourceTag/{key}"): value } },
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_a_repository_by_name_in_this_registry_or_by_its_arn_here() {
        let account = Account::new("123456789012", "us-east-1");
        let named = |parameters: Value| names("pytorch", &parameters, &account);
        assert!(named(json!({ "repositoryName": "pytorch" })));
        assert!(!named(json!({ "repositoryName": "pytorch-cache" })));
        assert!(!named(json!({ "repositoryName": "pytorch", "registryId": "210987654321" })), "another registry");
        assert!(named(json!({ "repositoryName": "pytorch", "registryId": "123456789012" })));
        assert!(named(json!({ "resourceArn": "arn:aws:ecr:us-east-1:123456789012:repository/pytorch" })));
        for arn in [
            "arn:aws:ecr:eu-west-1:123456789012:repository/pytorch",
            "arn:aws:ecr:us-east-1:210987654321:repository/pytorch",
        ] {
            assert!(!named(json!({ "resourceArn": arn })), "{arn}");
        }
    }
}
