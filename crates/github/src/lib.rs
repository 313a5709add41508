//! The GitHub side of the boundary: the nightly repository's variables (the five it reads,
//! derived from desired.toml and the account, and any declared by hand), its fork pull-request
//! approval policy, its default workflow permissions, and, read only, the repository hook that
//! carries `workflow_job` events to CodeBuild.
//!
//! Observe only reads, diff is the core's, apply is idempotent: a variable created since the
//! plan is updated instead, and a setting is put whole.
//!
//! Its kinds as the integrations/github provider's resources (`plan --format terraform-json`):
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `github_fork_pr_approval.<owner/repo>` | none: the provider has no resource for the fork pull-request approval policy | |
//! | `github_workflow_permissions.<owner/repo>` | `github_workflow_repository_permissions.repository["<owner/repo>"]` | `repository` (the name, without its owner), `default_workflow_permissions`, `can_approve_pull_request_reviews` |
//! | `github_oidc_subject.<owner/repo>` | `github_actions_repository_oidc_subject_claim_customization_template.repository["<owner/repo>"]` | `repository`, `use_default`, `include_claim_keys` |
//! | `github_variable.<NAME>` | `github_actions_variable.variable["<NAME>"]` | `variable_name`, `value` (`repository` is the `[github]` repository's, which the variable's fields do not carry, so it is left out) |

mod answers;
mod api;
pub mod contents;
pub mod conversation;
mod section;
mod threads;

use std::collections::BTreeMap;

use async_trait::async_trait;
use http::{Method, StatusCode};
use reconcile_core::address::{Address, ResourceKind};
use reconcile_core::desired::{Desired, Topic};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Observed, Severity};
use reconcile_core::reconciler::{Account, Applied, Observations, Progress, ReconcileError, Reconciler, Replacement};
use reconcile_core::terraform::{Mapping, Provider, ProviderResource};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use answers::GithubError;
pub use api::{API_VERSION, Api};
pub use section::{APPROVAL_POLICIES, CLAIM, Github, declared};

/// Finding code: the repository's hook to CodeBuild is missing, disabled, or no longer sends
/// `workflow_job`, so no job reaches the runner. Stable; never reused.
pub const RUNNER_HOOK: &str = "D105";

/// Finding code: (`drift`) a repository variable desired.toml does not declare. Stable; never
/// reused.
pub const UNDECLARED_VARIABLE: &str = "D106";

/// The repository variables a maintainer sets by hand to change what reconcile does, which are
/// never undeclared (D106).
const SWITCHES: [&str; 1] = [reconcile_core::variables::PUT_BACK_SWITCH];

/// Finding code: the GitHub side was not checked, for want of a token. Stable; never reused.
pub const NOT_CHECKED: &str = "E102";

/// Finding code: desired.toml's `[github]` repository is not the one this run plans for (a pull
/// request's desired.toml, planned by the trusted workflow, naming another repository), so the
/// GitHub side was not read with this run's token. Stable; never reused.
pub const NOT_THIS_REPOSITORY: &str = "E107";

/// The warning a plan carries when `[github]` names `declared` but the run plans for `expected`
/// (`RECONCILE_GITHUB_REPOSITORY`): this run's token is never used on another repository.
pub fn not_this_repository(declared: &str, expected: &str) -> Finding {
    Finding {
        code: NOT_THIS_REPOSITORY.to_owned(),
        severity: Severity::Warning,
        address: None,
        message: format!(
            "desired.toml's [github] repository is `{declared}`, not `{expected}`, the repository this run plans for: \
             the GitHub side was not read (this run's token is that repository's alone)"
        ),
        overridden_by: None,
    }
}

/// The one-line warning a plan carries when `[github]` is declared and there is no token to
/// check it with: the plan is then the AWS side's alone.
pub fn not_checked() -> Finding {
    Finding {
        code: NOT_CHECKED.to_owned(),
        severity: Severity::Warning,
        address: None,
        message: "the GitHub side ([github]: variables, fork approval, workflow permissions, the runner's hook) \
                  was not checked: set GITHUB_TOKEN or GH_TOKEN (the example workflows set GITHUB_TOKEN from the \
                  secret RECONCILE_GITHUB_READ_TOKEN)"
            .to_owned(),
        overridden_by: None,
    }
}

