#!/usr/bin/env bash
# capture.sh - record the exposition the fleet simulator replays (tests/fleet/fixture/).
#
#   capture.sh BUILD_DIR OUT_DIR
#
# Brings a real Pacific cluster up (tests/ceph/cluster.sh, CEPH_OSDS OSDs, default 3), runs
# the daemon of BUILD_DIR with the shipped default config against it, and under a steady mixed
# load (4 KiB rados bench writes and sequential reads at once, 16 threads each) scrapes it
# twice, GAP seconds apart (default 15), in both expositions: text (0.0.4) and protobuf
# (delimited MetricFamily, classic and native histograms). The two scrapes give every series
# its value and its rate; the simulator replays them. Writes OUT_DIR/{a,b}.{txt,pb}.gz and
# OUT_DIR/capture.json (times, fsid, OSDs, load). Needs root.
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build=$(realpath "$1")
out=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
gap=${GAP:-15}
bin=$build/daemon/cephscope
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
work=$(mktemp -d /tmp/fleet-capture-XXXXXX)
daemon=
loads=()
cleanup() {
  for p in "${loads[@]}" $daemon; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  [ -d "$work/cluster" ] && "$here/../ceph/cluster.sh" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$out"
CEPH_BLOCK_SIZE=${CEPH_BLOCK_SIZE:-4G} "$here/../ceph/cluster.sh" up "$work/cluster" > "$work/cluster.log" 2>&1 ||
  { tail -20 "$work/cluster.log"; exit 1; }
# shellcheck disable=SC1091
source "$work/cluster/env"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
profiles: {cache_dir: $work/profiles, shipped_dirs: [$here/../../config/profiles]}
CONF
"$bin" --config.file "$work/cephscope.yaml" > "$work/cephscope.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
sleep 5
R() { rados -c "$CEPH_CONF" -p "$CEPHSCOPE_CEPH_POOL" "$@"; }
R bench 15 write -b 4096 -t 16 --no-cleanup > "$work/fill.log" 2>&1
R bench $((gap * 2 + 20)) write -b 4096 -t 16 --no-cleanup --run-name steady > "$work/w.log" 2>&1 &
loads+=($!)
R bench $((gap * 2 + 20)) rand -t 16 > "$work/r.log" 2>&1 &
loads+=($!)
sleep 10
proto='Accept: application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'
snap() {  # NAME: text and protobuf within a few ms of each other; prints the time
  date +%s.%N > "$work/$1.t"
  curl -s "127.0.0.1:$port/metrics" > "$work/$1.txt"
  curl -s -H "$proto" "127.0.0.1:$port/metrics" > "$work/$1.pb"
}
snap a
sleep "$gap"
snap b
for p in "${loads[@]}"; do wait "$p" || true; done
loads=()
for f in a.txt a.pb b.txt b.pb; do gzip -9n < "$work/$f" > "$out/$f.gz"; done
python3 - "$out/capture.json" "$(cat "$work/a.t")" "$(cat "$work/b.t")" "$CEPHSCOPE_CEPH_FSID" \
  "$CEPHSCOPE_CEPH_OSD_IDS" "$(git -C "$here" rev-parse --short HEAD)" <<'PY'
import json, sys
path, ta, tb, fsid, osds, commit = sys.argv[1:]
json.dump({"t_a": float(ta), "t_b": float(tb), "fsid": fsid,
           "osds": ["osd." + o for o in osds.split()], "commit": commit,
           "ceph": "16.2.15 (Debian 12), BlueStore on files, ssd profile",
           "config": "config/cephscope.yaml (default)",
           "load": "rados bench write 4 KiB 16 threads and rados bench rand 16 threads at once"},
          open(path, "w"), indent=1)
PY
ls -l "$out"
