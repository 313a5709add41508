//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Plan and apply the ROCm nightly's AWS account from desired.toml, as Terraform does, without
/// a state file.
///
/// AWS credentials, region and endpoint come from the standard AWS configuration chain
/// (AWS_PROFILE, AWS_ENDPOINT_URL, ...); desired.toml's region wins.
///
/// Exit codes: 0 success, or no difference; 1 error; 2 a difference found (plan
/// --detailed-exitcode, drift, declare --check, import --check); 3 refused by a safety check
/// before any write; 4 a stale saved plan; 130 and 143 an apply interrupted.
#[derive(Debug, Parser)]
#[command(
    name = "reconcile",
    version = crate::VERSION,
    after_help = "The main commands come first. `reconcile help COMMAND` says more of each; `reconcile explain CODE` \
                  explains a finding."
)]
pub struct Args {
    /// The desired-state file.
    #[arg(long, global = true, default_value = "desired.toml", value_name = "PATH")]
    pub desired: PathBuf,

    /// When to colour text output; NO_COLOR in the environment means never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Log what is being done to stderr (-v: info, -vv: debug). RECONCILE_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// At most N requests in flight to each AWS service at once, and N changes applied at once:
    /// a ceiling. The default sends a 27-repository account's reads in one wave; when AWS
    /// throttles, each service's send rate drops to what it answers and climbs back, however
    /// high this is set.
    #[arg(
        long,
        global = true,
        value_name = "N",
        env = "RECONCILE_PARALLELISM",
        default_value_t = reconcile_aws::DEFAULT_PARALLELISM,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000),
    )]
    pub parallelism: usize,

    /// How long one request AWS keeps throttling may go on being retried, paced, before the run
    /// fails, in seconds (from its first attempt). Throttling slows a run down; only a throttle
    /// that outlasts this fails it.
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        env = "RECONCILE_THROTTLE_DEADLINE",
        default_value_t = reconcile_aws::DEFAULT_THROTTLE_DEADLINE.as_secs(),
        value_parser = clap::builder::RangedU64ValueParser::<u64>::new().range(1..=86_400),
    )]
    pub throttle_deadline: u64,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check desired.toml and the bake file, without any AWS call.
    #[command(display_order = 3)]
    Validate {
        #[command(flatten)]
        bake: Bake,
    },
    /// Show what apply would change; never writes.
    #[command(display_order = 1)]
    Plan(PlanArgs),
    /// Delete what desired.toml declares and this deployment made.
    ///
    /// Deletes every resource desired.toml declares that carries this deployment's mark (refused
    /// if one exists without it), in the reverse of the order apply makes them: the plan first,
    /// then the prompt (or --auto-approve), under the apply lock. Images and objects go only
    /// with --force-delete-images and --empty-buckets. Never touches what desired.toml does not
    /// declare, nor the GitHub side's settings.
    #[command(display_order = 7)]
    Destroy(DestroyArgs),
    /// Print a plan saved by `plan --out`; reads no AWS.
    #[command(display_order = 8)]
    Show {
        #[arg(value_name = "PLAN_FILE")]
        plan_file: PathBuf,
        #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
        format: PlanFormat,
    },
    /// Make the account match desired.toml, or carry out a saved plan.
    #[command(display_order = 2)]
    Apply(ApplyArgs),
    /// The nightly drift check: the plan, and what desired.toml does not declare.
    ///
    /// Exit 0 in sync, 2 drift, 1 error. With --issue, keeps one GitHub issue true to it.
    #[command(display_order = 4)]
    Drift(DriftArgs),
    /// What each ECR repository holds, frees and costs; never writes.
    ///
    /// What every ECR repository of the account holds, what its lifecycle policies will reclaim,
    /// and an estimated monthly cost; with --since, how it grew.
    #[command(display_order = 9)]
    Usage {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Earlier `usage --format json` reports (files, or directories of them) to measure
        /// growth against; with several, the Markdown charts the total over time.
        #[arg(long, value_name = "FILE_OR_DIR", num_args = 1..)]
        since: Vec<PathBuf>,
        #[command(flatten)]
        shown: Shown,
    },
    /// What the last nights cost; never writes.
    ///
    /// The runner's builds at CodeBuild's rates (from the Price List, confirmed against Cost
    /// Explorer when it can be), and the registry's and the compiler cache's storage, per UTC day.
    #[command(display_order = 10)]
    Cost {
        /// How many UTC days, today included.
        #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=90))]
        days: u32,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Read every page of Cost Explorer's answer (each request costs $0.01); without it, at
        /// most one request is made.
        #[arg(long)]
        verify: bool,
    },
    /// Break the apply lock of an apply that is gone, saying whose it was.
    #[command(display_order = 14)]
    Unlock {
        /// Break it even when its process still runs on this host.
        #[arg(long)]
        force: bool,
    },
    /// (CI) Fetch a pull request's desired.toml and bake file, as data.
    ///
    /// Reads a pull request's desired.toml, and the bake file it names, from its head COMMIT of
    /// HEAD_REPOSITORY through GitHub's contents API, as data (never checked out, never run),
    /// into DIR: what the trusted pull-request workflow checks and plans. Prints
    /// `changed=true` or `changed=false` (for $GITHUB_OUTPUT): whether they differ from the
    /// default branch's (given with --base). The token is GITHUB_TOKEN or GH_TOKEN (contents,
    /// read). No AWS call.
    #[command(display_order = 15)]
    Head {
        /// The pull request's head commit, as the `workflow_run` event gives it.
        #[arg(long, value_name = "COMMIT")]
        head_sha: String,
        /// The repository the head commit is in, `owner/name` (a fork's, or this one).
        #[arg(long, value_name = "OWNER/NAME")]
        head_repository: String,
        /// Where to write them: a directory that is empty or not there yet.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The default branch's desired.toml, to tell whether the pull request changes it or its
        /// bake file.
        #[arg(long, value_name = "FILE")]
        base: Option<PathBuf>,
    },
    /// (CI) Keep one plan comment on a pull request, and its commit status.
    ///
    /// Keeps one comment with a plan on the open pull request whose head is COMMIT of
    /// HEAD_REPOSITORY, and sets the commit status `reconcile plan` on that commit: for the
    /// trusted workflow that plans pull requests (forks' included). The repository is
    /// --repository, else $GITHUB_REPOSITORY; the token GITHUB_TOKEN or GH_TOKEN (pull requests
    /// and statuses, write). No AWS call.
    #[command(display_order = 16)]
    Comment(CommentArgs),
    /// Print the `gh variable set` lines that wire GitHub to the account.
    #[command(display_order = 11)]
    Outputs {
        #[arg(long, value_enum, default_value_t = OutputsFormat::Text)]
        format: OutputsFormat,
    },
    /// Declare in desired.toml the repositories the bake file names.
    ///
    /// Writes the ECR repositories the bake file names and desired.toml lacks into desired.toml,
    /// as their siblings are declared, and nothing else. No AWS call.
    #[command(display_order = 6)]
    Declare {
        #[command(flatten)]
        bake: Bake,
        /// Change nothing: print the diff that would be written, and exit 2 if there is one.
        #[arg(long)]
        check: bool,
        /// This account's id, when the bake file names more than one account's registry.
        #[arg(long, value_name = "ID")]
        account: Option<String>,
    },
    /// Take over what exists (import), or write desired.toml from the account.
    ///
    /// Lists in desired.toml's `import` every declared resource that exists without this
    /// deployment's mark (an account a setup script or a person made), for the next plan to show
    /// as imports and apply to take over; and takes the imports already done off it. With
    /// `--generate`, first writes into desired.toml what the account holds and it does not
    /// declare (every repository, bucket and CodeBuild project, and the roles they run as; or
    /// what the patterns name), as it is, and proves the result: its plan shows only imports.
    /// Reads the account, never writes to it.
    #[command(display_order = 5)]
    Import {
        /// Change nothing: print the diff that would be written, and exit 2 if there is one.
        #[arg(long)]
        check: bool,
        /// Also declare what the account holds and desired.toml does not, as it is.
        #[arg(long)]
        generate: bool,
        /// With --generate: only the resources whose AWS names match (`*` matches any run of
        /// characters), and the roles their projects run as.
        #[arg(value_name = "PATTERN", requires = "generate")]
        patterns: Vec<String>,
    },
    /// Print an IAM policy derived from desired.toml.
    ///
    /// As apply derives it: a CI role's, or the runner's role's inline policy or permissions
    /// boundary.
    #[command(display_order = 13)]
    Policy {
        /// `plan` (the plan role's: only what reconcile manages), `read-only` (the drift role's),
        /// `apply` (the apply role's), `administrator` (what apply and destroy need with no CI
        /// role's limits: a sandbox's), `runner` (the runner's role's inline policy) or
        /// `boundary` (its permissions boundary).
        #[arg(value_enum)]
        role: PolicyRole,
        /// Which role under `[iam.roles]`, for `runner` and `boundary`, when there are several.
        #[arg(long = "role", value_name = "KEY")]
        key: Option<String>,
        /// The account id to write into the ARNs, instead of asking STS whose the credentials
        /// are (then no AWS call is made).
        #[arg(long, value_name = "ID")]
        account: Option<String>,
    },
    /// What a finding means, why it matters and what to do.
    ///
    /// Every finding a plan can carry has a stable code (W601, D103, ...); this prints its entry
    /// of docs/reference/findings.md, with an example. Without a code, the list of every one.
    #[command(display_order = 12)]
    Explain {
        /// The finding's code, such as W601.
        #[arg(value_name = "CODE")]
        code: Option<String>,
    },
    /// Print the JSON Schema of desired.toml, for editors.
    #[command(display_order = 17)]
    Schema,
    /// Print a shell completion script.
    #[command(display_order = 18)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man pages (roff): reconcile's, then each subcommand's.
    #[command(display_order = 19)]
    Man {
        /// Write them to this directory instead, one file each (reconcile.1, reconcile-plan.1,
        /// ...), as a release archive ships them.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Which CI role's policy `reconcile policy` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyRole {
    Plan,
    ReadOnly,
    Apply,
    /// The put-back role's (`[ci] put_back_role`): the drift check's reads, the apply lock, and
    /// putting back the kinds `[drift] put_back` names, on this deployment's resources only.
    PutBack,
    /// An administrator's: everything apply and destroy do on what desired.toml declares, IAM
    /// included (a sandbox role's, least privilege).
    Administrator,
    Runner,
    Boundary,
}

/// How far back drift attribution looks in CloudTrail.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct SinceDays {
    /// Days of CloudTrail's event history to look back for who changed what (it keeps 90).
    #[arg(long, value_name = "DAYS", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=90))]
    pub since_days: u32,
}

/// The bake cross-check.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Bake {
    /// The nightly's bake file (the JSON that bake prints, or its HCL): every ECR repository
    /// of this account it names must be declared. Overrides `bake` in desired.toml. Its variables
    /// resolve as bake resolves them: the environment first, then the default.
    #[arg(long, value_name = "FILE")]
    pub bake: Option<PathBuf>,
}

/// Who reads what a report prints.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Shown {
    /// Name only what a public page may: what desired.toml declares and the nightly's bake file
    /// names; every other repository, role and variable of the account is counted. Implied in a
    /// GitHub Actions job (GITHUB_ACTIONS=true): its log and summary are public in a public
    /// repository.
    #[arg(long)]
    pub public: bool,
    /// Name everything these credentials read, in a GitHub Actions job too (a private
    /// repository's, or a maintainer's run).
    #[arg(long, conflicts_with = "public")]
    pub private: bool,
}

impl Shown {
    /// Whether the output is public: said, or a GitHub Actions job's unless `--private`.
    pub fn public(self) -> bool {
        public_output(self.public, self.private)
    }
}

