//! The CI roles' policies are made of every crate's access: what they allow, and that no
//! role reaches more than it has, is a property of the whole catalog.

use std::path::Path;

use reconcile_core::{Account, Desired};
use reconcile_iam::{apply_policy, plan_policy, read_only_policy};
use serde_json::{Value, json};

use super::*;

/// The iam crate's small account with the three CI roles.
const BASE: &str = include_str!("../../../../tests/fixtures/ci.desired.toml");

fn account() -> Account {
    Account::new("123456789012", "us-east-1")
}

fn sids(policy: &Value) -> Vec<&str> {
    policy["Statement"].as_array().unwrap().iter().map(|s| s["Sid"].as_str().unwrap()).collect()
}

#[test]
fn the_apply_policy_grants_only_what_this_desired_file_can_lead_apply_to_write() {
    // No webhook, no bucket expiry: no webhook to make; a webhook can still be deleted, and the
    // bucket, which has no expiry to be made with, made. The repositories are the ones carrying
    // this deployment's mark, whatever their tags.
    let bare = crate::catalog::parse_desired(Path::new("desired.toml"), BASE).unwrap();
    let policy = apply_policy(&bare, &account(), &CATALOG).unwrap();
    let granted = sids(&policy);
    for absent in ["TheDeclaredRepositories", "TheDeclaredRepositoriesTags", "TheRunnersWebhook"] {
        assert!(!granted.contains(&absent), "{absent}: {granted:?}");
    }
    assert!(granted.contains(&"TheRepositoriesReconcileManages"), "{granted:?}");
    assert!(policy.to_string().contains("codebuild:DeleteWebhook"));
    assert!(granted.contains(&"MakeTheBucketsWithoutAnExpiry"), "{granted:?}");

    let full = BASE
        .replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n")
        .replace("name = \"cache-${account_id}\"\n", "name = \"cache-${account_id}\"\nlifecycle_rules = [{ id = \"x\", expiration_days = 30 }]\n")
        .replace("trusted_services = [\"codebuild.amazonaws.com\"]\n", "trusted_services = [\"codebuild.amazonaws.com\"]\ntags = { a = \"b\" }\n")
        .replace("build_timeout_hours = 4\n", "build_timeout_hours = 4\n[codebuild.projects.runner.webhook]\nfilter_groups = [[{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }]]\n");
    let full = crate::catalog::parse_desired(Path::new("desired.toml"), &full).unwrap();
    let granted_all = apply_policy(&full, &account(), &CATALOG).unwrap();
    for present in ["TheRepositoriesReconcileManages", "MakeRepositoriesMarkedAsReconciles", "TheRunnersWebhook"] {
        assert!(sids(&granted_all).contains(&present), "{present}");
    }
    // The repositories: the apply role makes one only marked, changes and tags only one that is
    // marked (so it never takes one over: an import is an administrator's), and never takes a
    // mark off.
    {
        use reconcile_iam::evaluate::{Context, Principal, Request};
        let apply = Principal { policies: std::slice::from_ref(&granted_all), boundary: None };
        let repository = "arn:aws:ecr:us-east-1:123456789012:repository/skunkworks";
        let ours = || Context::new().with("aws:ResourceTag/reconcile:deployment", &["default"]);
        let allows = |action: &str, context: &Context| apply.allows(Request { action, resource: repository, context });
        let marking = Context::new().with("aws:RequestTag/reconcile:deployment", &["default"]);
        assert!(allows("ecr:CreateRepository", &marking));
        assert!(!allows("ecr:CreateRepository", &Context::new()));
        // A create's tags are authorized as tagging the new repository, which IAM cannot tell
        // from marking one that exists unmarked (the run refuses that to CI: an import is an
        // administrator's); another deployment's repository is never reached.
        assert!(allows("ecr:TagResource", &marking));
        assert!(!allows("ecr:TagResource", &marking.clone().with("aws:ResourceTag/reconcile:deployment", &["team-x"])));
        assert!(!allows(
            "ecr:UntagResource",
            &Context::new().with("aws:ResourceTag/reconcile:deployment", &["team-x"])
        ));
        assert!(allows("ecr:TagResource", &ours().with("aws:RequestTag/team", &["x"])));
        assert!(!allows("ecr:TagResource", &ours().with("aws:RequestTag/reconcile:deployment", &["team-x"])));
        assert!(allows("ecr:UntagResource", &ours().with("aws:TagKeys", &["team"])));
        assert!(!allows("ecr:UntagResource", &ours().with("aws:TagKeys", &["team", "reconcile:deployment"])));
        assert!(allows("ecr:PutImageTagMutability", &ours()));
        assert!(!allows(
            "ecr:PutImageTagMutability",
            &Context::new().with("aws:ResourceTag/managed-by", &["reconcile"])
        ));
    }
    // A bucket's expiry and ACL, and so making a bucket that declares an expiry, are an
    // administrator's: never granted.
    assert!(!sids(&granted_all).contains(&"MakeTheBucketsWithoutAnExpiry"));
    for never in ["s3:PutLifecycleConfiguration", "s3:PutBucketAcl", "s3:CreateBucket"] {
        assert!(!granted_all.to_string().contains(never), "{never}");
        assert!(!policy.to_string().contains(never) || never == "s3:CreateBucket", "{never}");
    }
    // Nothing in IAM is written but passing the runner's role and putting its inline policy
    // while it carries its boundary; every other write there, and assuming a role, is denied.
    for policy in [&policy, &granted_all] {
        for statement in policy["Statement"].as_array().unwrap() {
            let actions: Vec<&str> = statement["Action"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            let sid = statement["Sid"].as_str().unwrap();
            if statement["Effect"] == "Deny" && sid == "NeverAnotherDeploymentsRepositories" {
                continue;
            }
            if statement["Effect"] == "Deny" {
                match sid {
                    "NeverAnIdentityOrPermissionChangeNorAnotherRole" => {
                        assert_eq!(statement["Resource"], json!(["*"]));
                        assert!(
                            ["iam:Create*", "iam:Delete*", "iam:Update*", "iam:Attach*", "sts:AssumeRole"]
                                .iter()
                                .all(|a| actions.contains(a)),
                            "{statement}"
                        );
                    }
                    "NeverAPolicyPutElsewhere" => {
                        assert_eq!(actions, ["iam:Put*"]);
                        assert_eq!(statement["NotResource"], json!(["arn:aws:iam::123456789012:role/runner"]));
                    }
                    "NeverMoveTheRunnersBoundary" => assert_eq!(actions, ["iam:PutRolePermissionsBoundary"]),
                    "NeverPutTheRunnersInlinePolicyWithoutItsBoundary0" => {
                        assert_eq!(actions, ["iam:PutRolePolicy"]);
                        assert_eq!(
                            statement["Condition"],
                            json!({ "ArnNotEquals": { "iam:PermissionsBoundary": "arn:aws:iam::123456789012:policy/runner-boundary" } })
                        );
                    }
                    other => panic!("an unexpected deny {other}: {statement}"),
                }
                continue;
            }
            for action in actions.iter().filter(|a| a.starts_with("iam:")) {
                let put = *action == "iam:PutRolePolicy" && sid == "PutTheRunnersInlinePolicyWithinItsBoundary0";
                assert!(
                    action.starts_with("iam:Get") || action.starts_with("iam:List") || *action == "iam:PassRole" || put,
                    "{statement}"
                );
            }
            assert!(!actions.iter().any(|a| a.starts_with("sts:")), "{statement}");
        }
    }
}

/// The account as desired.toml derives it: the three CI roles, the runner's role with its
/// inline policy and boundary, and the project that runs as it.
fn derived_account(desired: &Desired) -> reconcile_iam::reach::Model {
    let account = account();
    let arn = |name: &str| format!("arn:aws:iam::{}:role/{name}", account.id);
    let ci = reconcile_iam::declared_ci(desired).unwrap();
    let mut roles: Vec<reconcile_iam::reach::Role> = ci
        .roles
        .iter()
        .map(|role| reconcile_iam::reach::Role {
            arn: arn(&role.name),
            policies: vec![reconcile_iam::ci_policy(role.purpose, desired, &account, &CATALOG).unwrap()],
            boundary: None,
        })
        .collect();
    for role in &reconcile_iam::declared(desired).roles {
        roles.push(reconcile_iam::reach::Role {
            arn: arn(&role.name),
            policies: vec![reconcile_iam::inline_policy(desired, &CATALOG, role, &account).unwrap()],
            boundary: Some((
                reconcile_iam::policy_arn(&account, &reconcile_iam::boundary_name(role)),
                reconcile_iam::boundary_policy(desired, &CATALOG, role, &account).unwrap(),
            )),
        });
    }
    let projects = reconcile_codebuild::declared(desired)
        .projects
        .iter()
        .map(|p| reconcile_iam::reach::Project {
            arn: reconcile_aws::arn(&account, "codebuild", &format!("project/{}", p.name)),
            service_role: arn(&reconcile_iam::declared(desired)
                .roles
                .iter()
                .find(|r| r.key == p.service_role)
                .unwrap()
                .name),
        })
        .collect();
    reconcile_iam::reach::Model { account: account.id, roles, projects }
}

#[test]
fn no_ci_role_nor_any_role_it_reaches_can_widen_anything() {
    use reconcile_iam::evaluate::{Context, Request};
    let tagged =
        BASE.replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n");
    // With the put-back role too, putting back every kind that may be named.
    let putting_back = format!(
        "{BASE}put_back_role = \"b\"\n[drift]\nput_back = [{}]\n",
        CATALOG.put_back_kinds().iter().map(|kind| format!("\"{kind}\"")).collect::<Vec<_>>().join(", ")
    );
    for text in [BASE, tagged.as_str(), putting_back.as_str()] {
        let desired = crate::catalog::parse_desired(Path::new("desired.toml"), text).unwrap();
        let model = derived_account(&desired);
        let runner = "arn:aws:iam::123456789012:role/runner";
        let roles: &[&str] = if text == putting_back { &["p", "d", "a", "b"] } else { &["p", "d", "a"] };
        for role in roles {
            let from = format!("arn:aws:iam::123456789012:role/{role}");
            assert_eq!(model.escalations_through(&from), Vec::new(), "{role}");
            let reached: Vec<String> = model.reach(&from).into_iter().map(|path| path.role).collect();
            // The apply role reaches the runner's role: it may change the project, whose next
            // build runs as it. Bounded by its boundary, that is no escalation.
            let expected = if *role == "a" { vec![from.clone(), runner.to_owned()] } else { vec![from.clone()] };
            assert_eq!(reached, expected);
        }
        // The four calls of the attack, as the apply role: none allowed. Putting the runner's
        // inline policy is allowed only while the role carries its boundary (which then bounds
        // whatever is put), never on a role without it, nor on any other role.
        let apply = model.role("arn:aws:iam::123456789012:role/a").unwrap();
        let principal = reconcile_iam::evaluate::Principal { policies: &apply.policies, boundary: None };
        let boundary =
            Context::new().with("iam:PermissionsBoundary", &["arn:aws:iam::123456789012:policy/runner-boundary"]);
        let put =
            |context: &Context| principal.decide(Request { action: "iam:PutRolePolicy", resource: runner, context });
        assert_eq!(put(&boundary), reconcile_iam::evaluate::Decision::Allowed);
        assert_eq!(put(&Context::new()), reconcile_iam::evaluate::Decision::Denied, "a role without its boundary");
        let other =
            Context::new().with("iam:PermissionsBoundary", &["arn:aws:iam::123456789012:policy/another-boundary"]);
        assert_eq!(put(&other), reconcile_iam::evaluate::Decision::Denied, "a role with another boundary");
        for (action, resource) in [
            ("iam:UpdateAssumeRolePolicy", runner),
            ("sts:AssumeRole", runner),
            ("iam:PutRolePolicy", "arn:aws:iam::123456789012:role/a"),
            ("iam:DeleteRolePermissionsBoundary", runner),
            ("iam:PutRolePermissionsBoundary", runner),
            ("iam:CreateRole", "arn:aws:iam::123456789012:role/new"),
            ("iam:CreatePolicyVersion", "arn:aws:iam::123456789012:policy/runner-boundary"),
            ("iam:AttachRolePolicy", runner),
        ] {
            for context in [&Context::new(), &boundary] {
                assert_eq!(
                    principal.decide(Request { action, resource, context }),
                    reconcile_iam::evaluate::Decision::Denied,
                    "{action} on {resource}"
                );
            }
        }
        // Were the runner's inline policy rewritten to allow everything, its boundary would
        // still bound it: no escalation through the project either.
        let mut rewritten = model.clone();
        let runner_role = rewritten.roles.iter_mut().find(|r| r.arn == runner).unwrap();
        runner_role.policies = vec![json!({ "Statement": [{ "Effect": "Allow", "Action": "*", "Resource": "*" }] })];
        assert_eq!(rewritten.escalations_through("arn:aws:iam::123456789012:role/a"), Vec::new());
        let bounded = rewritten.role(runner).unwrap();
        let bounded = reconcile_iam::evaluate::Principal {
            policies: &bounded.policies,
            boundary: bounded.boundary.as_ref().map(|(_, document)| document),
        };
        let none = Context::new();
        assert!(!bounded.allows(Request { action: "iam:PutRolePolicy", resource: runner, context: &none }));
        assert!(!bounded.allows(Request {
            action: "s3:PutObject",
            resource: "arn:aws:s3:::cache-123456789012/reconcile/apply.lock",
            context: &none
        }));
        assert!(bounded.allows(Request {
            action: "s3:PutObject",
            resource: "arn:aws:s3:::cache-123456789012/sccache/x",
            context: &none
        }));
    }
}

/// The descriptions of `crates`, as `CATALOG` is of `CRATES`.
fn catalog_of(crates: &[Crate]) -> Catalog {
    Catalog(Vec::leak(crates.iter().map(|entry| entry.description).collect()))
}

/// The example account's desired.toml: every crate has something in it; with `[example]` too
/// when `crates` hold the test-only crate.
fn example(crates: &[Crate]) -> Desired {
    let catalog = catalog_of(crates);
    let mut text = include_str!("../../../../desired.toml").to_owned();
    if catalog.claims().iter().any(|claim| claim.name == "example") {
        text.push_str("\n[example.queues.nightly-events]\nretention_days = 4\n");
    }
    Desired::parse_claimed(Path::new("desired.toml"), &text, &catalog.claims()).unwrap()
}

/// What does not hold of the list `crates`: each kind one owner, with a unique name and rank;
/// each kind one table of its fields, with a row for every field its desired resources have
/// ([`fields_unlisted`]); each AWS kind what CloudTrail records of it, naming only its own
/// events; each AWS crate what a plan reads and (but IAM) what an apply
/// writes, each statement with its own Sid; each section one crate's, none of core's.
fn tidy(crates: &[Crate]) -> Vec<String> {
    let mut problems = Vec::new();
    let catalog = catalog_of(crates);
    let desired = example(crates);
    let account = account();
    let kinds = catalog.kinds();
    for kind in &kinds {
        let owners = crates.iter().filter(|entry| entry.description.kinds.contains(kind)).count();
        let named = kinds.iter().filter(|other| other.as_str() == kind.as_str()).count();
        let ranked = kinds.iter().filter(|other| other.rank() == kind.rank()).count();
        if (owners, named, ranked) != (1, 1, 1) {
            problems.push(format!("{kind}: {owners} owners, its name {named} times, its rank {ranked} times"));
        }
    }
    let mut sids = std::collections::BTreeSet::new();
    let mut sections = std::collections::BTreeSet::new();
    for entry in crates {
        let description = entry.description;
        let name = description.name;
        for claim in description.sections {
            if !sections.insert(claim.name) || reconcile_core::desired::CORE_KEYS.contains(&claim.name) {
                problems.push(format!("{name}: the section `{}` is not its own", claim.name));
            }
        }
        let reads = (description.access.reads)(&desired, &account);
        let writes = (description.access.writes)(&desired, &account);
        let mut drift = (description.access.drift_reads)(&desired, &account);
        drift.extend((description.access.cost_reads)(&desired, &account));
        for statement in reads.iter().chain(&writes).chain(&drift) {
            match statement["Sid"].as_str() {
                Some(sid) if sids.insert(sid.to_owned()) => {}
                sid => problems.push(format!("{name}: the Sid {sid:?} is missing or not unique")),
            }
        }
        let resources = match (description.desired)(&desired, &account, &catalog) {
            Ok(resources) => resources,
            Err(error) => {
                problems.push(format!("{name}: {error}"));
                continue;
            }
        };
        problems.extend(fields_unlisted(description, &resources));
        if entry.aws.is_none() {
            if !(reads.is_empty() && writes.is_empty() && drift.is_empty() && description.trail.is_empty()) {
                problems.push(format!("{name}: nothing in AWS is its own, yet it has access or a trail"));
            }
            continue;
        }
        if reads.is_empty() {
            problems.push(format!("{name}: no reads"));
        }
        // Every change in IAM is an administrator's: the apply role writes nothing there.
        if writes.is_empty() != (name == reconcile_iam::DESCRIPTION.name) {
            problems.push(format!("{name}: its writes"));
        }
        for trail in description.trail {
            if !description.kinds.contains(&trail.kind) {
                problems.push(format!("{name}: {} is not its kind", trail.kind));
            }
        }
        for &kind in description.kinds {
            let trails: Vec<_> = description.trail.iter().filter(|t| t.kind == kind).collect();
            let [trail] = trails[..] else {
                problems.push(format!("{kind}: {} KindTrails", trails.len()));
                continue;
            };
            if trail.events.is_empty() {
                problems.push(format!("{kind}: no events"));
            }
            let rows = description.fields.iter().filter(|f| f.kind == kind).flat_map(|f| f.fields);
            let named = trail
                .findings
                .iter()
                .flat_map(|(_, events)| events.iter())
                .chain(rows.flat_map(|row| row.events))
                .chain(trail.other_fields.into_iter().flatten())
                .chain(trail.removals);
            for event in named {
                if !trail.events.contains(event) {
                    problems.push(format!("{kind}: {event} is not among its events"));
                }
            }
        }
        problems.extend(unmapped(description, &resources));
    }
    problems
}

/// What a crate's tables of fields miss: a kind with no table or more than one, a field of a
/// desired resource with no row (its create-only, CloudTrail and Terraform facts would be stated
/// nowhere), a row named twice.
fn fields_unlisted(description: &Description, resources: &[reconcile_core::DesiredResource]) -> Vec<String> {
    let mut problems = Vec::new();
    for &kind in description.kinds {
        let tables: Vec<_> = description.fields.iter().filter(|f| f.kind == kind).collect();
        let [table] = tables[..] else {
            problems.push(format!("{kind}: {} tables of fields", tables.len()));
            continue;
        };
        let mut rows = std::collections::BTreeSet::new();
        for row in table.fields {
            if !rows.insert(row.name) {
                problems.push(format!("{kind}: `{}` has two rows", row.name));
            }
        }
        let fields: std::collections::BTreeSet<&str> = resources
            .iter()
            .filter(|r| r.address.kind == kind)
            .flat_map(|r| r.attributes.keys().map(String::as_str))
            .collect();
        for field in fields.difference(&rows) {
            problems.push(format!("{kind}: `{field}` has no row in its table of fields"));
        }
    }
    problems
}

/// What a crate's Terraform mappings miss: a kind with no mapping, or a field of a desired
/// resource whose change no provider resource shows (the view would miss that drift); a kind
/// that maps to nothing must say so.
fn unmapped(description: &Description, resources: &[reconcile_core::DesiredResource]) -> Vec<String> {
    let mut problems = Vec::new();
    for &kind in description.kinds {
        let mappings: Vec<_> = description.terraform.iter().filter(|m| m.kind == kind).collect();
        let [mapping] = mappings[..] else {
            problems.push(format!("{kind}: {} Terraform mappings", mappings.len()));
            continue;
        };
        for resource in resources.iter().filter(|r| r.address.kind == kind) {
            let name = &resource.address.name;
            let account = reconcile_core::Account::new("123456789012", "us-east-1");
            let mapped = (mapping.map)(&account, name, &resource.attributes);
            if mapped.is_empty() {
                if mapping.unmapped.is_empty() {
                    problems.push(format!("{kind}: maps to nothing and does not say why"));
                }
                continue;
            }
            for (field, value) in &resource.attributes {
                for other in mutated(value) {
                    let mut changed = resource.attributes.clone();
                    changed.insert(field.clone(), other.clone());
                    if (mapping.map)(&account, name, &changed) == mapped {
                        problems
                            .push(format!("{}: `{field}` = {other} shows in no provider resource", resource.address));
                    }
                }
            }
        }
    }
    problems
}

/// Other values of the same shape: for an object, each of its fields changed in turn.
fn mutated(value: &Value) -> Vec<Value> {
    match value {
        Value::Null => vec![json!("set")],
        Value::Bool(b) => vec![json!(!b)],
        Value::Number(n) => vec![json!(n.as_f64().unwrap_or_default() + 1.0)],
        Value::String(s) => vec![json!(format!("{s}~"))],
        Value::Array(items) => {
            let mut items = items.clone();
            items.push(json!("~"));
            vec![Value::Array(items)]
        }
        Value::Object(fields) if fields.is_empty() => vec![json!({ "~": "~" })],
        Value::Object(fields) => fields
            .iter()
            .flat_map(|(key, inner)| {
                mutated(inner).into_iter().map(|other| {
                    let mut fields = fields.clone();
                    fields.insert(key.clone(), other);
                    Value::Object(fields)
                })
            })
            .collect(),
    }
}

#[test]
fn the_catalog_is_tidy() {
    assert_eq!(tidy(&CRATES), Vec::<String>::new());
    assert_eq!(CATALOG.kinds().len(), 16);
}

#[test]
fn a_crate_without_its_trail_or_its_access_or_with_a_kind_twice_is_not_tidy() {
    use reconcile_core::describe::{Access, Description};
    static NO_TRAIL: Description = Description { trail: &[], ..super::example::DESCRIPTION };
    static NO_MAPPING: Description = Description { terraform: &[], ..super::example::DESCRIPTION };
    static NO_ROW: Description = Description {
        fields: &[reconcile_core::fields::Fields { kind: super::example::QUEUE, fields: &[] }],
        ..super::example::DESCRIPTION
    };
    static NO_WRITES: Description = Description {
        access: Access { writes: |_, _| Vec::new(), ..super::example::DESCRIPTION.access },
        ..super::example::DESCRIPTION
    };
    static TWICE: Description =
        Description { kinds: reconcile_ecr::DESCRIPTION.kinds, ..reconcile_github::DESCRIPTION };
    let with = |description: &'static Description| {
        let mut crates = super::example::EXTENDED.to_vec();
        crates[5].description = description;
        tidy(&crates)
    };
    assert_eq!(with(&NO_TRAIL), ["example_queue: 0 KindTrails"]);
    assert_eq!(with(&NO_MAPPING), ["example_queue: 0 Terraform mappings"]);
    assert_eq!(with(&NO_ROW), ["example_queue: `retention_days` has no row in its table of fields"]);
    assert_eq!(with(&NO_WRITES), ["example: its writes"]);
    let twice = with(&TWICE);
    assert!(twice.contains(&"ecr_repository: 2 owners, its name 2 times, its rank 2 times".to_owned()), "{twice:?}");
}

