#!/usr/bin/env bash
# Makes the local AWS emulator's Python environment (moto[server], pinned) at
# target/emulator-venv, or leaves it alone when it already matches requirements.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/tests/emulator/requirements.txt"
venv="$root/target/emulator-venv"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
python="${PYTHON:-python3}"
echo "emulator: creating $venv with $("$python" --version 2>&1)" >&2
rm -rf "$venv"
mkdir -p "$root/target"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
echo "$want" > "$stamp"
echo "emulator: installed $("$venv/bin/python" -c 'import moto; print("moto", moto.__version__)')" >&2
