#!/usr/bin/env bash
# Benchmark of `reconcile usage`: the emulator loaded with REPOSITORIES repositories of IMAGES
# images each (default 50 of 1,000), then one `reconcile usage` timed, with its request count.
# Not part of the test command (loading 50,000 images takes minutes); docs/performance.md
# records what it measured.
#
#   scripts/bench-usage.sh                      50 repositories of 1,000 images
#   REPOSITORIES=5 IMAGES=100 scripts/bench-usage.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
repositories="${REPOSITORIES:-50}"
images="${IMAGES:-1000}"
# shellcheck source=lib/build.sh
source scripts/lib/build.sh
build bin --release --bin reconcile
reconcile="$bin/reconcile"
# shellcheck source=lib/emulator.sh
source scripts/lib/emulator.sh

echo "==> loading $repositories repositories of $images images each (emulator at $endpoint)"
"$python" tests/emulator/load_images.py --repositories "$repositories" --images "$images"
desired="$emulator_dir/desired.toml"
cat > "$desired" <<TOML
region = "us-east-1"
[ecr.lifecycle_policies.keep-3-untagged]
rules = [{ rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } }]
[ecr.repositories]
bench-0 = { lifecycle_policy = "keep-3-untagged" }
TOML

echo "==> reconcile usage"
start="$(date +%s.%N)"
"$reconcile" --desired "$desired" usage --format json -v > "$emulator_dir/usage.json" 2> "$emulator_dir/usage.err"
end="$(date +%s.%N)"
requests="$(sed -n 's/.*usage: \([0-9]*\) AWS requests.*/\1/p' "$emulator_dir/usage.err")"
held="$("$python" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(x["images"] for x in r["repositories"]), r["total"]["bytes"])' "$emulator_dir/usage.json")"
printf 'repositories %s, images and bytes read %s\nwall time %.2f s, %s AWS requests\n' \
  "$repositories" "$held" "$(echo "$end - $start" | bc)" "$requests"
grep -o 'usage: .*' "$emulator_dir/usage.err" || true