#[tokio::test]
async fn the_aws_backend_has_a_reconciler_for_every_crate_but_githubs() {
    let aws = crate::aws::Aws::load("us-east-1", crate::aws::Purpose::Read, crate::aws::Limits::of(1)).await;
    for crates in [&CRATES[..], &super::example::EXTENDED[..]] {
        let desired = example(crates);
        let mut built: Vec<reconcile_core::ResourceKind> = aws
            .reconcilers(crates, &account(), &desired, None, None)
            .iter()
            .flat_map(|r| r.kinds().iter().copied())
            .collect();
        let mut listed: Vec<reconcile_core::ResourceKind> =
            crates.iter().filter(|c| c.aws.is_some()).flat_map(|c| c.description.kinds.iter().copied()).collect();
        built.sort();
        listed.sort();
        assert_eq!(built, listed);
    }
}

/// docs/architecture.md's "Adding a kind", done: the test-only crate (catalog/example.rs) and
/// one line in the list reach every part of a run that goes over the list.
#[tokio::test]
async fn a_new_kind_is_its_crate_and_one_line_in_the_list() {
    use reconcile_core::engine::{self, ApplyOptions, PlanOptions};
    use reconcile_core::{Action, Address};
    use reconcile_render::saved::{self, MadeWith};

    use super::example::{EXTENDED, QUEUE};

    let catalog = catalog_of(&EXTENDED);
    let path = Path::new("desired.toml");
    let text = format!(
        "{}\n[example.queues.nightly-events]\nretention_days = 4\n",
        include_str!("../../../../desired.toml").trim_end()
    );
    let line = text.lines().count();

    // Its section: read with the list's claims and checked by its crate, with file, line and key.
    let desired = Desired::parse_claimed(path, &text, &catalog.claims()).unwrap();
    let parse = |text: &str| Desired::parse_claimed(path, text, &catalog.claims()).unwrap_err().to_string();
    assert_eq!(
        parse(&text.replace("retention_days = 4", "retention_days = 40")),
        format!(
            "desired.toml:{line}:18: `example.queues.nightly-events.retention_days`: a queue keeps messages 1 to 14 days"
        )
    );
    let typo = parse(&text.replace("retention_days", "retention_dayz"));
    assert!(
        typo.starts_with(&format!(
            "desired.toml:{line}:1: `example.queues.nightly-events.retention_dayz`: unknown field `retention_dayz`"
        )),
        "{typo}"
    );
    // Without the line in the list, the section is a misspelling.
    let unclaimed = Desired::parse_claimed(path, &text, &CATALOG.claims()).unwrap_err().to_string();
    assert!(
        unclaimed.starts_with(&format!(
            "desired.toml:{}:2: `example`: unknown field `example`, expected one of `region`",
            line - 1
        )),
        "{unclaimed}"
    );
    let schema = reconcile_core::desired::schema(&catalog.claims());
    assert!(schema["properties"]["example"]["properties"]["queues"].is_object(), "{schema}");

    // Its desired resources, beside every other crate's, as the session derives them.
    let account = account();
    let resources = crate::session::desired_resources(&catalog, &desired, &account, false).unwrap();
    let queue = Address::new(QUEUE, "nightly-events");
    assert_eq!(resources[&queue].attributes["retention_days"], 4);
    assert!(resources.keys().any(|address| address.kind == reconcile_ecr::REPOSITORY));

    // Its reconciler, built by the AWS backend from the list: planned, applied, planned again.
    let aws = crate::aws::Aws::load("us-east-1", crate::aws::Purpose::Apply, crate::aws::Limits::of(1)).await;
    let reconcilers = aws.reconcilers(&EXTENDED[5..], &account, &desired, None, None);
    let own: engine::DesiredResources = resources.into_iter().filter(|(address, _)| address.kind == QUEUE).collect();
    let plan = engine::plan_with(&reconcilers, &desired, &own, &account, PlanOptions::default()).await.unwrap();
    assert_eq!(
        plan.changes.iter().map(|c| (c.address.clone(), c.action)).collect::<Vec<_>>(),
        [(queue.clone(), Action::Create)]
    );
    let options = ApplyOptions { allow_delete: false, left: &[], concurrency: 1, stop: None };
    let report = engine::apply(&reconcilers, &plan, options, &reconcile_core::reconciler::Silent).await.unwrap();
    assert!(report.succeeded());
    let again = engine::plan_with(&reconcilers, &desired, &own, &account, PlanOptions::default()).await.unwrap();
    assert!(again.changes.is_empty(), "{:?}", again.changes);

    // A saved plan of it reads back with the list's kinds, and not without them.
    let json = saved::to_json(&plan, &text, MadeWith::default());
    assert_eq!(saved::from_json(&json, &catalog.kinds()).unwrap().plan.changes, plan.changes);
    assert_eq!(saved::from_json(&json, &CATALOG.kinds()).unwrap_err(), "unknown resource kind `example_queue`");

    // The CI roles: every one reads it, the apply role writes it.
    assert!(sids(&read_only_policy(&desired, &account, &catalog)).contains(&"TheExampleQueues"));
    assert!(sids(&apply_policy(&desired, &account, &catalog).unwrap()).contains(&"WriteTheExampleQueues"));

    // Drift attribution: a plan that creates it again looks for who removed it; one that
    // changes its retention, for who set it.
    assert_eq!(reconcile_trail::events_for_change(&catalog, &plan.changes[0]), ["DeleteQueue"]);
    let mut update = plan.changes[0].clone();
    update.action = Action::Update;
    update.before = Some(serde_json::Map::from_iter([("retention_days".to_owned(), json!(2))]));
    assert_eq!(reconcile_trail::events_for_change(&catalog, &update), ["CreateQueue", "SetQueueAttributes"]);
}

