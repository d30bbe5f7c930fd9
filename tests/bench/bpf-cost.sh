#!/usr/bin/env bash
# Prints the BPF run time per event of the syscall and block programs, from the kernel's
# own accounting (kernel.bpf_stats_enabled=1), for a tracked and an untracked workload, each
# beside three floors on the same hooks in the same run (bpftrace, common.sh): an empty
# program, one that only asks whose event it is (which every program that filters on tracked
# processes must do), and one that only reads the clock (which every program that measures a
# latency must do). Needs bpftrace and bpftool.
# A benchmark: it prints figures and asserts nothing about time.
#   usage: tests/bench/bpf-cost.sh [BUILD_DIR] [PWRITES]
set -euo pipefail
# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"
build=${1:-build}
writes=${2:-1000000}
bin=$build/daemon/cephscope
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
bench_need bpftrace bpftool

work=$(mktemp -d "$(cd "$build" && pwd)/bench-XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
# Every line must run whatever the one before did (set -e applies here too).
cleanup() {
  local f
  stop_floors
  if [ -n "${daemon:-}" ]; then stop_pid "$daemon"; fi
  sysctl -qw kernel.bpf_stats_enabled="$old_stats"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # a signal exits through cleanup: no daemon left attached
sysctl -qw kernel.bpf_stats_enabled=1
python=$(readlink -f /usr/bin/python3)
cp "$python" "$work/bench_tracked"
cp "$python" "$work/bench_other"
cp /bin/dd "$work/dd_tracked"
cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, matchers: [{comm: "^bench_tracked$"}, {comm: "^dd_tracked$"}]}
CONF
"$bin" --config "$work/cephscope.yaml" 2>> "$work/daemon.log" &
daemon=$!
ready=0
for _ in $(seq 100); do curl -sf "localhost:$port/readyz" >/dev/null && { ready=1; break; }; sleep 0.1; done
if [[ $ready != 1 ]]; then
  echo "the daemon did not get ready:" >&2
  cat "$work/daemon.log" >&2
  exit 1
fi

# program -> "runs ns" from /metrics
snapshot() {
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_runs_total/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); runs[p] = $NF }
    /^cephscope_bpf_program_run_seconds_total/ { match($0, /program="[^"]*"/); p = substr($0, RSTART+9, RLENGTH-10); ns[p] = $NF * 1e9 }
    END { for (p in runs) printf "%s %d %d\n", p, runs[p], ns[p] }' | sort
}

# Runs a command between two snapshots and prints per-program events and ns/event; keeps
# "program runs ns/run" of the programs that ran in $work/ran.
measure() {
  local title=$1
  shift
  snapshot > "$work/before"
  local start=$SECONDS
  "$@"
  local took=$((SECONDS - start))
  snapshot > "$work/after"
  echo "== $title ($took s)"
  join "$work/before" "$work/after" | awk '{ d = $4 - $2; t = $5 - $3; if (d > 0) printf "%s %d %.1f\n", $1, d, t / d }' > "$work/ran"
  awk '{ printf "  %-22s %10d runs %8.1f ns/run\n", $1, $2, $3 }' "$work/ran"
}

# Waits until the daemon has learnt the tracked names (targets stay known for their TTL).
wait_tracked() {
  for _ in $(seq 100); do
    curl -s "localhost:$port/metrics" | grep -q 'cephscope_target_info{process="bench_tracked"' && return 0
    sleep 0.05
  done
  echo "the tracked workload was not picked up" >&2
  exit 1
}

# pwrite64 of 64 B to /dev/null in a loop: syscall events only, no IO.
pwrites() {
  "$1" -c "import os
fd = os.open('/dev/null', os.O_WRONLY)
b = b'x' * 64
for _ in range($writes): os.pwrite(fd, b, 0)"
}
direct_writes() {
  "$work/dd_tracked" if=/dev/zero of="$work/data" bs=4096 count=20000 oflag=direct status=none
}

# Runs a command under the daemon and the floors (common.sh); prints each program's ns/run,
# then each hook's floors and what each of the daemon's programs costs above them.
measure_with_floor() {
  local title=$1 probes=$2
  shift 2
  start_floors "$probes"
  snapshot_floors 0
  measure "$title" "$@"
  snapshot_floors 1
  floor_deltas
  stop_floors
  join "$work/empty.d" "$work/pid.d" | join - "$work/clock.d" |
    awk '{ printf "  floor %-25s empty %6.1f ns/run, pid alone %6.1f, clock alone %6.1f (%d runs)\n", $1, $3, $5, $7, $2 }'
  awk '{ print $1, $3 }' "$work/ran" | hook_of_program | sort | join - "$work/empty.d" |
    join - "$work/pid.d" | join - "$work/clock.d" |
    awk '$3 > 0 { printf "  %-22s above its hook\x27s empty program %+7.1f ns, above pid alone %+7.1f, above the clock alone %+7.1f\n", $2, $3 - $5, $3 - $7, $3 - $9 }'
}

echo "kernel $(uname -r), $(nproc) CPUs, $writes pwrites per run"
# Track first: a short run makes the daemon learn the name; the measured run starts tracked.
"$work/bench_tracked" -c 'import time; time.sleep(3)' &
sleeper=$!
wait_tracked
wait "$sleeper"
sys_floor='tracepoint:syscalls:sys_enter_pwrite64, tracepoint:syscalls:sys_exit_pwrite64'
measure_with_floor "untracked: $writes pwrite64 of 64 B (filtered out at entry and exit)" \
  "$sys_floor" pwrites "$work/bench_other"
measure_with_floor "tracked: $writes pwrite64 of 64 B" "$sys_floor" pwrites "$work/bench_tracked"
block_floor='tracepoint:block:block_bio_queue, tracepoint:block:block_getrq, tracepoint:block:block_rq_insert, tracepoint:block:block_rq_issue, tracepoint:block:block_rq_complete'
# A first short run puts the tracked series in the block hash; the daemon gives them their
# series slots within 2 s (bpf/block.h), where the measured run then finds them.
"$work/dd_tracked" if=/dev/zero of="$work/data" bs=4096 count=100 oflag=direct status=none
sleep 3
measure_with_floor "tracked: 20000 direct 4 KiB writes to a file (block events)" "$block_floor" \
  direct_writes
