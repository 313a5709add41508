#!/usr/bin/env bash
# Mutation testing of the pure code (the files listed in .cargo/mutants.toml): every change
# cargo-mutants makes to them must be caught by a test. Not part of the test command: it takes
# tens of minutes on two cores. Run it before resolving an issue that touches those files.
#
#   scripts/mutants.sh                             every file
#   scripts/mutants.sh --re 'iam/src/derive.rs'    the mutants whose name matches (any
#                                                  cargo-mutants option passes through)
#
# Installs cargo-mutants (pinned) when it is missing. Results land in target/mutants/mutants.out;
# the script fails when any mutant is missed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
version="27.1.0"
if ! cargo mutants --version 2>/dev/null | grep -q "$version"; then
  cargo install cargo-mutants --version "$version" --locked
fi
mkdir -p target/mutants
# Its own target directory, so the copies it builds share their dependencies with each other
# and leave the workspace's own build alone.
export CARGO_TARGET_DIR="$root/target/mutants/target"
cargo mutants --no-shuffle -j 1 -o target/mutants "$@"
