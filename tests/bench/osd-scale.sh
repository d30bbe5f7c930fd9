#!/usr/bin/env bash
# Tier 1 with the number of OSDs on one host: for each cluster size (default 3, 12 and 24 OSDs,
# tests/ceph/cluster.sh as series-budget.sh makes them; every OSD runs the same ceph-osd binary),
# cephscope's tier 1 alone (the OSD collector, detail never, the bluestore layer as
# BLUESTORE_LAYER says: 1, as the default config, or 0), whole and with its stage programs stopped
# after their reads of the op ("reads", CEPHSCOPE_BENCH_OSD_CUT=2: what the reads cost at each
# size), and an empty program (bpftrace) at the functions where tier 1 attached ("empty": what a
# bare hit costs at each size), started anew for each, in rotated order, watches ROUNDS rados
# bench writes each of SECS
# seconds, 4 KiB, THREADS threads, --no-cleanup (the pool cleaned after each, the tracer
# stopped first: the clean-up's deletes are OSD ops too). Per round, from bpf_stats of the programs
# attached to ceph-osd and Ceph's counters (admin sockets) over the same write: uprobe hits per
# OSD op (op_w + op_r + subop_w) and per primary op, BPF ns per hit, BPF us per client write (per
# primary op_w), and cephscope's client writes against Ceph's op_w, in all and per program. Prints
# each size's medians and the ratio of each figure to the smallest size's; asserts nothing.
#   usage: tests/bench/osd-scale.sh [BUILD_DIR] [OSD_COUNT...]
#   ROUNDS (default 5), SECS (default 10), THREADS (default 16), BLUESTORE_LAYER (default 1).
set -euo pipefail
build=$(realpath "${1:-build}")
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(3 12 24)
rounds=${ROUNDS:-5}
secs=${SECS:-10}
threads=${THREADS:-16}
bluestore_layer=${BLUESTORE_LAYER:-1}
bin=$build/daemon/cephscope
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
for tool in bpftool bpftrace rados ceph curl readelf nm; do
  command -v "$tool" > /dev/null || { echo "needs $tool" >&2; exit 1; }
done
for n in "${sizes[@]}"; do
  if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 3 ] || [ "$n" -gt 24 ]; then
    echo "an OSD count is 3..24 (pool size 3), not '$n'" >&2
    exit 1
  fi
done
others=$(pgrep -xc ceph-osd || true)
if [ "${others:-0}" -gt 0 ]; then
  echo "  warning: $others ceph-osd processes already run on this host; tier 1 attaches to them" \
    "too, and their ops while these write count as hits here" >&2
fi

# shellcheck source=tests/bench/common.sh
source "$repo/tests/bench/common.sh"
# shellcheck source=tests/bench/osd_cluster.sh
source "$repo/tests/bench/osd_cluster.sh"
bench_begin osd-scale
cluster=$work/cluster
pool=
cluster_down() {
  if [ -d "$cluster" ]; then "$repo/tests/ceph/cluster.sh" down "$cluster" > /dev/null 2>&1 || true; fi
}
# the tracer and the pool first (common.sh), then the cluster
trap 'bench_cleanup_and_cluster' EXIT
bench_cleanup_and_cluster() {
  stop_runner
  [ -z "$pool" ] || clean_pool
  cluster_down
  bench_cleanup
}

# Per-OSD counts of both sides, as suffix .0 or .1 (writes_by_osd)
snapshot() {
  cp "$work/osd_ops.each" "$work/osd_ops.each.$1"
  if [ -f "$work/tier1.each" ]; then cp "$work/tier1.each" "$work/tier1.each.$1"; else : > "$work/tier1.each.$1"; fi
}

# One round of configuration CFG at N OSDs: tier 1 started, one bench, stopped; appends
# "hits/OSD op, hits/primary op, ns/hit, us/write, its writes, op_w, IOPS" to rounds.N.CFG and
# "program hits/OSD op ns/hit" lines to progs.N.CFG.
one_round() { # N CFG ROUND
  local n=$1 cfg=$2 i=$3 r0 t0 r1 t1 rec0 rec1 w0 rd0 s0 w1 rd1 s1 writes iops opw opr subw hpo hpp nph upw rec
  if [ "$cfg" = empty ]; then
    start_empty ours
  else
    if [ "$cfg" = reads ]; then export CEPHSCOPE_BENCH_OSD_CUT=2; fi
    start_tier1
    unset CEPHSCOPE_BENCH_OSD_CUT
  fi
  read -r r0 t0 < <(prog_totals "$work/osd")
  prog_each "$work/osd" > "$work/each.0"
  rec0=$(tier1_writes)
  read -r w0 rd0 s0 < <(osd_ops)
  snapshot 0
  read -r writes iops _ < <(bench)
  read -r w1 rd1 s1 < <(osd_ops)
  read -r r1 t1 < <(prog_totals "$work/osd")
  prog_each "$work/osd" > "$work/each.1"
  rec1=$(tier1_writes)
  snapshot 1
  stop_runner
  clean_pool
  opw=$((w1 - w0)) opr=$((rd1 - rd0)) subw=$((s1 - s0))
  if [ "$opw" -le 0 ] || [ "${writes:-0}" -le 0 ]; then
    echo "no writes in round $i at $n OSDs ($cfg): writes ${writes:-0}, op_w $opw" >&2
    exit 1
  fi
  awk -v r=$((r1 - r0)) -v t=$((t1 - t0)) -v w="$opw" -v rd="$opr" -v s="$subw" -v rec=$((rec1 - rec0)) \
    -v iops="$iops" 'BEGIN { printf "%.3f %.3f %.0f %.2f %d %d %s\n", r / (w + rd + s), r / (w + rd),
      r ? t / r : 0, t / w / 1000, rec, w, iops }' >> "$work/rounds.$n.$cfg"
  join "$work/each.0" "$work/each.1" | awk -v ops=$((opw + opr + subw)) '{ d = $4 - $2
    printf "%s %.3f %.0f\n", $1, d / ops, d ? ($5 - $3) / d : 0 }' >> "$work/progs.$n.$cfg"
  read -r hpo hpp nph upw rec _ _ < <(tail -1 "$work/rounds.$n.$cfg")
  printf '  round %d %-5s %6s IOPS; %s hits/OSD op, %s hits/primary op, %s ns/hit, %s us/write; its writes %d, op_w %d\n' \
    "$i" "$cfg" "$iops" "$hpo" "$hpp" "$nph" "$upw" "$rec" "$opw"
  if [ "$cfg" = tier1 ] && [ "$rec" != "$opw" ]; then # reads: cut before it counts
    echo "  the OSDs where they differ:"
    writes_by_osd
    cp "$work/daemon.log" "$work/daemon.round-$n-$cfg-$i.log"
  fi
}

