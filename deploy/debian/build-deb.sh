#!/usr/bin/env bash
# Builds BUILD/cephscope_VERSION_ARCH.deb from an already built tree (the `deb` target):
# `cmake --install --prefix /usr --strip` into a staging root, the control files of this
# folder, Depends from dpkg-shlibdeps, and dpkg-deb with root-owned files.
#
#   deploy/debian/build-deb.sh BUILD VERSION
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD VERSION" >&2; exit 2; }
build=$(cd "$1" && pwd)
version=$2
here=$(cd "$(dirname "$0")" && pwd)
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
  command -v "$tool" >/dev/null || { echo "build-deb: $tool missing (apt-get install dpkg-dev)" >&2; exit 2; }
done
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/root
DESTDIR=$stage cmake --install "$build" --prefix /usr --strip >/dev/null

# dpkg-shlibdeps reads debian/control from its working directory.
mkdir -p "$work/debian" "$stage/DEBIAN"
printf 'Source: cephscope\n\nPackage: cephscope\nArchitecture: any\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O -e"$stage/usr/sbin/cephscope" \
  -e"$stage/usr/libexec/cephscope/cephscope-resolver" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
  -e "s/@DEPENDS@/$depends/" "$here/control.in" > "$stage/DEBIAN/control"
install -m 644 "$here/conffiles" "$stage/DEBIAN/conffiles"
install -m 755 "$here/postinst" "$here/prerm" "$here/postrm" "$stage/DEBIAN/"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
  xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
out=$build/cephscope_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "$out"
