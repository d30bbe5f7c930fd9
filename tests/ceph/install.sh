#!/usr/bin/env bash
# install.sh - install Debian's Ceph (16.2, Pacific) and its debug symbols for the e2e tests.
#
#   install.sh [--no-dbg] [--check]
#
# Installs ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-rbd (clients for the
# rados collector's tests) and the debug packages ceph-osd-dbg
# librados2-dbg librbd1-dbg ceph-common-dbg (DWARF in /usr/lib/debug/.build-id/), each group only when
# something in it is missing. Idempotent: a second run does nothing and says so.
#   --no-dbg   skip the debug packages (1.2 GB download, 1.2 GB installed)
#   --check    install nothing; exit 0 when everything is installed, 1 otherwise
# Prints the time taken by apt-get update, the package install, and the debug packages'
# download and install, separately. Needs root when something must be installed.
# Env: APT_LOCK_TIMEOUT (s, default 600) how long to wait for another apt/dpkg to finish.
set -euo pipefail

PKGS=(ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-rbd)
DBG_PKGS=(ceph-osd-dbg librados2-dbg librbd1-dbg ceph-common-dbg)
APT_LOCK_TIMEOUT=${APT_LOCK_TIMEOUT:-600}

log() { printf '[install.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }

with_dbg=1
check_only=0
for arg in "$@"; do
    case "$arg" in
        --no-dbg) with_dbg=0 ;;
        --check) check_only=1 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (see --help)" ;;
    esac
done

missing() {     # missing PKG... -> prints the packages that are not fully installed
    local p
    for p in "$@"; do
        if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != "ii " ]; then
            echo "$p"
        fi
    done
}

mapfile -t miss < <(missing "${PKGS[@]}")
dbg_miss=()
if [ "$with_dbg" = 1 ]; then
    mapfile -t dbg_miss < <(missing "${DBG_PKGS[@]}")
fi

if [ ${#miss[@]} -eq 0 ] && [ ${#dbg_miss[@]} -eq 0 ]; then
    log "already installed: ${PKGS[*]}$([ "$with_dbg" = 1 ] && echo " ${DBG_PKGS[*]}") ($(dpkg-query -W -f='${Version}' ceph-osd))"
    log "time: package install 0.0 s (nothing to do)"
    [ "$with_dbg" = 1 ] && log "time: dbg download 0.0 s, dbg install 0.0 s (nothing to do)"
    exit 0
fi
if [ "$check_only" = 1 ]; then
    log "missing: ${miss[*]} ${dbg_miss[*]}"
    exit 1
fi
[ "$(id -u)" = 0 ] || die "needs root to install: ${miss[*]} ${dbg_miss[*]}"

export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -y -q -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" -o Dpkg::Use-Pty=0)

t=$(now)
timeout $((APT_LOCK_TIMEOUT + 300)) "${APT[@]}" update >&2 || die "apt-get update failed"
log "time: apt-get update $(since "$t") s"

if [ ${#miss[@]} -gt 0 ]; then
    log "installing: ${miss[*]}"
    t=$(now)
    timeout $((APT_LOCK_TIMEOUT + 900)) "${APT[@]}" install --no-install-recommends "${miss[@]}" >&2 \
        || die "apt-get install ${miss[*]} failed"
    log "time: package install $(since "$t") s"
else
    log "time: package install 0.0 s (already installed: ${PKGS[*]})"
fi

if [ ${#dbg_miss[@]} -gt 0 ]; then
    # Download and install separately so both times are visible (download dominates on a slow mirror).
    log "downloading: ${dbg_miss[*]}"
    t=$(now)
    timeout $((APT_LOCK_TIMEOUT + 1800)) "${APT[@]}" install --no-install-recommends --download-only "${dbg_miss[@]}" >&2 \
        || die "download of ${dbg_miss[*]} failed"
    log "time: dbg download $(since "$t") s"
    t=$(now)
    timeout $((APT_LOCK_TIMEOUT + 900)) "${APT[@]}" install --no-install-recommends "${dbg_miss[@]}" >&2 \
        || die "apt-get install ${dbg_miss[*]} failed"
    log "time: dbg install $(since "$t") s"
elif [ "$with_dbg" = 1 ]; then
    log "time: dbg download 0.0 s, dbg install 0.0 s (already installed: ${DBG_PKGS[*]})"
fi

mapfile -t still < <(missing "${PKGS[@]}" "${dbg_miss[@]}")
[ ${#still[@]} -eq 0 ] || die "still missing after install: ${still[*]}"
log "installed: ceph $(dpkg-query -W -f='${Version}' ceph-osd)"
