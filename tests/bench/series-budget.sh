#!/usr/bin/env bash
# Series per OSD and per host, measured on real OSDs: for each cluster size (default 1, 12 and
# 24 OSDs, tests/ceph/cluster.sh), three daemons watch the same cluster: the default
# configuration, full detail (every bucket, BlueStore's stages, per-target block latency), and
# both tiers all the time with the default buckets ("tiers"). Under a mixed load (4 KiB
# writes, sequential reads, stat and xattr reads, and cls_lock's lock and unlock, which read
# and write: op="other") each is scraped and its series counted per ceph_daemon (every series
# that carries it) and in all, with the bytes of the text and protobuf expositions and the
# render time (p50 and p99 of 20 scrapes, and the daemon's CPU time per scrape); then each daemon's RSS and its CPU share of one
# core idle (30 s, no scrapes) and under a 15 s scrape interval (60 s, 4 scrapes). A
# benchmark: it prints figures and asserts nothing.
#   usage: tests/bench/series-budget.sh [BUILD_DIR] [OSD_COUNT...]
set -euo pipefail
build=$(realpath "${1:-build}")
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 12 24)
bin=$build/daemon/cephscope
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
/usr/bin/python3 -c "import rados" 2>/dev/null || { echo "needs python3-rados (apt-get install python3-rados)" >&2; exit 1; }

