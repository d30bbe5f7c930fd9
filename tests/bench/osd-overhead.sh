#!/usr/bin/env bash
# Cost of the OSD stage collector on a running test cluster (tests/ceph/cluster.sh up DIR):
#   1. BPF run time and uprobe hits per client write, from the kernel's own accounting
#      (kernel.bpf_stats_enabled=1), over one 4 KiB rados bench write;
#   2. rados bench 4 KiB write IOPS and OSD CPU per client write, without and with the daemon,
#      alternating (without, with) PAIRS times; the median of the with/without ratios, min, max.
# A benchmark: it prints figures and asserts nothing about time (MACHINE.md: noisy 2 cores).
#   usage: tests/bench/osd-overhead.sh BUILD_DIR CLUSTER_DIR [PAIRS] [SECONDS]
#   BLUESTORE_STAGES=false measures the collector without its BlueStore probes (P4-P6);
#   THREADS=N sets rados bench -t (default 16; 1 keeps the OSDs off full CPU, so BPF run
#   time is less inflated by preemption).
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR CLUSTER_DIR [PAIRS] [SECONDS]}
cluster=${2:?usage: $0 BUILD_DIR CLUSTER_DIR [PAIRS] [SECONDS]}
pairs=${3:-5}
secs=${4:-10}
bin=$build/daemon/cephscope
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
# shellcheck disable=SC1091
source "$cluster/env"
pool=$CEPHSCOPE_CEPH_POOL
osd_pids="$CEPHSCOPE_CEPH_OSD_0_PID $CEPHSCOPE_CEPH_OSD_1_PID $CEPHSCOPE_CEPH_OSD_2_PID"

work=$(mktemp -d /tmp/cephscope-osd-bench-XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
daemon=
stop_daemon() {
  if [ -n "$daemon" ]; then
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
    daemon=
  fi
}
cleanup() {
  stop_daemon
  sysctl -qw kernel.bpf_stats_enabled="$old_stats"
  rados -p "$pool" cleanup >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, rados_clients: false}
collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: false},
  osd: {enabled: true, detail: ${DETAIL:-always}}}
CONF

# P1-P6 of docs/collectors/osd.md, or P1-P3 without the BlueStore stages
probes_per_osd=$([ "${BLUESTORE_STAGES:-true}" = false ] && echo 3 || echo 6)
start_daemon() {
  "$bin" --config "$work/cephscope.yaml" 2>> "$work/daemon.log" &
  daemon=$!
  for _ in $(seq 600); do
    n=$(curl -s "localhost:$port/metrics" 2>/dev/null | grep '^cephscope_probe_attached{' |
      grep 'collector="osd"' | grep 'reason="ok"' | grep -c ' 1$' || true)
    [ "${n:-0}" -ge $((probes_per_osd * 3)) ] && return 0
    sleep 0.2
  done
  echo "the osd probes did not attach; log:" >&2
  tail -20 "$work/daemon.log" >&2
  exit 1
}

# program -> "runs ns"
bpf_snapshot() {
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_runs_total\{collector="osd"/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); runs[p] = $NF }
    /^cephscope_bpf_program_run_seconds_total\{collector="osd"/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); ns[p] = $NF * 1e9 }
    END { for (p in runs) printf "%s %d %d\n", p, runs[p], ns[p] }' | sort
}

# Client writes of every ceph-osd on the host (op_w of each, via the admin socket that
# cluster.sh's layout puts at CONF_DIR/run/osd.N.asok): the probes are attached to every OSD
# process, another cluster's included, so hits are divided by all their writes.
host_op_w() {
  local total=0 pid conf id n
  for pid in $(pgrep -x ceph-osd); do
    conf=$(tr '\0' '\n' < "/proc/$pid/cmdline" | awk 'p { print; exit } $0 == "-c" { p = 1 }')
    id=$(tr '\0' '\n' < "/proc/$pid/cmdline" | awk 'p { print; exit } $0 == "-i" { p = 1 }')
    n=$(ceph --admin-daemon "$(dirname "$conf")/run/osd.$id.asok" perf dump 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["osd"]["op_w"])' 2>/dev/null || echo 0)
    total=$((total + n))
  done
  echo "$total"
}

