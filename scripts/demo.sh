#!/usr/bin/env bash
# The main job on a local default: start the AWS emulator (and the GitHub stand-in), load them
# with the account as it stood on 2026-11-11, with what it stored and built, then
# `reconcile plan`, `reconcile apply --auto-approve`, `reconcile plan`, and what the registry
# holds (`usage`) and the nights cost (`cost`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --locked --quiet --bin reconcile
reconcile="$root/target/debug/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh
# shellcheck source=lib/github.sh
source scripts/lib/github.sh

echo "==> emulator at $endpoint, loaded with the account as it stood on 2026-11-11"
"$python" tests/emulator/seed.py --desired desired.toml --history
# The repository's hook to CodeBuild, as CodeBuild made it with the webhook.
curl --silent --fail --output /dev/null -H "Authorization: Bearer $GITHUB_TOKEN" -H "Content-Type: application/json" \
  --data '{"name":"web","active":true,"events":["workflow_job"],"config":{"url":"https://codebuild.us-east-1.amazonaws.com/webhooks?t=demo&v=1","content_type":"json"}}' \
  "$github/repos/ROCm/rocm-bake/hooks"
echo "==> GitHub stand-in at $github, ROCm/rocm-bake as a repository made before 2023 left it"
# The bake file desired.toml names points at the account's registry, as the nightly sets it: the
# plan checks that every repository it pushes to is declared.
account="$("$python" -c 'import boto3; print(boto3.client("sts", region_name="us-east-1").get_caller_identity()["Account"])')"
export ECR_REGISTRY="$account.dkr.ecr.us-east-1.amazonaws.com"
echo
echo "==> reconcile plan"
"$reconcile" plan
echo
echo "==> reconcile apply --auto-approve"
"$reconcile" apply --auto-approve
echo
echo "==> reconcile plan --detailed-exitcode"
"$reconcile" plan --detailed-exitcode
echo
echo "==> reconcile usage"
"$reconcile" usage
echo
echo "==> reconcile cost"
"$reconcile" cost
