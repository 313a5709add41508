#!/usr/bin/env bash
# Benchmark of `reconcile cost`: the emulator given BUILDS builds of the runner over the last
# DAYS days (default 3,000 over 30), then one `reconcile cost --days DAYS` timed, with its request
# count. Not part of the test command (a test checks the request count; time belongs here);
# docs/performance.md records what it measured.
#
#   scripts/bench-cost.sh                  3,000 builds over 30 days
#   BUILDS=300 DAYS=7 scripts/bench-cost.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
builds="${BUILDS:-3000}"
days="${DAYS:-30}"
# shellcheck source=lib/build.sh
source scripts/lib/build.sh
build bin --release --bin reconcile
reconcile="$bin/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh

desired="$emulator_dir/desired.toml"
cat > "$desired" <<TOML
region = "us-east-1"
[codebuild.projects.runner]
name = "rocm-bake"
source_location = "https://github.com/ROCm/rocm-bake"
service_role = "codebuild"
build_timeout_hours = 4
[iam.roles.codebuild]
name = "rocm-bake-codebuild"
trusted_services = ["codebuild.amazonaws.com"]
TOML
echo "==> $builds builds over $days days (emulator at $endpoint)"
"$python" - "$endpoint" "$builds" "$days" <<'PY'
import json, sys, time, urllib.request
endpoint, builds, days = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
first = int(time.time()) // 86400 * 86400 - (days - 1) * 86400
step = max(1, (int(time.time()) - first) // builds)
seeded = [{"project": "rocm-bake", "start": first + n * step, "end": first + n * step + 600,
           "computeType": "BUILD_GENERAL1_XLARGE"} for n in range(builds)]
request = urllib.request.Request(f"{endpoint}/_reconcile/codebuild/builds?account=123456789012&region=us-east-1",
                                 data=json.dumps(seeded).encode(), method="POST")
urllib.request.urlopen(request).read()
PY

echo "==> reconcile cost --days $days"
start="$(date +%s.%N)"
"$reconcile" --desired "$desired" cost --days "$days" --format json -v > "$emulator_dir/cost.json" 2> "$emulator_dir/cost.err"
end="$(date +%s.%N)"
counted="$("$python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["builds"]))' "$emulator_dir/cost.json")"
printf 'builds priced %s\nwall time %.2f s\n' "$counted" "$(echo "$end - $start" | bc)"
grep -o 'cost: .*' "$emulator_dir/cost.err" || true