/// A repository variable: what GitHub stores of it.
#[derive(Debug, Serialize, Deserialize)]
struct VariableSpec {
    name: String,
    value: String,
}

/// The fork pull-request approval policy.
#[derive(Debug, Serialize, Deserialize)]
struct ApprovalSpec {
    approval_policy: String,
}

/// What a workflow's `GITHUB_TOKEN` may do when the workflow does not say.
#[derive(Debug, Serialize, Deserialize)]
struct WorkflowPermissionsSpec {
    default_workflow_permissions: String,
    can_approve_pull_request_reviews: bool,
}

/// The claims every workflow run's OIDC subject is made of (`use_default`: GitHub's, whatever
/// the list says, which then is empty).
#[derive(Debug, Serialize, Deserialize)]
struct OidcSubjectSpec {
    use_default: bool,
    include_claim_keys: Vec<String>,
}

impl OidcSubjectSpec {
    /// What GitHub answers, in the one form: a default template's keys are ignored.
    fn of(answer: &Value) -> OidcSubjectSpec {
        let use_default = answer["use_default"] != false;
        let keys = answer["include_claim_keys"]
            .as_array()
            .map(|keys| keys.iter().filter_map(|key| key.as_str().map(str::to_owned)).collect::<Vec<_>>());
        OidcSubjectSpec {
            use_default,
            include_claim_keys: if use_default { Vec::new() } else { keys.unwrap_or_default() },
        }
    }
}

/// The GitHub resources desired.toml asks for, none without `[github]`. Pure: no client, no
/// network. `NIGHTLY_ENABLED`, the nightly's on switch, is among them, applied last: only once
/// every other change of the plan, AWS and GitHub, succeeded. The derived variables are what
/// every crate of `catalog` derives.
pub fn desired(
    desired: &Desired,
    account: &Account,
    catalog: &reconcile_core::describe::Catalog,
) -> Result<Vec<DesiredResource>, ReconcileError> {
    let Some(github) = declared(desired) else { return Ok(Vec::new()) };
    let remote = format!("{}/{}", github.owner, github.repository);
    let mut resources = vec![
        DesiredResource::new(
            Address::new(crate::FORK_PR_APPROVAL, &github.repository),
            &remote,
            reconcile_core::spec::attributes(&ApprovalSpec { approval_policy: github.fork_pr_approval.clone() }),
        ),
        DesiredResource::new(
            Address::new(crate::WORKFLOW_PERMISSIONS, &github.repository),
            &remote,
            reconcile_core::spec::attributes(&WorkflowPermissionsSpec {
                default_workflow_permissions: github.default_workflow_permissions.clone(),
                can_approve_pull_request_reviews: github.actions_can_approve_pull_requests,
            }),
        ),
    ];
    let ci_roles: Vec<Address> = desired.referred(Topic::CiRole).flat_map(|role| role.addresses.clone()).collect();
    if !ci_roles.is_empty() {
        // The CI roles trust subjects made of these claims: their trusts change first.
        let trusts = ci_roles;
        resources.push(
            DesiredResource::new(
                Address::new(crate::OIDC_SUBJECT, &github.repository),
                &remote,
                reconcile_core::spec::attributes(&OidcSubjectSpec {
                    use_default: false,
                    include_claim_keys: reconcile_core::desired::SUBJECT_CLAIMS.map(str::to_owned).to_vec(),
                }),
            )
            .depending_on(trusts),
        );
    }
    let derived = reconcile_core::variables::derived(desired, account, catalog);
    let by_hand = github.variables.iter().map(|(name, value)| (name.as_str(), value.clone()));
    for (name, value) in derived.into_iter().chain(by_hand) {
        // A CI role's ARN is set once the role is made: a workflow that assumed it sooner would
        // fail, and an apply that leaves the role for an administrator leaves its variable too.
        let role: Vec<Address> = desired
            .referred(Topic::CiRole)
            .filter(|role| role.key == name)
            .flat_map(|role| role.addresses.iter().take(1).cloned())
            .collect();
        let variable = DesiredResource::new(
            Address::new(crate::VARIABLE, name),
            &remote,
            reconcile_core::spec::attributes(&VariableSpec { name: name.to_owned(), value }),
        )
        .depending_on(role);
        // Setting it turns the nightly on: never before the runner it needs is in place.
        let last = name == reconcile_core::variables::NIGHTLY_ENABLED;
        resources.push(if last { variable.applied_last() } else { variable });
    }
    Ok(resources)
}

/// What this crate says of itself: its kinds and its desired resources. GitHub's side is no
/// AWS resource: no CI role reads or writes it, and CloudTrail sees none of it.
pub const DESCRIPTION: reconcile_core::describe::Description = reconcile_core::describe::Description {
    name: "github",
    kinds: GithubKind::KINDS,
    sections: &[CLAIM],
    desired,
    access: reconcile_core::describe::Access::NONE,
    trail: &[],
    fields: FIELDS,
    terraform: MAPPINGS,
    generate: reconcile_core::describe::generates_nothing,
    variables: reconcile_core::describe::derives_no_variables,
};

/// The kinds as the integrations/github provider's resources (`plan --format terraform-json`):
/// the table in this crate's documentation.
const MAPPINGS: &[Mapping] = &[
    Mapping {
        kind: FORK_PR_APPROVAL,
        map: |_, _, _| Vec::new(),
        unmapped: "all of it: integrations/github has no resource for the fork pull-request approval policy",
    },
    Mapping { kind: WORKFLOW_PERMISSIONS, map: workflow_permissions, unmapped: "" },
    Mapping { kind: OIDC_SUBJECT, map: oidc_subject, unmapped: "" },
    Mapping { kind: VARIABLE, map: variable, unmapped: "`repository`" },
];

/// The repository's name, as the provider takes it (its owner is the provider's).
fn repository(full: &str) -> &str {
    full.split_once('/').map_or(full, |(_, name)| name)
}

fn workflow_permissions(_: &Account, full: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Github,
            "github_workflow_repository_permissions",
            "repository",
            json!({
                "repository": repository(full),
                "default_workflow_permissions": fields.get("default_workflow_permissions"),
                "can_approve_pull_request_reviews": fields.get("can_approve_pull_request_reviews"),
            }),
        )
        .computing(json!({ "id": repository(full) })),
    ]
}

fn oidc_subject(_: &Account, full: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Github,
            "github_actions_repository_oidc_subject_claim_customization_template",
            "repository",
            json!({
                "repository": repository(full),
                "use_default": fields.get("use_default"),
                "include_claim_keys": fields.get("include_claim_keys"),
            }),
        )
        .computing(json!({ "id": repository(full) })),
    ]
}

fn variable(_: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Github,
            "github_actions_variable",
            "variable",
            json!({ "variable_name": name, "value": fields.get("value") }),
        )
        .forcing_new(VARIABLE_FIELDS.forcing_new(&[]))
        // The provider's `<repository>:<name>` needs the repository, which the fields lack.
        .computing(json!({ "id": name })),
    ]
}

/// Each kind's fields: a variable is named by its name (Terraform's `variable_name`); every
/// setting is one API call.
pub const FIELDS: &[Fields] = &[
    Fields { kind: FORK_PR_APPROVAL, fields: &[Field::in_place("approval_policy")] },
    Fields {
        kind: WORKFLOW_PERMISSIONS,
        fields: &[Field::in_place("can_approve_pull_request_reviews"), Field::in_place("default_workflow_permissions")],
    },
    Fields { kind: OIDC_SUBJECT, fields: &[Field::in_place("include_claim_keys"), Field::in_place("use_default")] },
    VARIABLE_FIELDS,
];

/// A variable's fields.
pub const VARIABLE_FIELDS: Fields =
    Fields { kind: VARIABLE, fields: &[Field::identity("name").in_terraform("variable_name"), Field::in_place(VALUE)] };

/// `github_fork_pr_approval.<repository>`: which fork pull requests wait for approval.
pub const FORK_PR_APPROVAL: ResourceKind = ResourceKind::new("github_fork_pr_approval", 500);
/// `github_workflow_permissions.<repository>`: what a workflow's token may do.
pub const WORKFLOW_PERMISSIONS: ResourceKind = ResourceKind::new("github_workflow_permissions", 510);
/// `github_oidc_subject.<repository>`: the OIDC subject template.
pub const OIDC_SUBJECT: ResourceKind = ResourceKind::new("github_oidc_subject", 520);
/// `github_variable.<NAME>`: a repository variable.
pub const VARIABLE: ResourceKind = ResourceKind::new("github_variable", 530);

/// The field a variable's value is in, as a plan shows it.
pub const VALUE: &str = "value";

/// What a change of the repository variable `name` sets it from and to (`None` when unset or
/// absent), when `change` is one.
pub fn variable_change<'a>(change: &'a Change, name: &str) -> Option<(Option<&'a str>, Option<&'a str>)> {
    if change.address.kind != VARIABLE || change.address.name != name {
        return None;
    }
    let value = |fields: Option<&'a serde_json::Map<String, serde_json::Value>>| {
        fields.and_then(|f| f.get(VALUE)).and_then(serde_json::Value::as_str)
    };
    Some((value(change.before.as_ref()), value(change.after.as_ref())))
}

reconcile_core::resource_kinds! {
    /// The kinds this crate owns.
    pub enum GithubKind {
        ForkPrApproval = crate::FORK_PR_APPROVAL,
        WorkflowPermissions = crate::WORKFLOW_PERMISSIONS,
        OidcSubject = crate::OIDC_SUBJECT,
        Variable = crate::VARIABLE,
    }
}

pub struct GithubReconciler {
    api: Api,
    /// The CodeBuild webhook desired.toml declares, and the start of the URL CodeBuild's
    /// webhooks post to in the region: the repository must have an active hook to it.
    runner_hook: Option<(Address, String)>,
}

impl GithubReconciler {
    /// The repository's hook to CodeBuild is checked when desired.toml declares a CodeBuild
    /// webhook (`codebuild_webhook.<key>`, the first project that has one): `hooks_to` is where
    /// CodeBuild's webhooks post in desired.toml's region, which CodeBuild's crate knows.
    pub fn new(api: Api, desired: &Desired, hooks_to: &str) -> GithubReconciler {
        let webhook = desired.referred(Topic::Webhook).find_map(|webhook| webhook.addresses.first().cloned());
        let runner_hook = webhook.map(|address| (address, hooks_to.to_owned()));
        GithubReconciler { api, runner_hook }
    }

    /// Every variable of the repository, name to value.
    async fn variables(&self) -> Result<BTreeMap<String, String>, ReconcileError> {
        let path = self.api.path("/actions/variables?per_page=30");
        let list = self.api.list(&path, Some("variables"), "list the repository's variables").await?;
        Ok(list
            .iter()
            .filter_map(|v| Some((v["name"].as_str()?.to_ascii_uppercase(), v["value"].as_str()?.to_owned())))
            .collect())
    }

    async fn setting(&self, address: &Address, path: &str, what: &str) -> Result<Value, ReconcileError> {
        Ok(self.api.expect(Method::GET, &self.api.path(path), None, Some(address), what, &[]).await?.json())
    }

    /// The CodeBuild webhook's replacement, with D105, when the repository's hook to CodeBuild
    /// is gone, disabled, or does not send `workflow_job`: CodeBuild makes that hook when its
    /// webhook is created, and only then.
    async fn runner_hook(&self) -> Result<Option<Replacement>, ReconcileError> {
        let Some((webhook, url)) = &self.runner_hook else { return Ok(None) };
        let path = self.api.path("/hooks?per_page=100");
        let hooks = self.api.list(&path, None, "list the repository's webhooks").await?;
        let ours: Vec<&Value> =
            hooks.iter().filter(|h| h["config"]["url"].as_str().is_some_and(|u| u.starts_with(url.as_str()))).collect();
        let sends =
            |hook: &Value| hook["events"].as_array().is_some_and(|e| e.iter().any(|e| e == "workflow_job" || e == "*"));
        let problem = if ours.is_empty() {
            "has no webhook to CodeBuild"
        } else if ours.iter().any(|h| h["active"] == true && sends(h)) {
            return Ok(None);
        } else if ours.iter().all(|h| h["active"] != true) {
            "has its webhook to CodeBuild disabled"
        } else {
            "has a webhook to CodeBuild that no longer sends workflow_job events"
        };
        let finding = Finding {
            code: RUNNER_HOOK.to_owned(),
            severity: Severity::Error,
            address: Some(webhook.clone()),
            message: format!(
                "the GitHub repository {problem}, so no job reaches the runner; CodeBuild makes that hook only when \
                 its webhook is created, so the plan replaces {webhook} (apply it with --allow-delete)"
            ),
            overridden_by: None,
        };
        Ok(Some(Replacement { address: webhook.clone(), finding }))
    }

