#!/usr/bin/env bash
# The test command: installs what the tests need (the emulator's virtualenv) and runs every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/emulator-venv.sh
cargo test --workspace --locked "$@"
# The workspace's lints (Cargo.toml, [workspace.lints]) are part of the bar, not advice.
cargo clippy --workspace --all-targets --locked -- -D warnings
