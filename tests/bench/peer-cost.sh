#!/usr/bin/env bash
# Cost of another OSD tracer beside cephscope's tier 1 on the same test cluster, one tracer at a
# time (tests/e2e/fixture.sh up DIR, or tests/ceph/cluster.sh up DIR, makes the cluster). The
# other tracer is a binary given by path with its arguments; nothing of it lives in this tree.
# In ROUNDS rounds, the configurations' order rotated by one each round:
#   none        nothing attached;
#   tier1       cephscope with only the OSD collector, collectors.osd.detail never, the bluestore
#               layer off (BLUESTORE_LAYER=1: on);
#   peer        PEER_BINARY PEER_ARGS...;
#   empty-ours  an empty BPF program (bpftrace) at every function where tier 1 attached;
#   empty-peer  an empty BPF program at every function where the peer attached.
# The functions are found once, before the rounds, from the kernel's own list of the uprobes each
# tracer holds (bpftool perf show), so each empty program sits where that side's programs do and
# each side's cost above the bare hit shows. For each configuration and round, over one 4 KiB
# rados bench write of THREADS threads (--no-cleanup: the clean-up's deletes are OSD ops too; the
# pool is cleaned after the tracer has stopped):
#   - uprobe hits per OSD op (op_w + op_r + subop_w) and per primary op (op_w + op_r): the
#     run_cnt of the tracer's programs attached to ceph-osd against Ceph's counters (admin
#     socket perf dump) over the same write;
#   - BPF ns per hit and BPF us per size-3 client write (run_time_ns per primary op_w), of the
#     programs attached to ceph-osd and of every program the tracer loaded;
#   - the OSDs' CPU per client write (utime + stime of the ceph-osd processes) and IOPS, each
#     against "none" of the same round;
#   - the tracer's records against Ceph's op_w: for cephscope the write count of
#     cephscope_osd_op_seconds; for the peer the op_w lines it printed, or the write counts of
#     the summary it prints on SIGINT (both are read; a filter in PEER_ARGS makes it record fewer).
# Then, with perf installed, one more write per configuration under perf cpu-clock: the probe
# path's share of the OSDs' CPU samples (BPF programs and helpers, uprobe traps, the trace
# buffer bpf_printk writes to, ring-buffer wakeups).
# A benchmark: it prints a table and asserts nothing (MACHINE.md: noisy 2 cores). Needs root,
# bpftrace, bpftool, rados and ceph.
#   usage: CLUSTER_DIR=DIR tests/bench/peer-cost.sh PEER_BINARY [PEER_ARGS...]
#   In PEER_ARGS, @PIDS@ and @IDS@ stand for this cluster's OSD pids and ids, comma-separated
#   (for a tracer that takes them, so that it probes this cluster's OSDs only).
#   BUILD_DIR (default build) holds daemon/cephscope; ROUNDS (default 4) rounds of SECS (default
#   10) seconds; THREADS (default 16) rados bench threads; PEER_WAIT (default 600) seconds the
#   peer may take to attach (it may parse ceph-osd's DWARF first); PERF=0 skips the profiles;
#   BLUESTORE_LAYER=1 keeps the bluestore layer's probes in tier 1 (on in the default config).
set -euo pipefail
usage="usage: CLUSTER_DIR=DIR $0 PEER_BINARY [PEER_ARGS...]"
peer=${1:?$usage}
shift
peer_args=("$@")
cluster=${CLUSTER_DIR:?$usage}
build=${BUILD_DIR:-build}
rounds=${ROUNDS:-4}
secs=${SECS:-10}
threads=${THREADS:-16}
bluestore_layer=${BLUESTORE_LAYER:-0}
bin=$build/daemon/cephscope
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$bin" ] || { echo "no $bin: build first (BUILD_DIR)" >&2; exit 1; }
[ -x "$peer" ] || { echo "no executable $peer" >&2; exit 1; }
peer=$(readlink -f "$peer")
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
# shellcheck source=tests/bench/common.sh
source "$repo/tests/bench/common.sh"
bench_need bpftrace bpftool rados ceph readelf nm
# shellcheck source=tests/bench/osd_cluster.sh
source "$repo/tests/bench/osd_cluster.sh"
osd_cluster_load "$cluster"
# @PIDS@ and @IDS@ in PEER_ARGS stand for this cluster's OSD pids and ids, comma-separated
pid_list=$(IFS=,; echo "${osd_pids[*]}")
id_list=$(IFS=,; echo "${osd_ids[*]}")
for k in "${!peer_args[@]}"; do
  peer_args[k]=${peer_args[k]//@PIDS@/$pid_list}
  peer_args[k]=${peer_args[k]//@IDS@/$id_list}
done

bench_begin peer "$pool"

# The peer, its output in $work/peer.out
peer_uprobes=0
start_peer() {
  prog_ids > "$work/ids.before"
  "$peer" "${peer_args[@]}" > "$work/peer.out" 2> "$work/peer.err" &
  runner=$!
  peer_uprobes=$(wait_uprobes "$peer_uprobes" "${PEER_WAIT:-600}" "$peer" "$work/peer.err")
  note_programs
}

# SIGINT first: the peer prints its summary then and exits through exit(), which flushes its
# buffered output; stop_pid (common.sh) if it is still there after 10 s.
stop_peer() {
  local _
  kill -INT "$runner" 2> /dev/null || true
  for _ in $(seq 100); do
    ps -p "$runner" -o stat= 2> /dev/null | grep -qv '^Z' || break
    sleep 0.1
  done
  stop_runner
}

start_config() { # NAME
  case $1 in
    none) runner= ;;
    tier1) start_tier1 ;;
    peer) start_peer ;;
    empty-ours) start_empty ours ;;
    empty-peer) start_empty peer ;;
  esac
}
stop_config() { # NAME
  case $1 in
    none) ;;
    peer) stop_peer ;;
    *) stop_runner ;;
  esac
}


