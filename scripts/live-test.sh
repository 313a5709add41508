#!/usr/bin/env bash
# The opt-in live acceptance suite (docs/live-testing.md): the user's path end to end against a
# sandbox AWS account, then destroy, leaving nothing. Reaches AWS through the standard chain
# (AWS_PROFILE, OIDC, ...); the credentials must be the account RECONCILE_LIVE_ACCOUNT names.
#
#   RECONCILE_LIVE_ACCOUNT=123456789012 AWS_REGION=us-west-2 scripts/live-test.sh
#   scripts/live-test.sh --skip-without-credentials     # exit 0, saying so, when it cannot run
#   scripts/live-test.sh sweep [--older-than-minutes N] [--delete]   # what interrupted runs left
#
# Without credentials or a sandbox account it says it did not run, and exits 1 unless given
# --skip-without-credentials. RECONCILE_LIVE_GITHUB_REPOSITORY (a repository CodeBuild's GitHub
# credential in the account reaches) adds the runner project and its webhook.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=lib/build.sh
source scripts/lib/build.sh
build bin --bin reconcile --bin reconcile-live
region="${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
case "${1:-}" in
  sweep) shift; exec "$bin/reconcile-live" --region "$region" sweep "$@" ;;
  *) exec "$bin/reconcile-live" --region "$region" run "$@" ;;
esac
