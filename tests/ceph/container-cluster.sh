#!/usr/bin/env bash
# container-cluster.sh - a throw-away single-node Ceph cluster of a newer release, every daemon
# in its own podman container the way cephadm runs it.
#
#   container-cluster.sh up   RELEASE DIR   mon, mgr, 3 BlueStore OSDs (plain files), pool
#                                           "bench" (size 3); wait for HEALTH_OK and every PG
#                                           active+clean; write DIR/env
#   container-cluster.sh down RELEASE DIR   stop and remove the cluster's containers, remove
#                                           DIR and /var/{lib,run,log}/ceph/FSID
#   container-cluster.sh env  RELEASE DIR   (re)write DIR/env from the running containers and
#                                           print it
#   container-cluster.sh restart-osd RELEASE DIR N
#                                           restart osd.N as cephadm's unit does: podman stop
#                                           (--rm removes the container), podman run again
#                                           (from CEPH_IMAGE when set)
#
# RELEASE: reef (18.2, Debian trixie) or tentacle (20.2, Debian sid); the image
# localhost/cephscope-ceph:RELEASE comes from image.sh (run when `image.sh --check` fails);
# CEPH_IMAGE=... runs another one, e.g. localhost/cephscope-ceph:reef-nodbg.
#
# Like cephadm: a fresh fsid per cluster; containers ceph-FSID-mon-HOST, ceph-FSID-mgr-x and
# ceph-FSID-osd-N, each `podman run --rm -d --ipc=host --net=host --privileged --group-add=disk
# --init --entrypoint /usr/bin/ceph-DAEMON IMAGE -n NAME -f --setuser ceph --setgroup ceph
# --default-log-to-file=false ...`: own pid and mount namespaces, no fsid on the command line.
# Host paths (bind-mounted):
#   /var/lib/ceph/FSID/mon.HOST, mgr.x, osd.N -> /var/lib/ceph/{mon,mgr,osd}/ceph-ID
#   /var/run/ceph/FSID -> /var/run/ceph   (admin sockets: /var/run/ceph/FSID/ceph-osd.N.asok)
#   /var/log/ceph/FSID -> /var/log/ceph   (daemon logs, and each container's stdout/stderr)
#   DIR/ceph.conf -> /etc/ceph/ceph.conf  (DIR/keyring, client.admin, only in the mon's)
# The mon listens on 127.0.0.1 at the first port of a free window of 100 ports; mgr and OSDs
# bind in the other 99. Windows are chosen as by cluster.sh, under the same lock, so this
# cluster, the other release's and cluster.sh's host cluster never share a port.
#
# Env knobs: CEPH_IMAGE, CEPH_BLOCK_SIZE (default 10G), CEPH_PG_NUM (32), CEPH_OSD_MEMORY
# (1073741824), CEPH_OSD_PROFILE (ssd|hdd|auto, default ssd, as in cluster.sh),
# CEPH_UP_TIMEOUT (s per wait, default 180).
set -euo pipefail

CEPH_OSDS=3
CEPH_POOL=bench
CEPH_PG_NUM=${CEPH_PG_NUM:-32}
CEPH_BLOCK_SIZE=${CEPH_BLOCK_SIZE:-10G}
CEPH_OSD_MEMORY=${CEPH_OSD_MEMORY:-1073741824}
CEPH_OSD_PROFILE=${CEPH_OSD_PROFILE:-ssd}
CEPH_UP_TIMEOUT=${CEPH_UP_TIMEOUT:-180}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MARKER=.cephscope-container-cluster   # "down" removes only directories holding this file
T0=$(date +%s.%N)
STEP_T=$T0

elapsed() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
log() { printf '[container-cluster.sh %s %6ss] %s\n' "${RELEASE:-}" "$(elapsed "$T0")" "$*" >&2; }
step_done() { log "step $1: $(elapsed "$STEP_T") s"; STEP_T=$(date +%s.%N); }
die() {
    log "ERROR: $*"
    if [ "${SUB:-}" = up ] && [ "${CREATED:-0}" = 1 ]; then
        log "stopping the containers started so far; logs stay in $LOG_DIR"
        stop_containers || true
        log "remove with: $0 down $RELEASE $DIR"
    fi
    exit 1
}
usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# ------------------------------------------------------------------ ports (as cluster.sh)
# Same scheme and same lock file as tests/ceph/cluster.sh: a window of 100 ports aligned on 100,
# below the ephemeral range, with no TCP socket in it; the lock is held until the mon listens.
PORT_LOCK=${TMPDIR:-/tmp}/.cephscope-ceph-ports.lock

used_ports() { ss -Htan 2>/dev/null | awk '{n=split($4,a,":"); print a[n]}' | sort -un; }

