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
# loopback server): https, or http to a literal loopback address (127.0.0.1, [::1]) only, never
# with a user name or password in it; a redirect is followed to https only. RECONCILE_REPOSITORY
# names the repository the attestation must come from (default ROCm/reconcile). Downloads need
# curl (wget cannot be told to follow redirects to https only).
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
# The version lands in a URL, a cache key and the action's outputs: nothing but a version, or
# `latest`, matched as one string (a line-by-line match would let a second line through).
if [ "$version" != latest ] && ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]]; then
  die "$(printf '%q' "$version") is not a version (like 0.1.0) or latest"
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
[[ "$target" =~ ^[a-z0-9_]+(-[a-z0-9_]+){2,3}$ ]] || die "$(printf '%q' "$target") is not a target triple"

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
# The URL parsed, not matched by a pattern: its scheme, and its authority (up to the first `/`),
# which may hold no user name or password (`http://127.0.0.1:1@elsewhere` connects elsewhere),
# and for http must be a literal loopback address with at most a port.
refuse_url() { die "refusing $(printf '%q' "$base"): downloads are https, or http to 127.0.0.1 or [::1]; $1"; }
[[ "$base" =~ ^[[:print:]]+$ ]] || refuse_url "it holds a control character"
scheme="${base%%://*}"
[ "$scheme" != "$base" ] || refuse_url "it has no scheme"
rest="${base#*://}"
authority="${rest%%/*}"
case "$authority" in
  *@*) refuse_url "it names a user" ;;
  "") refuse_url "it names no host" ;;
esac
case "$scheme" in
  https) [[ "$authority" =~ ^[A-Za-z0-9.-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:]+\](:[0-9]+)?$ ]] || refuse_url "its host is not a host" ;;
  http) [[ "$authority" =~ ^(127\.0\.0\.1|\[::1\])(:[0-9]+)?$ ]] || refuse_url "plain http goes to loopback only" ;;
  *) refuse_url "the scheme is $(printf '%q' "$scheme")" ;;
esac
command -v curl > /dev/null || die "downloads need curl, which is not installed; nothing installed"

# Redirects (GitHub's release downloads are one) are followed to https only; the first request
# goes where the URL says, over what it says.
fetch() {
  curl --fail --silent --location --retry 3 --proto =https,http --proto-redir =https --output "$2" "$1"
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
# Copied into a directory made new beside its final name (mktemp makes it, never an existing
# name, readable by this user only: nothing planted there is written through) and renamed over
# it, so `reconcile` is never half written and a link at its name is replaced, not followed.
staging="$(mktemp -d "$dir/.reconcile.XXXXXXXX")" || die "could not write in $dir; nothing installed"
trap 'rm -rf "$work" "$staging"' EXIT
cp "$work/unpacked/reconcile-$target/reconcile" "$staging/reconcile"
chmod 755 "$staging/reconcile"
mv -f "$staging/reconcile" "$dir/reconcile"
echo "installed $("$dir/reconcile" --version) at $dir/reconcile"
