#!/usr/bin/env bash
# Benchmark of `reconcile plan` (and of an apply of 27 lifecycle policies): wall time, requests,
# client CPU and peak memory, measured by the kernel. Not part of the test command; what it
# measured is recorded in docs/performance.md.
#
# - The 2026-11-11 account on the emulator, behind a loopback proxy that adds DELAY_MS (50) to
#   every request, beside the sequential baseline: the same reads, one `aws` CLI process each.
# - A stand-in ECR and STS endpoint (crates/bench) with canned answers for 27, 270, 1,000 and
#   5,000 repositories, where the emulator's own time per request would swamp the client's;
#   then the apply workflow's steps on it (plan --out, show, apply of the saved file) at 27,
#   1,000 and 5,000, and the largest desired.toml accepted planned.
#
#   scripts/bench-plan.sh                 RUNS=7 DELAY_MS=50
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=lib/build.sh
source scripts/lib/build.sh
build bin --release --bin reconcile --bin reconcile-bench
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh

# The AWS CLI for the baseline, from PyPI's awscli package, in a virtualenv of its own.
cli_venv="$root/target/bench-awscli-venv"
if [ ! -x "$cli_venv/bin/aws" ]; then
  "$python" -m venv "$cli_venv"
  "$cli_venv/bin/python" -m pip install --quiet --disable-pip-version-check 'awscli==1.45.11'
fi

# A copy of desired.toml and its bake file: taking the account over writes its `import` list.
cp "$root/desired.toml" "$root/rocm-bake.hcl" "$emulator_dir/"
desired="$emulator_dir/desired.toml"
echo "==> loading the emulator with the account as it stood on 2026-11-11, then taking it over (import, apply)"
"$python" tests/emulator/seed.py --desired "$desired"
"$bin/reconcile" --desired "$desired" import > /dev/null
"$bin/reconcile" --desired "$desired" apply --auto-approve > /dev/null
"$bin/reconcile" --desired "$desired" import > /dev/null

echo "==> $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $("$cli_venv/bin/aws" --version 2>&1)"
"$python" scripts/lib/bench_plan.py --reconcile "$bin/reconcile" --bench "$bin/reconcile-bench" \
  --aws "$cli_venv/bin/aws" --desired "$desired" --emulator "$endpoint" --workdir "$emulator_dir" \
  --runs "${RUNS:-7}" --delay-ms "${DELAY_MS:-50}"
