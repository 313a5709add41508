#!/usr/bin/env bash
# Makes the Python environment of the policy tools the terraform-json contract tests run
# (checkov, terraform-compliance; pinned) at target/policy-venv, or leaves it alone when it
# already matches tests/policy/requirements.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/venv.sh
source "$root/scripts/lib/venv.sh"
make_venv "$root/target/policy-venv" "$root/tests/policy/requirements.txt" "policy tools"
