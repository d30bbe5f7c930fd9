# What the benchmarks share (sourced): a work folder, a free port, BPF run-time statistics on
# for the run and restored after, one background runner (a daemon, bpftrace) stopped on exit,
# and the pool's bench objects removed (for the Ceph benchmarks). A signal exits through the
# cleanup, so no daemon is left attached.
# shellcheck shell=bash

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
  stop_runner
  sysctl -qw kernel.bpf_stats_enabled="$bench_old_stats"
  if [ -n "$bench_pool" ]; then rados -p "$bench_pool" cleanup > /dev/null 2>&1 || true; fi
  rm -rf "$work"
}
