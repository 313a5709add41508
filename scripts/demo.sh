#!/usr/bin/env bash
# The main job on a local default: start the AWS emulator (and the GitHub stand-in), load them
# with the account as the setup script left it on 2026-11-11 (nothing carries reconcile's mark),
# with what it stored and built, then take it over as a maintainer adopting reconcile does:
# `reconcile plan` (refused: none of it is reconcile's yet), `reconcile import` (lists it in
# desired.toml's `import`, shown as a diff), `reconcile plan` (30 imports and their changes),
# `reconcile apply --auto-approve`, `reconcile import` (takes the done imports off the list),
# `reconcile plan` (No changes.), and what the registry holds (`usage`) and the nights cost (`cost`).
# It works on a copy of desired.toml and the bake file, so the repository's stay as they are.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --locked --quiet --bin reconcile
reconcile="$root/target/debug/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh
# shellcheck source=lib/github.sh
source scripts/lib/github.sh

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp desired.toml rocm-bake.hcl "$work/"

echo "==> emulator at $endpoint, loaded with the account as the setup script left it on 2026-11-11"
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
# A maintainer's terminal, even when the demo itself runs in a CI job (where every output of
# reconcile is public and counted unless --private).
unset GITHUB_ACTIONS
cd "$work"
echo
echo "==> reconcile plan   (the first plan: nothing in the account is reconcile's yet)"
status=0
"$reconcile" plan || status=$?
echo "(reconcile plan exited $status: refused until the account is imported)"
echo
echo "==> reconcile import --check   (what it would write into desired.toml, for review)"
"$reconcile" import --check || true
echo
echo "==> reconcile import"
"$reconcile" import
echo
echo "==> reconcile plan"
"$reconcile" plan
echo
echo "==> reconcile apply --auto-approve"
"$reconcile" apply --auto-approve
echo
echo "==> reconcile import   (the imports are done: the list comes off again)"
"$reconcile" import
echo
echo "==> reconcile plan --detailed-exitcode"
"$reconcile" plan --detailed-exitcode
echo
echo "==> reconcile usage"
"$reconcile" usage
echo
echo "==> reconcile cost"
"$reconcile" cost
