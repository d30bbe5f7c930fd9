# What the benchmarks share (sourced): a work folder, a free port, BPF run-time statistics on
# for the run and restored after, one background runner (a daemon, bpftrace) stopped on exit,
# the pool's bench objects removed (for the Ceph benchmarks), and the floors on a set of
# tracepoints (bpftrace). A signal exits through the cleanup, so no daemon is left attached.
# shellcheck shell=bash

# Exits with the Debian package to install when a tool the benchmark runs is missing (the
# benchmarks are outside CI: .ci/install-deps installs none of bpftrace or perf).
bench_need() { # TOOL...
  local tool package
  for tool in "$@"; do
    command -v "$tool" >/dev/null && continue
    case $tool in
      rados | ceph) package=ceph-common ;;
      readelf | nm) package=binutils ;;
      perf) package=linux-perf ;;
      *) package=$tool ;;
    esac
    echo "needs $tool: apt-get install $package" >&2
    exit 1
  done
}

bench_begin() { # NAME [POOL]
  bench_pool=${2:-}
  work=$(mktemp -d "/tmp/cephscope-$1-bench-XXXXXX")
  # shellcheck disable=SC2034 # the benchmarks use it
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  bench_old_stats=$(sysctl -n kernel.bpf_stats_enabled)
  runner=
  trap bench_cleanup EXIT
  trap 'exit 1' INT TERM
  sysctl -qw kernel.bpf_stats_enabled=1
}

# Stops background process PID and reaps it. bpftrace (0.17) can miss a SIGTERM that arrives
# while it enters its event loop and then waits forever: the signal is sent again every 0.1 s
# until the process has exited (a zombie), and SIGKILL after 10 s (its programs go with its
# file descriptors).
stop_pid() { # PID
  local _ state
  for _ in $(seq 100); do
    state=$(ps -o stat= -p "$1" 2>/dev/null) || break
    [ "${state:0:1}" = Z ] && break
    kill "$1" 2>/dev/null || true
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

stop_runner() {
  if [ -n "$runner" ]; then
    stop_pid "$runner"
    runner=
  fi
}

bench_cleanup() {
  stop_floors
  stop_runner
  sysctl -qw kernel.bpf_stats_enabled="$bench_old_stats"
  if [ -n "$bench_pool" ]; then rados -p "$bench_pool" cleanup > /dev/null 2>&1 || true; fi
  rm -rf "$work"
}

# ids of every loaded BPF program, to find the ones a daemon or bpftrace loads
prog_ids() { bpftool prog show | awk '/^[0-9]+: / { sub(":", "", $1); print $1 }' | sort; }

# The floors, on the same tracepoints in the same run: an empty program ("empty"), one that
# asks whose event it is and nothing else ("pid": bpftrace's pid, the helper every collector
# calls to filter on tracked processes), and one that reads the clock and nothing else
# ("clock": bpftrace's nsecs, bpf_ktime_get_boot_ns, as costly as the bpf_ktime_get_ns the
# collectors call). PROBES is a bpftrace probe list; each floor's programs are in
# $work/NAME.ids. bpftrace (0.17) has no tp_btf: the block floors are the classic tracepoints
# of the same events, whose accounted run time is the program's alone, as a tp_btf program's is.
floor_pids=
start_one_floor() { # NAME PROGRAM
  prog_ids > "$work/ids.before"
  bpftrace -e "$2" > "$work/$1.out" 2>&1 &
  floor_pids="$floor_pids $!"
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
floor_names="empty pid clock"
start_floors() { # PROBES
  start_one_floor empty "$1 { }"
  start_one_floor pid "$1 { \$p = pid; }"
  start_one_floor clock "$1 { \$t = nsecs; }"
}
stop_floors() {
  local f
  for f in $floor_pids; do stop_pid "$f"; done
  floor_pids=
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
# Every floor's totals, in $work/NAME.SUFFIX
snapshot_floors() { # SUFFIX
  local name
  for name in $floor_names; do floor_totals "$name" > "$work/$name.$1"; done
}
# Each floor's "hook runs ns/run" between its snapshots 0 and 1, in $work/NAME.d
floor_deltas() {
  local name
  for name in $floor_names; do
    join "$work/$name.0" "$work/$name.1" |
      awk '{ d = $4 - $2; if (d > 0) printf "%s %d %.1f\n", $1, d, ($5 - $3) / d }' > "$work/$name.d"
  done
}
# A program's hook as bpftrace names its floor: its name less the flavour's prefix, cut to 15
# characters (btf_bio_queue and tp_bio_queue run on block_bio_queue, enter_pwrite64 on
# sys_enter_pwrite64). Reads "program ..." lines, prints "hook program ...".
hook_of_program() {
  awk '{ h = $1; sub(/^.*\//, "", h); sub(/^(btf|tp)_/, "block_", h); sub(/^(enter|exit)_/, "sys_&", h)
    print substr(h, 1, 15), $0 }'
}