/// The iam crate's small account, its repositories given `tags` (a TOML line, or nothing).
fn with_repository_tags(tags: &str) -> Desired {
    let text = BASE.replace("lifecycle_policy = \"p\"\n", &format!("lifecycle_policy = \"p\"\n{tags}"));
    crate::catalog::parse_desired(Path::new("desired.toml"), &text).unwrap()
}

#[test]
fn the_plan_role_reads_no_repository_but_reconciles_and_nothing_only_the_drift_check_needs() {
    use reconcile_iam::evaluate::{Context, Principal, Request};
    let account = account();
    for tags in ["", "tags = { managed-by = \"reconcile\" }\n"] {
        let desired = with_repository_tags(tags);
        let policy = plan_policy(&desired, &account, &CATALOG);
        let plan = Principal { policies: std::slice::from_ref(&policy), boundary: None };
        let repository = |name: &str| format!("arn:aws:ecr:us-east-1:{}:repository/{name}", account.id);
        let ours = Context::new().with("aws:ResourceTag/reconcile:deployment", &["default"]);
        let legacy = Context::new().with("aws:ResourceTag/managed-by", &["reconcile"]);
        let theirs = Context::new().with("aws:ResourceTag/owner", &["skunkworks@example.com"]);
        for action in
            ["ecr:GetRepositoryPolicy", "ecr:ListTagsForResource", "ecr:GetLifecyclePolicy", "ecr:DescribeImages"]
        {
            let another = repository("skunkworks/llm-weights");
            assert!(
                !plan.allows(Request { action, resource: &another, context: &theirs }),
                "{action} on another team's repository ({tags})"
            );
            assert!(!plan.allows(Request { action, resource: &another, context: &Context::new() }), "{action}");
            // Declared or not: by this deployment's mark only, never by name, nor by a tag a file
            // could write.
            let declared = repository("pytorch");
            assert!(plan.allows(Request { action, resource: &declared, context: &ours }), "{action}");
            assert!(!plan.allows(Request { action, resource: &declared, context: &Context::new() }), "{action}");
            assert!(!plan.allows(Request { action, resource: &declared, context: &legacy }), "{action}");
            // A repository the nightly made with the mark, declared or not yet.
            let made = repository("vllm-cache");
            assert!(plan.allows(Request { action, resource: &made, context: &ours }), "{action}");
        }
        // The listing, which IAM cannot scope: a public plan names no repository from it.
        let every = repository("*");
        assert!(plan.allows(Request {
            action: "ecr:DescribeRepositories",
            resource: &every,
            context: &Context::new()
        }));
        // Nothing the drift check reads besides: who made a change, the rates and the bill; nor
        // another team's repository through the survey's statement. (The runner's builds and the
        // cache's daily size are a plan's too: its cost line prices a change from them.)
        let actions = |policy: &Value| -> Vec<String> {
            policy["Statement"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["Action"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()))
                .collect()
        };
        let drift = read_only_policy(&desired, &account, &CATALOG);
        for action in ["cloudtrail:LookupEvents", "ce:GetCostAndUsage", "pricing:GetProducts"] {
            assert!(actions(&drift).contains(&action.to_owned()), "the drift role reads {action}");
            assert!(!actions(&policy).contains(&action.to_owned()), "the plan role does not read {action}");
        }
        for action in ["cloudwatch:GetMetricStatistics", "codebuild:BatchGetBuilds", "codebuild:ListBuildsForProject"] {
            assert!(actions(&drift).contains(&action.to_owned()), "the drift role reads {action}");
            assert!(actions(&policy).contains(&action.to_owned()), "the plan role reads {action}, for the cost line");
        }
        assert!(sids(&drift).contains(&"EveryRepositoryOfTheRegistry"));
        assert!(!sids(&policy).contains(&"EveryRepositoryOfTheRegistry"));
    }
}

