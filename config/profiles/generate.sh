#!/usr/bin/env bash
# generate.sh - makes the shipped probe profiles of Debian's Ceph builds from their -dbg
# packages, for the probe tables of the cephscope binary given (as root or not; needs no
# installed Ceph).
#
#   config/profiles/generate.sh [--bin PATH] [--release pacific|reef|tentacle]...
#                               [--probe-set osd-stages|bluestore-io|librados] [--check]
#
# For each release (default: all three) it downloads ceph-osd, librados2, librbd1 and their
# -dbg packages from the suite that carries it (bookworm, trixie, sid: a private apt state under
# $CEPHSCOPE_PROFILE_CACHE, default /var/cache/cephscope-profiles; the host's apt state is
# not touched), unpacks them and runs `cephscope profile generate` on ceph-osd (probe sets
# osd-stages and bluestore-io), librados.so.2, librbd.so.1 and libceph-common.so.2 (probe set librados). The profiles go
# to config/profiles/<build-id>.<probe-set>.json, listed in config/profiles/MANIFEST, and are
# installed to /usr/share/cephscope/profiles.
#
# --probe-set remakes the profiles of one probe set only (and downloads only its packages).
# --check generates nothing: it fails when a committed profile was made for another probe
# table than the binary's, or in a schema it does not read (the test `shipped_profiles_current`
# runs it in CI).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN=${CEPHSCOPE_BIN:-$REPO/build/daemon/cephscope}
CACHE=${CEPHSCOPE_PROFILE_CACHE:-/var/cache/cephscope-profiles}
releases=()
only_set=
check=0

die() { echo "generate.sh: error: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --release) releases+=("$2"); shift 2 ;;
    --probe-set) only_set=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) die "unknown argument $1 (see the head of $0)" ;;
  esac
done
[ ${#releases[@]} -gt 0 ] || releases=(pacific reef tentacle)
case $only_set in
  "" | osd-stages | bluestore-io | librados) ;;
  *) die "unknown probe set $only_set (osd-stages, bluestore-io or librados)" ;;
esac
wanted() { [ -z "$only_set" ] || [ "$only_set" = "$1" ]; }
[ -x "$BIN" ] || die "no cephscope binary at $BIN (build it, or give --bin)"

suite_of() {
  case $1 in
    pacific) echo bookworm ;;
    reef) echo trixie ;;
    tentacle) echo sid ;;
    *) die "unknown release $1 (pacific, reef or tentacle)" ;;
  esac
}

# The probe table digests of this binary, by probe set name.
declare -A digest
while read -r name value; do
  digest[$name]=$value
done < <("$BIN" profile probes --digests)

if [ $check = 1 ]; then
  bad=0
  for f in "$HERE"/*.json; do
    [ -f "$f" ] || continue
    read -r set have < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print(p["probe_set"], p["probe_set_digest"])' "$f")
    want=${digest[$set]:-}
    [ -n "$want" ] || { echo "$(basename "$f"): no probe set $set in $BIN" >&2; bad=1; continue; }
    if [ "$have" != "$want" ]; then
      echo "stale: $(basename "$f") was made for the $set table $have; the binary's is $want" >&2
      bad=1
    fi
    if ! err=$("$BIN" profile show "$f" 2>&1 >/dev/null); then
      echo "$(basename "$f") is not a profile this binary reads: $err" >&2
      bad=1
    fi
    grep -q " $(basename "$f")\$" "$HERE/MANIFEST" ||
      { echo "$(basename "$f") is not in MANIFEST" >&2; bad=1; }
  done
  [ $bad = 0 ] || die "shipped profiles are stale: regenerate them with $0"
  echo "shipped profiles: all made for the current probe tables"
  exit 0
fi

# shellcheck source=tests/lib/debian-mirror.sh
source "$REPO/tests/lib/debian-mirror.sh"
mirror() { debian_mirror; }

apt_in() { # SUITE apt-command...
  local dir=$CACHE/apt-$1
  shift
  "$@" -q -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
    -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::status=/dev/null
}

fetch_release() { # RELEASE -> unpacked root on stdout
  local suite dir root pkg
  suite=$(suite_of "$1")
  dir=$CACHE/apt-$suite
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/debs"
  echo "deb $(mirror) $suite main" > "$dir/sources.list"
  if [ "$suite" = bookworm ]; then
    echo "deb $(mirror | sed 's|/debian$|/debian-security|') bookworm-security main" \
      >> "$dir/sources.list"
  fi
  apt_in "$suite" apt-get update >&2
  root=$CACHE/root-$1
  rm -rf "$root"
  mkdir -p "$root"
  local pkgs=()
  if wanted osd-stages || wanted bluestore-io; then
    pkgs+=(ceph-osd ceph-osd-dbg)
  fi
  wanted librados && pkgs+=(librados2 librados2-dbg librbd1 librbd1-dbg)
  for pkg in "${pkgs[@]}"; do
    (cd "$dir/debs" && apt_in "$suite" apt-get download "$pkg" >&2)
  done
  for pkg in "${pkgs[@]}"; do
    local deb version
    version=$(apt_in "$suite" apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }')
    deb=$(ls "$dir/debs/${pkg}_${version//:/%3a}_"*.deb)
    dpkg-deb -x "$deb" "$root"
    echo "$pkg $version" >> "$root/.versions"
  done
  echo "$root"
}

build_id() { readelf -n "$1" | awk '/Build ID/ { print $3; exit }'; }

generate() { # RELEASE ROOT OBJECT-PATH PROBE-SET
  local release=$1 root=$2 object=$3 set=$4 bid debug out version
  bid=$(build_id "$root/$object")
  [ -n "$bid" ] || die "$object of $release has no build-id"
  debug=$root/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
  [ -f "$debug" ] || die "no debug file for $object of $release ($debug)"
  out=$HERE/$bid.$set.json
  "$BIN" profile generate --binary "$root/$object" --debug-file "$debug" --probe-set "$set" \
    --out "$out" >&2
  # Paths as on a node, not in this script's unpacked root.
  python3 - "$out" "$root" <<'PY'
import json, sys
path, root = sys.argv[1], sys.argv[2]
p = json.load(open(path))
for key in ("binary_path", "debug_file"):
    if p.get(key, "").startswith(root):
        p[key] = p[key][len(root):]
json.dump(p, open(path, "w"), indent=1, sort_keys=True)
open(path, "a").write("\n")
PY
  version=$(awk -v p="$(basename "$object")" \
    '$1 == (p == "ceph-osd" ? "ceph-osd" : p ~ /^librbd/ ? "librbd1" : "librados2") { print $2 }' \
    "$root/.versions")
  printf '%s %s %s %s %s\n' "$release" "$version" "$(basename "$object")" "$set" \
    "$(basename "$out")" >> "$HERE/MANIFEST.new"
}

: > "$HERE/MANIFEST.new"
for release in "${releases[@]}"; do
  start=$SECONDS
  root=$(fetch_release "$release")
  # Drop the release's previous profiles of the sets made (a new build has a new build-id).
  if [ -f "$HERE/MANIFEST" ]; then
    awk -v r="$release" -v s="$only_set" '$1 == r && (s == "" || $4 == s) { print $5 }' \
      "$HERE/MANIFEST" | while read -r f; do rm -f "$HERE/$f"; done
  fi
  if wanted osd-stages; then
    generate "$release" "$root" usr/bin/ceph-osd osd-stages
  fi
  if wanted bluestore-io; then
    generate "$release" "$root" usr/bin/ceph-osd bluestore-io
  fi
  if wanted librados; then
    generate "$release" "$root" usr/lib/x86_64-linux-gnu/librados.so.2 librados
    generate "$release" "$root" usr/lib/x86_64-linux-gnu/librbd.so.1 librados
    generate "$release" "$root" usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2 librados
  fi
  rm -rf "$root"
  echo "generate.sh: $release done in $((SECONDS - start)) s" >&2
done
# The manifest keeps the releases not generated this time.
if [ -f "$HERE/MANIFEST" ]; then
  for release in "${releases[@]}"; do
    if [ -z "$only_set" ]; then
      sed -i "/^$release /d" "$HERE/MANIFEST"
    else
      awk -v r="$release" -v s="$only_set" '!($1 == r && $4 == s)' "$HERE/MANIFEST" \
        > "$HERE/MANIFEST.keep" && mv "$HERE/MANIFEST.keep" "$HERE/MANIFEST"
    fi
  done
  grep -v '^#' "$HERE/MANIFEST" >> "$HERE/MANIFEST.new" || true
fi
{
  echo "# release package-version object probe-set file (written by generate.sh)"
  sort "$HERE/MANIFEST.new"
} > "$HERE/MANIFEST"
rm -f "$HERE/MANIFEST.new"
cat "$HERE/MANIFEST"