echo "kernel $(uname -r), $(nproc) CPUs; $rounds rounds of $secs s per size and configuration, 4 KiB writes, $threads threads; bluestore layer $bluestore_layer"
echo "configurations: tier1 (whole), reads (the stage programs stopped after their reads of the op: CEPHSCOPE_BENCH_OSD_CUT=2), empty (an empty program at tier 1's functions), rotated"
for n in "${sizes[@]}"; do
  echo "== $n OSDs"
  CEPH_OSDS=$n CEPH_BLOCK_SIZE=4G CEPH_OSD_MEMORY=$((768 << 20)) "$repo/tests/ceph/cluster.sh" up "$cluster" \
    > "$work/cluster-$n.log" 2>&1 || { tail -20 "$work/cluster-$n.log" >&2; exit 1; }
  osd_cluster_load "$cluster"
  start_tier1 # where it attaches, for the empty programs
  note_sites ours
  stop_runner
  configs=(tier1 reads empty)
  for i in $(seq "$rounds"); do
    for k in 0 1 2; do one_round "$n" "${configs[$(((i + k) % 3))]}" "$i"; done
  done
  cluster_down
done

col() { awk -v c="$2" '{ print $c }' "$work/rounds.$1"; }
echo
echo "== medians of $rounds rounds (BPF: the programs attached to ceph-osd; us per write = per primary op_w)"
echo "| OSDs | configuration | hits per OSD op | hits per primary op | BPF ns per hit | BPF us per client write | IOPS | its writes / Ceph op_w | ns per hit vs ${sizes[0]} OSDs |"
echo "|---|---|---|---|---|---|---|---|---|"
for cfg in tier1 reads empty; do
  base=
  for n in "${sizes[@]}"; do
    nph=$(col "$n.$cfg" 3 | median)
    [ -n "$base" ] || base=$nph
    recs=-
    [ "$cfg" = tier1 ] && recs=$(awk '{ r += $5; w += $6 } END { printf "%d / %d (%s)", r, w, r == w ? "match" : "differ" }' "$work/rounds.$n.$cfg")
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$cfg" "$(col "$n.$cfg" 1 | median)" \
      "$(col "$n.$cfg" 2 | median)" "$nph" "$(col "$n.$cfg" 4 | median)" "$(col "$n.$cfg" 7 | median)" "$recs" \
      "$(awk -v a="$nph" -v b="$base" 'BEGIN { printf "%.2f", b ? a / b : 0 }')"
  done
done
echo
echo "== where a hit's time goes at each size (medians of BPF ns per hit; the empty program at the same functions)"
echo "| OSDs | empty program | reads above it | tier 1 above it | tier 1 above its reads |"
echo "|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  read -r e r w < <(echo "$(col "$n.empty" 3 | median) $(col "$n.reads" 3 | median) $(col "$n.tier1" 3 | median)")
  awk -v n="$n" -v e="$e" -v r="$r" -v w="$w" 'BEGIN { printf "| %s | %.0f | %.0f | %.0f | %.0f |\n", n, e, r - e, w - e, w - r }'
done
echo
echo "== per program, medians of $rounds rounds (reads: the stage programs cut after their reads)"
echo "| OSDs | program | hits per OSD op | BPF ns per hit, whole | BPF ns per hit, reads |"
echo "|---|---|---|---|---|"
for n in "${sizes[@]}"; do
  awk '{ print $1 }' "$work/progs.$n.tier1" | sort -u | while read -r prog; do
    printf '| %s | %s | %s | %s | %s |\n' "$n" "$prog" \
      "$(awk -v p="$prog" '$1 == p { print $2 }' "$work/progs.$n.tier1" | median)" \
      "$(awk -v p="$prog" '$1 == p { print $3 }' "$work/progs.$n.tier1" | median)" \
      "$(awk -v p="$prog" '$1 == p { print $3 }' "$work/progs.$n.reads" | median)"
  done
done
