#!/usr/bin/env bash
# demo.sh - see cephscope at work on a throw-away Ceph cluster, in one command (as root, after
# the build).
#
#   tests/ceph/demo.sh [--duration SECONDS] [--port PORT] [--interval SECONDS] [--bin PATH]
#                      [--prometheus]
#
# --prometheus also starts Debian's prometheus (private data dir under the demo's directory, a
# free port from 9090, 5 s scrapes) with the shipped rules (dashboards/rules/), scraping the
# daemon, and prints its URL with a few ready queries.
#
# 1. starts a single-node cluster (mon, mgr, 3 BlueStore OSDs; tests/ceph/cluster.sh up) in a
#    fresh directory under /tmp (about 20-30 s; Ceph's packages are installed when missing);
# 2. starts the daemon (build/daemon/cephscope, or --bin, or $CEPHSCOPE_BIN) listening on
#    127.0.0.1:9488, or on the first free port after it when 9488 is taken (or on --port);
# 3. drives a mixed load in a loop: rados bench 4 KiB then 64 KiB, each a write, a sequential
#    read and a random read run of 10 s (16 threads), then rados cleanup;
# 4. prints the /metrics URL, and every --interval seconds (5) what the daemon sees per target
#    over the last interval: syscalls per second, syscall and block MB/s, block device time
#    p50/p99 and fdatasync p99 (computed from the histogram buckets, as histogram_quantile does).
#
# Runs until Ctrl-C, or for --duration seconds. Either way it stops the load and the daemon,
# takes the cluster down and removes its directory (also when something fails on the way).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

# ------------------------------------------------------------------ the load (runs in its own
# session so that cleanup can stop it with every rados it started)
if [ "${1:-}" = __load ]; then
    state=$2 seconds=$3
    # shellcheck disable=SC1091
    source "$state/cluster/env"
    phase() { echo "$*" > "$state/phase.tmp"; mv "$state/phase.tmp" "$state/phase"; echo "== $*"; }
    run() { "$@" || { echo "failed: $*"; sleep 1; }; }
    round=0
    while :; do
        round=$((round + 1))
        for bs in 4096 65536; do
            kib=$((bs / 1024))
            phase "round $round: ${kib} KiB writes"
            run rados -p "$CEPHSCOPE_CEPH_POOL" bench "$seconds" write -b "$bs" -t 16 --no-cleanup
            phase "round $round: ${kib} KiB sequential reads"
            run rados -p "$CEPHSCOPE_CEPH_POOL" bench "$seconds" seq -t 16
            phase "round $round: ${kib} KiB random reads"
            run rados -p "$CEPHSCOPE_CEPH_POOL" bench "$seconds" rand -t 16
            phase "round $round: cleanup"
            run rados -p "$CEPHSCOPE_CEPH_POOL" cleanup
        done
    done
fi

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

DURATION=0
PORT=
INTERVAL=5
LOAD_SECONDS=10
BIN=${CEPHSCOPE_BIN:-$REPO/build/daemon/cephscope}
PROMETHEUS=0
PROM_PID=
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION=${2:?}; shift 2 ;;
        --port) PORT=${2:?}; shift 2 ;;
        --interval) INTERVAL=${2:?}; shift 2 ;;
        --bin) BIN=${2:?}; shift 2 ;;
        --prometheus) PROMETHEUS=1; shift ;;
        -h|--help) usage ;;
        *) echo "demo.sh: unknown argument: $1" >&2; usage ;;
    esac
done
[[ "$DURATION" =~ ^[0-9]+$ ]] || { echo "demo.sh: --duration takes seconds" >&2; exit 2; }
[[ "$INTERVAL" =~ ^[1-9][0-9]*$ ]] || { echo "demo.sh: --interval takes seconds" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (the daemon loads eBPF programs, the cluster runs Ceph daemons)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "demo.sh: no daemon at $BIN: build first (cmake -S . -B build && cmake --build build -j\"\$(nproc)\"), or pass --bin" >&2; exit 1; }
command -v curl >/dev/null || { echo "demo.sh: needs curl" >&2; exit 1; }

say() { printf '[demo %5ss] %s\n' "$SECONDS" "$*"; }

# ------------------------------------------------------------------ cleanup, whatever happens
STATE=
DAEMON_PID=
LOAD_PID=
CLEANED=0
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
    [ "$CLEANED" = 0 ] || return 0
    CLEANED=1
    set +e             # clean up as much as possible, whatever fails
    trap '' INT TERM HUP PIPE   # a second Ctrl-C or a closed pipe must not leave half of it behind
    echo
    if [ -n "$LOAD_PID" ] && kill -0 "$LOAD_PID" 2>/dev/null; then
        say "stopping the load"
        kill -TERM -- "-$LOAD_PID" 2>/dev/null || true
        wait "$LOAD_PID" 2>/dev/null || true
    fi
    if [ -n "$PROM_PID" ] && kill -0 "$PROM_PID" 2>/dev/null; then
        say "stopping prometheus (pid $PROM_PID)"
        kill -TERM "$PROM_PID" 2>/dev/null || true
        wait "$PROM_PID" 2>/dev/null || true
    fi
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        say "stopping cephscope (pid $DAEMON_PID)"
        kill -TERM "$DAEMON_PID" 2>/dev/null || true
        local i
        for i in $(seq 1 200); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$DAEMON_PID" 2>/dev/null || true
        wait "$DAEMON_PID" 2>/dev/null || true
    fi
    if [ -n "$STATE" ] && [ -e "$STATE/cluster" ]; then
        say "taking the cluster down"
        "$HERE/cluster.sh" down "$STATE/cluster" >"$STATE/cluster-down.log" 2>&1 \
            || { tail -n 20 "$STATE/cluster-down.log"; say "cluster.sh down failed: $STATE kept"; return 0; }
    fi
    if [ -n "$STATE" ]; then
        rm -rf -- "$STATE"
        say "removed $STATE"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
trap 'exit 141' PIPE   # e.g. demo.sh | head: still clean up

# ------------------------------------------------------------------ cluster
STATE=$(mktemp -d /tmp/cephscope-demo.XXXXXX)   # short: admin socket paths are limited
say "starting a throw-away Ceph cluster in $STATE/cluster (about 20-30 s)"
if ! "$HERE/cluster.sh" up "$STATE/cluster" >"$STATE/cluster-up.log" 2>&1; then
    tail -n 25 "$STATE/cluster-up.log"
    say "cluster.sh up failed (above)"
    exit 1
fi
# shellcheck disable=SC1091
source "$STATE/cluster/env"
say "cluster up: fsid $CEPHSCOPE_CEPH_FSID, OSDs $(for i in $CEPHSCOPE_CEPH_OSD_IDS; do v=CEPHSCOPE_CEPH_OSD_${i}_PID; printf 'osd.%s=pid %s  ' "$i" "${!v}"; done)"

# ------------------------------------------------------------------ daemon
port_taken() { [ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]; }
if [ -z "$PORT" ]; then
    PORT=9488
    while port_taken "$PORT"; do
        PORT=$((PORT + 1))
        [ "$PORT" -lt 9588 ] || { say "no free port in 9488-9587: pass --port"; exit 1; }
    done
    [ "$PORT" = 9488 ] || say "port 9488 is taken: using $PORT"
fi
cat > "$STATE/cephscope.yaml" <<EOF
# demo.sh: full detail (more series than the default), local only, quicker to notice
# processes
listen: "127.0.0.1:$PORT"
log_level: info
discovery:
  scan_interval: 2s
  series_ttl: 5m
collectors:
  syscall: {buckets: full}
  block: {target_histograms: true}
  osd: {detail: always, buckets: full}
