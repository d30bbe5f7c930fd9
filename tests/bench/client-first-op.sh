#!/usr/bin/env bash
# A python3-rados client that writes right after `import rados`, on a running test cluster
# (tests/ceph/cluster.sh up DIR): how many of its ops the rados collector counts, and what the
# collector's programs cost per op. Per run: a fresh daemon (the rados collector only,
# instance labels on), one client (tests/e2e/rados_client.py with EAGER=1: no pause between
# connecting and its WRITES 4 KiB writes, then one read of a missing object); prints the writes
# counted under the client's pid, the rados programs' runs (uprobe hits) and BPF run time per
# client op, from the daemon's own cephscope_bpf_program_runs_total and _run_seconds_total.
# HELD=1: the client waits 4 s after connecting (the probes are in by then) before its ops:
# the steady-state cost. BASELINE=BINARY: another daemon build, run in turn with this one
# (A B A B ...), for a comparison in one sitting. Figures only, nothing asserted
# (MACHINE.md: noisy 2 cores).
#   usage: tests/bench/client-first-op.sh BUILD_DIR CLUSTER_DIR [ROUNDS] [WRITES]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR CLUSTER_DIR [ROUNDS] [WRITES]}
cluster=${2:?usage: $0 BUILD_DIR CLUSTER_DIR [ROUNDS] [WRITES]}
rounds=${3:-3}
writes=${4:-500}
bin=$(readlink -f "$build/daemon/cephscope")
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
# shellcheck disable=SC1091
source "$cluster/env"
pool=$CEPHSCOPE_CEPH_POOL

# shellcheck source=tests/bench/common.sh
source "$repo/tests/bench/common.sh"
bench_begin first-op "$pool"

start_daemon() { # BINARY
  cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: info
discovery: {scan_interval: 1s, ceph_osd: false, rados_clients: true}
collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: false},
  osd: {enabled: false}, rados: {enabled: true, instance_labels: true}}
profiles: {shipped_dirs: [$repo/config/profiles], cache_dir: $work/profiles}
CONF
  : > "$work/daemon.log"
  "$1" --config.file "$work/cephscope.yaml" 2>> "$work/daemon.log" &
  runner=$!
  for _ in $(seq 150); do
    curl -sf "localhost:$port/readyz" > /dev/null 2>&1 && break
    sleep 0.2
  done
  sleep 2 # the attach worker's first pass (the host's libraries, the running clients)
}

rados_totals() { # "runs ns" of the rados programs
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_runs_total\{collector="rados"/ { r += $NF }
    /^cephscope_bpf_program_run_seconds_total\{collector="rados"/ { ns += $NF * 1e9 }
    END { printf "%d %d\n", r, ns }'
}

one_run() { # BINARY LABEL
  start_daemon "$1"
  local client="$work/client" before after counted pid
  rm -rf "$client"
  mkdir -p "$client"
  before=$(rados_totals)
  if [ "${HELD:-0}" = 1 ]; then
    /usr/bin/python3 "$repo/tests/e2e/rados_client.py" "$CEPH_CONF" "$pool" "$client" \
      "$writes" 0 > "$client/log" 2>&1 &
  else
    env EAGER=1 /usr/bin/python3 "$repo/tests/e2e/rados_client.py" "$CEPH_CONF" "$pool" \
      "$client" "$writes" 0 > "$client/log" 2>&1 &
  fi
  pid=$!
  if [ "${HELD:-0}" = 1 ]; then
    for _ in $(seq 600); do [ -e "$client/ready" ] && break; sleep 0.1; done
    sleep 4
    touch "$client/go"
  fi
  for _ in $(seq 1200); do [ -e "$client/done" ] && break; sleep 0.1; done
  sleep 2 # discovery's next scan, at the latest
  after=$(rados_totals)
  counted=$(curl -s "localhost:$port/metrics" | awk -v pid="\"$pid\"" '
    /^cephscope_client_op_seconds_count\{/ && /op="write"/ && index($0, "pid=" pid) { n += $NF }
    END { printf "%d", n }')
  touch "$client/exit"
  wait "$pid" || true
  stop_runner
  python3 - "$2" "$counted" "$writes" "$before" "$after" <<'PY'
import sys
label, counted, writes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b, a = (list(map(int, x.split())) for x in sys.argv[4:6])
ops = writes + 1  # and the read of a missing object
runs, ns = a[0] - b[0], a[1] - b[1]
print(f"{label:9} writes counted {counted:4d} of {writes}  hits per op {runs / ops:.3f}  "
      f"BPF {ns / ops:6.0f} ns per op  {ns / max(runs, 1):5.0f} ns per run")
PY
}

mode=eager
[ "${HELD:-0}" = 1 ] && mode=held
echo "client-first-op: $rounds rounds, $writes 4 KiB writes each, $mode client, pool $pool"
for r in $(seq "$rounds"); do
  if [ -n "${BASELINE:-}" ]; then
    one_run "$(readlink -f "$BASELINE")" "baseline"
  fi
  one_run "$bin" "this"
  rados -p "$pool" cleanup > /dev/null 2>&1 || true
  echo "(round $r)"
done
