#!/usr/bin/env bash
# Compares the tier-1 OSD programs of two builds over the same ops: both daemons run at once on
# a test cluster's OSDs (tests/ceph/cluster.sh up DIR), each with only the OSD collector at
# `detail: never`, and each one's BPF run time per hit of osd_op_done and osd_subop_done is
# read from its own bpf_stats series over one 4 KiB rados bench write.
#
# Why both at once: run one after the other, the same build moves by 10-20% between runs on
# this shared machine, more than most changes to a program. On a hit the kernel runs the last
# attached program first: it finds the op's memory cold, the other one finds it warm. Each
# round therefore runs twice, the start order swapped, and the script prints both positions:
# "cold" is what a program costs on its own (the deployed case), "warm" what it costs once the
# op's lines are in the cache (its own maps, instructions and helper calls); B - A is the mean
# of the two positions' differences.
# A benchmark: it prints figures and asserts nothing about time (MACHINE.md: noisy 2 cores).
#   usage: tests/bench/osd-build-pair.sh BUILD_A BUILD_B CLUSTER_DIR [ROUNDS] [SECONDS]
#   e.g. a worktree of the base commit built in /work/build-base against build.
# CUT_B=1..4 runs B's programs cut short (CEPHSCOPE_BENCH_OSD_CUT, bpf/osd_events.bpf.h: 1 after
# the layout and scratch lookups, 2 after the op's memory is copied and the clock read, 3 before
# the fold, 4 before the histograms' updates), so that with A = B the pair splits a hit: what
# the cut-away part costs is A - B.
# Both daemons are scraped every SCRAPE seconds (default 15, Prometheus' usual interval) during
# each bench, as a Prometheus would: each scrape starts a new exemplar interval. Each round also
# prints the op records each daemon took per second, slow and exemplar (/debug/slow-ops' recorded
# and exemplar_records; a build without exemplars shows 0 for them).
set -euo pipefail
build_a=${1:?usage: $0 BUILD_A BUILD_B CLUSTER_DIR [ROUNDS] [SECONDS]}
build_b=${2:?usage: $0 BUILD_A BUILD_B CLUSTER_DIR [ROUNDS] [SECONDS]}
cluster=${3:?usage: $0 BUILD_A BUILD_B CLUSTER_DIR [ROUNDS] [SECONDS]}
rounds=${4:-3}
secs=${5:-10}
scrape=${SCRAPE:-15}
repo=$(cd "$(dirname "$0")/../.." && pwd)
for b in "$build_a" "$build_b"; do
  [ -x "$b/daemon/cephscope" ] || { echo "no $b/daemon/cephscope: build first" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
# shellcheck disable=SC1091
source "$cluster/env"
pool=$CEPHSCOPE_CEPH_POOL

# shellcheck source=tests/bench/common.sh
source "$repo/tests/bench/common.sh"
bench_begin osd-pair "$pool"
port_a=$port
port_b=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid_a=
pid_b=
stop_both() {
  local p
  for p in $pid_a $pid_b; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  pid_a=
  pid_b=
}
trap 'stop_both; bench_cleanup' EXIT

config() { # PORT
  cat <<CONF
listen: "127.0.0.1:$1"
log_level: warn
discovery: {scan_interval: 1s, rados_clients: false}
collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: false},
  kclient: {enabled: false}, osd: {enabled: true, detail: never}}
CONF
}
config "$port_a" > "$work/a.yaml"
config "$port_b" > "$work/b.yaml"

# Starts BUILD's daemon on PORT, its pid in the variable VAR, and waits for its 6 tier-1
# probes (2 per OSD).
start() { # VAR BUILD CONFIG PORT [CUT]
  local n
  CEPHSCOPE_BENCH_OSD_CUT=${5:-} "$2/daemon/cephscope" --config "$3" > /dev/null 2>> "$work/daemon.log" &
  printf -v "$1" '%s' $!
  for _ in $(seq 600); do
    n=$(curl -s "localhost:$4/metrics" | grep '^cephscope_probe_attached{' |
      grep 'collector="osd"' | grep 'reason="ok"' | grep -c ' 1$' || true)
    [ "${n:-0}" -ge 6 ] && return 0
    sleep 0.2
  done
  echo "the osd probes of $2 did not attach; log:" >&2
  tail -20 "$work/daemon.log" >&2
  exit 1
}