EOF
URL="http://127.0.0.1:$PORT"
"$BIN" --config "$STATE/cephscope.yaml" >"$STATE/cephscope.log" 2>&1 &
DAEMON_PID=$!
for i in $(seq 1 300); do
    curl -sf "$URL/readyz" >/dev/null 2>&1 && break
    kill -0 "$DAEMON_PID" 2>/dev/null || { tail -n 20 "$STATE/cephscope.log"; say "cephscope exited (log above)"; exit 1; }
    sleep 0.1
done
curl -sf "$URL/readyz" >/dev/null || { tail -n 20 "$STATE/cephscope.log"; say "cephscope not ready within 30 s"; exit 1; }
say "cephscope ready (pid $DAEMON_PID); collectors: $(curl -s "$URL/metrics" | awk '/^cephscope_collector_up\{/ {
        c = $0; sub(/.*collector="/, "", c); sub(/".*/, "", c)
        h = $0; sub(/.*hook="/, "", h); sub(/".*/, "", h)
        printf "%s %s(%s) ", c, ($NF == 1 ? "up " : "DOWN "), h }')"

# ------------------------------------------------------------------ prometheus (--prometheus)
if [ "$PROMETHEUS" = 1 ]; then
    command -v prometheus >/dev/null || { say "prometheus is not installed (apt-get install prometheus)"; exit 1; }
    PROM_PORT=9090
    while ss -Htln "sport = :$PROM_PORT" | grep -q .; do PROM_PORT=$((PROM_PORT + 1)); done
    cat > "$STATE/prometheus.yml" <<EOF
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: [$REPO/dashboards/rules/cephscope-rules.yml, $REPO/dashboards/rules/cephscope-alerts.yml]
scrape_configs: [{job_name: cephscope, static_configs: [{targets: ['127.0.0.1:$PORT']}]}]
EOF
    prometheus --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/prometheus" \
        --web.listen-address="127.0.0.1:$PROM_PORT" >"$STATE/prometheus.log" 2>&1 &
    PROM_PID=$!
    for i in $(seq 1 100); do curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done
    curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || { tail -n 20 "$STATE/prometheus.log"; say "prometheus not ready"; exit 1; }
    cat <<EOF

  Prometheus:     http://127.0.0.1:$PROM_PORT (rules: /rules, alerts: /alerts), e.g.:
      cephscope:osd_op_stage_seconds:p99_5m{op="write"}
      sum by (stage) (rate(cephscope_osd_op_stage_seconds_sum{op="write"}[1m])) / sum by (stage) (rate(cephscope_osd_op_stage_seconds_count{op="write"}[1m]))
      cephscope:osd_write_amplification:ratio5m
      ALERTS{alertstate="firing"}
EOF
fi

# ------------------------------------------------------------------ load
setsid "$0" __load "$STATE" "$LOAD_SECONDS" </dev/null >"$STATE/load.log" 2>&1 &
LOAD_PID=$!

cat <<EOF

  cephscope is watching the cluster. Look at:
    $URL/metrics
      curl -s $URL/metrics | grep 'ceph_daemon="osd.0"'
      curl -s $URL/metrics | grep cephscope_target_info
  In Prometheus (scrape $URL), e.g.:
      histogram_quantile(0.99, sum by (ceph_daemon, le) (rate(cephscope_block_target_device_seconds_bucket[1m])))
      sum by (ceph_daemon, syscall) (rate(cephscope_syscall_seconds_count[1m]))
  The cluster:    source $STATE/cluster/env; ceph -s
  Files:          $STATE (daemon log cephscope.log, load log load.log)
  Load:           rados bench 4 KiB and 64 KiB: write, seq read, rand read, ${LOAD_SECONDS} s each, in a loop
  $( [ "$DURATION" -gt 0 ] && echo "Stops after $DURATION s; Ctrl-C stops earlier." || echo "Ctrl-C stops the load and the daemon and removes the cluster.")

  Every ${INTERVAL} s, per target, over the last ${INTERVAL} s: syscalls/s, bytes/s through syscalls
  (sockets included) and at the block layer, block device time p50/p99, fdatasync p99.

