# Sourced by lib/emulator.sh and lib/github.sh: one way to run a local Python server for a script.
#
#   start_server URL_VAR DIR_VAR LABEL COMMAND...
#
# starts COMMAND in the background with its stdin a FIFO this shell holds open (the servers exit
# when it closes, so they never outlive the script), its output in a fresh temporary directory,
# waits for its first line (`listening URL`), and sets URL_VAR to the URL and DIR_VAR to the
# directory, which the caller may use for its own files. At exit every server started is stopped
# by PID, newest first, and its directory removed.
server_cleanup=""
trap 'eval "$server_cleanup"' EXIT

start_server() {
  local url_var="$1" dir_var="$2" label="$3"
  shift 3
  local dir pid fd url
  dir="$(mktemp -d)"
  mkfifo "$dir/stdin"
  "$@" < "$dir/stdin" > "$dir/server.out" 2> "$dir/server.err" &
  pid=$!
  exec {fd}> "$dir/stdin"
  server_cleanup="exec $fd>&-; kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf '$dir'; $server_cleanup"
  for _ in $(seq 1 100); do
    [ -s "$dir/server.out" ] && break
    sleep 0.1
  done
  url="$(head -n 1 "$dir/server.out" | sed -n 's/^listening //p')"
  [ -n "$url" ] || { echo "$label did not start:" >&2; cat "$dir/server.err" >&2; exit 1; }
  printf -v "$url_var" '%s' "$url"
  printf -v "$dir_var" '%s' "$dir"
}
