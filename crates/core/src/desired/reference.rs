//! What one claimed section lets the rest of the file refer to, as Terraform's references do:
//! a project's `service_role` names a role of `[iam]`, `[ci]`'s roles trust `[github]`'s
//! repository, the repository variables carry the runner project's name. A crate never reads
//! another's model (the two never depend on each other); it reads the references the other
//! published, in core's vocabulary ([`Topic`]), so the two agree on it without knowing each
//! other.

use crate::address::Address;

/// What a reference is to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Topic {
    /// A role under `[iam.roles]`: its key (what a project's `service_role` names), its AWS
    /// name, and its address and its inline policy's.
    Role,
    /// `[github]`'s repository, `owner/name` as written (the key is empty).
    Repository,
    /// A CodeBuild project: its key, its name. The first in the file's key order is the
    /// nightly's runner (`CODEBUILD_PROJECT`).
    Project,
    /// A project's webhook: its project's key and name, and the webhook's address.
    Webhook,
    /// A CI role: the repository variable its ARN is set in (`RECONCILE_PLAN_ROLE_ARN`), its AWS
    /// name, and its address; plan, drift, apply, and put back when declared, in that order.
    CiRole,
}

/// The key of the [`Topic::CiRole`] reference of the put-back role, whose ARN the repository
/// variable of that name carries: the role the drift check puts drift back as.
pub const PUT_BACK_ROLE: &str = "RECONCILE_PUT_BACK_ROLE_ARN";

/// One thing a section declares that others may refer to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub topic: Topic,
    /// How the file or the rest of the program names it: a role's key, a variable's name.
    pub key: String,
    /// What it is in AWS or GitHub: a role's name, `owner/name`.
    pub value: String,
    /// The resources it is, which another kind's resource that refers to it is applied after
    /// (a role and its policy, before a project runs as it).
    pub addresses: Vec<Address>,
}

impl Reference {
    pub fn new(topic: Topic, key: impl Into<String>, value: impl Into<String>) -> Reference {
        Reference { topic, key: key.into(), value: value.into(), addresses: Vec::new() }
    }

    /// This reference, to the resource at `address` too.
    pub fn at(mut self, address: Address) -> Reference {
        self.addresses.push(address);
        self
    }
}

/// The claims every workflow run's OIDC subject is made of, when `[ci]` is declared: the
/// repository (`repo:OWNER/NAME`), the run's context (`environment:NAME`, `ref:REF` or
/// `pull_request`) and the workflow file that runs the job
/// (`job_workflow_ref:OWNER/NAME/.github/workflows/FILE@REF`). GitHub's default (`repo` and
/// `context`) cannot tell apart two workflows on the default branch: the trusted pull-request
/// plan and the drift check. The CI roles (IAM's) trust subjects of this form, and GitHub's
/// crate sets the repository's template (`github_oidc_subject.<repository>`) to it: core's, so
/// the two agree on it.
pub const SUBJECT_CLAIMS: [&str; 3] = ["repo", "context", "job_workflow_ref"];