EOF

# ------------------------------------------------------------------ the summary
# summarize PREV CUR SECONDS: per target, deltas of two /metrics texts
summarize() {
    awk -v dt="$3" '
    function lbl(s, k,   m) {
        if (match(s, k "=\"[^\"]*\"")) { m = substr(s, RSTART + length(k) + 2, RLENGTH - length(k) - 3); return m }
        return ""
    }
    function target(s,   t) {
        t = lbl(s, "ceph_daemon"); if (t != "") return t
        t = lbl(s, "process"); if (t != "") return t
        return ""
    }
    function lev(x) { return x == "+Inf" ? 1e30 : x + 0 }
    function add(key, v) { val[key] += (FILENAME == ARGV[1] ? -v : v) }
    # quantile q of the histogram h of target t (cumulative bucket deltas in val[h,t,le])
    function quant(h, t, q,   i, total, rank, lo, hi, c, cprev) {
        total = val[h, t, "+Inf"]
        if (total <= 0) return -1
        rank = q * total; cprev = 0; lo = 0
        for (i = 1; i <= nle; i++) {
            c = val[h, t, les[i]]
            if (c >= rank) {
                hi = lev(les[i])
                if (hi >= 1e30) return lo
                if (c == cprev) return hi
                return lo + (hi - lo) * (rank - cprev) / (c - cprev)
            }
            cprev = c; lo = lev(les[i])
        }
        return lo
    }
    function dur(s) {
        if (s < 0) return "-"
        if (s < 1e-3) return sprintf("%.0fus", s * 1e6)
        if (s < 1) return sprintf("%.2fms", s * 1e3)
        return sprintf("%.2fs", s)
    }
    /^#/ { next }
    {
        i = index($0, "{"); if (i == 0) next
        name = substr($0, 1, i - 1)
        labels = substr($0, i + 1); labels = substr(labels, 1, index(labels, "}") - 1)
        v = $NF + 0
        t = target(labels); if (t == "") next
        if (name == "cephscope_target_info") {
            if (FILENAME == ARGV[2]) { seen[t] = 1; pids[t] = pids[t] (pids[t] == "" ? "" : ",") lbl(labels, "pid") }
            next
        }
        if (name == "cephscope_syscall_seconds_count") { add("sc" SUBSEP t, v); next }
        if (name == "cephscope_layer_bytes_total") {
            if (lbl(labels, "layer") == "syscall") add("sy" lbl(labels, "direction") SUBSEP t, v)
            next
        }
        if (name == "cephscope_block_target_bytes_total") {
            op = lbl(labels, "op"); if (op == "read" || op == "write") add("bl" op SUBSEP t, v)
            next
        }
        if (name == "cephscope_block_target_device_seconds_bucket") {
            le = lbl(labels, "le"); lesee[le] = 1; add("disk" SUBSEP t SUBSEP le, v); next
        }
        if (name ~ /^cephscope_osd_op_seconds_(count|sum)$/) {
            add(substr(name, 26) SUBSEP lbl(labels, "op") SUBSEP t, v); next
        }
        if (name ~ /^cephscope_osd_op_stage_seconds_(count|sum)$/ && lbl(labels, "op") == "write") {
            st = lbl(labels, "stage"); stages[st] = 1
            add("st" substr(name, 32) SUBSEP st SUBSEP t, v); next
        }
        if (name == "cephscope_syscall_seconds_bucket" && lbl(labels, "syscall") == "fdatasync") {
            le = lbl(labels, "le"); lesee[le] = 1; add("sync" SUBSEP t SUBSEP le, v); next
        }
    }
    END {
        nle = 0
        for (le in lesee) les[++nle] = le
        for (i = 2; i <= nle; i++) {          # insertion sort by bound (mawk has no asort)
            x = les[i]; j = i - 1
            while (j > 0 && lev(les[j]) > lev(x)) { les[j + 1] = les[j]; j-- }
            les[j + 1] = x
        }
        n = 0
        for (t in seen) names[++n] = t
        for (i = 2; i <= n; i++) {
            x = names[i]; j = i - 1
            while (j > 0 && names[j] > x) { names[j + 1] = names[j]; j-- }
            names[j + 1] = x
        }
        printf "  %-16s %-12s %10s %9s %9s %9s %9s %9s %9s %10s\n", "target", "pid", "syscall/s", \
            "sys rd", "sys wr", "blk rd", "blk wr", "disk p50", "disk p99", "fsync p99"
        printf "  %-16s %-12s %10s %9s %9s %9s %9s\n", "", "", "", "MB/s", "MB/s", "MB/s", "MB/s"
        for (i = 1; i <= n; i++) {
            t = names[i]
            printf "  %-16s %-12s %10.0f %9.2f %9.2f %9.2f %9.2f %9s %9s %10s\n", t, pids[t], \
                val["sc", t] / dt, val["syread", t] / dt / 1e6, val["sywrite", t] / dt / 1e6, \
                val["blread", t] / dt / 1e6, val["blwrite", t] / dt / 1e6, \
                dur(quant("disk", t, 0.5)), dur(quant("disk", t, 0.99)), dur(quant("sync", t, 0.99))
        }
        if (n == 0) print "  (no targets yet)"
        # client ops on each OSD as primary, and where writes spent their time (OSD stages)
        head = 0
        for (i = 1; i <= n; i++) {
            t = names[i]
            if (t !~ /^osd\./ || val["count", "write", t] + val["count", "read", t] <= 0) continue
            if (!head++) printf "  %-16s %8s %9s %8s %9s   %s\n", "OSD ops", "writes/s", "mean", \
                "reads/s", "mean", "longest write stage (mean)"
            best = ""; bmean = -1
            for (st in stages) {
                c = val["stcount", st, t]
                if (c > 0 && val["stsum", st, t] / c > bmean) { bmean = val["stsum", st, t] / c; best = st }
            }
            wc = val["count", "write", t]; rc = val["count", "read", t]
            printf "  %-16s %8.0f %9s %8.0f %9s   %s %s\n", t, wc / dt, \
                dur(wc > 0 ? val["sum", "write", t] / wc : -1), rc / dt, \
                dur(rc > 0 ? val["sum", "read", t] / rc : -1), best, dur(bmean)
        }
    }' "$1" "$2"
}