/// IAM refuses a policy whose statement ids repeat: every crate's statements, joined, keep them
/// apart in every CI role's policy, with a tag on every repository and without.
#[test]
fn every_ci_policy_names_each_statement_once() {
    let account = account();
    for tags in ["", "tags = { managed-by = \"reconcile\" }\n"] {
        let desired = with_repository_tags(tags);
        for policy in [
            plan_policy(&desired, &account, &CATALOG),
            read_only_policy(&desired, &account, &CATALOG),
            apply_policy(&desired, &account, &CATALOG).unwrap(),
        ] {
            let mut all = sids(&policy);
            let count = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), count, "{policy:#}");
        }
    }
}

/// `reconcile schema`, and every policy derived for the project's desired.toml and the CI
/// fixture, as they stand: moving where a kind is described (each crate owning its section)
/// must leave them byte for byte.
#[test]
fn the_schema_and_every_derived_policy_stay_as_they_are() {
    insta::assert_snapshot!(
        "schema",
        reconcile_core::json::to_pretty(&reconcile_core::desired::schema(&CATALOG.claims()))
    );
    let account = account();
    for (name, text) in [("project", include_str!("../../../../desired.toml")), ("ci", BASE)] {
        let desired = parse_desired(Path::new("desired.toml"), text).unwrap();
        let mut policies = vec![
            ("plan".to_owned(), Ok(reconcile_iam::plan_policy(&desired, &account, &CATALOG))),
            ("read-only".to_owned(), Ok(read_only_policy(&desired, &account, &CATALOG))),
            ("apply".to_owned(), apply_policy(&desired, &account, &CATALOG)),
            ("administrator".to_owned(), reconcile_iam::administrator_policy(&desired, &account, &CATALOG)),
        ];
        for role in &reconcile_iam::declared(&desired).roles {
            let key = &role.key;
            policies.push((format!("runner-{key}"), reconcile_iam::inline_policy(&desired, &CATALOG, role, &account)));
            policies
                .push((format!("boundary-{key}"), reconcile_iam::boundary_policy(&desired, &CATALOG, role, &account)));
        }
        for (role, policy) in policies {
            let policy = policy.unwrap_or_else(|why| panic!("{name} {role}: {why}"));
            insta::assert_snapshot!(format!("{name}_{role}_policy"), reconcile_core::json::to_pretty(&policy));
        }
    }
}

