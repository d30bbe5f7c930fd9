#!/usr/bin/env bash
# image.sh - local OCI images of newer Debian Ceph releases, for container test clusters.
#
#   image.sh RELEASE            build (or confirm fresh) the images of RELEASE
#   image.sh --check RELEASE    build nothing; exit 0 when both images exist and are fresh
#                               by the stamp (no network), 1 otherwise
#
# RELEASE   suite    image (with debug symbols)          image without any -dbg package
# reef      trixie   localhost/cephscope-ceph:reef       localhost/cephscope-ceph:reef-nodbg
# tentacle  sid      localhost/cephscope-ceph:tentacle   localhost/cephscope-ceph:tentacle-nodbg
#
# No registry is reachable here, so the images come from Debian's mirror (the host's, found
# like tests/vm/lib/common.sh vm_mirror()), in three layers:
#   base   `debootstrap --variant=minbase SUITE`, tarred and `podman import`ed
#   nodbg  + ceph-mon ceph-mgr ceph-osd ceph-common ceph-base   (podman run; podman commit)
#   dbg    + ceph-osd-dbg librados2-dbg                           (on top of nodbg)
# so the -nodbg image is the parent of the dbg one and costs no extra space. ceph-common-dbg
# (about 600 MB, as big as ceph-osd-dbg, for the CLI tools and libceph-common) is left out
# unless CEPH_IMAGE_COMMON_DBG=1.
#
# Cache (outside the repository): /var/cache/cephscope-tests/ceph-images/RELEASE/
#   base.tar     the debootstrap root           stamp   what the images were built from
#   apt-lists/   private apt lists of SUITE (to learn the suite's ceph-osd version)
#   archives/    .debs, bind-mounted into the build containers (a rebuild downloads nothing)
# The images are rebuilt when the stamp differs: this script's sha256, the mirror, the suite's
# ceph-osd version, or the package lists changed; or when an image is missing.
#
# Installs podman, runc, catatonit (podman run --init) and debootstrap when missing, and makes
# podman use runc, cgroupfs and no default ulimits (see /work/shared/MACHINE.md "Containers"):
# /etc/containers/containers.conf is written when absent; an existing one is left alone unless
# podman then shows other settings, in which case a drop-in
# /etc/containers/containers.conf.d/50-cephscope.conf overrides them.
#
# The mirror may be a frozen snapshot whose sid Release has expired: apt ignores Valid-Until.
#
# Env: CEPH_IMAGE_CACHE (default /var/cache/cephscope-tests/ceph-images), CEPH_IMAGE_MIRROR (default: the
#      host's Debian mirror), CEPH_IMAGE_COMMON_DBG=1, APT_LOCK_TIMEOUT (s, default 600).
# Prints the time of debootstrap, import, package installs and commits, and the image sizes.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
# shellcheck source=tests/lib/debian-mirror.sh
source "$(dirname "$SELF")/../lib/debian-mirror.sh"
# shellcheck source=tests/lib/podman.sh
source "$(dirname "$SELF")/../lib/podman.sh"
CACHE_ROOT=${CEPH_IMAGE_CACHE:-${CEPHSCOPE_TEST_CACHE:-/var/cache/cephscope-tests}/ceph-images}
APT_LOCK_TIMEOUT=${APT_LOCK_TIMEOUT:-600}
REPO=localhost/cephscope-ceph
PKGS=(ceph-mon ceph-mgr ceph-osd ceph-common ceph-base)
DBG_PKGS=(ceph-osd-dbg librados2-dbg)
[ "${CEPH_IMAGE_COMMON_DBG:-0}" = 1 ] && DBG_PKGS+=(ceph-common-dbg)
T0=$(date +%s.%N)

now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
log() { printf '[image.sh %6ss] %s\n' "$(since "$T0")" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
usage() { sed -n '2,37p' "$SELF" | sed 's/^# \{0,1\}//' >&2; exit 2; }

check_only=0
if [ "${1:-}" = --check ]; then check_only=1; shift; fi
[ $# -eq 1 ] || usage
RELEASE=$1
case "$RELEASE" in
    reef)     SUITE=trixie; MAJOR=18 ;;
    tentacle) SUITE=sid;    MAJOR=20 ;;
    *) log "ERROR: unknown RELEASE '$RELEASE' (reef or tentacle)"; usage ;;
esac
CACHE=$CACHE_ROOT/$RELEASE
IMAGE=$REPO:$RELEASE
IMAGE_NODBG=$REPO:$RELEASE-nodbg
IMAGE_BASE=$REPO-base:$SUITE
STAMP=$CACHE/stamp

host_mirror() {   # the same choice as tests/vm/lib/common.sh vm_mirror()
    if [ -n "${CEPH_IMAGE_MIRROR:-}" ]; then echo "$CEPH_IMAGE_MIRROR"; return; fi
    debian_mirror
}

