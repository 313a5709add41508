#!/usr/bin/env bash
# Packages a release, exactly as .github/workflows/release.yml does (and the shipping test):
#
#   scripts/package.sh archive BINARY TARGET OUT_DIR
#       OUT_DIR/reconcile-TARGET.tar.gz, holding reconcile-TARGET/: the binary, README.md, both
#       licenses, completions for every shell clap knows and one man page per command.
#   scripts/package.sh sums DIR
#       DIR/SHA256SUMS: one line per archive in DIR, as sha256sum writes them.
#
# Archive names carry no version, so releases/latest/download/ finds them; the version is in
# the release's tag and in `reconcile --version`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() { echo "package.sh: $*" >&2; exit 1; }

sha256() {
  if command -v sha256sum > /dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi
}

archive() {
  [ $# -eq 3 ] || die "usage: package.sh archive BINARY TARGET OUT_DIR"
  local binary="$1" target="$2" out="$3"
  [ -x "$binary" ] || die "$binary is not an executable"
  # The binary says which target it was built for; an archive named for another would install
  # a binary that cannot run.
  local version
  version="$("$binary" --version)" || die "$binary --version failed"
  case "$version" in
    *", $target)") ;;
    *) die "$binary is not built for $target: it says \"$version\"" ;;
  esac

  local stage name="reconcile-$target"
  stage="$(mktemp -d)"
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/$name/completions" "$stage/$name/man/man1" "$out"
  cp "$binary" "$stage/$name/reconcile"
  cp "$root/README.md" "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$stage/$name/"
  "$binary" completions bash > "$stage/$name/completions/reconcile.bash"
  "$binary" completions zsh > "$stage/$name/completions/_reconcile"
  "$binary" completions fish > "$stage/$name/completions/reconcile.fish"
  "$binary" completions elvish > "$stage/$name/completions/reconcile.elv"
  "$binary" completions powershell > "$stage/$name/completions/_reconcile.ps1"
  "$binary" man --dir "$stage/$name/man/man1"

  # GNU tar can make the archive byte for byte the same from the same binary; bsdtar (macOS)
  # cannot, and needs not: its archives are checked by their published sums all the same.
  local options=()
  if tar --version 2> /dev/null | grep -q GNU; then
    options=(--sort=name --owner=0 --group=0 --numeric-owner --mtime=@"${SOURCE_DATE_EPOCH:-0}")
  fi
  tar -C "$stage" ${options[@]+"${options[@]}"} -cf - "$name" | gzip -9n > "$out/$name.tar.gz"
  echo "$out/$name.tar.gz"
}

sums() {
  [ $# -eq 1 ] || die "usage: package.sh sums DIR"
  local dir="$1"
  (
    cd "$dir"
    shopt -s nullglob
    local archives=(reconcile-*.tar.gz)
    [ ${#archives[@]} -gt 0 ] || die "no reconcile-*.tar.gz in $dir"
    sha256 "${archives[@]}" > SHA256SUMS
  )
  echo "$dir/SHA256SUMS"
}

case "${1:-}" in
  archive) shift; archive "$@" ;;
  sums) shift; sums "$@" ;;
  *) die "usage: package.sh archive BINARY TARGET OUT_DIR | package.sh sums DIR" ;;
esac
