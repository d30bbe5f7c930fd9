#!/usr/bin/env bash
# The OCI image as cephadm would run it (host pid and network, privileged, tracefs and the
# container runtime's records mounted) beside a container cluster (CEPHSCOPE_CEPH_DIR, the
# ceph_reef_cluster fixture): it must find the cluster's three OSDs, by fsid and container,
# and measure a rados bench's writes on them. Prints the image's size.
#
#   tests/deploy/image.sh BUILD
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
source "$(dirname "$0")/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 BUILD" >&2; exit 2; }
build=$(cd "$1" && pwd)
[ -f "${CEPHSCOPE_CEPH_DIR:-}/env" ] || deploy_die "no container cluster (CEPHSCOPE_CEPH_DIR/env)"
# shellcheck disable=SC1091
. "$CEPHSCOPE_CEPH_DIR/env"
read -r -a RADOS <<< "$CEPHSCOPE_CEPH_RADOS"
deb=$(deploy_deb "$build")
base=localhost/cephscope-test-bookworm:clean
deploy_image "$base"
tag=localhost/cephscope-test:image
t0=$SECONDS
deploy_log "image: $(CEPHSCOPE_BASE_IMAGE=$base "$DEPLOY_HERE/../../deploy/oci/build-image.sh" "$deb" "$tag") \
(built in $((SECONDS - t0)) s)"

name=cephscope-test-image
port=9591
metrics() { curl -sf "http://127.0.0.1:$port/metrics"; }
podman rm -f "$name" >/dev/null 2>&1 || true
trap 'podman logs "$name" > "$build/deploy-image.log" 2>&1 || true; podman rm -f "$name" >/dev/null 2>&1 || true' EXIT
podman run -d --name "$name" --pid=host --net=host --privileged \
  -v /sys/kernel/tracing:/sys/kernel/tracing \
  -v /var/lib/containers/storage:/var/lib/containers/storage:ro \
  "$tag" --config.file=/etc/cephscope/cephscope.yaml --web.listen-address="127.0.0.1:$port" >/dev/null

osds_attached() {   # how many of the cluster's OSDs have the op probe attached
  metrics | grep '^cephscope_probe_attached{collector="osd",probe="PrimaryLogPG::log_op_stats"' |
    grep "fsid=\"$CEPHSCOPE_CEPH_FSID\"" | grep -c '} 1$'
}
for _ in $(seq 120); do
  [ "$(osds_attached 2>/dev/null || echo 0)" -ge 3 ] && break
  sleep 1
done
[ "$(osds_attached)" -ge 3 ] || { podman logs "$name" 2>&1 | tail -n 30 >&2; deploy_die "the image's daemon did not attach to the 3 OSDs"; }
before=$(metrics | awk -v f="fsid=\"$CEPHSCOPE_CEPH_FSID\"" \
  '/^cephscope_osd_op_seconds_count\{/ && index($0, f) && /op="write"/ { s += $NF } END { print s + 0 }')
timeout 120 "${RADOS[@]}" -p "$CEPHSCOPE_CEPH_POOL" bench 5 write -b 4096 -t 16 --no-cleanup >/dev/null 2>&1 ||
  deploy_die "rados bench failed"
sleep 2
m=$(metrics)
after=$(awk -v f="fsid=\"$CEPHSCOPE_CEPH_FSID\"" \
  '/^cephscope_osd_op_seconds_count\{/ && index($0, f) && /op="write"/ { s += $NF } END { print s + 0 }' <<< "$m")
containers=$(grep '^cephscope_target_info{' <<< "$m" | grep "fsid=\"$CEPHSCOPE_CEPH_FSID\"" |
  grep -o 'target_container="[^"]*"' | sort -u | tr '\n' ' ')
per_osd=$(grep '^cephscope_osd_op_seconds_count{' <<< "$m" | grep "fsid=\"$CEPHSCOPE_CEPH_FSID\"" |
  grep 'op="write"' | grep -o 'ceph_daemon="osd\.[0-9]*"' | sort -u | wc -l)
deploy_log "osd writes measured during a 5 s rados bench: $((after - before)) on $per_osd OSDs; containers: $containers"
[ "$per_osd" -ge 3 ] || deploy_die "writes measured on $per_osd of the 3 OSDs"
[ "$((after - before))" -gt 0 ] || deploy_die "no OSD write measured"
[ "$(wc -w <<< "$containers")" -ge 3 ] || deploy_die "the OSDs' containers are not named"
echo "image: discovered 3 OSDs of $CEPHSCOPE_CEPH_RELEASE and measured $((after - before)) writes"
