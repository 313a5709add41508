#!/usr/bin/env bash
# Installs a released reconcile binary, verified against the release's SHA256SUMS (and, asked,
# its build provenance) before anything is written where it would run:
#
#   scripts/install.sh [--version VERSION] [--dir DIR] [--target TARGET] [--verify-attestation]
#   scripts/install.sh [--version VERSION] [--target TARGET] --resolve
#
#   --version             a release (0.1.0 or v0.1.0), or `latest`. Default: the version of the
#                         checkout this script is in, so a pinned checkout installs its release.
#   --dir                 where `reconcile` goes (default ~/.local/bin); created if missing.
#   --target              the Rust target triple of the archive (default: this machine's).
#   --verify-attestation  also run `gh attestation verify` on the archive (needs gh and a token).
#   --resolve             print `version=...` and `target=...` lines and install nothing (the
#                         setup action keys its cache on them).
#
# RECONCILE_DOWNLOAD_URL overrides where the release's files are (a mirror, or the tests'
# loopback server): https, or http on loopback only. RECONCILE_REPOSITORY names the repository
# the attestation must come from (default ROCm/reconcile).
#
# A mismatch, a missing sum, a failed attestation: one line on stderr, exit 1, nothing installed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repository="${RECONCILE_REPOSITORY:-ROCm/reconcile}"

die() { echo "install.sh: $*" >&2; exit 1; }

version="" dir="${HOME:-}/.local/bin" target="" attest=false resolve=false
while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] || die "--version needs a value"; version="$2"; shift 2 ;;
    --dir) [ $# -ge 2 ] || die "--dir needs a value"; dir="$2"; shift 2 ;;
    --target) [ $# -ge 2 ] || die "--target needs a value"; target="$2"; shift 2 ;;
    --verify-attestation) attest=true; shift ;;
    --resolve) resolve=true; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

if [ -z "$version" ]; then
  manifest="$here/../crates/cli/Cargo.toml"
  [ -f "$manifest" ] || die "--version is required outside a checkout of reconcile"
  version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$manifest" | head -n 1)"
fi
version="${version#v}"
# The version lands in a URL and a cache key: nothing but a version, or `latest`.
if [ "$version" != latest ] && ! printf '%s\n' "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$'; then
  die "\"$version\" is not a version (like 0.1.0) or latest"
fi

if [ -z "$target" ]; then
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-gnu ;;
    Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
    Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
    Darwin/x86_64) target=x86_64-apple-darwin ;;
    *) die "no release is built for $(uname -s) $(uname -m)" ;;
  esac
fi
printf '%s\n' "$target" | grep -Eq '^[a-z0-9_]+(-[a-z0-9_]+){2,3}$' || die "\"$target\" is not a target triple"

if $resolve; then
  echo "version=$version"
  echo "target=$target"
  exit 0
fi

if [ "$version" = latest ]; then
  default_url="https://github.com/$repository/releases/latest/download"
else
  default_url="https://github.com/$repository/releases/download/v$version"
fi
base="${RECONCILE_DOWNLOAD_URL:-$default_url}"
base="${base%/}"
case "$base" in
  https://*) ;;
  http://127.0.0.1:* | http://127.0.0.1/* | http://localhost:* | http://localhost/* | http://\[::1\]:*) ;;
  *) die "refusing $base: downloads are https (or http on loopback)" ;;
esac

fetch() {
  if command -v curl > /dev/null; then
    curl --fail --silent --location --retry 3 --proto-redir =https --output "$2" "$1"
  elif command -v wget > /dev/null; then
    wget --quiet --output-document "$2" "$1"
  else
    die "neither curl nor wget is installed"
  fi
}

sha256() {
  if command -v sha256sum > /dev/null; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum > /dev/null; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is installed"
  fi
}

archive="reconcile-$target.tar.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch "$base/SHA256SUMS" "$work/SHA256SUMS" || die "could not download $base/SHA256SUMS; nothing installed"
fetch "$base/$archive" "$work/$archive" || die "could not download $base/$archive; nothing installed"

# sha256sum's own lines: the sum, two spaces (or a space and `*`), the name.
expected="$(awk -v name="$archive" '$2 == name || $2 == "*" name { print $1 }' "$work/SHA256SUMS")"
case "$(printf '%s' "$expected" | grep -c '^')" in
  1) ;;
  0) die "SHA256SUMS has no sum for $archive; nothing installed" ;;
  *) die "SHA256SUMS has more than one sum for $archive; nothing installed" ;;
esac
actual="$(sha256 "$work/$archive")"
if [ "$actual" != "$expected" ]; then
  die "$archive does not match SHA256SUMS (expected $expected, got $actual); nothing installed"
fi

if $attest; then
  command -v gh > /dev/null || die "--verify-attestation needs gh, the GitHub CLI; nothing installed"
  if ! gh attestation verify "$work/$archive" --repo "$repository" > "$work/gh.log" 2>&1; then
    die "the attestation of $archive did not verify for $repository ($(grep -m 1 . "$work/gh.log" || true)); nothing installed"
  fi
fi

mkdir -p "$work/unpacked"
tar -xzf "$work/$archive" -C "$work/unpacked" "reconcile-$target/reconcile" 2> /dev/null \
  || die "$archive holds no reconcile-$target/reconcile; nothing installed"
mkdir -p "$dir" || die "could not create $dir; nothing installed"
# Copied beside its final name and renamed over it, so `reconcile` is never half written.
cp "$work/unpacked/reconcile-$target/reconcile" "$dir/.reconcile.$$"
chmod 755 "$dir/.reconcile.$$"
mv -f "$dir/.reconcile.$$" "$dir/reconcile"
echo "installed $("$dir/reconcile" --version) at $dir/reconcile"
