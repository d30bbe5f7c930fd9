#!/usr/bin/env bash
# Builds cephscope's OCI image with podman from the Debian package and a local Debian 12 root
# filesystem (no registry is needed or used):
#
#   deploy/oci/build-image.sh DEB [TAG]     TAG: localhost/cephscope:VERSION by default
#
# The base is the image in $CEPHSCOPE_BASE_IMAGE, else localhost/cephscope-base:bookworm,
# made once with `debootstrap --variant=minbase bookworm` from $DEBIAN_MIRROR (default: the
# host's apt mirror) and `podman import`. Prints the image's name and size.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
deb=$(realpath "$1")
[ -f "$deb" ] || { echo "build-image: no such package: $1" >&2; exit 2; }
version=$(dpkg-deb -f "$deb" Version)
tag=${2:-localhost/cephscope:$version}
here=$(cd "$(dirname "$0")" && pwd)
base=${CEPHSCOPE_BASE_IMAGE:-localhost/cephscope-base:bookworm}

if ! podman image exists "$base"; then
  mirror=${DEBIAN_MIRROR:-$(awk '$1 == "deb" && $2 ~ /debian/ && $2 !~ /security/ { print $2; exit }' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)}
  [ -n "$mirror" ] || mirror=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  echo "build-image: debootstrap bookworm from $mirror" >&2
  debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
  tar -C "$root" -c . | podman import - "$base" >/dev/null
fi

context=$(mktemp -d)
trap 'rm -rf "$context" ${root:+"$root"}' EXIT
cp "$deb" "$context/cephscope.deb"
podman build -q --network=host --build-arg "BASE=$base" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.title=cephscope" \
  -f "$here/Containerfile" -t "$tag" "$context" >/dev/null
echo "$tag $(podman image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
