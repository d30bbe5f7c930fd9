#!/usr/bin/env bash
# What the syscall collector's hook costs the whole node, per syscall, end to end (the
# syscall's wall time, so the kernel's dispatch is in it, not only the BPF run time): dd
# copying /dev/zero to /dev/null one byte at a time (a read and a write per byte), with no
# daemon, with `collectors.syscall.hook: tracepoint` and with `hook: fentry`, in alternating
# rounds. Two workloads:
#   other    dd is not tracked and read/write are not traced (the default set): what every
#            process of the node pays for the collector's presence;
#   tracked  dd is tracked and read/write are traced: the full path of a traced call.
# Also each program's BPF run time per run (kernel.bpf_stats_enabled). A hook the kernel
# refuses is reported with the daemon's reason and skipped. Runs on the host, or in a guest of
# the kernel matrix: tests/vm/cephscope-vm run 6.1 -- tests/bench/syscall-hooks.sh BUILD_DIR
# (figures under qemu's TCG are slower throughout; compare ratios only).
# A benchmark: it prints figures and asserts nothing about time.
#   usage: tests/bench/syscall-hooks.sh [BUILD_DIR] [BYTES] [ROUNDS]
set -euo pipefail
build=${1:-build}
bytes=${2:-1000000}
rounds=${3:-3}
bin=$build/daemon/cephscope
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"
bench_begin syscall-hooks
cp /bin/dd "$work/dd_tracked"

# GET PATH from the daemon (curl where installed; the guests have none)
fetch() {
  if command -v curl > /dev/null; then
    curl -sf "localhost:$port$1"
    return
  fi
  exec 3<> "/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$1" >&3
  sed '1,/^\r$/d' <&3
  exec 3<&-
}

# Starts the daemon with HOOK and the syscalls of WORKLOAD; returns 1 (the reason in
# $work/why) when the collector did not come up with that hook.
start_daemon() { # HOOK WORKLOAD
  local syscalls="" up
  [ "$2" = tracked ] && syscalls=", syscalls: [read, write]"
  cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, ceph_osd: false, rados_clients: false, matchers: [{comm: "^dd_tracked$"}]}
collectors: {syscall: {hook: $1$syscalls}, block: {enabled: false}, vfs: {enabled: false},
  kclient: {enabled: false}, osd: {enabled: false}, rados: {enabled: false}}
CONF
  "$bin" --config "$work/cephscope.yaml" > /dev/null 2> "$work/daemon.log" &
  runner=$!
  for _ in $(seq 300); do fetch /readyz > /dev/null 2>&1 && break; sleep 0.1; done
  up=$(fetch /metrics | grep "^cephscope_collector_up{collector=\"syscall\",hook=\"$1\"} 1" || true)
  if [ -z "$up" ]; then
    grep -o 'collector syscall is unavailable.*' "$work/daemon.log" | head -1 > "$work/why" || true
    stop_runner
    return 1
  fi
}

# program -> "runs ns" from /metrics
snapshot() {
  fetch /metrics | awk '
    /^cephscope_bpf_program_runs_total/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); runs[p] = $NF }
    /^cephscope_bpf_program_run_seconds_total/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); ns[p] = $NF * 1e9 }
    END { for (p in runs) printf "%s %d %d\n", p, runs[p], ns[p] }' | sort
}

# ns per syscall of one dd run (2 syscalls per byte)
copy_ns() { # PROGRAM
  local t0 t1
  t0=$(date +%s%N)
  "$1" if=/dev/zero of=/dev/null bs=1 count="$bytes" status=none
  t1=$(date +%s%N)
  awk -v t=$((t1 - t0)) -v n=$((2 * bytes)) 'BEGIN { printf "%.1f", t / n }'
}

echo "kernel $(uname -r), $(nproc) CPUs, dd of $bytes bytes (2 syscalls per byte), $rounds rounds"
copy_ns /bin/dd > /dev/null  # warm-up: the first run pays dd's and the caches' first touches
declare -A sum count skipped
for r in $(seq "$rounds"); do
  # alternate the order of the hooks between rounds
  hooks="none tracepoint fentry"
  ((r % 2)) || hooks="fentry tracepoint none"
  for workload in other tracked; do
    prog=/bin/dd
    [ "$workload" = tracked ] && prog=$work/dd_tracked
    for hook in $hooks; do
      [ -n "${skipped[$hook]:-}" ] && continue
      if [ "$hook" != none ]; then
        if ! start_daemon "$hook" "$workload"; then
          skipped[$hook]=$(cat "$work/why")
          skipped[$hook]=${skipped[$hook]:-the collector did not come up}
          echo "  $hook: not available here: ${skipped[$hook]}"
          continue
        fi
        snapshot > "$work/before"
      fi
      ns=$(copy_ns "$prog")
      echo "  round $r, $workload, $hook: $ns ns per syscall"
      sum[$workload,$hook]=$(awk -v a="${sum[$workload,$hook]:-0}" -v b="$ns" 'BEGIN { print a + b }')
      count[$workload,$hook]=$((${count[$workload,$hook]:-0} + 1))
      if [ "$hook" != none ]; then
        snapshot > "$work/after"
        stop_runner
        join "$work/before" "$work/after" | awk -v w="$workload" -v h="$hook" '{ d = $4 - $2; t = $5 - $3;
          if (d > 0) printf "    %-16s %10d runs %8.1f ns per run (BPF run time)\n", $1, d, t / d }'
      fi
    done
  done
done
echo "== mean ns per syscall, and above no daemon"
for workload in other tracked; do
  base=$(awk -v s="${sum[$workload,none]}" -v c="${count[$workload,none]}" 'BEGIN { print s / c }')
  for hook in none tracepoint fentry; do
    [ -n "${count[$workload,$hook]:-}" ] || continue
    awk -v s="${sum[$workload,$hook]}" -v c="${count[$workload,$hook]}" -v b="$base" -v w="$workload" -v h="$hook" \
      'BEGIN { m = s / c; printf "  %-8s %-11s %8.1f ns  (%+.1f ns)\n", w, h, m, m - b }'
  done
done
