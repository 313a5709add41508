# Sourced by the scripts that need a local AWS emulator: starts it on a free loopback port, stops
# it (by PID) when the script exits (lib/server.sh), and points the standard AWS environment at
# it.
# Expects `root` (the repository) to be set; sets `python`, `endpoint` and
# `emulator_dir` (a temporary directory for the script's own files).
"$root/scripts/emulator-venv.sh"
python="$root/target/emulator-venv/bin/python"

# shellcheck source=server.sh
source "$root/scripts/lib/server.sh"
# --exit-with-parent: the emulator exits when its stdin closes, as the GitHub stand-in always does.
start_server endpoint emulator_dir "the emulator" \
  "$python" "$root/tests/emulator/launcher.py" --host 127.0.0.1 --port 0 --exit-with-parent

export AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN
