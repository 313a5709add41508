# Sourced by the demo after lib/emulator.sh: starts the local GitHub API stand-in
# (tests/github/server.py) on a free loopback port, stops it (by PID) when the script exits, and
# points reconcile's GitHub side at it (GITHUB_API_URL, GITHUB_TOKEN). Sets `github`.
github_dir="$(mktemp -d)"
mkfifo "$github_dir/stdin"
"$python" "$root/tests/github/server.py" < "$github_dir/stdin" > "$github_dir/github.out" 2> "$github_dir/github.err" &
github_pid=$!
exec 4> "$github_dir/stdin"
# The emulator's trap, then this one's.
trap 'exec 4>&-; kill "$github_pid" 2>/dev/null || true; wait "$github_pid" 2>/dev/null || true; rm -rf "$github_dir"; exec 3>&-; kill "$emulator_pid" 2>/dev/null || true; wait "$emulator_pid" 2>/dev/null || true; rm -rf "$emulator_dir"' EXIT

for _ in $(seq 1 100); do
  [ -s "$github_dir/github.out" ] && break
  sleep 0.1
done
github="$(head -n 1 "$github_dir/github.out" | sed -n 's/^listening //p')"
[ -n "$github" ] || { echo "the GitHub stand-in did not start:" >&2; cat "$github_dir/github.err" >&2; exit 1; }
export GITHUB_API_URL="$github" GITHUB_TOKEN=demo-token
