//! Shipping: the archive the release workflow builds (scripts/package.sh, run here on the test
//! build), served as a release page serves it, installed by scripts/install.sh, which installs
//! nothing it cannot verify.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use reconcile_test_support::files::FileServer;
use reconcile_test_support::workspace_root;

/// The test build, packaged once for every test here, with its SHA256SUMS.
struct Release {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    target: String,
    version: String,
}

impl Release {
    fn archive_name(&self) -> String {
        format!("reconcile-{}.tar.gz", self.target)
    }

    /// A copy of the release's files, to serve as they are or altered.
    fn copy(&self) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        for name in [self.archive_name(), "SHA256SUMS".to_owned()] {
            std::fs::copy(self.dir.join(&name), dir.path().join(&name)).unwrap();
        }
        let path = dir.path().to_owned();
        (dir, path)
    }
}

fn version_line() -> String {
    let output = crate::support::command(None).arg("--version").output().unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn script(name: &str) -> Command {
    Command::new(workspace_root().join("scripts").join(name))
}

fn check(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn release() -> &'static Release {
    static RELEASE: OnceLock<Release> = OnceLock::new();
    RELEASE.get_or_init(|| {
        // `reconcile 0.1.0 (commit abc, x86_64-unknown-linux-gnu)`
        let line = version_line();
        let (head, target) = line.trim_end_matches(')').rsplit_once(", ").unwrap();
        let version = head.split_whitespace().nth(1).unwrap().to_owned();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_owned();
        let archive = script("package.sh")
            .args(["archive", env!("CARGO_BIN_EXE_reconcile"), target])
            .arg(&path)
            .output()
            .unwrap();
        check(&archive, "package.sh archive");
        check(&script("package.sh").arg("sums").arg(&path).output().unwrap(), "package.sh sums");
        Release { _dir: dir, dir: path, target: target.to_owned(), version }
    })
}

/// Runs scripts/install.sh with `env` (and PATH, HOME) and nothing else of this environment.
fn install(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = script("install.sh");
    command.args(args).env_clear().env("PATH", std::env::var_os("PATH").unwrap()).env("HOME", "/nonexistent");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn refusal(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "refused: {}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
}

fn tar_listing(archive: &Path) -> Vec<String> {
    let listing = Command::new("tar").arg("-tzf").arg(archive).output().unwrap();
    check(&listing, "tar -tzf").lines().map(str::to_owned).collect()
}

#[test]
fn the_release_archive_installs_through_its_sums_and_names_its_commit() {
    let release = release();
    let name = format!("reconcile-{}", release.target);
    let listing = tar_listing(&release.dir.join(release.archive_name()));
    for file in [
        "reconcile",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "completions/reconcile.bash",
        "completions/_reconcile",
        "completions/reconcile.fish",
        "man/man1/reconcile.1",
        "man/man1/reconcile-plan.1",
        "man/man1/reconcile-apply.1",
    ] {
        assert!(listing.contains(&format!("{name}/{file}")), "{file} in the archive: {listing:?}");
    }
    let sums = std::fs::read_to_string(release.dir.join("SHA256SUMS")).unwrap();
    assert_eq!(sums.lines().count(), 1, "{sums}");
    assert!(sums.ends_with(&format!("  {}\n", release.archive_name())), "{sums}");

    let server = FileServer::start(&release.dir);
    let bin = tempfile::tempdir().unwrap();
    let into = bin.path().join("bin");
    let installed = install(
        &["--version", &release.version, "--dir", into.to_str().unwrap()],
        &[("RECONCILE_DOWNLOAD_URL", server.endpoint())],
    );
    let said = check(&installed, "install.sh");
    assert_eq!(server.requests(), ["/SHA256SUMS".to_owned(), format!("/{}", release.archive_name())]);

    // The installed binary is the one packaged, and says which commit it was built from.
    let version = Command::new(into.join("reconcile")).arg("--version").output().unwrap();
    let version = check(&version, "the installed reconcile --version");
    assert_eq!(version.trim(), version_line());
    assert_eq!(said.trim(), format!("installed {} at {}", version_line(), into.join("reconcile").display()));
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(workspace_root()).output();
    let head = check(&head.unwrap(), "git rev-parse");
    assert!(version.contains(&format!("(commit {}", head.trim())), "{version} names HEAD, {head}");

    // `cargo binstall` fetches the same archive, by the template in the CLI's manifest.
    let manifest: toml::Table =
        std::fs::read_to_string(workspace_root().join("crates/cli/Cargo.toml")).unwrap().parse().unwrap();
    let binstall = &manifest["package"]["metadata"]["binstall"];
    let fill = |template: &str| {
        template
            .replace("{ repo }", "https://github.com/ROCm/reconcile")
            .replace("{ version }", &release.version)
            .replace("{ target }", &release.target)
            .replace("{ bin }", "reconcile")
            .replace("{ binary-ext }", "")
    };
    assert_eq!(
        fill(binstall["pkg-url"].as_str().unwrap()),
        format!("https://github.com/ROCm/reconcile/releases/download/v{}/{}", release.version, release.archive_name())
    );
    assert!(listing.contains(&fill(binstall["bin-dir"].as_str().unwrap())));
}

#[test]
fn an_archive_altered_by_one_byte_is_refused_and_nothing_is_installed() {
    let release = release();
    let (_served, dir) = release.copy();
    let archive = dir.join(release.archive_name());
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&archive, bytes).unwrap();
    let server = FileServer::start(&dir);
    let bin = tempfile::tempdir().unwrap();

    // Into a fresh directory: not even the directory is made.
    let fresh = bin.path().join("fresh");
    let refused = install(
        &["--version", &release.version, "--dir", fresh.to_str().unwrap()],
        &[("RECONCILE_DOWNLOAD_URL", server.endpoint())],
    );
    let stderr = refusal(&refused);
    assert!(
        stderr.starts_with(&format!("install.sh: {} does not match SHA256SUMS (expected ", release.archive_name())),
        "{stderr}"
    );
    assert!(stderr.trim_end().ends_with("; nothing installed"), "{stderr}");
    assert!(!fresh.exists());

    // Over an earlier install: it stays as it was.
    let earlier = bin.path().join("earlier");
    std::fs::create_dir(&earlier).unwrap();
    std::fs::write(earlier.join("reconcile"), "the earlier install").unwrap();
    let refused = install(
        &["--version", &release.version, "--dir", earlier.to_str().unwrap()],
        &[("RECONCILE_DOWNLOAD_URL", server.endpoint())],
    );
    refusal(&refused);
    assert_eq!(std::fs::read_to_string(earlier.join("reconcile")).unwrap(), "the earlier install");
    assert_eq!(std::fs::read_dir(&earlier).unwrap().count(), 1, "no half-written file left beside it");
}

#[test]
fn install_refuses_what_it_cannot_verify_or_find() {
    let release = release();
    let bin = tempfile::tempdir().unwrap();
    let into = bin.path().join("bin");
    let into = into.to_str().unwrap();

    // SHA256SUMS without a line for this archive.
    let (_served, dir) = release.copy();
    std::fs::write(dir.join("SHA256SUMS"), "0000  reconcile-some-other-target.tar.gz\n").unwrap();
    let server = FileServer::start(&dir);
    let refused =
        install(&["--version", &release.version, "--dir", into], &[("RECONCILE_DOWNLOAD_URL", server.endpoint())]);
    assert_eq!(
        refusal(&refused).trim(),
        format!("install.sh: SHA256SUMS has no sum for {}; nothing installed", release.archive_name())
    );

    // A release with no files for this target.
    let empty = tempfile::tempdir().unwrap();
    let server = FileServer::start(empty.path());
    let refused =
        install(&["--version", &release.version, "--dir", into], &[("RECONCILE_DOWNLOAD_URL", server.endpoint())]);
    assert!(refusal(&refused).contains("could not download"));

    // Plain http anywhere but loopback, and a version that is not one, refused before a download.
    let refused = install(
        &["--version", &release.version, "--dir", into],
        &[("RECONCILE_DOWNLOAD_URL", "http://mirror.example.com/reconcile")],
    );
    assert!(refusal(&refused).contains("refusing http://mirror.example.com/reconcile"));
    let refused = install(&["--version", "1.0.0/../../evil", "--dir", into], &[]);
    assert!(refusal(&refused).contains("is not a version"));
    assert!(!Path::new(into).exists());

    // Nothing is downloaded from where the version and target were only resolved.
    let resolved = check(&install(&["--version", "v1.2.3", "--target", "aarch64-apple-darwin", "--resolve"], &[]), "");
    assert_eq!(resolved, "version=1.2.3\ntarget=aarch64-apple-darwin\n");
}

/// `--verify-attestation` runs `gh attestation verify` on the downloaded archive, for the
/// repository the release must come from, and installs nothing when it fails.
#[test]
fn an_attestation_that_does_not_verify_installs_nothing() {
    let release = release();
    let (_served, dir) = release.copy();
    let server = FileServer::start(&dir);
    let tools = tempfile::tempdir().unwrap();
    let gh = tools.path().join("gh");
    let called = tools.path().join("gh-was-called-with");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\n[ \"$GH_ANSWER\" = ok ] && exit 0\necho 'no matching attestations found' >&2\nexit 1\n",
            called.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", tools.path().display(), std::env::var("PATH").unwrap());
    let bin = tempfile::tempdir().unwrap();
    let into = bin.path().join("bin");
    let run = |answer: &str| {
        let mut command = script("install.sh");
        command
            .args(["--version", &release.version, "--dir", into.to_str().unwrap(), "--verify-attestation"])
            .env_clear()
            .env("PATH", &path)
            .env("GH_ANSWER", answer)
            .env("RECONCILE_DOWNLOAD_URL", server.endpoint());
        command.output().unwrap()
    };

    let refused = run("no");
    assert_eq!(
        refusal(&refused).trim(),
        format!(
            "install.sh: the attestation of {} did not verify for ROCm/reconcile (no matching attestations found); \
             nothing installed",
            release.archive_name()
        )
    );
    assert!(!into.exists());
    let args = std::fs::read_to_string(&called).unwrap();
    assert!(args.starts_with("attestation verify /"), "{args}");
    assert!(args.trim_end().ends_with(&format!("/{} --repo ROCm/reconcile", release.archive_name())), "{args}");

    check(&run("ok"), "install.sh --verify-attestation");
    assert!(into.join("reconcile").exists());
}

/// Runs the setup action (tests/action/run.py plays the runner) against the release served at
/// `endpoint`, with `inputs` and the cache answering `cache_hit`.
fn setup_action(work: &Path, endpoint: &str, inputs: serde_json::Value, cache_hit: &str) -> serde_json::Value {
    let root = workspace_root();
    let output = Command::new(reconcile_test_support::emulator_python())
        .arg(root.join("tests/action/run.py"))
        .arg(&root)
        .arg(work)
        .arg(inputs.to_string())
        .arg(cache_hit)
        .env("RECONCILE_DOWNLOAD_URL", endpoint)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stdout}{}", String::from_utf8_lossy(&output.stderr)));
    serde_json::json!({ "succeeded": output.status.success(), "report": report })
}

#[test]
fn the_setup_action_installs_a_verified_release_caches_it_and_puts_it_on_path() {
    let release = release();
    let (_served, dir) = release.copy();
    let server = FileServer::start(&dir);
    let work = tempfile::tempdir().unwrap();
    let installed_in = work.path().join("tool-cache/reconcile").join(&release.version);
    let key = format!("reconcile-{}-{}", release.version, release.target);

    // No version given: the release of the commit the action is pinned to.
    let first = setup_action(work.path(), server.endpoint(), serde_json::json!({}), "");
    assert_eq!(first["succeeded"], true, "{first:#}");
    let report = &first["report"];
    assert_eq!(report["outputs"]["version"], version_line());
    assert_eq!(report["path"], serde_json::json!([installed_in.to_str().unwrap()]));
    assert!(installed_in.join("reconcile").exists());
    let uses: Vec<(&str, &str, &str)> = report["uses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["uses"].as_str().unwrap(), u["with"]["key"].as_str().unwrap(), u["with"]["path"].as_str().unwrap()))
        .collect();
    let path = installed_in.to_str().unwrap();
    assert!(uses[0].0.starts_with("actions/cache/restore@") && uses[0].1 == key && uses[0].2 == path, "{uses:?}");
    assert!(uses[1].0.starts_with("actions/cache/save@") && uses[1].1 == key && uses[1].2 == path, "{uses:?}");
    assert_eq!(server.requests().len(), 2);

    // A cache hit: nothing downloaded, nothing saved, the same binary on PATH.
    let again = setup_action(work.path(), server.endpoint(), serde_json::json!({ "version": release.version }), "true");
    assert_eq!(again["succeeded"], true, "{again:#}");
    assert_eq!(again["report"]["outputs"]["version"], version_line());
    assert_eq!(again["report"]["uses"].as_array().unwrap().len(), 1, "only the restore");
    assert_eq!(server.requests().len(), 2, "no download on a cache hit");

    // An altered archive fails the action at the download, before anything is on PATH or saved.
    let mut bytes = std::fs::read(dir.join(release.archive_name())).unwrap();
    bytes[100] ^= 0x80;
    std::fs::write(dir.join(release.archive_name()), bytes).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let refused = setup_action(fresh.path(), server.endpoint(), serde_json::json!({}), "");
    assert_eq!(refused["succeeded"], false);
    assert_eq!(refused["report"]["failed"], "Download and verify");
    assert!(refused["report"]["stderr"].as_str().unwrap().contains("does not match SHA256SUMS"), "{refused:#}");
    assert!(!fresh.path().join("path").exists());
}

/// The installer as a hostile environment would drive it, every case against loopback file
/// servers only: a download URL that must be refused is refused before any connection (the
/// server it would reach sees no request), a redirect off https is not followed, values that
/// would write a second line of output are refused, and a link planted where the binary goes is
/// replaced, not written through.
#[test]
fn the_installer_cannot_be_sent_elsewhere_or_made_to_write_elsewhere() {
    let release = release();
    let (_served, dir) = release.copy();
    let server = FileServer::start(&dir);
    let port = server.endpoint().rsplit(':').next().unwrap().to_owned();
    let bin = tempfile::tempdir().unwrap();
    let into = bin.path().join("bin");
    let into = into.to_str().unwrap();
    let version = release.version.as_str();

    // URLs that must be refused before a connection: a user name that makes the host another
    // (curl would connect to what follows `@`), loopback not written as a literal address, a
    // scheme that is neither, a control character.
    for (url, why) in [
        (format!("http://127.0.0.1:1@127.0.0.1:{port}"), "it names a user"),
        (format!("https://user:secret@127.0.0.1:{port}"), "it names a user"),
        (format!("http://localhost:{port}"), "plain http goes to loopback only"),
        (format!("http://127.0.0.1.nip.io:{port}"), "plain http goes to loopback only"),
        (format!("ftp://127.0.0.1:{port}"), "the scheme is ftp"),
        (format!("http://127.0.0.1:{port}/\nx"), "it holds a control character"),
    ] {
        let refused = install(&["--version", version, "--dir", into], &[("RECONCILE_DOWNLOAD_URL", &url)]);
        let said = refusal(&refused);
        assert!(said.contains(why), "{url:?}: {said}");
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // A redirect from the loopback mirror to plain http (another loopback server holding the
    // same files) is not followed.
    let other = FileServer::start(&dir);
    let (_redirecting, redirecting) = release.copy();
    std::fs::remove_file(redirecting.join("SHA256SUMS")).unwrap();
    std::fs::write(redirecting.join("SHA256SUMS.redirect"), format!("{}/SHA256SUMS", other.endpoint())).unwrap();
    let mirror = FileServer::start(&redirecting);
    let refused = install(&["--version", version, "--dir", into], &[("RECONCILE_DOWNLOAD_URL", mirror.endpoint())]);
    assert!(refusal(&refused).contains("could not download"));
    assert_eq!(mirror.requests(), ["/SHA256SUMS"]);
    assert!(other.requests().is_empty(), "the redirect was followed: {:?}", other.requests());

    // Without curl (wget cannot be held to https redirects), nothing is downloaded at all.
    let tools = tempfile::tempdir().unwrap();
    for directory in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        for entry in std::fs::read_dir(&directory).into_iter().flatten().flatten() {
            let link = tools.path().join(entry.file_name());
            if entry.file_name() != "curl" && !link.exists() {
                let _ = std::os::unix::fs::symlink(entry.path(), link);
            }
        }
    }
    let without_curl = script("install.sh")
        .args(["--version", version, "--dir", into])
        .env_clear()
        .env("PATH", tools.path())
        .env("HOME", "/nonexistent")
        .env("RECONCILE_DOWNLOAD_URL", server.endpoint())
        .output()
        .unwrap();
    assert!(refusal(&without_curl).contains("downloads need curl"));
    assert!(server.requests().is_empty());

    // A version or target with a second line: refused whole, never a line of it.
    for args in [
        ["--version", "1.0.0\ndir=/tmp/elsewhere", "--resolve"],
        ["--target", "x86_64-unknown-linux-gnu\ndir=/tmp/elsewhere", "--resolve"],
    ] {
        let refused = install(&args, &[]);
        assert!(refused.stdout.is_empty(), "{}", String::from_utf8_lossy(&refused.stdout));
        let said = refusal(&refused);
        assert!(said.contains("is not a version") || said.contains("is not a target triple"), "{said}");
    }
    assert!(!Path::new(into).exists());

    // A link planted where the binary goes is replaced by the binary; what it pointed at is not
    // written, and nothing else is left in the directory.
    std::fs::create_dir_all(into).unwrap();
    let victim = bin.path().join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    std::os::unix::fs::symlink(&victim, Path::new(into).join("reconcile")).unwrap();
    let installed = install(&["--version", version, "--dir", into], &[("RECONCILE_DOWNLOAD_URL", server.endpoint())]);
    check(&installed, "install.sh over a planted link");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    let binary = Path::new(into).join("reconcile");
    assert!(std::fs::symlink_metadata(&binary).unwrap().file_type().is_file());
    let left: Vec<_> = std::fs::read_dir(into).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["reconcile"]);

    // The temporary copy's name cannot be known in advance: a link planted at the name the
    // installer once used (`.reconcile.<its pid>`, the pid learnt by starting the shell that
    // becomes it and planting before it goes on) is never written through.
    std::fs::remove_file(&binary).unwrap();
    let mut shell = Command::new("bash")
        .arg("-c")
        .arg("echo $$; read -r _; exec \"$0\" \"$@\"")
        .arg(workspace_root().join("scripts/install.sh"))
        .args(["--version", version, "--dir", into])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", "/nonexistent")
        .env("RECONCILE_DOWNLOAD_URL", server.endpoint())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pid = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(shell.stdout.as_mut().unwrap()), &mut pid).unwrap();
    std::os::unix::fs::symlink(&victim, Path::new(into).join(format!(".reconcile.{}", pid.trim()))).unwrap();
    std::io::Write::write_all(shell.stdin.as_mut().unwrap(), b"go\n").unwrap();
    let installed = shell.wait_with_output().unwrap();
    check(&installed, "install.sh with a link planted at its old temporary name");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    assert!(std::fs::symlink_metadata(&binary).unwrap().file_type().is_file());

    // The setup action, given a version with a line break, fails at its first step and sets no
    // output from it.
    let work = tempfile::tempdir().unwrap();
    let refused = setup_action(
        work.path(),
        server.endpoint(),
        serde_json::json!({ "version": format!("{version}\ndir=/tmp/elsewhere") }),
        "",
    );
    assert_eq!(refused["succeeded"], false, "{refused:#}");
    assert_eq!(refused["report"]["failed"], "Resolve the release");
}