# "slow exemplar" records the daemon on PORT has taken so far
records() { # PORT
  curl -s "localhost:$1/debug/slow-ops" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d.get("recorded", 0), d.get("exemplar_records", 0))'
}

# "runs ns" of PROGRAM in the daemon on PORT
program() { # PORT PROGRAM
  curl -s "localhost:$1/metrics" | awk -v p="program=\"$2\"" '
    /^cephscope_bpf_program_runs_total\{/ && index($0, p) { r += $NF }
    /^cephscope_bpf_program_run_seconds_total\{/ && index($0, p) { t += $NF * 1e9 }
    END { printf "%d %d\n", r, t }'
}

programs="osd_op_done osd_subop_done"
echo "== tier 1 per hit, A = $build_a, B = $build_b${CUT_B:+ cut at $CUT_B}: $rounds rounds of two $secs s benches, 16 threads"
for i in $(seq "$rounds"); do
  for first in a b; do
    # the first started runs second on each hit (warm)
    if [ "$first" = a ]; then
      start pid_a "$build_a" "$work/a.yaml" "$port_a"
      start pid_b "$build_b" "$work/b.yaml" "$port_b" "${CUT_B:-}"
    else
      start pid_b "$build_b" "$work/b.yaml" "$port_b" "${CUT_B:-}"
      start pid_a "$build_a" "$work/a.yaml" "$port_a"
    fi
    for p in $programs; do
      echo "$(program "$port_a" "$p") $(program "$port_b" "$p")" > "$work/$p.before"
    done
    read -r sa0 ea0 < <(records "$port_a")
    read -r sb0 eb0 < <(records "$port_b")
    (while sleep "$scrape"; do
      curl -s "localhost:$port_a/metrics" > /dev/null
      curl -s "localhost:$port_b/metrics" > /dev/null
    done) &
    scraper=$!
    rados -p "$pool" bench "$secs" write -t 16 -b 4096 --no-cleanup > /dev/null 2>&1
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    read -r sa1 ea1 < <(records "$port_a")
    read -r sb1 eb1 < <(records "$port_b")
    awk -v i="$i" -v s="$secs" -v sa=$((sa1 - sa0)) -v ea=$((ea1 - ea0)) -v sb=$((sb1 - sb0)) \
      -v eb=$((eb1 - eb0)) 'BEGIN {
        printf "  round %d records/s    A %.1f slow %.1f exemplar, B %.1f slow %.1f exemplar\n",
          i, sa / s, ea / s, sb / s, eb / s }'
    for p in $programs; do
      read -r ra0 ta0 rb0 tb0 < "$work/$p.before"
      read -r ra1 ta1 < <(program "$port_a" "$p")
      read -r rb1 tb1 < <(program "$port_b" "$p")
      awk -v ra=$((ra1 - ra0)) -v ta=$((ta1 - ta0)) -v rb=$((rb1 - rb0)) -v tb=$((tb1 - tb0)) \
        -v first="$first" -v p="$p" -v i="$i" 'BEGIN {
          if (ra == 0 || rb == 0) { printf "  round %d %s: no hits\n", i, p; exit }
          a = (first == "a") ? "warm" : "cold"; b = (first == "a") ? "cold" : "warm"
          printf "  round %d %-15s A %s %5.0f ns/hit, B %s %5.0f ns/hit (%d hits)\n", i, p, a, ta / ra, b, tb / rb, ra }' |
        tee -a "$work/rows"
    done
    stop_both
    rados -p "$pool" cleanup > /dev/null 2>&1 || true
  done
done
# B - A is read over both positions: a null run (the same programs in A and B) still showed
# +110 ns cold and -120 ns warm, a bias of the pairing that cancels in the mean of the two.
echo "== mean ns per hit by position; B - A over both positions"
for p in $programs; do
  awk -v p="$p" '$3 == p {
      for (f = 4; f <= NF; f++) {
        if ($f == "A" || $f == "B") { sum[$f, $(f + 1)] += $(f + 2); n[$f, $(f + 1)]++ } } }
    END {
      for (k in n) mean[k] = sum[k] / n[k]
      ac = mean["A", "cold"]; aw = mean["A", "warm"]; bc = mean["B", "cold"]; bw = mean["B", "warm"]
      printf "  %-15s A cold %5.0f warm %5.0f; B cold %5.0f warm %5.0f; B - A %+5.0f ns\n",
        p, ac, aw, bc, bw, ((bc - ac) + (bw - aw)) / 2 }' "$work/rows"
done
