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
# shellcheck source=lib/build.sh
source scripts/lib/build.sh
build bin --bin reconcile
reconcile="$bin/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh
# shellcheck source=lib/github.sh
source scripts/lib/github.sh

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp desired.toml rocm-bake.hcl "$work/"

# `step EXIT WHY ARGS...`: runs `reconcile ARGS...`, which must exit EXIT; any other exit stops
# the demo there, saying which step and how it ended.
step() {
  local expected="$1" why="$2" status=0
  shift 2
  echo
  echo "==> reconcile $*${why:+   ($why)}"
  "$reconcile" "$@" || status=$?
  if [ "$status" -ne "$expected" ]; then
    echo "demo: \`reconcile $*\` exited $status, not $expected; stopping here" >&2
    exit 1
  fi
}
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
step 3 "the first plan: nothing in the account is reconcile's yet, so it is refused (exit 3)" plan
step 2 "what it would write into desired.toml, for review (exit 2: a difference)" import --check
step 0 "" import
step 0 "30 imports and their changes" plan
step 0 "an administrator's credentials, as the first apply needs" apply --auto-approve
step 0 "the imports are done: the list comes off again" import
step 0 "No changes." plan --detailed-exitcode
step 0 "what the registry holds, frees and costs" usage
step 0 "what the last nights cost" cost
echo
echo "demo: done; every step exited as expected"
