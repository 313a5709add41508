# Makes a Python virtualenv at $1 from the requirements file $2, or leaves it alone when it
# already matches that file (a stamp of its hash); $3 names it in messages.
make_venv() {
  local venv="$1" requirements="$2" name="$3"
  local stamp="$venv/.requirements.sha256" want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  local python="${PYTHON:-python3}"
  echo "$name: creating $venv with $("$python" --version 2>&1)" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  echo "$want" > "$stamp"
}
