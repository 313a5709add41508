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
cargo test --workspace --locked "$@"
# The fuzz targets are not workspace members (cargo fuzz builds them with nightly): checking
# them here keeps them compiling against the crates they fuzz.
cargo check --manifest-path fuzz/Cargo.toml --bins --locked
# The workspace's lints (Cargo.toml, [workspace.lints]) are part of the bar, not advice.
cargo clippy --workspace --all-targets --locked -- -D warnings
