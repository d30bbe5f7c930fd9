#!/usr/bin/env bash
# What the rados collector costs a librados client, on a running test cluster
# (tests/ceph/cluster.sh up DIR). In rounds of three 4 KiB rados bench writes, in rotating
# order: without the daemon, with the daemon running only the rados collector, and with the
# shipped config (config/cephscope.yaml: every collector). Per run: client writes, IOPS, and the
# client's CPU time per write (user + system of the bench process, from getrusage; strace, which
# holds every run's first connect() so that the daemon attaches before the first op, is in it
# alike for all three). With the daemon also the rados programs' runs and BPF run time per
# client write (bpf_stats). Prints the medians (min-max) of the with / without ratios.
# A benchmark: it prints figures and asserts nothing about time (MACHINE.md: noisy 2 cores).
#   usage: tests/bench/client-overhead.sh BUILD_DIR CLUSTER_DIR [ROUNDS] [SECONDS]
#   THREADS=N sets rados bench -t (default 16). Needs root, strace.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR CLUSTER_DIR [ROUNDS] [SECONDS]}
cluster=${2:?usage: $0 BUILD_DIR CLUSTER_DIR [ROUNDS] [SECONDS]}
rounds=${3:-5}
secs=${4:-10}
threads=${THREADS:-16}
bin=$(readlink -f "$build/daemon/cephscope")
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
command -v strace > /dev/null || { echo "needs strace" >&2; exit 1; }
# shellcheck disable=SC1091
source "$cluster/env"
pool=$CEPHSCOPE_CEPH_POOL

# shellcheck source=tests/bench/common.sh
source "$repo/tests/bench/common.sh"
bench_begin client "$pool"

# The daemon with CONFIG's collectors (rados-only or the shipped file), on our port.
start_daemon() {
  if [ "$1" = rados ]; then
    cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, ceph_osd: false, rados_clients: true}
collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: false},
  osd: {enabled: false}, rados: {enabled: true}}
profiles: {shipped_dirs: [$repo/config/profiles]}
CONF
  else
    # the shipped file, on our port, with the repository's profiles
    sed -e "s/^listen: .*/listen: \"127.0.0.1:$port\"/" -e '/^profiles:$/,$d' \
      "$repo/config/cephscope.yaml" > "$work/cephscope.yaml"
    printf 'profiles: {shipped_dirs: [%s/config/profiles]}\n' "$repo" >> "$work/cephscope.yaml"
  fi
  "$bin" --config.file "$work/cephscope.yaml" 2>> "$work/daemon.log" &
  runner=$!
  for _ in $(seq 150); do
    curl -sf "localhost:$port/readyz" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the daemon did not start; log:" >&2
  tail -20 "$work/daemon.log" >&2
  exit 1
}

rados_totals() {  # "runs ns" of the rados programs
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_runs_total\{collector="rados"/ { r += $NF }
    /^cephscope_bpf_program_run_seconds_total\{collector="rados"/ { ns += $NF * 1e9 }
    END { printf "%d %d\n", r, ns }'
}

# One bench: prints "writes iops cpu_seconds" (the bench held 4 s at its first connect()).
bench() {
  local mode=$1
  python3 - "$work/bench.out" rados -p "$pool" bench "$secs" write -t "$threads" -b 4096 \
    --no-cleanup <<'PY' &
import resource, subprocess, sys
out = open(sys.argv[1], "w")
cmd = ["strace", "-f", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=connect", "-e",
       "inject=connect:delay_enter=4000000:when=1"] + sys.argv[2:]
rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
out.write(f"\ncpu {r.ru_utime + r.ru_stime:.4f}\n")
sys.exit(rc)
PY
  local bench_pid=$!
  if [ "$mode" != none ]; then  # the probes in before the first op
    for _ in $(seq 35); do
      curl -s "localhost:$port/metrics" |
        grep -q '^cephscope_probe_attached{collector="rados",probe="Objecter::_finish_op",target="rados",reason="ok"} 1' &&
        break
      sleep 0.1
    done
  fi
  wait "$bench_pid"
  awk '/Total writes made:/ { w = $4 } /Average IOPS:/ { i = $3 } /^cpu / { c = $2 }
    END { print w, i, c }' "$work/bench.out"
}

median() { sort -n | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'; }

echo "client-overhead: $rounds rounds of $secs s 4 KiB writes, $threads threads, pool $pool"
modes=(none rados default)
: > "$work/results"
for r in $(seq "$rounds"); do
  for k in 0 1 2; do
    mode=${modes[$(((r + k) % 3))]}
    # the last run's objects go first, before a daemon could count the deletes as the bench's
    rados -p "$pool" cleanup > /dev/null 2>&1 || true
    if [ "$mode" != none ]; then start_daemon "$mode"; fi
    before=$(if [ "$mode" != none ]; then rados_totals; else echo "0 0"; fi)
    read -r writes iops cpu < <(bench "$mode")
    after=$(if [ "$mode" != none ]; then rados_totals; else echo "0 0"; fi)
    stop_runner
    read -r runs ns < <(echo "$before $after" | awk '{ print $3 - $1, $4 - $2 }')
    us=$(awk -v c="$cpu" -v w="$writes" 'BEGIN { printf "%.2f", c * 1e6 / w }')
    printf 'round %d %-8s writes %6d  IOPS %7.1f  client CPU %6.2f us/write  rados runs %.2f/write  %.0f ns/run\n' \
      "$r" "$mode" "$writes" "$iops" "$us" "$(awk -v a="$runs" -v w="$writes" 'BEGIN { print a / w }')" \
      "$(awk -v a="$ns" -v b="$runs" 'BEGIN { print b ? a / b : 0 }')"
    echo "$r $mode $iops $us" >> "$work/results"
  done
done
for mode in rados default; do
  cpu_ratio=$(awk -v m="$mode" '$2 == "none" { c[$1] = $4 } $2 == m { w[$1] = $4 }
    END { for (r in w) print w[r] / c[r] }' "$work/results" | median)
  iops_ratio=$(awk -v m="$mode" '$2 == "none" { c[$1] = $3 } $2 == m { w[$1] = $3 }
    END { for (r in w) print w[r] / c[r] }' "$work/results" | median)
  echo "with $mode / without: client CPU per write $cpu_ratio, IOPS $iops_ratio"
done