    async fn put_variable(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: VariableSpec = reconcile_core::spec::after(change)?;
        let what = format!("set variable {}", after.name);
        let body = json!({ "name": after.name, "value": after.value });
        let one = self.api.path(&format!("/actions/variables/{}", after.name));
        if change.action == Action::Create {
            let created = self
                .api
                .expect(
                    Method::POST,
                    &self.api.path("/actions/variables"),
                    Some(&body),
                    Some(address),
                    &what,
                    &[StatusCode::CONFLICT],
                )
                .await?;
            if created.status != StatusCode::CONFLICT {
                return Ok(Applied::Done);
            }
            // Made since the plan was read: update it instead.
            self.api.expect(Method::PATCH, &one, Some(&body), Some(address), &what, &[]).await?;
            return Ok(Applied::Adopted);
        }
        self.api.expect(Method::PATCH, &one, Some(&body), Some(address), &what, &[]).await?;
        Ok(Applied::Done)
    }

    /// Puts a setting whole: `T`, read back from the change (a missing field is an error
    /// naming it, never a default sent to GitHub), is the endpoint's body.
    async fn put_setting<T: Serialize + serde::de::DeserializeOwned>(
        &self,
        change: &Change,
        path: &str,
        what: &str,
    ) -> Result<Applied, ReconcileError> {
        let after: T = reconcile_core::spec::after(change)?;
        let body = serde_json::to_value(&after).unwrap_or_default();
        self.api.expect(Method::PUT, &self.api.path(path), Some(&body), Some(&change.address), what, &[]).await?;
        Ok(Applied::Done)
    }
}

const APPROVAL_PATH: &str = "/actions/permissions/fork-pr-contributor-approval";
const WORKFLOW_PATH: &str = "/actions/permissions/workflow";
const OIDC_SUBJECT_PATH: &str = "/actions/oidc/customization/sub";