free_port_window() {
    local low hi base i busy
    read -r low _ < /proc/sys/net/ipv4/ip_local_port_range
    hi=$(( low / 100 - 1 ))
    [ "$hi" -gt 100 ] || hi=326
    busy=$(used_ports | tr '\n' ' ')
    for i in $(seq 1 300); do
        base=$(( (100 + RANDOM % (hi - 100 + 1)) * 100 ))
        if ! awk -v b="$base" -v busy="$busy" 'BEGIN{
                n=split(busy, p, " "); for (i=1;i<=n;i++) if (p[i]>=b && p[i]<b+100) exit 0; exit 1}'; then
            echo "$base"; return 0
        fi
    done
    return 1
}

# ------------------------------------------------------------------ names and paths
set_names() {   # needs FSID and HOST
    DATA_DIR=/var/lib/ceph/$FSID
    RUN_DIR=/var/run/ceph/$FSID
    LOG_DIR=/var/log/ceph/$FSID
    MON_CTR=ceph-$FSID-mon-$HOST
    MGR_CTR=ceph-$FSID-mgr-x
}
osd_ctr() { echo "ceph-$FSID-osd-$1"; }

C() { timeout 60 podman exec "$MON_CTR" ceph --connect-timeout 15 "$@"; }
Ci() { timeout 60 podman exec -i "$MON_CTR" ceph --connect-timeout 15 "$@"; }

# the options every daemon container gets (cephadm's, minus the systemd parts)
common_run_args() {   # common_run_args CONTAINER_NAME ENTRYPOINT
    printf '%s\n' --rm -d --ipc=host --net=host --privileged --group-add=disk --init \
        --name "$1" --entrypoint "$2" \
        -e "CONTAINER_IMAGE=$IMAGE" -e "NODE_NAME=$HOST" \
        -e TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES=134217728 \
        --log-driver k8s-file --log-opt "path=$LOG_DIR/$1.stdout" \
        -v "$RUN_DIR:/var/run/ceph" -v "$LOG_DIR:/var/log/ceph" \
        -v "$DATA_DIR/crash:/var/lib/ceph/crash" -v "$DIR/ceph.conf:/etc/ceph/ceph.conf:ro"
}
DAEMON_ARGS=(-f --setuser ceph --setgroup ceph --default-log-to-file=false
             --default-log-to-stderr=true --default-log-stderr-prefix="debug ")

running() { [ "$(podman inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }

check_alive() {   # fail fast, naming the daemon, when one of our containers has exited
    local c n
    for c in "${STARTED[@]}"; do
        if ! running "$c"; then
            n=${c#ceph-"$FSID"-}
            log "$c has exited; last lines of its logs:"
            tail -n 15 "$LOG_DIR/ceph-${n/-/.}.log" >&2 2>/dev/null || true
            tail -n 8 "$LOG_DIR/$c.stdout" >&2 2>/dev/null || true
            return 1
        fi
    done
}

wait_for() {   # wait_for TIMEOUT WHAT CMD...
    local t=$1 what=$2 start end
    shift 2
    start=$(date +%s.%N)
    end=$(( $(date +%s) + t ))
    until "$@" >/dev/null 2>&1; do
        check_alive || die "a daemon died while waiting for: $what"
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.5
    done
    log "ok: $what ($(elapsed "$start") s)"
}

our_containers() {   # our_containers [KIND]: names of this cluster's containers, running or not
    podman ps -a --format '{{.Names}}' --filter "name=^ceph-$FSID-${1:-}" 2>/dev/null || true
}

stop_containers() {   # OSDs first, then mgr, then mon; in parallel within a kind
    local kind c pids
    for kind in osd mgr mon; do
        pids=()
        for c in $(our_containers "$kind-"); do
            log "stop $c"
            podman stop -t 20 "$c" >/dev/null 2>&1 &
            pids+=($!)
        done
        for c in "${pids[@]}"; do wait "$c" || true; done
    done
    for c in $(our_containers); do podman rm -f "$c" >/dev/null 2>&1 || true; done
}

osds_up() {
    C osd stat -f json | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["num_up_osds"] == s["num_in_osds"] == int(sys.argv[1]) else 1)' "$CEPH_OSDS"
}
pgs_clean() {
    C pg stat -f json | python3 -c '
import json, sys
s = json.load(sys.stdin)["pg_summary"]
st = s.get("num_pg_by_state", [])
ok = s["num_pgs"] >= int(sys.argv[1]) and all(x["name"] == "active+clean" for x in st) \
     and sum(x["num"] for x in st) == s["num_pgs"]
sys.exit(0 if ok else 1)' "$CEPH_PG_NUM"
}
health_ok() { [ "$(C health)" = HEALTH_OK ]; }
mgr_available() { C mgr stat -f json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["available"] else 1)'; }

# ------------------------------------------------------------------ up
write_conf() {   # write_conf PORT_MIN PORT_MAX
    local pmin=$1 pmax=$2 profile=""
    case "$CEPH_OSD_PROFILE" in
        ssd) profile="bluestore_debug_enforce_settings = ssd
osd_op_num_shards = 8
osd_op_num_threads_per_shard = 2" ;;
        hdd) profile="bluestore_debug_enforce_settings = hdd
osd_op_num_shards = 5
osd_op_num_threads_per_shard = 1" ;;
        auto) ;;
        *) die "CEPH_OSD_PROFILE must be ssd, hdd or auto" ;;
    esac
    cat > "$DIR/ceph.conf" <<EOF
