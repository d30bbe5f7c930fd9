#!/usr/bin/env bash
# container-smoke.sh - check a container-cluster.sh cluster the way later tests will use it.
#
#   container-smoke.sh DIR      (DIR/env written by container-cluster.sh up)
#
# HEALTH_OK and 3 OSDs up and in, through the release's own CLI; for each OSD: its host pid
# runs ceph-osd, in another pid and mount namespace than the host's (/proc/1/ns, or this
# shell's when pid 1's are not readable), with no
# --fsid on its command line; `perf dump` through the host-side admin socket path (the host's
# `ceph --admin-daemon` when it is installed, else from inside the container); then a 5 s
# rados bench of 4 KiB writes from inside the mon's container against the size-3 pool.
set -euo pipefail

log() { printf '[container-smoke.sh] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[ $# -eq 1 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ -f "$1/env" ] || die "$1/env missing (container-cluster.sh up RELEASE $1 first)"
# shellcheck disable=SC1091
. "$1/env"
read -r -a CLI <<< "$CEPHSCOPE_CEPH_CLI"
read -r -a RADOS <<< "$CEPHSCOPE_CEPH_RADOS"
log "$CEPHSCOPE_CEPH_RELEASE: $CEPHSCOPE_CEPH_VERSION, fsid $CEPHSCOPE_CEPH_FSID"

h=$(timeout 60 "${CLI[@]}" health) || die "ceph health failed"
[ "$h" = HEALTH_OK ] || die "health is '$h': $(timeout 60 "${CLI[@]}" health detail 2>&1)"
stat=$(timeout 60 "${CLI[@]}" osd stat -f json) || die "ceph osd stat failed"
python3 -c '
import json, sys
s = json.loads(sys.argv[1])
sys.exit(0 if s["num_osds"] == s["num_up_osds"] == s["num_in_osds"] == 3 else 1)' "$stat" \
    || die "not 3 OSDs up and in: $stat"
log "ok: HEALTH_OK, 3 OSDs up and in"

# the host's namespaces: pid 1's, or this shell's where pid 1's are not readable (a sandbox
# without ptrace rights over pid 1 sees "Permission denied"); this shell runs outside podman
ref=1
readlink /proc/1/ns/pid >/dev/null 2>&1 || ref=$$
host_pidns=$(readlink "/proc/$ref/ns/pid") || die "cannot read /proc/$ref/ns/pid"
host_mntns=$(readlink "/proc/$ref/ns/mnt") || die "cannot read /proc/$ref/ns/mnt"
log "host namespaces (from /proc/$ref): $host_pidns $host_mntns"
for id in $CEPHSCOPE_CEPH_OSD_IDS; do
    pv=CEPHSCOPE_CEPH_OSD_${id}_PID av=CEPHSCOPE_CEPH_OSD_${id}_ASOK cv=CEPHSCOPE_CEPH_OSD_${id}_CONTAINER
    pid=${!pv} asok=${!av} ctr=${!cv}
    [[ -n "$pid" && -d /proc/$pid ]] || die "osd.$id: host pid '$pid' is not running"
    [ "$(cat "/proc/$pid/comm")" = ceph-osd ] || die "osd.$id: pid $pid is $(cat "/proc/$pid/comm")"
    ns=$(readlink "/proc/$pid/ns/pid")
    [ "$ns" != "$host_pidns" ] || die "osd.$id (pid $pid) is in the host's pid namespace $ns"
    [ "$(readlink "/proc/$pid/ns/mnt")" != "$host_mntns" ] || die "osd.$id (pid $pid) is in the host's mount namespace"
    argv=$(tr '\0' ' ' < "/proc/$pid/cmdline")
    case " $argv" in *" --fsid"*|*fsid=*) die "osd.$id: fsid on the command line: $argv";; esac
    [ -S "$asok" ] || die "osd.$id: no admin socket at $asok"
    if command -v ceph >/dev/null; then
        how="host $(ceph --version | awk '{print $3}') ceph --admin-daemon"
        dump=$(timeout 30 ceph --admin-daemon "$asok" perf dump) || die "osd.$id: $how $asok perf dump failed"
    else
        how="podman exec $ctr ceph --admin-daemon"
        dump=$(timeout 30 podman exec "$ctr" ceph --admin-daemon "/var/run/ceph/${asok##*/}" perf dump) \
            || die "osd.$id: $how perf dump failed"
    fi
    ops=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["osd"]["op_w"], d["osd"]["op_w_latency"]["avgcount"])' "$dump") \
        || die "osd.$id: perf dump has no osd.op_w"
    log "ok: osd.$id pid $pid ($ns, $ctr), argv: $argv; perf dump via $how: op_w $ops"
done

pool=$CEPHSCOPE_CEPH_POOL
[ "$(timeout 60 "${CLI[@]}" osd pool get "$pool" size)" = "size: 3" ] || die "pool $pool is not of size 3"
out=$(timeout 120 "${RADOS[@]}" -p "$pool" bench 5 write -b 4096 -t 16 --no-cleanup 2>&1) \
    || die "rados bench failed: $(tail -n 5 <<< "$out")"
log "ok: rados bench 4 KiB write 5 s, 16 threads, pool $pool (size 3), from container $CEPHSCOPE_CEPH_MON_CONTAINER: $(awk -F: '/^Average IOPS/ {printf "IOPS%s, ", $2} /^Average Latency/ {printf "latency%s s", $2}' <<< "$out")"
timeout 300 "${RADOS[@]}" -p "$pool" cleanup >/dev/null 2>&1 || die "rados cleanup failed"
log "PASS"
