#!/usr/bin/env bash
# Prints the BPF run time per event of the syscall and block programs, from the kernel's
# own accounting (kernel.bpf_stats_enabled=1), for a tracked and an untracked workload, each
# beside two floors on the same hooks in the same run (bpftrace): an empty program, and one
# that only reads the clock, which every program that measures a latency must do. Needs
# bpftrace and bpftool.
# A benchmark: it prints figures and asserts nothing about time.
#   usage: tests/bench/bpf-cost.sh [BUILD_DIR] [PWRITES]
set -euo pipefail
build=${1:-build}
writes=${2:-1000000}
bin=$build/daemon/cephscope
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }

work=$(mktemp -d "$(cd "$build" && pwd)/bench-XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
# Every line must run whatever the one before did (set -e applies here too).
cleanup() {
  if [ -n "${floor:-}" ]; then kill $floor 2>/dev/null || true; fi
  if [ -n "${daemon:-}" ]; then kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true; fi
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

# Waits until the daemon has learnt the tracked names (targets stay known for their TTL).
wait_tracked() {
  for _ in $(seq 100); do
    curl -s "localhost:$port/metrics" | grep -q 'cephscope_target_info{process="bench_tracked"' && return 0
    sleep 0.05
  done
  echo "the tracked workload was not picked up" >&2
  exit 1
}

# The floors, on the same hooks in the same run: an empty program ("empty"), and one that reads
# the clock and nothing else ("clock": bpftrace's nsecs, bpf_ktime_get_boot_ns, as costly as
# the bpf_ktime_get_ns the collectors call). PROBES is a bpftrace probe list; each floor's
# programs are in $work/NAME.ids.
# bpftrace (0.17) has no tp_btf: the block floors are the classic tracepoints of the same
# events, whose accounted run time is the program's alone, as a tp_btf program's is.
prog_ids() { bpftool prog show | awk '/^[0-9]+: / { sub(":", "", $1); print $1 }' | sort; }
start_one_floor() { # NAME PROGRAM
  prog_ids > "$work/ids.before"
  bpftrace -e "$2" > "$work/$1.out" 2>&1 &
  floor="$floor $!"
  for _ in $(seq 300); do
    if grep -q '^Attaching' "$work/$1.out"; then
      sleep 0.5
      prog_ids | comm -13 "$work/ids.before" - > "$work/$1.ids"
      return 0
    fi
    sleep 0.1
  done
  echo "bpftrace did not attach:" >&2
  cat "$work/$1.out" >&2
  exit 1
}
start_floor() { # PROBES
  floor=
  start_one_floor empty "$1 { }"
  start_one_floor clock "$1 { \$t = nsecs; }"
}
stop_floor() {
  local f
  for f in $floor; do kill "$f" 2>/dev/null; wait "$f" 2>/dev/null || true; done
  floor=
}
floor_totals() { # NAME
  local id
  while read -r id; do bpftool prog show id "$id" 2>/dev/null; done < "$work/$1.ids" |
    awk '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t += $(i + 1); if ($i == "run_cnt") c += $(i + 1) } }
      END { printf "%d %d\n", c, t }'
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

# Runs a command under the daemon and the floor; prints each program's ns/run and the
# floor's, and the difference per run.
measure_with_floor() {
  local title=$1 probes=$2
  shift 2
  start_floor "$probes"
  read -r f0 ft0 < <(floor_totals empty)
  read -r k0 kt0 < <(floor_totals clock)
  measure "$title" "$@"
  read -r f1 ft1 < <(floor_totals empty)
  read -r k1 kt1 < <(floor_totals clock)
  stop_floor
  awk -v c=$((f1 - f0)) -v t=$((ft1 - ft0)) 'BEGIN { if (c > 0) printf "  %-22s %10d runs %8.1f ns/run (empty program, same hooks)\n", "floor", c, t / c }'
  awk -v c=$((k1 - k0)) -v t=$((kt1 - kt0)) 'BEGIN { if (c > 0) printf "  %-22s %10d runs %8.1f ns/run (the clock alone, same hooks)\n", "clock floor", c, t / c }'
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
measure_with_floor "tracked: 20000 direct 4 KiB writes to a file (block events)" "$block_floor" direct_writes