# Written by cephscope tests/ceph/container-cluster.sh ($RELEASE, $IMAGE). Paths are the
# containers' (cephadm's layout): see the bind mounts in the script.
[global]
fsid = $FSID
mon_host = [v2:127.0.0.1:$PORT]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_ipv4 = true
ms_bind_ipv6 = false
ms_bind_msgr1 = false
ms_bind_msgr2 = true
ms_bind_port_min = $pmin
ms_bind_port_max = $pmax
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
# the command line says --default-log-to-file=false (cephadm); these win over the defaults:
# daemon logs as files in /var/log/ceph/FSID, stderr (the container log) for errors only
log_to_file = true
log_to_stderr = false
err_to_stderr = true
mon_cluster_log_to_file = true
mon_cluster_log_to_stderr = false
osd_pool_default_size = 3
osd_pool_default_min_size = 2
osd_pool_default_pg_num = $CEPH_PG_NUM
osd_pool_default_pgp_num = $CEPH_PG_NUM
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 5
mon_data_avail_crit = 2
mon_max_pg_per_osd = 1000
mgr_initial_modules = iostat

[mon]
keyring = /var/lib/ceph/mon/ceph-\$id/keyring

[mgr]
keyring = /var/lib/ceph/mgr/ceph-\$id/keyring

[osd]
keyring = /var/lib/ceph/osd/ceph-\$id/keyring
osd_objectstore = bluestore
# NB: not osd_data/block: BlueStore makes osd_data/block a symlink to this path itself
bluestore_block_path = /var/lib/ceph/osd/ceph-\$id/block.img
bluestore_block_create = true
bluestore_block_size = $CEPH_BLOCK_SIZE
bluestore_block_db_create = false
bluestore_block_wal_create = false
osd_memory_target = $CEPH_OSD_MEMORY
osd_crush_update_on_start = true
# mclock's start-up benchmark of the (virtual) disk: seconds per OSD, numbers of no use here
osd_mclock_skip_benchmark = true
# tests mark OSDs down on purpose; an OSD marked down 5 times in 10 min would exit itself
osd_max_markdown_count = 1000
$profile
EOF
}

run_tool() {   # run_tool CMD...: a one-off container of IMAGE with the cluster's paths
    podman run --rm --net=host --entrypoint bash \
        -v "$DIR:/bootstrap" -v "$DATA_DIR:/fsid" -v "$RUN_DIR:/var/run/ceph" \
        -v "$LOG_DIR:/var/log/ceph" -v "$DIR/ceph.conf:/etc/ceph/ceph.conf:ro" \
        "$IMAGE" -ec "$@"
}

# Debian's python3-bcrypt (trixie, sid) is a PyO3 extension, and PyO3 refuses to load in a
# sub-interpreter, where ceph-mgr runs each module: mgr_util.py's top-level `import bcrypt` then
# fails every module (MGR_MODULE_DEPENDENCY "PyO3 modules do not yet support subinterpreters").
# The image stays as Debian ships it; the mgr's container gets a copy of mgr_util.py that
# imports bcrypt only where a password is hashed (no module this cluster runs does that).
patch_mgr_util() {
    MGR_MOUNTS=()
    grep -qx 'import bcrypt' "$DIR/mgr_util.py.orig" || { rm -f "$DIR/mgr_util.py.orig"; return 0; }
    sed -e 's/^import bcrypt$/# cephscope: bcrypt (PyO3) is imported where it is used, see container-cluster.sh/' \
        -e '/^[[:space:]]*\(import\|from\) /!s/\bbcrypt\./__import__("bcrypt")./g' \
        "$DIR/mgr_util.py.orig" > "$DIR/mgr_util.py"
    python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$DIR/mgr_util.py" \
        || die "patched mgr_util.py does not parse"
    ! grep -Eq '^(import|from) bcrypt' "$DIR/mgr_util.py" || die "mgr_util.py: could not defer import bcrypt"
    MGR_MOUNTS=(-v "$DIR/mgr_util.py:/usr/share/ceph/mgr/mgr_util.py:ro")
    log "mgr_util.py imports bcrypt (PyO3) at the top: the mgr gets a copy with a deferred import"
}

