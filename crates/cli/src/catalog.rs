//! The binary's one list of resource crates. The session's desired resources, the CI roles'
//! policies and drift attribution iterate it. A new resource crate is one line here, its
//! reconciler in `aws.rs` (which builds every SDK client with the request counter), and its
//! kinds and desired.toml section in core: docs/architecture.md, "Adding a kind".

use reconcile_core::describe::Catalog;

pub const CATALOG: Catalog = Catalog(&[
    &reconcile_iam::DESCRIPTION,
    &reconcile_s3::DESCRIPTION,
    &reconcile_ecr::DESCRIPTION,
    &reconcile_codebuild::DESCRIPTION,
    &reconcile_github::DESCRIPTION,
]);

#[cfg(test)]
mod tests {
    //! The CI roles' policies are made of every crate's access: what they allow, and that no
    //! role reaches more than it has, is a property of the whole catalog.

    use std::path::Path;

    use reconcile_core::{Account, Desired};
    use reconcile_iam::{apply_policy, read_only_policy};
    use serde_json::{Value, json};

    use super::*;

    /// The iam crate's small account with the three CI roles.
    const BASE: &str = include_str!("../../../tests/fixtures/ci.desired.toml");

    fn account() -> Account {
        Account::new("123456789012", "us-east-1")
    }

    fn sids(policy: &Value) -> Vec<&str> {
        policy["Statement"].as_array().unwrap().iter().map(|s| s["Sid"].as_str().unwrap()).collect()
    }