#[test]
fn each_section_publishes_what_the_others_refer_to_as_the_stand_ins_of_the_crates_tests_do() {
    use reconcile_core::desired::{Topic, testing};
    let with_webhook = BASE.replace(
        "build_timeout_hours = 4\n",
        "build_timeout_hours = 4\n[codebuild.projects.runner.webhook]\nfilter_groups = [[{ type = \"EVENT\", pattern = \
         \"WORKFLOW_JOB_QUEUED\" }]]\n",
    );
    let desired = crate::catalog::parse_desired(Path::new("desired.toml"), &with_webhook).unwrap();
    let published: Vec<String> = desired
        .references
        .iter()
        .map(|r| {
            let at: Vec<String> = r.addresses.iter().map(ToString::to_string).collect();
            format!("{:?} {} = {} at [{}]", r.topic, r.key, r.value, at.join(", "))
        })
        .collect();
    assert_eq!(
        published,
        // By section key (`ci`, `codebuild`, `github`, `iam`), each in its own order.
        [
            "CiRole RECONCILE_PLAN_ROLE_ARN = p at [iam_ci_role.plan]",
            "CiRole RECONCILE_DRIFT_ROLE_ARN = d at [iam_ci_role.drift]",
            "CiRole RECONCILE_APPLY_ROLE_ARN = a at [iam_ci_role.apply]",
            "Project runner = rocm-bake at []",
            "Webhook runner = rocm-bake at [codebuild_webhook.runner]",
            "Repository  = ROCm/rocm-bake at []",
            "Role codebuild = runner at [iam_role.codebuild, iam_role_policy.codebuild]",
        ]
    );
    // The crates' tests stand in for the sections they refer to: each stand-in publishes what
    // the section's own crate does (the addresses, which are the crate's kinds, aside).
    let stand_ins = [&testing::IAM, &testing::CODEBUILD, &testing::GITHUB, &testing::CI];
    let mut claims = stand_ins.to_vec();
    let (ecr, s3) = (&reconcile_ecr::CLAIM, &reconcile_s3::CLAIM);
    claims.extend([ecr, s3]);
    let stood_in = Desired::parse_claimed(Path::new("desired.toml"), &with_webhook, &claims).unwrap();
    let said = |desired: &Desired| {
        let mut said: Vec<(Topic, String, String)> =
            desired.references.iter().map(|r| (r.topic, r.key.clone(), r.value.clone())).collect();
        said.sort();
        said
    };
    assert_eq!(said(&stood_in), said(&desired));
    for topic in [Topic::Role, Topic::Project, Topic::Repository, Topic::CiRole] {
        assert!(desired.referred(topic).next().is_some(), "{topic:?}");
    }
}