# The op_w records the peer wrote to $work/peer.out: per-op lines, or its summary's write counts
# ("OSD N", "@write:", then "RANGE | COUNT | ..." lines until "@read:").
peer_records() {
  awk '/ op_w / { n++ } /^@write:/ { w = 1; next } /^@read:/ || /^OSD / { w = 0 }
    w && NF > 2 && $0 ~ /\|/ { split($0, f, "|"); s += f[2] } END { printf "%d\n", n + s }' "$work/peer.out"
}

# What the running tracer's programs do on a hit besides reading, from their translated code:
# how many of its programs call bpf_trace_printk (bpf_printk: a formatted write to the kernel's
# trace buffer on every call) and how many output to a ring buffer or perf buffer (a record per
# call, and a wake-up of the reader unless the program asks for none).
helpers_used() {
  local id printk=0 ring=0 perfbuf=0 total=0 x
  while read -r id; do
    x=$(bpftool prog dump xlated id "$id" 2> /dev/null || true)
    total=$((total + 1))
    grep -q 'bpf_trace_printk' <<< "$x" && printk=$((printk + 1))
    grep -Eq 'bpf_ringbuf_(submit|output)' <<< "$x" && ring=$((ring + 1))
    grep -q 'bpf_perf_event_output' <<< "$x" && perfbuf=$((perfbuf + 1))
  done < "$work/osd"
  echo "$total programs on ceph-osd; $printk call bpf_trace_printk, $ring write a ring buffer, $perfbuf a perf buffer"
}

# --- the sites each side probes ------------------------------------------------------------

echo "kernel $(uname -r), $(nproc) CPUs; ceph-osd $osd_bin ($(ceph --version | awk '{ print $3 }')), ${#osd_ids[@]} OSDs, pool $pool size ${CEPHSCOPE_CEPH_POOL_SIZE:-?}"
echo "peer: $peer ${peer_args[*]}"
# cephscope attaches to every ceph-osd on the host, and a uprobe on a binary without a pid (as
# bpftrace's, whose -p does not narrow uprobes) runs in every process of it: other OSDs' ops
# would count as hits here while only this cluster's are counted as ops.
others=$(pgrep -x ceph-osd | grep -cvxF -f <(printf '%s\n' "${osd_pids[@]}") || true)
if [ "${others:-0}" -gt 0 ]; then
  echo "  warning: $others ceph-osd processes of other clusters run on this host: hits per op and" \
    "BPF per write include their ops while they write; BPF ns per hit does not depend on it"