start_ctr() {   # start_ctr NAME ENTRYPOINT DATA_MOUNT DAEMON_NAME [PODMAN_ARGS...]
    local name=$1 ep=$2 mnt=$3 dn=$4 args
    shift 4
    mapfile -t args < <(common_run_args "$name" "$ep")
    podman run "${args[@]}" -v "$mnt" "$@" "$IMAGE" -n "$dn" "${DAEMON_ARGS[@]}" \
        >/dev/null 2>>"$DIR/podman.err" || return 1
}

cmd_up() {
    local b
    for b in podman ss python3 flock; do command -v "$b" >/dev/null || die "missing program: $b"; done
    # image.sh --check: both images there and built by this image.sh (no network); the suite's
    # version is checked by a full image.sh run (the ctest fixture ceph_RELEASE_image)
    if [ -z "${CEPH_IMAGE:-}" ] && ! "$HERE/image.sh" --check "$RELEASE"; then
        "$HERE/image.sh" "$RELEASE" || die "image.sh $RELEASE failed"
    fi
    podman image exists "$IMAGE" || die "no image $IMAGE (build it with: $HERE/image.sh $RELEASE)"
    step_done image

    mkdir -p "$(dirname "$DIR")"
    mkdir "$DIR" 2>/dev/null || die "$DIR already exists (run: $0 down $RELEASE $DIR)"
    touch "$DIR/$MARKER"
    FSID=$(cat /proc/sys/kernel/random/uuid)
    HOST=$(hostname -s)
    set_names
    CREATED=1
    STARTED=()
    mkdir -p "$DATA_DIR"/{crash,"mon.$HOST",mgr.x} "$RUN_DIR" "$LOG_DIR"
    local i
    for i in $(seq 0 $((CEPH_OSDS - 1))); do mkdir -p "$DATA_DIR/osd.$i"; done

    exec 9>>"$PORT_LOCK"
    flock -w 120 9 || die "could not lock $PORT_LOCK within 120 s"
    local pbase
    pbase=$(free_port_window) || die "no free window of 100 TCP ports"
    PORT=$pbase
    write_conf $((pbase + 1)) $((pbase + 99))
    printf '%s\n' "FSID=$FSID" "HOST=$HOST" "RELEASE=$RELEASE" "IMAGE=$IMAGE" "PORT=$PORT" \
        "OSD_IDS='$(seq -s ' ' 0 $((CEPH_OSDS - 1)))'" > "$DIR/state"
    log "DIR=$DIR fsid=$FSID image=$IMAGE mon=127.0.0.1:$PORT ports=$((pbase + 1))-$((pbase + 99))"

    # keys, monmap, mon store, OSD keys: the release's own tools, in one throw-away container
    run_tool "
        ceph-authtool --create-keyring /bootstrap/keyring --gen-key -n client.admin \
            --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
        # NB: ceph-mon --mkfs does nothing, silently, in a mon data dir that is not empty
        ceph-authtool --create-keyring /bootstrap/mon.keyring --gen-key -n mon. --cap mon 'allow *' >/dev/null
        ceph-authtool /bootstrap/mon.keyring --import-keyring /bootstrap/keyring >/dev/null
        monmaptool --create --clobber --fsid $FSID --addv $HOST '[v2:127.0.0.1:$PORT]' /bootstrap/monmap >/dev/null
        for i in \$(seq 0 $((CEPH_OSDS - 1))); do ceph-authtool --gen-print-key > /bootstrap/osd.\$i.key; done
        chown -R ceph:ceph /fsid /var/run/ceph /var/log/ceph /bootstrap/mon.keyring
        ceph-mon --mkfs -i $HOST --mon-data /fsid/mon.$HOST --monmap /bootstrap/monmap \
            --keyring /bootstrap/mon.keyring --setuser ceph --setgroup ceph
        rm /bootstrap/mon.keyring
        test -d /fsid/mon.$HOST/store.db || { echo 'ceph-mon --mkfs made no store.db'; exit 1; }
        id -u ceph > /bootstrap/ceph-uid
        cp /usr/share/ceph/mgr/mgr_util.py /bootstrap/mgr_util.py.orig
        ceph --version > /bootstrap/version
        # options of ceph.conf this release does not know (they would be ignored silently)
        ceph-conf --show-config | awk '{ print \$1 }' | sort -u > /tmp/known
        awk -F' = ' '/^[a-z]/ { print \$1 }' /etc/ceph/ceph.conf | sort -u | comm -23 - /tmp/known \
            > /bootstrap/unknown-options
    " >"$DIR/bootstrap.log" 2>&1 || die "bootstrap (keys, monmap, mon --mkfs) failed: $(tail -n 5 "$DIR/bootstrap.log")"
    chmod 600 "$DIR/keyring"
    CEPH_UID=$(cat "$DIR/ceph-uid")
    log "$(cat "$DIR/version") (ceph uid $CEPH_UID)"
    [ ! -s "$DIR/unknown-options" ] || log "WARNING: options unknown to $RELEASE: $(tr '\n' ' ' < "$DIR/unknown-options")"
    patch_mgr_util
    step_done bootstrap

    local args
    mapfile -t args < <(common_run_args "$MON_CTR" /usr/bin/ceph-mon)
    podman run "${args[@]}" -v "$DATA_DIR/mon.$HOST:/var/lib/ceph/mon/ceph-$HOST" \
        -v "$DIR/keyring:/etc/ceph/ceph.client.admin.keyring:ro" "$IMAGE" \
        -n "mon.$HOST" "${DAEMON_ARGS[@]}" --default-mon-cluster-log-to-file=false \
        >/dev/null 2>>"$DIR/podman.err" || die "podman run $MON_CTR failed: $(tail -n 3 "$DIR/podman.err")"
    STARTED+=("$MON_CTR")
    wait_for "$CEPH_UP_TIMEOUT" "mon.$HOST in quorum" C quorum_status \
        || die "mon.$HOST did not form a quorum within ${CEPH_UP_TIMEOUT}s (see $LOG_DIR/ceph-mon.$HOST.log)"
    flock -u 9
    exec 9>&-
    step_done mon

    # mgr and the OSDs' registration, mkfs and start: the mgr starts while the OSDs mkfs
    C auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
        > "$DATA_DIR/mgr.x/keyring" || die "ceph auth get-or-create mgr.x failed"
    chown -R "$CEPH_UID:$CEPH_UID" "$DATA_DIR/mgr.x"
    start_ctr "$MGR_CTR" /usr/bin/ceph-mgr "$DATA_DIR/mgr.x:/var/lib/ceph/mgr/ceph-x" mgr.x "${MGR_MOUNTS[@]}" \
        || die "podman run $MGR_CTR failed: $(tail -n 3 "$DIR/podman.err")"
    STARTED+=("$MGR_CTR")
    step_done mgr-start

    local uuid id key pids=() failed=()
    for i in $(seq 0 $((CEPH_OSDS - 1))); do
        uuid=$(cat /proc/sys/kernel/random/uuid)
        key=$(cat "$DIR/osd.$i.key")
        id=$(printf '{"cephx_secret": "%s"}' "$key" | Ci osd new "$uuid" "$i" -i -) \
            || die "ceph osd new $uuid $i failed"
        [ "$id" = "$i" ] || die "ceph osd new gave id '$id', expected $i"
        printf '[osd.%s]\n\tkey = %s\n' "$i" "$key" > "$DATA_DIR/osd.$i/keyring"
        echo "$uuid" > "$DATA_DIR/osd.$i/osd-uuid"
        chown -R "$CEPH_UID:$CEPH_UID" "$DATA_DIR/osd.$i"
        chmod 600 "$DATA_DIR/osd.$i/keyring"
    done
    rm -f "$DIR"/osd.*.key
    for i in $(seq 0 $((CEPH_OSDS - 1))); do
        podman run --rm --net=host --ipc=host --privileged --entrypoint /usr/bin/ceph-osd \
            -v "$DATA_DIR/osd.$i:/var/lib/ceph/osd/ceph-$i" -v "$RUN_DIR:/var/run/ceph" \
            -v "$LOG_DIR:/var/log/ceph" -v "$DIR/ceph.conf:/etc/ceph/ceph.conf:ro" "$IMAGE" \
            -n "osd.$i" --mkfs --osd-uuid "$(cat "$DATA_DIR/osd.$i/osd-uuid")" \
            --setuser ceph --setgroup ceph >"$LOG_DIR/osd.$i.mkfs.stdout" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("osd.$i"); done
    [ ${#failed[@]} -eq 0 ] || die "ceph-osd --mkfs failed for ${failed[*]} (see $LOG_DIR/osd.*.mkfs.stdout, $LOG_DIR/ceph-osd.*.log)"
    step_done osd-mkfs
    pids=()
    for i in $(seq 0 $((CEPH_OSDS - 1))); do
        start_ctr "$(osd_ctr "$i")" /usr/bin/ceph-osd "$DATA_DIR/osd.$i:/var/lib/ceph/osd/ceph-$i" "osd.$i" &
        pids+=($!)
        STARTED+=("$(osd_ctr "$i")")
    done
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("osd.$i"); done
    [ ${#failed[@]} -eq 0 ] || die "podman run failed for ${failed[*]}: $(tail -n 3 "$DIR/podman.err")"
    if ! wait_for "$CEPH_UP_TIMEOUT" "$CEPH_OSDS OSDs up and in" osds_up; then
        C osd tree >&2 || true
        die "not all OSDs came up within ${CEPH_UP_TIMEOUT}s (see $LOG_DIR/ceph-osd.*.log)"
    fi
    step_done osd-up
    wait_for "$CEPH_UP_TIMEOUT" "mgr.x available" mgr_available \
        || die "mgr.x did not become available within ${CEPH_UP_TIMEOUT}s (see $LOG_DIR/ceph-mgr.x.log)"
    step_done mgr-available

    {
        C osd crush rule create-replicated replicated-osd default osd &&
        C osd pool create "$CEPH_POOL" "$CEPH_PG_NUM" "$CEPH_PG_NUM" replicated replicated-osd &&
        C osd pool application enable "$CEPH_POOL" rados
    } >>"$DIR/setup.log" 2>&1 || die "creating pool $CEPH_POOL failed (see $DIR/setup.log)"
    local size
    size=$(C osd pool get "$CEPH_POOL" size) || die "ceph osd pool get $CEPH_POOL size failed"
    [ "$size" = "size: 3" ] || die "pool $CEPH_POOL has '$size', expected size 3"
    step_done pool

    if ! wait_for "$CEPH_UP_TIMEOUT" "all PGs active+clean" pgs_clean; then
        C pg stat >&2 || true
        die "PGs not all active+clean within ${CEPH_UP_TIMEOUT}s"
    fi
    if ! wait_for "$CEPH_UP_TIMEOUT" "HEALTH_OK" health_ok; then
        C health detail >&2 || true
        die "no HEALTH_OK within ${CEPH_UP_TIMEOUT}s (see ceph health detail above)"
    fi
    step_done health

    local obj="container-cluster-smoke-$$"
    { echo hello | podman exec -i "$MON_CTR" rados -p "$CEPH_POOL" put "$obj" - &&
      podman exec "$MON_CTR" rados -p "$CEPH_POOL" get "$obj" - | grep -qx hello &&
      podman exec "$MON_CTR" rados -p "$CEPH_POOL" rm "$obj"; } >>"$DIR/setup.log" 2>&1 \
        || die "rados put/get/rm on pool $CEPH_POOL failed (see $DIR/setup.log)"
    step_done smoke-io

    write_env
    log "cluster up in $(elapsed "$T0") s; $(rss_report)"
    log "use: source $DIR/env; \$CEPHSCOPE_CEPH_CLI -s"
}

# ------------------------------------------------------------------ env
host_pid() {   # host_pid CONTAINER: the daemon's host pid (the child of podman's --init)
    local init child
    init=$(podman inspect -f '{{.State.Pid}}' "$1" 2>/dev/null) || return 1
    [ -n "$init" ] && [ "$init" != 0 ] || return 1
    child=$(awk '{ print $1 }' "/proc/$init/task/$init/children") || return 1
    [ -n "$child" ] || return 1
    echo "$child"
}

rss_report() {   # the cluster's daemons' RSS (ceph-* processes from /proc), and podman's share
    local c pid init total=0 kb parts=() conmon=0
    for c in $(our_containers); do
        pid=$(host_pid "$c") || continue
        kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
        total=$((total + kb))
        parts+=("$(cat "/proc/$pid/comm")=$((kb / 1024))")
        init=$(podman inspect -f '{{.State.Pid}}' "$c")
        kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$init/status")   # catatonit
        conmon=$((conmon + kb))
        pid=$(awk '{ print $4 }' "/proc/$init/stat")               # conmon
        kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
        conmon=$((conmon + kb))
    done
    echo "RSS of ceph-* $((total / 1024)) MB (${parts[*]} MB); conmon+catatonit $((conmon / 1024)) MB"
}

write_env() {
    local i c pid ids
    ids=$(seq -s ' ' 0 $((CEPH_OSDS - 1)))
    local cli="podman exec $MON_CTR ceph"
    local client="podman run --rm -i --net=host --ipc=host -v $DIR/ceph.conf:/etc/ceph/ceph.conf:ro -v $DIR/keyring:/etc/ceph/ceph.client.admin.keyring:ro $IMAGE"
    {
        echo "# cephscope container test cluster ($RELEASE), written by tests/ceph/container-cluster.sh; source it."
        echo "# Ceph CLI of the release: \$CEPHSCOPE_CEPH_CLI -s  (podman exec into the mon's container)"
        echo "# A client in its own container: \$CEPHSCOPE_CEPH_CLIENT rados -p bench ls"
        echo "export CEPHSCOPE_CEPH_DIR='$DIR'"
        echo "export CEPHSCOPE_CEPH_RELEASE='$RELEASE'"
        echo "export CEPHSCOPE_CEPH_VERSION='$(cat "$DIR/version")'"
        echo "export CEPHSCOPE_CEPH_IMAGE='$IMAGE'"
        echo "export CEPHSCOPE_CEPH_FSID='$FSID'"
        echo "export CEPHSCOPE_CEPH_MON_ADDR='127.0.0.1:$PORT'"
        echo "export CEPHSCOPE_CEPH_CONF_HOST='$DIR/ceph.conf'"
        echo "export CEPHSCOPE_CEPH_KEYRING='$DIR/keyring'"
        echo "export CEPHSCOPE_CEPH_CLI='$cli'"
        echo "export CEPHSCOPE_CEPH_RADOS='podman exec -i $MON_CTR rados'"
        echo "export CEPHSCOPE_CEPH_CLIENT='$client'"
        echo "export CEPHSCOPE_CEPH_POOL='$CEPH_POOL'"
        echo "export CEPHSCOPE_CEPH_POOL_SIZE='3'"
        echo "export CEPHSCOPE_CEPH_DATA_DIR='$DATA_DIR'"
        echo "export CEPHSCOPE_CEPH_RUN_DIR='$RUN_DIR'"
        echo "export CEPHSCOPE_CEPH_LOG_DIR='$LOG_DIR'"
        echo "export CEPHSCOPE_CEPH_MON_CONTAINER='$MON_CTR'"
        echo "export CEPHSCOPE_CEPH_MGR_CONTAINER='$MGR_CTR'"
        echo "export CEPHSCOPE_CEPH_MON_ASOK='$RUN_DIR/ceph-mon.$HOST.asok'"
        echo "export CEPHSCOPE_CEPH_MGR_ASOK='$RUN_DIR/ceph-mgr.x.asok'"
        echo "export CEPHSCOPE_CEPH_MON_PID='$(host_pid "$MON_CTR" || true)'"
        echo "export CEPHSCOPE_CEPH_MGR_PID='$(host_pid "$MGR_CTR" || true)'"
        echo "export CEPHSCOPE_CEPH_OSD_IDS='$ids'"
        for i in $ids; do
            c=$(osd_ctr "$i")
            pid=$(host_pid "$c") || die "no running ceph-osd in $c"
            [ "$(cat "/proc/$pid/comm")" = ceph-osd ] || die "host pid $pid of $c is $(cat "/proc/$pid/comm"), not ceph-osd"
            echo "export CEPHSCOPE_CEPH_OSD_${i}_CONTAINER='$c'"
            echo "export CEPHSCOPE_CEPH_OSD_${i}_ASOK='$RUN_DIR/ceph-osd.$i.asok'"
            echo "export CEPHSCOPE_CEPH_OSD_${i}_PID='$pid'"
            echo "export CEPHSCOPE_CEPH_OSD_${i}_DATA='$DATA_DIR/osd.$i'"
        done
    } > "$DIR/env.tmp"
    mv "$DIR/env.tmp" "$DIR/env"
    # The e2e harness's view (tests/e2e/ceph_harness.h): host pids and admin sockets, and
    # the release's own ceph and rados, run in the mon's container with its paths.
    python3 - "$DIR/env" > "$DIR/cluster.json.tmp" <<'PY'
import json, re, sys
env = {}
for line in open(sys.argv[1]):
    m = re.match(r"export (\w+)='(.*)'$", line.strip())
    if m:
        env[m.group(1)] = m.group(2)
e = lambda k: env["CEPHSCOPE_CEPH_" + k]
daemon = lambda name, k: {"name": name, "pid": int(e(k + "_PID") or 0), "asok": e(k + "_ASOK"),
                          "container": env.get("CEPHSCOPE_CEPH_" + k + "_CONTAINER", "")}
print(json.dumps({
    "dir": e("DIR"), "release": e("RELEASE"),
    "tool_prefix": ["podman", "exec", "-i", e("MON_CONTAINER")],
    "conf": "/etc/ceph/ceph.conf", "keyring": "/etc/ceph/ceph.client.admin.keyring",
    "fsid": e("FSID"), "mon_addr": e("MON_ADDR"), "pool": e("POOL"),
    "pool_size": int(e("POOL_SIZE")),
    "mon": daemon("mon", "MON"), "mgr": daemon("mgr.x", "MGR"),
    "osds": [dict(daemon("osd." + i, "OSD_" + i), id=int(i)) for i in e("OSD_IDS").split()],
}, indent=1))
PY
    mv "$DIR/cluster.json.tmp" "$DIR/cluster.json"
}

load_state() {
    [ -f "$DIR/$MARKER" ] || die "$DIR is not a container-cluster.sh directory (no $MARKER)"
    [ -f "$DIR/state" ] || die "$DIR/state is missing"
    local FSID_ HOST_ RELEASE_
    # shellcheck disable=SC1091
    FSID_=$(. "$DIR/state"; echo "$FSID")
    # shellcheck disable=SC1091
    HOST_=$(. "$DIR/state"; echo "$HOST")
    # shellcheck disable=SC1091
    RELEASE_=$(. "$DIR/state"; echo "$RELEASE")
    [ "$RELEASE_" = "$RELEASE" ] || die "$DIR holds a $RELEASE_ cluster, not $RELEASE"
    [[ "$FSID_" =~ ^[0-9a-f-]{36}$ ]] || die "bad FSID in $DIR/state"
    FSID=$FSID_ HOST=$HOST_
    # shellcheck disable=SC1091
    IMAGE=$(. "$DIR/state"; echo "$IMAGE")
    # shellcheck disable=SC1091
    PORT=$(. "$DIR/state"; echo "$PORT")
    set_names
}

cmd_env() {
    load_state
    running "$MON_CTR" || die "$MON_CTR is not running"
    write_env
    cat "$DIR/env"
}

cmd_restart_osd() {
    load_state
    local n=$OSD_ID ctr
    ctr=$(osd_ctr "$n")
    [ -d "$DATA_DIR/osd.$n" ] || die "no osd.$n in $DATA_DIR"
    podman stop -t 10 "$ctr" >/dev/null 2>>"$DIR/podman.err" || true
    # --rm removes it once stopped; a name still taken would make the run below fail
    wait_for 30 "container $ctr removed" bash -c "! podman container exists $ctr" \
        || die "$ctr was not removed after stopping"
    # CEPH_IMAGE runs this OSD from another image (the same build without -dbg); the cluster's
    # own image stays the one its tools use
    local cluster_image=$IMAGE
    IMAGE=${CEPH_IMAGE:-$cluster_image}
    start_ctr "$ctr" /usr/bin/ceph-osd "$DATA_DIR/osd.$n:/var/lib/ceph/osd/ceph-$n" "osd.$n" \
        || die "podman run failed for osd.$n: $(tail -n 3 "$DIR/podman.err")"
    log "osd.$n restarted from $IMAGE in $(elapsed "$T0") s"
    IMAGE=$cluster_image
    write_env
}

cmd_down() {
    if [ ! -d "$DIR" ]; then log "$DIR does not exist: nothing to do"; return 0; fi
    [ -f "$DIR/$MARKER" ] || die "$DIR has no $MARKER file: not a container-cluster.sh directory, refusing"
    if [ -f "$DIR/state" ]; then
        load_state
        stop_containers
        step_done stop
        rm -rf -- "$DATA_DIR" "$RUN_DIR" "$LOG_DIR"
    fi
    rm -rf -- "$DIR"
    step_done remove
    local what=$DIR
    [ -z "${FSID:-}" ] || what="$DIR, $DATA_DIR, $RUN_DIR, $LOG_DIR"
    log "down: removed $what in $(elapsed "$T0") s"
}

# ------------------------------------------------------------------ main
OSD_ID=
if [ "${1:-}" = restart-osd ] && [ $# -eq 4 ]; then
    [[ "$4" =~ ^[0-9]+$ ]] || usage
    OSD_ID=$4
    set -- "$1" "$2" "$3"
fi
[ $# -eq 3 ] || usage
SUB=$1
RELEASE=$2
case "$RELEASE" in reef|tentacle) ;; *) log "ERROR: RELEASE must be reef or tentacle"; usage ;; esac
IMAGE=${CEPH_IMAGE:-localhost/cephscope-ceph:$RELEASE}
DIR=$(realpath -m -- "$3")
case "$DIR" in
    /|/tmp|/root|/home|/usr|/usr/*|/var|/var/lib|/var/lib/ceph|/var/lib/ceph/*|/etc|/etc/*|/work|/work/main|/work/shared)
        log "ERROR: refusing DIR=$DIR"; exit 1 ;;
esac
[[ "$DIR" =~ ^[A-Za-z0-9/._+-]+$ ]] || { log "ERROR: DIR may hold only [A-Za-z0-9/._+-]: $DIR"; exit 1; }
[ "$(id -u)" = 0 ] || { log "ERROR: needs root (podman, /var/lib/ceph)"; exit 1; }
case "$SUB" in
    up)   cmd_up ;;
    down) cmd_down ;;
    env)  cmd_env ;;
    restart-osd) [ -n "$OSD_ID" ] || usage; cmd_restart_osd ;;
    *)    usage ;;
esac
