#!/usr/bin/env bash
# Prints the BPF run time per event of the syscall and block programs, from the kernel's
# own accounting (kernel.bpf_stats_enabled=1), for a tracked and an untracked workload, each
# beside two floors on the same hooks in the same run (bpftrace): an empty program, and one
# that only reads the clock, which every program that measures a latency must do. Needs
# bpftrace and bpftool.
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

work=$(mktemp -d "$(cd "$build" && pwd)/bench-XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
# Every line must run whatever the one before did (set -e applies here too).
cleanup() {
  local f
  for f in ${floor:-}; do stop_pid "$f"; done
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
  for f in $floor; do stop_pid "$f"; done
  floor=
}
# "hook runs run_time_ns" of each program of floor NAME: bpftrace names a program after its
# tracepoint, cut to the kernel's 15 characters (block_bio_queue, sys_enter_pwrit); bpftool
# prints no run_time_ns and run_cnt for a program that has not run yet.
floor_totals() { # NAME
  local id
  while read -r id; do bpftool prog show id "$id" 2>/dev/null; done < "$work/$1.ids" |
    awk '/^[0-9]+: / { c = 0; t = 0; for (i = 1; i < NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
      print n, c, t }' | sort
}
# "hook runs ns/run" between two floor_totals files
floor_delta() { join "$1" "$2" | awk '{ d = $4 - $2; if (d > 0) printf "%s %d %.1f\n", $1, d, ($5 - $3) / d }'; }

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

# Runs a command under the daemon and the floors; prints each program's ns/run, then each
# hook's floors and what each of the daemon's programs costs above its own hook's floors.
# A program's hook is its name less the flavour's prefix: btf_bio_queue and tp_bio_queue run
# on block_bio_queue, enter_pwrite64 on sys_enter_pwrite64.
measure_with_floor() {
  local title=$1 probes=$2 name
  shift 2
  start_floor "$probes"
  for name in empty clock; do floor_totals $name > "$work/$name.0"; done
  measure "$title" "$@"
  for name in empty clock; do
    floor_totals $name > "$work/$name.1"
    floor_delta "$work/$name.0" "$work/$name.1" > "$work/$name.d"
  done
  stop_floor
  join "$work/empty.d" "$work/clock.d" | awk '{ printf "  floor %-25s empty %6.1f ns/run, clock alone %6.1f ns/run (%d runs)\n", $1, $3, $5, $2 }'
  awk '{ h = $1; sub(/^(btf|tp)_/, "block_", h); sub(/^(enter|exit)_/, "sys_&", h); print substr(h, 1, 15), $1, $3 }' "$work/ran" | sort |
    join - "$work/empty.d" | join - "$work/clock.d" |
    awk '$3 > 0 { printf "  %-22s above its hook\x27s empty program %+7.1f ns, above the clock alone %+7.1f ns\n", $2, $3 - $5, $3 - $7 }'
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