fi
start_tier1
note_sites ours
helpers_used > "$work/helpers.tier1"
stop_runner
start_peer
note_sites peer
helpers_used > "$work/helpers.peer"
stop_peer
clean_pool
for side in ours peer; do
  echo "  $side probes ceph-osd at $(wc -l < "$work/targets.$side") functions: $(probe_list "$work/targets.$side" | sed "s|uprobe:$osd_bin:||g")"
done
for side in tier1 peer; do
  echo "  $side: $(cat "$work/helpers.$side")"
done

# --- the rounds ----------------------------------------------------------------------------

configs=(none tier1 peer empty-ours empty-peer)
echo "== $rounds rotated rounds of $secs s, 4 KiB writes, $threads threads (kernel.bpf_stats_enabled=1 throughout)"
for i in $(seq "$rounds"); do
  for k in $(seq 0 $((${#configs[@]} - 1))); do
    what=${configs[$(((k + i - 1) % ${#configs[@]}))]}
    start_config "$what"
    r0=0; t0=0; b0=0; rec0=0
    if [ -n "$runner" ]; then
      read -r r0 t0 < <(prog_totals "$work/osd")
      read -r _ b0 < <(prog_totals "$work/all")
    fi
    [ "$what" = tier1 ] && rec0=$(tier1_writes)
    read -r w0 rd0 s0 < <(osd_ops)
    read -r writes iops cpu < <(bench)
    read -r w1 rd1 s1 < <(osd_ops)
    r1=0; t1=0; b1=0; rec1=0
    if [ -n "$runner" ]; then
      read -r r1 t1 < <(prog_totals "$work/osd")
      read -r _ b1 < <(prog_totals "$work/all")
    fi
    [ "$what" = tier1 ] && rec1=$(tier1_writes)
    stop_config "$what"
    [ "$what" = peer ] && rec1=$(peer_records)
    clean_pool
    opw=$((w1 - w0)) opr=$((rd1 - rd0)) subw=$((s1 - s0))
    if [ "$opw" -le 0 ] || [ "${writes:-0}" -le 0 ]; then
      echo "no writes in round $i ($what): writes ${writes:-0}, op_w $opw: is $cluster healthy?" >&2
      exit 1
    fi
    # hits/OSD op, hits/primary op, ns/hit, us/write (osd programs), us/write (all), records, op_w, iops, cpu
    awk -v r=$((r1 - r0)) -v t=$((t1 - t0)) -v b=$((b1 - b0)) -v w="$opw" -v rd="$opr" -v s="$subw" \
      -v rec=$((rec1 - rec0)) -v iops="$iops" -v cpu="$cpu" 'BEGIN {
      printf "%.3f %.3f %.0f %.2f %.2f %d %d %s %s\n", r / (w + rd + s), r / (w + rd), r ? t / r : 0,
        t / w / 1000, b / w / 1000, rec, w, iops, cpu }' > "$work/row"
    cat "$work/row" >> "$work/rounds.$what"
    read -r hpo hpp nph upw upa rec _ _ _ < "$work/row"
    printf '  round %d %-10s %6s IOPS, OSD CPU %7s us/write; %6s hits/OSD op, %6s hits/primary op, %6s ns/hit, %6s us/write (every program it loaded %s); op_w %d%s\n' \
      "$i" "$what" "$iops" "$cpu" "$hpo" "$hpp" "$nph" "$upw" "$upa" "$opw" \
      "$(case $what in tier1 | peer) echo ", its records $rec" ;; esac)"
    echo "$i $what $iops $cpu" >> "$work/iops"
  done
done

# --- the table -----------------------------------------------------------------------------

col() { awk -v c="$2" '{ print $c }' "$work/rounds.$1"; }
# per round: IOPS and OSD CPU of WHAT against none's of the same round
paired() { # WHAT
  awk -v w="$1" '$2 == "none" { ni[$1] = $3; nc[$1] = $4 } $2 == w { i[$1] = $3; c[$1] = $4 }
    END { for (r in i) if (ni[r] > 0) print i[r] / ni[r], c[r] - nc[r] }' "$work/iops"
}
echo
echo "== medians over $rounds rounds (BPF figures: programs attached to ceph-osd; us per write = per primary op_w, one size-${CEPHSCOPE_CEPH_POOL_SIZE:-3} client write)"
printf '| %-10s | %-15s | %-18s | %-11s | %-15s | %-22s | %-15s | %-16s | %-22s |\n' configuration "hits per OSD op" \
  "hits per primary op" "BPF ns/hit" "BPF us/write" "every program, us/write" "IOPS vs none" "OSD CPU us/write vs none" "records / Ceph op_w"
echo "|---|---|---|---|---|---|---|---|---|"
for what in "${configs[@]}"; do
  if [ "$what" = none ]; then
    printf '| %-10s | - | - | - | - | - | 1 | %s us | - |\n' none "$(col none 9 | median)"
    continue
  fi
  recs=-
  case $what in
    tier1 | peer)
      recs=$(awk '{ r += $6; w += $7 } END { printf "%d / %d (%s)", r, w, r == w ? "match" : "differ" }' "$work/rounds.$what") ;;
  esac
  printf '| %-10s | %s | %s | %s | %s | %s | %s | %s us | %s |\n' "$what" "$(col "$what" 1 | median)" \
    "$(col "$what" 2 | median)" "$(col "$what" 3 | median)" "$(col "$what" 4 | median)" "$(col "$what" 5 | median)" \
    "$(paired "$what" | awk '{ print $1 }' | median)" "$(paired "$what" | awk '{ print $2 }' | median)" "$recs"
done
# each side above the bare hit at its own functions, paired by round
above() { # WHAT EMPTY
  paste -d' ' <(col "$1" 3) <(col "$2" 3) | awk '{ print $1 - $2 }' | median
}
above_write() { # WHAT EMPTY
  paste -d' ' <(col "$1" 4) <(col "$2" 4) | awk '{ print $1 - $2 }' | median
}
echo "  tier 1 above an empty program at its functions: $(above tier1 empty-ours) ns per hit, $(above_write tier1 empty-ours) us per client write"
echo "  the peer above an empty program at its functions: $(above peer empty-peer) ns per hit, $(above_write peer empty-peer) us per client write"

# --- the probe path's share of the OSDs' CPU ----------------------------------------------

if [ "${PERF:-1}" != 1 ] || ! command -v perf > /dev/null; then exit 0; fi
echo
echo "== the probe path's share of the OSDs' CPU samples (perf cpu-clock, one $secs s write per configuration)"
for what in "${configs[@]}"; do
  start_config "$what"
  perf record -q -e cpu-clock -F 2999 -a -o "$work/perf.data" -- sleep "$secs" > /dev/null 2>&1 &
  perf_pid=$!
  bench > /dev/null
  wait "$perf_pid" || true
  stop_config "$what"
  clean_pool
  share=$(perf report -i "$work/perf.data" --no-children --pid="$(IFS=,; echo "${osd_pids[*]}")" --percentage relative \
    --sort symbol --stdio 2> /dev/null | awk '
    $2 == "[k]" && $3 ~ /^(bpf_|____bpf_|__bpf_|uprobe_|__uprobe_|handle_swbp|find_active_uprobe|find_uprobe|arch_uprobe|htab_|pcpu_freelist|copy_from_user_nofault|ktime_get_mono_fast|trace_vbprintk|trace_printk|__trace_bprintk|bprintf|irq_work|perf_trace_run_bpf)/ {
      sub("%", "", $1); s += $1 }
    END { printf "%.2f", s }')
  echo "  $what: $share% of the OSDs' CPU samples"
done
