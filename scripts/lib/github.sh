# Sourced by the demo after lib/emulator.sh: starts the local GitHub API stand-in
# (tests/github/server.py) on a free loopback port, stops it (by PID) when the script exits
# (lib/server.sh), and points reconcile's GitHub side at it (GITHUB_API_URL, GITHUB_TOKEN). Sets
# `github`.
start_server github github_dir "the GitHub stand-in" "$python" "$root/tests/github/server.py"
export GITHUB_API_URL="$github" GITHUB_TOKEN=demo-token