image_exists() { podman image exists "$1" 2>/dev/null; }
image_size() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1/1e6}'; }

# ------------------------------------------------------------------ host tools and podman setup
APT=(apt-get -y -q -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" -o Dpkg::Use-Pty=0)

ensure_tools() {
    local need=() p
    for p in podman runc catatonit debootstrap; do
        [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] || need+=("$p")
    done
    [ ${#need[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "needs root to install: ${need[*]}"
    log "installing ${need[*]}"
    local t; t=$(now)
    DEBIAN_FRONTEND=noninteractive "${APT[@]}" update >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${APT[@]}" install --no-install-recommends "${need[@]}" >&2 \
        || die "apt-get install ${need[*]} failed"
    log "time: host tools install $(since "$t") s"
}

ensure_podman_conf() { podman_configure || die "podman is not set up for this host"; }

# ------------------------------------------------------------------ the suite's version
suite_version() {   # candidate version of ceph-osd in SUITE, from private apt lists
    local lists=$CACHE/apt-lists src=$CACHE/sources.list
    mkdir -p "$lists/partial"
    echo "deb $MIRROR $SUITE main" > "$src"
    local o=(-o Dir::State::Lists="$lists" -o Dir::Etc::SourceList="$src"
             -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Status=/dev/null
             -o Dir::Cache=/nonexistent -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
    apt-get -q "${o[@]}" -o Acquire::Check-Valid-Until=false update >/dev/null 2>"$CACHE/apt-update.err" \
        || die "apt-get update of $SUITE from $MIRROR failed: $(tail -n 3 "$CACHE/apt-update.err")"
    apt-cache "${o[@]}" show ceph-osd 2>/dev/null | awk '/^Version:/ { print $2; exit }'
}

# ------------------------------------------------------------------ build steps
build_base() {
    local root=$CACHE/rootfs t
    rm -rf -- "$root" "$CACHE/base.tar.tmp"
    log "debootstrap --variant=minbase $SUITE from $MIRROR"
    t=$(now)
    debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
        || die "debootstrap failed (see $CACHE/debootstrap.log; last lines: $(tail -n 3 "$CACHE/debootstrap.log"))"
    # no daemons may start at package install time inside the image
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
    # keep images small: no docs, man pages or locales from later installs
    printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-exclude /usr/share/man/*' \
        'path-exclude /usr/share/locale/*' 'path-include /usr/share/doc/*/copyright' \
        > "$root/etc/dpkg/dpkg.cfg.d/01-cephscope-nodoc"
    echo "deb $MIRROR $SUITE main" > "$root/etc/apt/sources.list"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    log "time: debootstrap $(since "$t") s ($(du -sm "$root" | cut -f1) MB)"
    t=$(now)
    tar -C "$root" --numeric-owner -cf "$CACHE/base.tar.tmp" .
    mv "$CACHE/base.tar.tmp" "$CACHE/base.tar"
    rm -rf -- "$root"
    podman import -q "$CACHE/base.tar" "$IMAGE_BASE" >/dev/null || die "podman import failed"
    log "time: import $(since "$t") s (tar + podman import of $(du -m "$CACHE/base.tar" | cut -f1) MB)"
}

# install_layer FROM TO WHAT PKG...: apt-get install PKG... in a container of FROM, commit as TO
install_layer() {
    local from=$1 to=$2 what=$3 ctr t; shift 3
    ctr=cephscope-image-build-$RELEASE-$$
    podman rm -f "$ctr" >/dev/null 2>&1 || true
    mkdir -p "$CACHE/archives/partial" "$CACHE/lists/partial"
    log "$what: installing $*"
    t=$(now)
    # apt's lists and the .debs live in the cache (bind mounts), not in the image
    podman run --name "$ctr" --net=host \
        -v "$CACHE/archives:/var/cache/apt/archives" -v "$CACHE/lists:/var/lib/apt/lists" \
        -e DEBIAN_FRONTEND=noninteractive "$from" \
        sh -ec 'apt-get -q -o Acquire::Check-Valid-Until=false update
                apt-get -y -q -o Dpkg::Use-Pty=0 install --no-install-recommends "$@"
                rm -rf /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old /tmp/*' \
        sh "$@" >"$CACHE/$what.log" 2>&1 || {
        podman rm -f "$ctr" >/dev/null 2>&1 || true
        die "$what: install failed (see $CACHE/$what.log; last lines: $(tail -n 5 "$CACHE/$what.log"))"
    }
    log "time: $what install $(since "$t") s"
    t=$(now)
    podman commit -q -c "LABEL org.cephscope.release=$RELEASE" \
        -c "LABEL org.cephscope.suite=$SUITE" "$ctr" "$to" >/dev/null || {
        podman rm -f "$ctr" >/dev/null 2>&1 || true
        die "$what: podman commit failed"
    }
    podman rm -f "$ctr" >/dev/null
    log "time: $what commit $(since "$t") s"
}

in_image() { podman run --rm --net=none --entrypoint "$2" "$1" "${@:3}"; }

report() {
    local v
    # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
    v=$(in_image "$IMAGE" dpkg-query -W -f='${Version}' ceph-osd)
    # shellcheck disable=SC2016
    log "$IMAGE: $(image_size "$IMAGE") (ceph-osd $v; $(in_image "$IMAGE" dpkg-query -W \
        -f='${Package} ' "${DBG_PKGS[@]}"))"
    log "$IMAGE_NODBG: $(image_size "$IMAGE_NODBG") (no -dbg packages)"
    log "the dbg layer adds $(podman history --format '{{.Size}}' "$IMAGE" | head -n 1) on top of $IMAGE_NODBG"
}

# ------------------------------------------------------------------ main
MIRROR=$(host_mirror)
mkdir -p "$CACHE"
if [ "$check_only" = 1 ]; then
    [ -f "$STAMP" ] && image_exists "$IMAGE" && image_exists "$IMAGE_NODBG" &&
        grep -qx "script=$(sha256sum "$SELF" | cut -d' ' -f1)" "$STAMP" &&
        grep -qx "mirror=$MIRROR" "$STAMP"
    exit $?
fi
[ "$(id -u)" = 0 ] || die "needs root (podman storage in /var/lib/containers, $CACHE_ROOT)"
ensure_tools
ensure_podman_conf

exec 8>"$CACHE/.lock"
flock -w 3600 8 || die "another image.sh $RELEASE holds $CACHE/.lock"

t=$(now)
VERSION=$(suite_version)
[ -n "$VERSION" ] || die "no ceph-osd in $SUITE at $MIRROR"
case "$VERSION" in "$MAJOR".*) ;; *) die "$SUITE has ceph-osd $VERSION, expected $MAJOR.x ($RELEASE)";; esac
log "$SUITE has ceph-osd $VERSION ($(since "$t") s to check)"
want=$(printf '%s\n' "script=$(sha256sum "$SELF" | cut -d' ' -f1)" "mirror=$MIRROR" \
    "suite=$SUITE" "version=$VERSION" "packages=${PKGS[*]}" "dbg=${DBG_PKGS[*]}")

if [ -f "$STAMP" ] && [ "$(grep -v '^built=' "$STAMP")" = "$want" ] &&
   image_exists "$IMAGE" && image_exists "$IMAGE_NODBG"; then
    log "fresh: $IMAGE and $IMAGE_NODBG (stamp $STAMP)"
    report
    exit 0
fi
if [ -f "$STAMP" ]; then
    log "stale or missing images: rebuilding ($(diff <(grep -v '^built=' "$STAMP") <(echo "$want") | grep '^[<>]' | tr '\n' ' '))"
else
    log "no stamp: building"
fi
rm -f "$STAMP"

if [ -f "$CACHE/base.tar" ] && [ "$(cat "$CACHE/base.stamp" 2>/dev/null)" = "$SUITE $MIRROR $(sha256sum "$SELF" | cut -d' ' -f1)" ]; then
    # the base of this suite, mirror and script is reused; apt-get upgrade runs in the next layer
    t=$(now)
    image_exists "$IMAGE_BASE" || podman import -q "$CACHE/base.tar" "$IMAGE_BASE" >/dev/null \
        || die "podman import failed"
    log "time: import $(since "$t") s (base.tar reused, no debootstrap)"
else
    build_base
    echo "$SUITE $MIRROR $(sha256sum "$SELF" | cut -d' ' -f1)" > "$CACHE/base.stamp"
fi
install_layer "$IMAGE_BASE" "$IMAGE_NODBG" ceph "${PKGS[@]}"
# shellcheck disable=SC2016
got=$(in_image "$IMAGE_NODBG" dpkg-query -W -f='${Version}' ceph-osd)
[ "$got" = "$VERSION" ] || die "$IMAGE_NODBG has ceph-osd $got, expected $VERSION"
install_layer "$IMAGE_NODBG" "$IMAGE" dbg "${DBG_PKGS[@]}"
in_image "$IMAGE_NODBG" sh -c '! ls /usr/lib/debug/.build-id/ 2>/dev/null | grep -q .' \
    || die "$IMAGE_NODBG holds debug symbols"
podman image prune -f >/dev/null 2>&1 || true   # the replaced images' layers
{ echo "$want"; echo "built=$(date -Is)"; } > "$STAMP"
log "built $IMAGE and $IMAGE_NODBG in $(since "$T0") s"
report
