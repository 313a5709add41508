#!/usr/bin/env bash
# The main job on a local default: start the AWS emulator, load it with the account as it stood
# on 2026-11-11, then `reconcile plan`, `reconcile apply --auto-approve`, `reconcile plan`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --locked --quiet --bin reconcile
reconcile="$root/target/debug/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh

echo "==> emulator at $endpoint, loaded with the account as it stood on 2026-11-11"
"$python" tests/emulator/seed.py --desired desired.toml
echo
echo "==> reconcile plan"
"$reconcile" plan
echo
echo "==> reconcile apply --auto-approve"
"$reconcile" apply --auto-approve
echo
echo "==> reconcile plan --detailed-exitcode"
"$reconcile" plan --detailed-exitcode