/// Whether what a run prints is public: said (`public`), or a GitHub Actions job's (whose log,
/// summary and artifacts anyone can read in a public repository, whatever event started it)
/// unless `private` says otherwise.
pub fn public_output(public: bool, private: bool) -> bool {
    public || (!private && std::env::var("GITHUB_ACTIONS").is_ok_and(|value| value == "true"))
}

/// Deleting what desired.toml no longer declares.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct Prune {
    /// Also plan deleting each ECR repository desired.toml no longer declares that carries this
    /// deployment's mark (never one made by hand, nor another deployment's); apply needs
    /// --allow-delete for it, and --force-delete-images if it holds images.
    #[arg(long)]
    pub prune: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    /// For a pull-request comment; also written to $GITHUB_STEP_SUMMARY when that is set.
    Markdown,
}

/// A plan's formats: the others, and Terraform's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    Text,
    Json,
    /// For a pull-request comment; also written to $GITHUB_STEP_SUMMARY when that is set.
    Markdown,
    /// Terraform's JSON plan format, one line, in the AWS and GitHub providers' types.
    TerraformJson,
}

impl PlanFormat {
    /// The common format, or `None` for Terraform's.
    pub fn common(self) -> Option<Format> {
        match self {
            PlanFormat::Text => Some(Format::Text),
            PlanFormat::Json => Some(Format::Json),
            PlanFormat::Markdown => Some(Format::Markdown),
            PlanFormat::TerraformJson => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputsFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

// `reconcile plan`'s arguments: its help is its variant's doc comment, which clap reads there.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// `terraform-json`: Terraform's JSON plan format (`terraform show -json`), in the AWS
    /// and GitHub providers' types, for checkov, OPA/conftest and terraform-compliance.
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
    /// Exit 0 when there are no changes, 1 on error, 2 when there are changes.
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Also save the plan for `apply <file>`, with fingerprints of what it was made against.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Say who last changed each resource that differs, from CloudTrail (as drift does).
    #[arg(long)]
    pub attribute: bool,
    /// A plan shown in public, for a pull request: it shows only what reconcile manages (a
    /// resource carrying the mark of `--base`'s deployment, or one `--base` declares), counts
    /// what desired.toml does not declare instead of naming it, and exits 3 on any error
    /// finding or change the apply role refuses. Implied in a GitHub Actions job
    /// (GITHUB_ACTIONS=true), whatever its event: its log is public in a public repository.
    #[arg(long)]
    pub public: bool,
    /// Show everything these credentials read, in a GitHub Actions job too (a private
    /// repository's).
    #[arg(long, conflicts_with_all = ["public", "base"])]
    pub private: bool,
    /// The default branch's desired.toml, for a public plan: what it declares is reconcile's
    /// whatever its tags (never what the pull request's desired.toml declares).
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    /// desired.toml is the default branch just after a merge onto --base (the apply workflow's
    /// plan, given main before the push): a resource it newly declares that exists, carries the
    /// mark and would change is W602 (a mark proves nothing of who wrote it), never taken over.
    #[arg(long, requires = "base")]
    pub merged: bool,
    /// Plan `reconcile destroy`: deleting every resource desired.toml declares that carries
    /// this deployment's mark; with --out, a plan only `destroy PLAN_FILE` carries out.
    #[arg(long, conflicts_with_all = ["prune", "public", "base", "merged", "attribute"])]
    pub destroy: bool,
    #[command(flatten)]
    pub since: SinceDays,
    #[command(flatten)]
    pub bake: Bake,
    #[command(flatten)]
    pub prune: Prune,
}

// `reconcile destroy`'s arguments: its help is its variant's doc comment, which clap reads there.
#[derive(Debug, clap::Args)]
pub struct DestroyArgs {
    /// A plan saved by `plan --destroy --out`: carry out exactly it, if nothing moved since.
    #[arg(value_name = "PLAN_FILE")]
    pub plan_file: Option<PathBuf>,
    /// Destroy without asking. Required when not run from a terminal (a saved plan was
    /// approved when it was reviewed).
    #[arg(long)]
    pub auto_approve: bool,
    /// The format of the closing report; with json or markdown, progress goes to stderr.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Delete a repository that still holds images, with them; without it, such a destroy is
    /// refused (exit 3).
    #[arg(long)]
    pub force_delete_images: bool,
    /// Empty a bucket that still holds objects (every version) and delete it; without it,
    /// such a destroy is refused (exit 3). The plan says how many objects and bytes.
    #[arg(long)]
    pub empty_buckets: bool,
    /// How long to wait for another apply's lock before giving up, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub lock_timeout: u64,
}

// `reconcile apply`'s arguments: its help is its variant's doc comment, which clap reads there.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// A plan saved by `plan --out`: apply exactly its changes, if nothing moved since.
    #[arg(value_name = "PLAN_FILE")]
    pub plan_file: Option<PathBuf>,
    /// Apply without asking. Required when not run from a terminal (a saved plan was approved
    /// when it was reviewed, so it needs no approval).
    #[arg(long)]
    pub auto_approve: bool,
    /// Allow the plan's deletes and replacements; without it, such a plan is refused (exit 3).
    #[arg(long)]
    pub allow_delete: bool,
    /// The format of the closing report; with json or markdown, progress goes to stderr.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Allow deleting a pruned repository that still holds images (with --prune and
    /// --allow-delete); without it, such a delete is refused (exit 3).
    #[arg(long)]
    pub force_delete_images: bool,
    /// How long to wait for another apply's lock before giving up, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub lock_timeout: u64,
    #[command(flatten)]
    pub shown: Shown,
    #[command(flatten)]
    pub bake: Bake,
    #[command(flatten)]
    pub prune: Prune,
}

// `reconcile drift`'s arguments: its help is its variant's doc comment, which clap reads there.
#[derive(Debug, clap::Args)]
pub struct DriftArgs {
    /// terraform-json: what `terraform plan -refresh-only -json` would say (the drift in
    /// `resource_drift`, no change planned).
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    pub format: PlanFormat,
    /// Keep the one GitHub issue labelled LABEL (opened by this token) true to the drift:
    /// opened on drift, its body replaced when the drift changes (a comment says what
    /// changed), closed when the account is clean again, reopened when it drifts again. In
    /// the repository $GITHUB_REPOSITORY (else `[github]`'s), with the token in
    /// $RECONCILE_ISSUE_TOKEN (else GITHUB_TOKEN or GH_TOKEN): Issues read and write.
    #[arg(long, value_name = "LABEL")]
    pub issue: Option<String>,
    /// Put back, in this run, the drift of the kinds desired.toml's `[drift] put_back` names (a
    /// lifecycle policy, a webhook's filter: a setting of a resource that exists), under the
    /// apply lock, then check again: what is left is the drift reported. Nothing else is ever
    /// changed. Nothing at all when $RECONCILE_PUT_BACK is `off`. Meant for the put-back role
    /// (`[ci] put_back_role`), which may write nothing else.
    #[arg(long)]
    pub put_back: bool,
    #[command(flatten)]
    pub shown: Shown,
    #[command(flatten)]
    pub since: SinceDays,
    #[command(flatten)]
    pub bake: Bake,
    #[command(flatten)]
    pub prune: Prune,
}

// `reconcile comment`'s arguments: its help is its variant's doc comment, which clap reads there.
#[derive(Debug, clap::Args)]
pub struct CommentArgs {
    /// The pull request's head commit, as the `workflow_run` event gives it (never a number
    /// the pull request's own artifact claims).
    #[arg(long, value_name = "COMMIT")]
    pub head_sha: String,
    /// The repository the head commit is in, `owner/name` (a fork's, or this one).
    #[arg(long, value_name = "OWNER/NAME")]
    pub head_repository: String,
    /// The plan's Markdown (`plan --format markdown`); missing or empty when the plan failed.
    #[arg(long, value_name = "FILE", required_unless_present = "unchanged")]
    pub body: Option<PathBuf>,
    /// The plan's exit code, with detailed exit codes: 0 no changes, 2 changes, 3 refused,
    /// anything else failed.
    #[arg(long, value_name = "CODE", required_unless_present = "unchanged")]
    pub plan_exit_code: Option<u8>,
    /// The conclusion of the pull request's own check run (validate, declare --check), as the
    /// `workflow_run` event gives it: `success`, `failure`, ...
    #[arg(long, value_name = "CONCLUSION", required_unless_present = "unchanged")]
    pub check_conclusion: Option<String>,
    /// The repository the pull request is in (default: $GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repository: Option<String>,
    /// checkov's JSON report (`--output json`) on the plan's Terraform view: its failed
    /// checks go in the comment, after the plan; the status does not depend on them. An empty
    /// or missing file is a gate that did not report, and the comment says so.
    #[arg(long, value_name = "FILE", conflicts_with = "unchanged")]
    pub checks: Option<PathBuf>,
    /// The pull request changes no file reconcile reads (`head` said `changed=false`): set
    /// the status `success` (no reconcile files changed) and leave any comment as it is.
    #[arg(long, conflicts_with_all = ["body", "plan_exit_code", "check_conclusion"])]
    pub unchanged: bool,
}