curl -s "$URL/metrics" > "$STATE/prev.prom"
prev_t=$(date +%s.%N)
start=$SECONDS
while :; do
    sleep "$INTERVAL"
    kill -0 "$DAEMON_PID" 2>/dev/null || { tail -n 20 "$STATE/cephscope.log"; say "cephscope exited (log above)"; exit 1; }
    kill -0 "$LOAD_PID" 2>/dev/null || { tail -n 20 "$STATE/load.log"; say "the load stopped (log above)"; exit 1; }
    curl -s "$URL/metrics" > "$STATE/cur.prom" || { say "scrape of $URL/metrics failed"; continue; }
    now_t=$(date +%s.%N)
    dt=$(awk -v a="$now_t" -v b="$prev_t" 'BEGIN{printf "%.3f", a - b}')
    say "last ${dt} s; load now: $(cat "$STATE/phase" 2>/dev/null || echo starting)   ($URL/metrics)"
    summarize "$STATE/prev.prom" "$STATE/cur.prom" "$dt"
    mv "$STATE/cur.prom" "$STATE/prev.prom"
    prev_t=$now_t
    if [ "$DURATION" -gt 0 ] && [ $((SECONDS - start)) -ge "$DURATION" ]; then
        say "--duration $DURATION reached"
        break
    fi
done
exit 0