/// A reconciler of one kind that differs only by the table of fields it is given: what the
/// engine makes of a diff, with no crate asking.
struct Tabled(&'static [reconcile_core::ResourceKind], &'static [reconcile_core::fields::Fields]);

#[async_trait::async_trait]
impl reconcile_core::Reconciler for Tabled {
    fn kinds(&self) -> &'static [reconcile_core::ResourceKind] {
        self.0
    }

    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        self.1
    }

    async fn observe(
        &self,
        _desired: &[&reconcile_core::DesiredResource],
    ) -> Result<reconcile_core::reconciler::Observations, reconcile_core::ReconcileError> {
        Ok(reconcile_core::reconciler::Observations::default())
    }

    async fn apply(
        &self,
        change: &reconcile_core::plan::Change,
        _progress: &dyn reconcile_core::reconciler::Progress,
    ) -> Result<reconcile_core::reconciler::Applied, reconcile_core::ReconcileError> {
        Err(reconcile_core::ReconcileError::never(&change.address, "apply in a test of the diff"))
    }
}

/// The engine, not the crate, makes an update of a field set only at create a replacement: for
/// every kind of every crate, each field its table lets change, marked create-only in a scratch
/// copy of the table, makes an update of it a replacement; with the real table, exactly the
/// fields it marks create-only do (the kind's `refusal` then says whether one may be applied:
/// ECR's repository and IAM's boundary refuse, CodeBuild's webhook is replaced).
#[test]
fn the_engine_replaces_for_whatever_a_kinds_table_says_is_set_only_at_create() {
    use reconcile_core::fields::{Field, Fields, Mutability};
    use reconcile_core::plan::{Action, DesiredResource, Observed};
    let leak = |tables: Vec<Fields>| -> &'static [Fields] { Box::leak(tables.into_boxed_slice()) };
    let mut with_create_only = Vec::new();
    for description in CATALOG.0 {
        for table in description.fields {
            let kinds: &'static [reconcile_core::ResourceKind] = Box::leak(Box::new([table.kind]));
            if !table.create_only().is_empty() {
                with_create_only.push(table.kind.as_str());
            }
            for field in table.fields.iter().filter(|f| f.mutability != Mutability::Identity) {
                let address = reconcile_core::Address::new(table.kind, "scratch");
                let desired = DesiredResource::new(
                    address.clone(),
                    "scratch",
                    serde_json::Map::from_iter([(field.name.to_owned(), json!("declared"))]),
                );
                let live = Observed::Present(serde_json::Map::from_iter([(field.name.to_owned(), json!("live"))]));
                let action = |tables: &'static [Fields]| {
                    let reconcilers: Vec<Box<dyn reconcile_core::Reconciler>> = vec![Box::new(Tabled(kinds, tables))];
                    reconcile_core::engine::diff_one(&reconcilers, &address, Some(&desired), &live).map(|c| c.action)
                };
                let scratch: Vec<Field> = table
                    .fields
                    .iter()
                    .map(|f| if f.name == field.name { Field { mutability: Mutability::CreateOnly, ..*f } } else { *f })
                    .collect();
                let scratch = leak(vec![Fields { kind: table.kind, fields: Box::leak(scratch.into_boxed_slice()) }]);
                assert_eq!(action(scratch), Some(Action::Replace), "{}.{}: marked create-only", table.kind, field.name);
                let real = if field.mutability == Mutability::CreateOnly { Action::Replace } else { Action::Update };
                assert_eq!(action(leak(vec![*table])), Some(real), "{}.{} as its table says", table.kind, field.name);
            }
        }
    }
    with_create_only.sort_unstable();
    assert_eq!(with_create_only, ["codebuild_webhook", "ecr_repository", "iam_role_boundary"]);
}

