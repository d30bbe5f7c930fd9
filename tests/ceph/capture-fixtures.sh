#!/usr/bin/env bash
# capture-fixtures.sh - record real outputs of a running test cluster for the parser unit tests.
#
#   capture-fixtures.sh DIR OUT
#
# DIR is a cluster made by `cluster.sh up DIR`; OUT is usually tests/fixtures/ceph. Runs, in
# order, 4 KiB rados bench write (--no-cleanup), seq, rand, cleanup, then the same for 64 KiB,
# 16 threads, BENCH_SECONDS each (default 5), and saves every rados output unchanged plus the
# full `ceph --admin-daemon ... perf dump` of each OSD between the 4 KiB phases:
#   perf-dump-osd.N-0.json  before the 4 KiB write    perf-dump-osd.N-2.json  after seq
#   perf-dump-osd.N-1.json  after write, before seq   perf-dump-osd.N-3.json  after rand
# Nothing else may use the cluster meanwhile (the deltas must be the benches' alone).
set -euo pipefail

[ $# -eq 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
DIR=$(realpath -- "$1")
OUT=$(realpath -m -- "$2")
BENCH_SECONDS=${BENCH_SECONDS:-5}
# shellcheck source=/dev/null
source "$DIR/env"
mkdir -p "$OUT"
log() { printf '[capture-fixtures.sh] %s\n' "$*" >&2; }

R() { timeout 300 rados -c "$CEPH_CONF" -p "$CEPHSCOPE_CEPH_POOL" "$@"; }
snap() {    # snap N: perf dump of every OSD
    local id
    for id in $CEPHSCOPE_CEPH_OSD_IDS; do
        timeout 60 ceph --admin-daemon "$DIR/run/osd.$id.asok" perf dump > "$OUT/perf-dump-osd.$id-$1.json"
    done
}

R cleanup >/dev/null 2>&1 || true
R cleanup > "$OUT/rados-cleanup-empty.txt"   # prints nothing on an empty pool
snap 0
R bench "$BENCH_SECONDS" write -b 4096 -t 16 --no-cleanup > "$OUT/rados-bench-write-4k.txt"
snap 1
R bench "$BENCH_SECONDS" seq -t 16 > "$OUT/rados-bench-seq-4k.txt"
snap 2
R bench "$BENCH_SECONDS" rand -t 16 > "$OUT/rados-bench-rand-4k.txt"
snap 3
R cleanup > "$OUT/rados-cleanup-4k.txt"
R bench "$BENCH_SECONDS" write -b 65536 -t 16 --no-cleanup > "$OUT/rados-bench-write-64k.txt"
R bench "$BENCH_SECONDS" seq -t 16 > "$OUT/rados-bench-seq-64k.txt"
R bench "$BENCH_SECONDS" rand -t 16 > "$OUT/rados-bench-rand-64k.txt"
R cleanup > "$OUT/rados-cleanup-64k.txt"

# a failing bench: what rados prints for a pool that does not exist (stdout + stderr, exit code)
set +e
timeout 60 rados -c "$CEPH_CONF" -p no-such-pool bench 1 write > "$OUT/rados-bench-no-pool.txt" 2>&1
echo $? > "$OUT/rados-bench-no-pool.exit"
set -e

cp "$DIR/cluster.json" "$OUT/cluster.json"
{
    echo "ceph: $(ceph --version)"
    echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ), BENCH_SECONDS=$BENCH_SECONDS, $(nproc) CPUs"
    echo "cluster: $CEPHSCOPE_CEPH_DIR, OSDs $CEPHSCOPE_CEPH_OSD_IDS, pool $CEPHSCOPE_CEPH_POOL size $CEPHSCOPE_CEPH_POOL_SIZE"
} > "$OUT/CAPTURE-INFO.txt"
log "wrote $(find "$OUT" -maxdepth 1 -type f -newer "$DIR/env" | wc -l) files to $OUT"
