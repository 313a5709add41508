# Sourced by the scripts that run reconcile's binaries: `build VAR [cargo build args...]` builds
# them and sets VAR to the directory cargo put them in (wherever CARGO_TARGET_DIR, or a
# .cargo/config.toml, says), read from cargo's own report rather than assumed to be target/.
build() {
  local into="$1" built
  shift
  built="$(cargo build --locked --quiet --message-format=json-render-diagnostics "$@" \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)"
  if [ -z "$built" ] || [ ! -x "$built" ]; then
    echo "cargo build $* reported no binary" >&2
    return 1
  fi
  printf -v "$into" '%s' "$(dirname "$built")"
}