/// Every AWS crate's reconciler answers the engine with its description's tables, so what the
/// engine replaces for is what the table (and the Terraform view, and attribution) says.
#[test]
fn every_crates_reconciler_hands_the_engine_its_descriptions_tables() {
    use std::time::Duration;
    let sdk = aws_config::SdkConfig::builder()
        .region(aws_config::Region::new("us-east-1"))
        .behavior_version(aws_config::BehaviorVersion::latest())
        .build();
    let transient =
        reconcile_aws::Transient { attempts: 1, within: Duration::from_secs(1), base: Duration::from_secs(1) };
    let pacing = reconcile_aws::Pacing::new(Duration::from_secs(1), transient);
    let desired = crate::catalog::parse_desired(Path::new("desired.toml"), BASE).unwrap();
    let account = account();
    let clients = reconcile_aws::Clients {
        sdk: &sdk,
        interceptor: aws_smithy_runtime_api::client::interceptors::SharedInterceptor::new(
            crate::aws::RequestCounter::default(),
        ),
        pacing: &pacing,
        account: &account,
        desired: &desired,
        parallelism: 1,
        prune: None,
        destroy: None,
        shared: None,
    };
    let shape = |tables: &[reconcile_core::fields::Fields]| -> Vec<(String, Vec<&str>)> {
        tables.iter().map(|t| (t.kind.to_string(), t.fields.iter().map(|f| f.name).collect())).collect()
    };
    let mut built = 0;
    for each in CRATES {
        let Some(build) = each.aws else { continue };
        let reconciler = build(&clients);
        assert!(!each.description.fields.is_empty(), "{}: a table per kind", each.description.name);
        assert_eq!(shape(reconciler.fields()), shape(each.description.fields), "{}", each.description.name);
        built += 1;
    }
    assert_eq!(built, 4);
}