#[async_trait]
impl Reconciler for GithubReconciler {
    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        DESCRIPTION.fields
    }

    fn kinds(&self) -> &'static [ResourceKind] {
        GithubKind::KINDS
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let wants_variables = desired.iter().any(|r| r.address.kind == crate::VARIABLE);
        let settings = desired.iter().find(|r| r.address.kind == crate::FORK_PR_APPROVAL);
        let permissions = desired.iter().find(|r| r.address.kind == crate::WORKFLOW_PERMISSIONS);
        let template = desired.iter().find(|r| r.address.kind == crate::OIDC_SUBJECT);
        let (variables, approval, workflow, hook, subject) = futures::join!(
            async { if wants_variables { self.variables().await.map(Some) } else { Ok(None) } },
            async {
                match settings {
                    Some(r) => self
                        .setting(&r.address, APPROVAL_PATH, "read the fork pull-request approval policy")
                        .await
                        .map(Some),
                    None => Ok(None),
                }
            },
            async {
                match permissions {
                    Some(r) => {
                        self.setting(&r.address, WORKFLOW_PATH, "read the default workflow permissions").await.map(Some)
                    }
                    None => Ok(None),
                }
            },
            async { if settings.or(permissions).is_some() { self.runner_hook().await } else { Ok(None) } },
            async {
                match template {
                    Some(r) => self
                        .setting(&r.address, OIDC_SUBJECT_PATH, "read the OIDC subject claim template")
                        .await
                        .map(Some),
                    None => Ok(None),
                }
            },
        );
        let (variables, approval, workflow, subject) = (variables?, approval?, workflow?, subject?);
        let mut observations = Observations::default();
        observations.replace.extend(hook?);
        for resource in desired {
            let observed = match GithubKind::of(&resource.address)? {
                GithubKind::Variable => match variables.as_ref().and_then(|v| v.get(&resource.address.name)) {
                    Some(value) => Observed::Present(reconcile_core::spec::attributes(&VariableSpec {
                        name: resource.address.name.clone(),
                        value: value.clone(),
                    })),
                    None => Observed::Absent,
                },
                GithubKind::OidcSubject => Observed::Present(reconcile_core::spec::attributes(&OidcSubjectSpec::of(
                    &subject.clone().unwrap_or_default(),
                ))),
                GithubKind::ForkPrApproval => {
                    let policy = approval.as_ref().and_then(|a| a["approval_policy"].as_str()).unwrap_or_default();
                    Observed::Present(reconcile_core::spec::attributes(&ApprovalSpec {
                        approval_policy: policy.to_owned(),
                    }))
                }
                GithubKind::WorkflowPermissions => {
                    let workflow = workflow.clone().unwrap_or_default();
                    Observed::Present(reconcile_core::spec::attributes(&WorkflowPermissionsSpec {
                        default_workflow_permissions: workflow["default_workflow_permissions"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        can_approve_pull_request_reviews: workflow["can_approve_pull_request_reviews"] == true,
                    }))
                }
            };
            observations.resources.insert(resource.address.clone(), observed);
        }
        Ok(observations)
    }

    /// Every variable of the repository that desired.toml does not declare: left alone, named.
    async fn survey(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        if !desired.iter().any(|r| r.address.kind == crate::VARIABLE) {
            return Ok(Vec::new());
        }
        let declared: Vec<&str> = desired.iter().map(|r| r.address.name.as_str()).collect();
        Ok(self
            .variables()
            .await?
            .into_keys()
            // A maintainer's switch reconcile reads and never sets (`RECONCILE_PUT_BACK`).
            .filter(|name| !declared.contains(&name.as_str()) && !SWITCHES.contains(&name.as_str()))
            .map(|name| Finding {
                code: UNDECLARED_VARIABLE.to_owned(),
                severity: Severity::Warning,
                address: Some(Address::new(crate::VARIABLE, &name)),
                message: format!(
                    "repository variable {name} is not in desired.toml; reconcile leaves it alone: declare it under \
                     [github.variables], or delete it"
                ),
                overridden_by: None,
            })
            .collect())
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        match (GithubKind::of(address)?, change.action) {
            (GithubKind::Variable, Action::Create | Action::Update) => self.put_variable(change).await,
            (GithubKind::ForkPrApproval, Action::Create | Action::Update) => {
                self.put_setting::<ApprovalSpec>(change, APPROVAL_PATH, "set the fork pull-request approval policy")
                    .await
            }
            (GithubKind::WorkflowPermissions, Action::Create | Action::Update) => {
                self.put_setting::<WorkflowPermissionsSpec>(
                    change,
                    WORKFLOW_PATH,
                    "set the default workflow permissions",
                )
                .await
            }
            (GithubKind::OidcSubject, Action::Create | Action::Update) => {
                self.put_setting::<OidcSubjectSpec>(change, OIDC_SUBJECT_PATH, "set the OIDC subject claim template")
                    .await
            }
            (
                GithubKind::Variable
                | GithubKind::ForkPrApproval
                | GithubKind::WorkflowPermissions
                | GithubKind::OidcSubject,
                Action::Delete | Action::Replace,
            ) => Err(ReconcileError::never(address, "delete")),
        }
    }

    /// The subject template decides which runs the CI roles' trusts admit: the apply role
    /// changing it could change who may act as reconcile.
    fn administrators_only(&self, change: &Change) -> Option<&'static str> {
        (change.address.kind == crate::OIDC_SUBJECT)
            .then_some("the OIDC subject template: which runs each CI role's trust admits")
    }
}