work=$(mktemp -d /tmp/series-budget-XXXXXX)
daemons=()
cleanup() {
  for d in "${daemons[@]}"; do kill "$d" 2>/dev/null && wait "$d" 2>/dev/null || true; done
  if [ -d "$work/cluster" ]; then "$here/../ceph/cluster.sh" down "$work/cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # a signal exits through cleanup: no daemon left attached
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_daemon() {  # NAME COLLECTORS_YAML: sets $port
  local name=$1
  port=$(free_port)
  cat > "$work/$name.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 10s}  # the default: exec events find new processes at once
profiles: {cache_dir: $work/profiles-$name, shipped_dirs: [$here/../../config/profiles]}
$2
CONF
  "$bin" --config.file "$work/$name.yaml" > "$work/$name.log" 2>&1 &
  daemons+=($!)
  for _ in $(seq 300); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
}

# CPU time of every thread of a process, ns (schedstat: steadier than wall time on a busy host)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s }'; }

report() {  # LABEL PORT OSDS FSID PID
  local label=$1 port=$2 osds=$3 fsid=$4 pid=$5 c0 c1
  curl -s "127.0.0.1:$port/metrics" > "$work/scrape.txt"
  local text proto times
  text=$(wc -c < "$work/scrape.txt")
  proto=$(curl -s -H 'Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited' \
    "127.0.0.1:$port/metrics" | wc -c)
  c0=$(cpu_ns "$pid")
  times=$(for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "127.0.0.1:$port/metrics"; done |
    sort -n | awk '{t[NR]=$1} END {printf "%.1f %.1f", t[int(NR*0.5+0.5)]*1e3, t[NR]*1e3}')
  c1=$(cpu_ns "$pid")
  awk -v fsid="$fsid" -v label="$label" -v osds="$osds" -v text="$text" -v proto="$proto" \
      -v times="$times" -v cpu_ms="$(awk -v d=$((c1 - c0)) 'BEGIN { printf "%.1f", d / 20 / 1e6 }')" '
    /^#/ { next }
    { all++ }
    # Stored by a Prometheus with native histograms on: one series per histogram that has a
    # native form (its buckets start at le 1e-06), three for one with +Inf alone.
    { name = $0; sub(/[{ ].*/, "", name) }
    name ~ /_count$/ { hist_all++ } name ~ /_bucket$/ && /le="1e-06"/ { hist_native++ }
    name !~ /_(bucket|sum|count)$/ { plain_all++ }
    index($0, "fsid=\"" fsid "\"") && match($0, /ceph_daemon="osd\.[0-9]+"/) {
      d = substr($0, RSTART, RLENGTH); per[d]++
      if ($0 ~ /bluestore_/) tier2[d]++
      if (name ~ /_count$/) hists[d]++
      if (name ~ /_bucket$/ && /le="1e-06"/) natives[d]++
      if (name !~ /_(bucket|sum|count)$/) plain[d]++
    }
    END {
      n = 0; max = 0; sum = 0; t2 = 0; nat = 0
      for (d in per) {
        n++; sum += per[d]; if (per[d] > max) max = per[d]; t2 += tier2[d]
        nat += plain[d] + natives[d] + 3 * (hists[d] - natives[d])
      }
      split(times, t, " ")
      printf "%-8s %2d OSDs: per OSD max %d, mean %.0f (BlueStore stages %.0f), native %.0f; host %d series, native %d; scrape %d bytes text, %d protobuf; render p50 %s ms, p99 %s ms, CPU %s ms per scrape\n",
        label, osds, max, n ? sum / n : 0, n ? t2 / n : 0, n ? nat / n : 0, all,
        plain_all + hist_native + 3 * (hist_all - hist_native), text, proto, t[1], t[2], cpu_ms
      if (n != osds) printf "  (saw %d of the %d OSDs)\n", n, osds
    }' "$work/scrape.txt"
}

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_mib() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# OSDS NAME:PID:PORT...: every daemon measured over the same time
daemon_cost() {
  local n=$1 hz d name pid port
  shift
  hz=$(getconf CLK_TCK)
  declare -A t0 t1 t2
  for d in "$@"; do IFS=: read -r name pid port <<< "$d"; t0[$name]=$(ticks "$pid"); done
  sleep 30
  for d in "$@"; do IFS=: read -r name pid port <<< "$d"; t1[$name]=$(ticks "$pid"); done
  for _ in 1 2 3 4; do
    for d in "$@"; do IFS=: read -r name pid port <<< "$d"; curl -s -o /dev/null "127.0.0.1:$port/metrics"; done
    sleep 15
  done
  for d in "$@"; do
    IFS=: read -r name pid port <<< "$d"
    t2[$name]=$(ticks "$pid")
    awk -v w="$name" -v n="$n" -v rss="$(rss_mib "$pid")" -v idle=$((t1[$name] - t0[$name])) \
      -v scraped=$((t2[$name] - t1[$name])) -v hz="$hz" \
      'BEGIN { printf "%-8s %2d OSDs: RSS %s MiB; CPU %.2f%% of a core idle (30 s), %.2f%% under a 15 s scrape interval (60 s)\n",
        w, n, rss, idle / hz / 30 * 100, scraped / hz / 60 * 100 }'
  done
}

for n in "${sizes[@]}"; do
  rm -rf "$work/cluster"
  CEPH_OSDS=$n CEPH_BLOCK_SIZE=4G "$here/../ceph/cluster.sh" up "$work/cluster" > "$work/cluster-$n.log" 2>&1 ||
    { tail -20 "$work/cluster-$n.log"; exit 1; }
  # shellcheck disable=SC1091
  source "$work/cluster/env"
  start_daemon default ""
  default_port=$port
  start_daemon full "collectors:
  syscall: {buckets: full}
  block: {target_histograms: true}
  osd: {detail: always, buckets: full}"
  full_port=$port
  start_daemon tiers "collectors:
  osd: {detail: always}"
  tiers_port=$port
  sleep 5  # all attach to every OSD (shipped profiles)
  rados -p bench bench 20 write -b 4096 -t 16 --no-cleanup > "$work/load.log" 2>&1
  rados -p bench bench 10 seq -t 16 >> "$work/load.log" 2>&1
  # "other" ops: one client stating and listing the xattrs of 200 objects
  /usr/bin/python3 - <<'PY'
import os, rados
with rados.Rados(conffile=os.environ["CEPH_CONF"]) as cluster, cluster.open_ioctx("bench") as io:
    for i, obj in enumerate(io.list_objects()):
        if i == 200:
            break
        io.stat(obj.key)
        list(io.get_xattrs(obj.key))
        # cls_lock's lock and unlock read and write: op="other"
        io.lock_exclusive(obj.key, "series-budget", "cookie")
        io.unlock(obj.key, "series-budget", "cookie")
PY
  sleep 3
  report default "$default_port" "$n" "$CEPHSCOPE_CEPH_FSID" "${daemons[0]}"
  report full "$full_port" "$n" "$CEPHSCOPE_CEPH_FSID" "${daemons[1]}"
  report tiers "$tiers_port" "$n" "$CEPHSCOPE_CEPH_FSID" "${daemons[2]}"
  daemon_cost "$n" "default:${daemons[0]}:$default_port" "full:${daemons[1]}:$full_port" \
    "tiers:${daemons[2]}:$tiers_port"
  for d in "${daemons[@]}"; do kill "$d" 2>/dev/null && wait "$d" 2>/dev/null || true; done
  daemons=()
  "$here/../ceph/cluster.sh" down "$work/cluster" > /dev/null 2>&1
done
