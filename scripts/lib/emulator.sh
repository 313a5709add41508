# Sourced by the scripts that need a local AWS emulator: starts it on a free loopback port,
# stops it (by PID) when the script exits, and points the standard AWS environment at it.
# Expects `root` (the repository) to be set; sets `python` and `endpoint`.
"$root/scripts/emulator-venv.sh"
python="$root/target/emulator-venv/bin/python"

emulator_dir="$(mktemp -d)"
mkfifo "$emulator_dir/stdin"
# The emulator exits when its stdin closes; the trap also stops it by PID.
"$python" "$root/tests/emulator/launcher.py" --host 127.0.0.1 --port 0 --exit-with-parent \
  < "$emulator_dir/stdin" > "$emulator_dir/emulator.out" 2>"$emulator_dir/emulator.err" &
emulator_pid=$!
exec 3> "$emulator_dir/stdin"
trap 'exec 3>&-; kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; rm -rf "$emulator_dir"' EXIT

for _ in $(seq 1 100); do
  [ -s "$emulator_dir/emulator.out" ] && break
  sleep 0.1
done
endpoint="$(head -n 1 "$emulator_dir/emulator.out" | sed -n 's/^listening //p')"
[ -n "$endpoint" ] || { echo "the emulator did not start:" >&2; cat "$emulator_dir/emulator.err" >&2; exit 1; }

export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN
