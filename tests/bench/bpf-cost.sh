#!/usr/bin/env bash
# Prints the BPF run time per event of the syscall and block programs, from the kernel's
# own accounting (kernel.bpf_stats_enabled=1), for a tracked and an untracked workload.
# A benchmark: it prints figures and asserts nothing about time.
#   usage: tests/bench/bpf-cost.sh [BUILD_DIR] [WRITES]
set -euo pipefail
build=${1:-build}
writes=${2:-1000000}
bin=$build/daemon/cephscope
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }

work=$(mktemp -d "$PWD/$build/bench-XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  sysctl -qw kernel.bpf_stats_enabled="$old_stats"
  rm -rf "$work"
}
trap cleanup EXIT
sysctl -qw kernel.bpf_stats_enabled=1
cp /bin/dd "$work/bench_tracked"
cp /bin/dd "$work/bench_other"
cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, matchers: [{comm: "^bench_tracked$"}]}
CONF
"$bin" --config "$work/cephscope.yaml" 2> "$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 0.1; done

# program -> "runs ns" from /metrics
snapshot() {
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_runs_total/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); runs[p] = $NF }
    /^cephscope_bpf_program_run_seconds_total/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); ns[p] = $NF * 1e9 }
    END { for (p in runs) printf "%s %d %d\n", p, runs[p], ns[p] }' | sort
}

# Runs a command between two snapshots and prints per-program events and ns/event.
measure() {
  local title=$1
  shift
  snapshot > "$work/before"
  local start=$SECONDS
  "$@"
  local took=$((SECONDS - start))
  snapshot > "$work/after"
  echo "== $title ($took s)"
  join "$work/before" "$work/after" | awk '{ d = $4 - $2; t = $5 - $3; if (d > 0) printf "  %-22s %10d runs %8.1f ns/run\n", $1, d, t / d }'
}

wait_tracked() {
  for _ in $(seq 100); do
    curl -s "localhost:$port/metrics" | grep -q 'cephscope_target_info{process="bench_tracked"' && return 0
    sleep 0.05
  done
  echo "the tracked workload was not picked up" >&2
  exit 1
}

# Small writes to /dev/null: pure syscall events (dd issues one read and one write per block).
tracked_small_writes() {
  "$work/bench_tracked" if=/dev/zero of=/dev/null bs=64 count="$writes" status=none &
  local p=$!
  wait "$p"
}
echo "kernel $(uname -r), $(nproc) CPUs, $writes writes per run"
# Track first: a short run makes the daemon learn the name; the measured run starts tracked.
"$work/bench_tracked" if=/dev/zero of=/dev/null bs=64 count=1 status=none
sleep 1.5
measure "untracked: $writes reads + $writes writes of 64 B (filtered out at entry)" \
  "$work/bench_other" if=/dev/zero of=/dev/null bs=64 count="$writes" status=none
measure "tracked (exec-time pick-up): $writes reads + $writes writes of 64 B" tracked_small_writes
measure "tracked: 20000 direct 4 KiB writes to a file (syscall + block events)" \
  "$work/bench_tracked" if=/dev/zero of="$work/data" bs=4096 count=20000 oflag=direct status=none
