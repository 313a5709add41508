#!/usr/bin/env bash
# Makes the local AWS emulator's Python environment (moto[server], pinned) at
# target/emulator-venv, or leaves it alone when it already matches requirements.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/venv.sh
source "$root/scripts/lib/venv.sh"
venv="$root/target/emulator-venv"
make_venv "$venv" "$root/tests/emulator/requirements.txt" emulator
"$venv/bin/python" -c 'import moto' || { echo "emulator: moto is missing from $venv" >&2; exit 1; }