# CPU ticks (utime + stime) of the three OSDs
osd_ticks() {
  local t=0
  for p in $osd_pids; do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
  done
  echo "$t"
}

# Runs one 4 KiB write bench; prints "ops iops cpu_us_per_op"
bench() {
  local c0 c1 out ops iops
  c0=$(osd_ticks)
  out=$(rados -p "$pool" bench "$secs" write -t "${THREADS:-16}" -b 4096 --no-cleanup 2>&1)
  c1=$(osd_ticks)
  rados -p "$pool" cleanup >/dev/null 2>&1 || true
  ops=$(awk '/^Total writes made/ { print $NF }' <<< "$out")
  iops=$(awk '/^Average IOPS/ { print $NF }' <<< "$out")
  awk -v o="$ops" -v i="$iops" -v d=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%d %s %.1f\n", o, i, d * 1e6 / hz / o }'
}

echo "== 1. BPF cost per client write ($secs s 4 KiB rados bench, 3 OSDs, pool size 3)"
start_daemon
bpf_snapshot > "$work/before"
w0=$(host_op_w)
read -r ops iops cpu < <(bench)
w1=$(host_op_w)
bpf_snapshot > "$work/after"
echo "  rados bench: $ops writes, $iops IOPS, OSD CPU $cpu us per client write (all 3 OSDs)"
echo "  client writes on all ceph-osd of the host (op_w): $((w1 - w0))"
join "$work/before" "$work/after" | awk -v ops="$((w1 - w0))" '
  { d = $4 - $2; t = $5 - $3; runs += d; ns += t
    if (d > 0) printf "  %-16s %9d hits %6.2f per client write %8.1f ns/hit\n", $1, d, d / ops, t / d }
  END { printf "  all probes: %.2f uprobe hits and %.2f us of BPF run time per client write (all its OSDs)\n", runs / ops, ns / ops / 1000 }'
if command -v perf > /dev/null; then
  # where the OSDs' CPU goes, sampled: the probe path's share (trap dispatch, BPF programs,
  # their map and user-memory helpers), less sensitive to other load than run times are
  perf record -q -e cpu-clock -F 2999 -a -o "$work/perf.data" -- sleep "$secs" &
  perf_pid=$!
  bench > /dev/null
  wait "$perf_pid" || true
  perf report -i "$work/perf.data" --no-children --pid="${osd_pids// /,}" --percentage relative \
    --sort symbol --stdio 2> /dev/null | awk '
    $2 == "[k]" && $3 ~ /^(bpf_prog_|uprobe_|__uprobe_|find_active_uprobe|find_uprobe|arch_uprobe|htab_|bpf_lru_|prealloc_lru|copy_from_user_nofault|bpf_probe_read|ktime_get_mono_fast|bpf_get_current)/ {
      sub("%", "", $1); s += $1 }
    END { printf "  probe path: %.2f%% of the OSDs\x27 CPU samples (perf, cpu-clock)\n", s }'
fi
stop_daemon

echo "== 2. IOPS without / with the daemon, $pairs alternating pairs of $secs s"
ratios=()
added=()
for i in $(seq "$pairs"); do
  read -r _ base bcpu < <(bench)
  start_daemon
  read -r _ with wcpu < <(bench)
  stop_daemon
  r=$(awk -v a="$with" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$r")
  added+=("$(awk -v a="$wcpu" -v b="$bcpu" 'BEGIN { printf "%.1f", a - b }')")
  echo "  pair $i: without $base IOPS ($bcpu us CPU/op), with $with IOPS ($wcpu us CPU/op), ratio $r"
done
median() { sort -n | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "median %.3f, min %.3f, max %.3f (%d pairs)", m, v[1], v[NR], NR }'; }
echo "  IOPS with/without: $(printf '%s\n' "${ratios[@]}" | median)"
echo "  added OSD CPU per client write, all 3 OSDs, us: $(printf '%s\n' "${added[@]}" | median)"
