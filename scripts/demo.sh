#!/usr/bin/env bash
# The main job on a local default: start the AWS emulator, load it with the account as it stood
# on 2026-11-11, then `reconcile plan`, `reconcile apply --auto-approve`, `reconcile plan`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/emulator-venv.sh
cargo build --locked --quiet --bin reconcile
reconcile="$root/target/debug/reconcile"
python="$root/target/emulator-venv/bin/python"

workdir="$(mktemp -d)"
mkfifo "$workdir/stdin"
# The emulator exits when its stdin closes; the trap also stops it by PID.
"$python" tests/emulator/launcher.py --host 127.0.0.1 --port 0 --exit-with-parent \
  < "$workdir/stdin" > "$workdir/emulator.out" 2>"$workdir/emulator.err" &
emulator_pid=$!
exec 3> "$workdir/stdin"
trap 'exec 3>&-; kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; rm -rf "$workdir"' EXIT

for _ in $(seq 1 100); do
  [ -s "$workdir/emulator.out" ] && break
  sleep 0.1
done
endpoint="$(head -n 1 "$workdir/emulator.out" | sed -n 's/^listening //p')"
[ -n "$endpoint" ] || { echo "the emulator did not start:" >&2; cat "$workdir/emulator.err" >&2; exit 1; }

export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN

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