    #[test]
    fn the_apply_policy_grants_only_what_this_desired_file_can_lead_apply_to_write() {
        // No tags, no managed-by marker, no webhook, no bucket expiry: nothing to tag, nothing to
        // prune, no webhook to make; a webhook can still be deleted, and the bucket, which has no
        // expiry to be made with, made.
        let bare = Desired::parse(Path::new("desired.toml"), BASE).unwrap();
        let policy = apply_policy(&bare, &account(), &CATALOG).unwrap();
        let granted = sids(&policy);
        for absent in ["TheDeclaredRepositoriesTags", "TheRepositoriesReconcileManages", "TheRunnersWebhook"] {
            assert!(!granted.contains(&absent), "{absent}: {granted:?}");
        }
        assert!(policy.to_string().contains("codebuild:DeleteWebhook"));
        assert!(granted.contains(&"MakeTheBucketsWithoutAnExpiry"), "{granted:?}");

        let full = BASE
            .replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n")
            .replace("name = \"cache-${account_id}\"\n", "name = \"cache-${account_id}\"\nlifecycle_rules = [{ id = \"x\", expiration_days = 30 }]\n")
            .replace("trusted_services = [\"codebuild.amazonaws.com\"]\n", "trusted_services = [\"codebuild.amazonaws.com\"]\ntags = { a = \"b\" }\n")
            .replace("build_timeout_hours = 4\n", "build_timeout_hours = 4\n[codebuild.projects.runner.webhook]\nfilter_groups = [[{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }]]\n");
        let full = Desired::parse(Path::new("desired.toml"), &full).unwrap();
        let granted_all = apply_policy(&full, &account(), &CATALOG).unwrap();
        for present in ["TheRepositoriesReconcileManages", "MakeRepositoriesTaggedAsReconciles", "TheRunnersWebhook"] {
            assert!(sids(&granted_all).contains(&present), "{present}");
        }
        // A bucket's expiry and ACL, and so making a bucket that declares an expiry, are an
        // administrator's: never granted.
        assert!(!sids(&granted_all).contains(&"MakeTheBucketsWithoutAnExpiry"));
        for never in ["s3:PutLifecycleConfiguration", "s3:PutBucketAcl", "s3:CreateBucket"] {
            assert!(!granted_all.to_string().contains(never), "{never}");
            assert!(!policy.to_string().contains(never) || never == "s3:CreateBucket", "{never}");
        }
        // Nothing in IAM is written but passing the runner's role, and every write there, and
        // assuming a role, is denied.
        for policy in [&policy, &granted_all] {
            for statement in policy["Statement"].as_array().unwrap() {
                let actions: Vec<&str> =
                    statement["Action"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
                if statement["Effect"] == "Deny" {
                    assert_eq!(statement["Resource"], json!(["*"]));
                    assert!(actions.contains(&"iam:Put*") && actions.contains(&"sts:AssumeRole"), "{statement}");
                    continue;
                }
                for action in actions.iter().filter(|a| a.starts_with("iam:")) {
                    assert!(
                        action.starts_with("iam:Get") || action.starts_with("iam:List") || *action == "iam:PassRole",
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
        let ci = desired.ci.as_ref().unwrap();
        let mut roles: Vec<reconcile_iam::reach::Role> = ci
            .roles
            .iter()
            .map(|role| reconcile_iam::reach::Role {
                arn: arn(&role.name),
                policies: vec![if role.purpose.reads_only() {
                    read_only_policy(desired, &account, &CATALOG)
                } else {
                    apply_policy(desired, &account, &CATALOG).unwrap()
                }],
                boundary: None,
            })
            .collect();
        for role in &desired.iam.roles {
            let projects: Vec<String> = desired.codebuild.projects.iter().map(|p| p.name.clone()).collect();
            roles.push(reconcile_iam::reach::Role {
                arn: arn(&role.name),
                policies: vec![reconcile_iam::inline_policy(desired, role, &account, &projects).unwrap()],
                boundary: Some((
                    reconcile_iam::policy_arn(&account, &reconcile_iam::boundary_name(role)),
                    reconcile_iam::boundary_policy(desired, role, &account, &projects).unwrap(),
                )),
            });
        }
        let projects = desired
            .codebuild
            .projects
            .iter()
            .map(|p| reconcile_iam::reach::Project {
                arn: reconcile_aws::arn(&account, "codebuild", &format!("project/{}", p.name)),
                service_role: arn(&desired.iam.roles.iter().find(|r| r.key == p.service_role).unwrap().name),
            })
            .collect();
        reconcile_iam::reach::Model { account: account.id, roles, projects }
    }

    #[test]
    fn no_ci_role_nor_any_role_it_reaches_can_widen_anything() {
        use reconcile_iam::evaluate::{Context, Request};
        let tagged = BASE
            .replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n");
        for text in [BASE, tagged.as_str()] {
            let desired = Desired::parse(Path::new("desired.toml"), text).unwrap();
            let model = derived_account(&desired);
            let runner = "arn:aws:iam::123456789012:role/runner";
            for role in ["p", "d", "a"] {
                let from = format!("arn:aws:iam::123456789012:role/{role}");
                assert_eq!(model.escalations_through(&from), Vec::new(), "{role}");
                let reached: Vec<String> = model.reach(&from).into_iter().map(|path| path.role).collect();
                // The apply role reaches the runner's role: it may change the project, whose next
                // build runs as it. Bounded by its boundary, that is no escalation.
                let expected = if role == "a" { vec![from.clone(), runner.to_owned()] } else { vec![from.clone()] };
                assert_eq!(reached, expected);
            }
            // The four calls of the attack, as the apply role: none allowed.
            let apply = model.role("arn:aws:iam::123456789012:role/a").unwrap();
            let principal = reconcile_iam::evaluate::Principal { policies: &apply.policies, boundary: None };
            let boundary =
                Context::new().with("iam:PermissionsBoundary", &["arn:aws:iam::123456789012:policy/runner-boundary"]);
            for (action, resource) in [
                ("iam:PutRolePolicy", runner),
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
            runner_role.policies =
                vec![json!({ "Statement": [{ "Effect": "Allow", "Action": "*", "Resource": "*" }] })];
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

    /// The example account's desired.toml: every crate has something in it.
    fn example() -> Desired {
        Desired::parse(Path::new("desired.toml"), include_str!("../../../desired.toml")).unwrap()
    }

    fn is_githubs(description: &reconcile_core::describe::Description) -> bool {
        description.name == reconcile_github::DESCRIPTION.name
    }

    #[test]
    fn every_kind_has_exactly_one_owner() {
        for kind in reconcile_core::ResourceKind::ALL {
            let owners: Vec<&str> = CATALOG.0.iter().filter(|d| d.kinds.contains(&kind)).map(|d| d.name).collect();
            assert_eq!(owners.len(), 1, "{} is owned by {owners:?}", kind.as_str());
        }
        let listed: usize = CATALOG.0.iter().map(|d| d.kinds.len()).sum();
        assert_eq!(listed, reconcile_core::ResourceKind::ALL.len());
    }

    #[test]
    fn every_aws_kind_says_what_cloudtrail_records_of_it_and_only_those() {
        for description in CATALOG.0 {
            for &kind in description.kinds {
                let trails: Vec<_> = description.trail.iter().filter(|t| t.kind == kind).collect();
                if is_githubs(description) {
                    assert!(trails.is_empty() && CATALOG.trail(kind).is_none(), "{}", kind.as_str());
                    continue;
                }
                assert_eq!(trails.len(), 1, "{}: one KindTrail", kind.as_str());
                let trail = trails[0];
                assert!(!trail.events.is_empty(), "{}", kind.as_str());
                // Every event named anywhere else in the entry is one of its events.
                let named = trail
                    .fields
                    .iter()
                    .chain(trail.findings)
                    .flat_map(|(_, events)| events.iter())
                    .chain(trail.other_fields.into_iter().flatten())
                    .chain(trail.removals);
                for event in named {
                    assert!(trail.events.contains(event), "{}: {event} is not among its events", kind.as_str());
                }
            }
            // A field an event sets is a field the kind's desired resources declare.
            let resources = (description.desired)(&example(), &account(), &CATALOG).unwrap();
            for trail in description.trail {
                for (field, _) in trail.fields {
                    assert!(
                        resources.iter().any(|r| r.address.kind == trail.kind && r.attributes.contains_key(*field)),
                        "{}: `{field}` is no field of its desired resources",
                        trail.kind.as_str()
                    );
                }
            }
            for trail in description.trail {
                assert!(
                    description.kinds.contains(&trail.kind),
                    "{}: {} is not its kind",
                    description.name,
                    trail.kind.as_str()
                );
            }
        }
    }

    #[test]
    fn every_aws_crate_says_what_a_plan_reads_and_an_apply_writes() {
        let desired = example();
        let account = account();
        let mut sids = std::collections::BTreeSet::new();
        for description in CATALOG.0 {
            let reads = (description.access.reads)(&desired, &account);
            let writes = (description.access.writes)(&desired, &account);
            let drift = (description.access.drift_reads)(&desired, &account);
            if is_githubs(description) {
                assert!(reads.is_empty() && writes.is_empty() && drift.is_empty());
                continue;
            }
            assert!(!reads.is_empty(), "{}: reads", description.name);
            // Every change in IAM is an administrator's: the apply role writes nothing there.
            let administrators_only = description.name == reconcile_iam::DESCRIPTION.name;
            assert_eq!(writes.is_empty(), administrators_only, "{}: writes", description.name);
            for statement in reads.iter().chain(&writes).chain(&drift) {
                let sid = statement["Sid"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{}: a statement without a Sid", description.name));
                assert!(sids.insert(sid.to_owned()), "{sid} twice");
            }
        }
    }

    #[tokio::test]
    async fn the_aws_backend_has_a_reconciler_for_every_crate_but_githubs() {
        let aws = crate::aws::Aws::load("us-east-1", crate::aws::Purpose::Read, 1).await;
        let mut built: Vec<reconcile_core::ResourceKind> =
            aws.reconcilers(&account(), 0.1, None).iter().flat_map(|r| r.kinds().iter().copied()).collect();
        let mut listed: Vec<reconcile_core::ResourceKind> =
            CATALOG.0.iter().filter(|d| !is_githubs(d)).flat_map(|d| d.kinds.iter().copied()).collect();
        built.sort();
        listed.sort();
        assert_eq!(built, listed);
    }
}
