#!/usr/bin/env bash
# cluster.sh - a throw-away single-node Ceph cluster for cephscope's end-to-end tests.
#
#   cluster.sh up     DIR   create and start mon.a, mgr.x and 3 BlueStore OSDs under DIR,
#                           pool "bench" (size 3, failure domain osd); wait for HEALTH_OK
#                           and every PG active+clean; write DIR/env and DIR/cluster.json
#   cluster.sh down   DIR   stop exactly the daemons "up" started (DIR/pid/*.pid), remove DIR
#   cluster.sh status DIR   daemons alive or not, then `ceph -s`
#
# Debian's Ceph 16.2 packages (installed by install.sh --no-dbg when missing). No systemd, no
# LVM, no ceph-volume: everything (conf, keys, mon store, OSD block files, logs, admin
# sockets, pid files) lives in DIR, so clusters in two DIRs never collide. The mon listens on
# 127.0.0.1 at a port found free at run time; mgr and OSDs bind in the next 99 ports, also
# found free at run time. Tests reach the cluster with `source DIR/env` (CEPH_CONF etc.).
#
# Env knobs:
#   CEPH_OSDS           number of OSDs, 1..24 (default 3; the pool size is min(3, CEPH_OSDS);
#                       each OSD binds 4 msgr2 ports of the window's 99)
#   CEPH_POOL           pool name (default bench)
#   CEPH_PG_NUM         PGs of the pool (default 32)
#   CEPH_BLOCK_SIZE     size of each OSD's sparse block file (default 10G). A full OSD makes
#                       writes hang without an error: run `rados -p POOL cleanup` after benches.
#   CEPH_OSD_MEMORY     osd_memory_target in bytes (default 1073741824)
#   CEPH_OSD_PROFILE    ssd|hdd|auto (default ssd). auto follows the backing disk's rotational
#                       flag, which is 1 on this kind of virtual disk (HDD profile: deferred 4 KiB
#                       writes, 5 op shards x 1 thread); ssd/hdd force one profile.
#   CEPH_UP_TIMEOUT     seconds for each wait of "up" (default 180)
set -euo pipefail

CEPH_OSDS=${CEPH_OSDS:-3}
CEPH_POOL=${CEPH_POOL:-bench}
CEPH_PG_NUM=${CEPH_PG_NUM:-32}
CEPH_BLOCK_SIZE=${CEPH_BLOCK_SIZE:-10G}
CEPH_OSD_MEMORY=${CEPH_OSD_MEMORY:-1073741824}
CEPH_OSD_PROFILE=${CEPH_OSD_PROFILE:-ssd}
CEPH_UP_TIMEOUT=${CEPH_UP_TIMEOUT:-180}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3            # Debian's python3 (a dependency of ceph-common)
MARKER=.cephscope-test-cluster # "down" removes only directories holding this file
T0=$(date +%s.%N)
STEP_T=$T0

elapsed() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN{printf "%.1f", a-b}'; }
log() { printf '[cluster.sh %6ss] %s\n' "$(elapsed "$T0")" "$*" >&2; }
step_done() {   # step_done NAME: log how long the step took
    log "step $1: $(elapsed "$STEP_T") s"
    STEP_T=$(date +%s.%N)
}
die() {
    log "ERROR: $*"
    if [ "${SUB:-}" = up ] && [ "${CREATED:-0}" = 1 ]; then   # only what this "up" started
        log "stopping the daemons started so far; logs stay in $DIR/log"
        stop_daemons || true
        log "remove with: $0 down $DIR"
    fi
    exit 1
}
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

C() { timeout 60 ceph -c "$CONF" --connect-timeout 15 "$@"; }

# ------------------------------------------------------------------ ports
# Each cluster takes a window of 100 TCP ports aligned on a multiple of 100: the mon listens on
# the first, mgr and OSDs bind in the other 99 (Ceph moves on to the next port of the range if
# one is taken). Windows lie below the kernel's ephemeral port range, so outgoing connections
# do not take them; PORT_LOCK serialises "choose a window, start the mon on its first port"
# between concurrent "up"s, after which the mon's listening port marks the window as taken.
PORT_LOCK=${TMPDIR:-/tmp}/.cephscope-ceph-ports.lock

used_ports() { ss -Htan 2>/dev/null | awk '{n=split($4,a,":"); print a[n]}' | sort -un; }

free_port_window() {   # first port of a window of 100 ports that no TCP socket uses
    local low hi base i busy
    read -r low _ < /proc/sys/net/ipv4/ip_local_port_range
    hi=$(( low / 100 - 1 ))              # last window ends below the ephemeral range
    [ "$hi" -gt 100 ] || hi=326          # odd range settings: fall back to 10000-32699
    busy=$(used_ports | tr '\n' ' ')
    for i in $(seq 1 300); do
        base=$(( (100 + RANDOM % (hi - 100 + 1)) * 100 ))   # 10000 .. (low - 200)
        if ! awk -v b="$base" -v busy="$busy" 'BEGIN{
                n=split(busy, p, " "); for (i=1;i<=n;i++) if (p[i]>=b && p[i]<b+100) exit 0; exit 1}'; then
            echo "$base"; return 0
        fi
    done
    return 1
}

# ------------------------------------------------------------------ daemons
start_daemon() {   # start_daemon NAME BINARY ARGS...: run in the foreground, detached, pid file
    local name=$1 bin=$2 pid i; shift 2
    setsid "$bin" -f -c "$CONF" "$@" </dev/null >>"$DIR/log/$name.stdout" 2>&1 9>&- &
    pid=$!
    echo "$pid" > "$DIR/pid/$name.pid"
    for i in $(seq 1 50); do   # setsid execs in place: wait until the pid runs the binary
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$(command -v "$bin")")" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    die "$name did not start (see $DIR/log/$name.stdout and $DIR/log/$name.log)"
}

ours() {   # ours PID: the process is alive and runs with our ceph.conf
    local pid=$1
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ -r "/proc/$pid/cmdline" ] || return 1
    { tr '\0' '\n' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qxF -- "$CONF"
}

check_alive() {    # fail fast, naming the daemon, when one of ours has exited
    local pf name
    for pf in "$DIR"/pid/*.pid; do
        [ -e "$pf" ] || continue
        name=$(basename "$pf" .pid)
        if ! ours "$(cat "$pf")"; then
            log "$name (pid $(cat "$pf")) has exited; last lines of $DIR/log/$name.log:"
            tail -n 15 "$DIR/log/$name.log" >&2 2>/dev/null || true
            tail -n 5 "$DIR/log/$name.stdout" >&2 2>/dev/null || true
            return 1
        fi
    done
}

wait_for() {   # wait_for TIMEOUT WHAT CMD...: poll CMD every 0.5 s while our daemons live
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

stop_daemons() {   # TERM our daemons (OSDs first, then mgr and mon), KILL after a timeout
    local kind pf pid pids end
    for kind in osd mgr mon; do
        pids=()
        for pf in "$DIR"/pid/"$kind".*.pid; do
            [ -e "$pf" ] || continue
            pid=$(cat "$pf")
            if ours "$pid"; then
                log "TERM $(basename "$pf" .pid) (pid $pid)"
                kill -TERM "$pid" 2>/dev/null || true
                pids+=("$pid")
            fi
        done
        end=$(( $(date +%s) + 20 ))
        for pid in "${pids[@]}"; do
            while ours "$pid" && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
            if ours "$pid"; then
                log "KILL pid $pid (did not stop within 20 s)"
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done
    done
}

# ------------------------------------------------------------------ checks used by waits
osds_up() {
    C osd stat -f json | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["num_up_osds"] == s["num_in_osds"] == int(sys.argv[1]) else 1)' "$CEPH_OSDS"
}

pgs_clean() {      # every PG of every pool active+clean, and the pool's PGs all reported
    C pg stat -f json | "$PY" -c '
import json, sys
s = json.load(sys.stdin)["pg_summary"]
st = s.get("num_pg_by_state", [])
ok = s["num_pgs"] >= int(sys.argv[1]) and all(x["name"] == "active+clean" for x in st) \
     and sum(x["num"] for x in st) == s["num_pgs"]
sys.exit(0 if ok else 1)' "$CEPH_PG_NUM"
}

health_ok() { [ "$(C health)" = HEALTH_OK ]; }
mgr_available() { C mgr stat -f json | "$PY" -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["available"] else 1)'; }

# ------------------------------------------------------------------ up
write_conf() {   # write_conf FSID MON_PORT PORT_MIN PORT_MAX
    local fsid=$1 port=$2 pmin=$3 pmax=$4 profile=""
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
    cat > "$CONF" <<EOF
# Written by cephscope tests/ceph/cluster.sh: a single-node test cluster. Every path is in
# $DIR so that clusters in different directories never share a file, socket or port.
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port]
mon_initial_members = a
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
# else HEALTH_WARN "mons are allowing insecure global_id reclaim"
auth_allow_insecure_global_id_reclaim = false
keyring = $DIR/keyring
run_dir = $DIR/run
crash_dir = $DIR/crash
osd_pool_default_size = $POOL_SIZE
osd_pool_default_min_size = $POOL_MIN_SIZE
osd_pool_default_pg_num = $CEPH_PG_NUM
osd_pool_default_pgp_num = $CEPH_PG_NUM
osd_pool_default_pg_autoscale_mode = off
# one host: replicas go to different OSDs, not hosts (also for the mgr's own pool)
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
mon_allow_pool_delete = true
# the mon store shares the root file system with everything else
mon_data_avail_warn = 5
mon_data_avail_crit = 2
mon_max_pg_per_osd = 1000
# restful (needs a certificate) and nfs are of no use here
mgr_initial_modules = iostat

[mon]
mon_data = $DIR/mon.\$id
log_file = $DIR/log/\$name.log
admin_socket = $DIR/run/\$name.asok
mon_cluster_log_file = $DIR/log/cluster.log

[mgr]
mgr_data = $DIR/mgr.\$id
keyring = $DIR/mgr.\$id/keyring
log_file = $DIR/log/\$name.log
admin_socket = $DIR/run/\$name.asok

[osd]
osd_data = $DIR/osd.\$id
keyring = $DIR/osd.\$id/keyring
log_file = $DIR/log/\$name.log
admin_socket = $DIR/run/\$name.asok
osd_objectstore = bluestore
# NB: not osd_data/block: BlueStore makes osd_data/block a symlink to this path itself
bluestore_block_path = $DIR/osd.\$id/block.img
bluestore_block_create = true
bluestore_block_size = $CEPH_BLOCK_SIZE
bluestore_block_db_create = false
bluestore_block_wal_create = false
osd_memory_target = $CEPH_OSD_MEMORY
osd_crush_update_on_start = true
# The OSDs' class is hdd (file-backed), whose default recovery sleep (0.1 s per object) takes
# minutes to recover the few thousand objects a test writes while an OSD is marked down.
osd_recovery_sleep_hdd = 0
osd_recovery_max_active_hdd = 10
# tests mark OSDs down on purpose; an OSD marked down 5 times in 10 min would exit itself
osd_max_markdown_count = 1000
$profile
EOF
}

cmd_up() {
    [[ "$CEPH_OSDS" =~ ^([1-9]|1[0-9]|2[0-4])$ ]] || die "CEPH_OSDS must be 1..24"
    POOL_SIZE=$(( CEPH_OSDS < 3 ? CEPH_OSDS : 3 ))
    POOL_MIN_SIZE=$(( POOL_SIZE == 1 ? 1 : POOL_SIZE - 1 ))
    # unix sockets are limited to 107 bytes
    [ ${#DIR} -le 80 ] || die "DIR is too long for admin socket paths (${#DIR} > 80 chars): $DIR"

    if ! "$HERE/install.sh" --check --no-dbg 2>/dev/null; then
        log "Ceph packages missing: running install.sh --no-dbg"
        "$HERE/install.sh" --no-dbg || die "install.sh failed"
    fi
    local b
    for b in ceph ceph-mon ceph-mgr ceph-osd ceph-authtool monmaptool rados ss setsid "$PY"; do
        command -v "$b" >/dev/null || die "missing program: $b"
    done
    step_done packages

    mkdir -p "$(dirname "$DIR")"
    mkdir "$DIR" 2>/dev/null || die "$DIR already exists (run: $0 down $DIR)"
    CREATED=1
    touch "$DIR/$MARKER"
    mkdir -p "$DIR"/{run,log,crash,pid,mon.a,mgr.x}
    local fsid port pbase
    fsid=$(cat /proc/sys/kernel/random/uuid)
    exec 9>>"$PORT_LOCK"
    flock -w 120 9 || die "could not lock $PORT_LOCK within 120 s"
    pbase=$(free_port_window) || die "no free window of 100 TCP ports"
    port=$pbase                                # mon; mgr and OSDs bind in [pbase+1, pbase+99]
    write_conf "$fsid" "$port" $((pbase + 1)) $((pbase + 99))
    log "DIR=$DIR fsid=$fsid mon=127.0.0.1:$port ports=$((pbase + 1))-$((pbase + 99)) osds=$CEPH_OSDS profile=$CEPH_OSD_PROFILE"

    # keys, monmap, mon
    ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    ceph-authtool "$DIR/keyring" --gen-key -n client.admin \
        --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
    chmod 600 "$DIR/keyring"
    monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$DIR/monmap" >/dev/null
    ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/keyring" \
        >"$DIR/log/mon.a.mkfs.log" 2>&1 || die "ceph-mon --mkfs failed (see $DIR/log/mon.a.mkfs.log)"
    start_daemon mon.a ceph-mon -i a
    wait_for "$CEPH_UP_TIMEOUT" "mon.a in quorum" C quorum_status \
        || die "mon.a did not form a quorum within ${CEPH_UP_TIMEOUT}s (see $DIR/log/mon.a.log)"
    flock -u 9
    exec 9>&-
    step_done mon

    # mgr (PG states, hence "active+clean", come from the mgr)
    C auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
        -o "$DIR/mgr.x/keyring" >/dev/null
    start_daemon mgr.x ceph-mgr -i x
    step_done mgr-start

    # OSDs: register id + cephx key with the mon, mkfs in parallel, start in parallel
    local i uuid key id ids=() pids=()
    for i in $(seq 1 "$CEPH_OSDS"); do
        uuid=$(cat /proc/sys/kernel/random/uuid)
        key=$(ceph-authtool --gen-print-key)
        id=$(printf '{"cephx_secret": "%s"}' "$key" | C osd new "$uuid" -i -) \
            || die "ceph osd new failed"
        mkdir -p "$DIR/osd.$id"
        ceph-authtool --create-keyring "$DIR/osd.$id/keyring" -n "osd.$id" --add-key "$key" >/dev/null
        echo "$uuid" > "$DIR/osd.$id/osd-uuid"
        ids+=("$id")
    done
    for id in "${ids[@]}"; do
        ceph-osd -c "$CONF" -i "$id" --mkfs --osd-uuid "$(cat "$DIR/osd.$id/osd-uuid")" \
            >"$DIR/log/osd.$id.mkfs.log" 2>&1 &
        pids+=($!)
    done
    local failed=()
    for i in "${!pids[@]}"; do   # wait for all, so no mkfs still writes into DIR after a failure
        wait "${pids[$i]}" || failed+=("osd.${ids[$i]}")
    done
    [ ${#failed[@]} -eq 0 ] || die "ceph-osd --mkfs failed for ${failed[*]} (see $DIR/log/osd.*.mkfs.log)"
    step_done osd-mkfs
    for id in "${ids[@]}"; do
        start_daemon "osd.$id" ceph-osd -i "$id"
    done
    if ! wait_for "$CEPH_UP_TIMEOUT" "$CEPH_OSDS OSDs up and in" osds_up; then
        C osd tree >&2 || true
        die "not all OSDs came up within ${CEPH_UP_TIMEOUT}s (see ceph osd tree above and $DIR/log/osd.*.log)"
    fi
    step_done osd-up
    wait_for "$CEPH_UP_TIMEOUT" "mgr.x available" mgr_available \
        || die "mgr.x did not become available within ${CEPH_UP_TIMEOUT}s (see $DIR/log/mgr.x.log)"
    step_done mgr-available

    # the pool: replicated over OSDs (one host), size and min_size from osd_pool_default_*,
    # application rados (else HEALTH_WARN)
    {
        C osd crush rule create-replicated replicated-osd default osd &&
        C osd pool create "$CEPH_POOL" "$CEPH_PG_NUM" "$CEPH_PG_NUM" replicated replicated-osd &&
        C osd pool application enable "$CEPH_POOL" rados
    } >>"$DIR/log/setup.log" 2>&1 || die "creating pool $CEPH_POOL failed (see $DIR/log/setup.log)"
    local size
    size=$(C osd pool get "$CEPH_POOL" size) || die "ceph osd pool get $CEPH_POOL size failed"
    [ "$size" = "size: $POOL_SIZE" ] || die "pool $CEPH_POOL has '$size', expected size $POOL_SIZE"
    step_done pool

    if ! wait_for "$CEPH_UP_TIMEOUT" "all PGs active+clean" pgs_clean; then
        C pg stat >&2 || true
        C pg dump_stuck >&2 || true
        die "PGs not all active+clean within ${CEPH_UP_TIMEOUT}s (see ceph pg stat above)"
    fi
    if ! wait_for "$CEPH_UP_TIMEOUT" "HEALTH_OK" health_ok; then
        C health detail >&2 || true
        die "no HEALTH_OK within ${CEPH_UP_TIMEOUT}s (see ceph health detail above)"
    fi
    step_done health

    # data path smoke test
    local obj="cluster-sh-smoke-$$"
    { echo hello | rados -c "$CONF" -p "$CEPH_POOL" put "$obj" - &&
      rados -c "$CONF" -p "$CEPH_POOL" get "$obj" - | grep -qx hello &&
      rados -c "$CONF" -p "$CEPH_POOL" rm "$obj"; } >>"$DIR/log/setup.log" 2>&1 \
        || die "rados put/get/rm on pool $CEPH_POOL failed (see $DIR/log/setup.log)"
    step_done smoke-io

    write_env "$fsid" "$port" "${ids[@]}"
    log "cluster up in $(elapsed "$T0") s: $(for pf in "$DIR"/pid/*.pid; do printf '%s=%s ' "$(basename "$pf" .pid)" "$(cat "$pf")"; done)"
    log "use: source $DIR/env; ceph -s"
}

write_env() {   # write_env FSID MON_PORT OSD_ID...: DIR/env (shell) and DIR/cluster.json
    local fsid=$1 port=$2 id; shift 2
    {
        echo "# cephscope test cluster, written by tests/ceph/cluster.sh up; source it."
        echo "export CEPH_CONF='$CONF'"
        echo "export CEPHSCOPE_CEPH_DIR='$DIR'"
        echo "export CEPHSCOPE_CEPH_KEYRING='$DIR/keyring'"
        echo "export CEPHSCOPE_CEPH_FSID='$fsid'"
        echo "export CEPHSCOPE_CEPH_MON_ADDR='127.0.0.1:$port'"
        echo "export CEPHSCOPE_CEPH_POOL='$CEPH_POOL'"
        echo "export CEPHSCOPE_CEPH_POOL_SIZE='$POOL_SIZE'"
        echo "export CEPHSCOPE_CEPH_OSD_IDS='$*'"
        echo "export CEPHSCOPE_CEPH_MON_ASOK='$DIR/run/mon.a.asok'"
        echo "export CEPHSCOPE_CEPH_MGR_ASOK='$DIR/run/mgr.x.asok'"
        echo "export CEPHSCOPE_CEPH_MON_PID='$(cat "$DIR/pid/mon.a.pid")'"
        echo "export CEPHSCOPE_CEPH_MGR_PID='$(cat "$DIR/pid/mgr.x.pid")'"
        for id in "$@"; do
            echo "export CEPHSCOPE_CEPH_OSD_${id}_ASOK='$DIR/run/osd.$id.asok'"
            echo "export CEPHSCOPE_CEPH_OSD_${id}_PID='$(cat "$DIR/pid/osd.$id.pid")'"
        done
    } > "$DIR/env.tmp"
    mv "$DIR/env.tmp" "$DIR/env"
    "$PY" - "$DIR" "$CONF" "$fsid" "$port" "$CEPH_POOL" "$POOL_SIZE" "$@" > "$DIR/cluster.json.tmp" <<'EOF'
import json, sys
d, conf, fsid, port, pool, size, *ids = sys.argv[1:]
pid = lambda n: int(open(f"{d}/pid/{n}.pid").read())
print(json.dumps({
    "dir": d, "conf": conf, "keyring": f"{d}/keyring", "fsid": fsid,
    "mon_addr": f"127.0.0.1:{port}", "pool": pool, "pool_size": int(size),
    "mon": {"name": "mon.a", "pid": pid("mon.a"), "asok": f"{d}/run/mon.a.asok"},
    "mgr": {"name": "mgr.x", "pid": pid("mgr.x"), "asok": f"{d}/run/mgr.x.asok"},
    "osds": [{"id": int(i), "name": f"osd.{i}", "pid": pid(f"osd.{i}"),
              "asok": f"{d}/run/osd.{i}.asok", "data": f"{d}/osd.{i}"} for i in ids],
}, indent=2))
EOF
    mv "$DIR/cluster.json.tmp" "$DIR/cluster.json"
}

# ------------------------------------------------------------------ down, status
cmd_down() {
    if [ ! -d "$DIR" ]; then log "$DIR does not exist: nothing to do"; return 0; fi
    [ -f "$DIR/$MARKER" ] || die "$DIR has no $MARKER file: not a cluster.sh directory, refusing"
    stop_daemons
    step_done stop
    rm -rf -- "$DIR"
    step_done remove
    log "down: removed $DIR in $(elapsed "$T0") s"
}

cmd_status() {
    [ -f "$DIR/$MARKER" ] || die "$DIR is not a cluster.sh directory"
    local pf rc=0
    for pf in "$DIR"/pid/*.pid; do
        [ -e "$pf" ] || continue
        if ours "$(cat "$pf")"; then echo "$(basename "$pf" .pid): running (pid $(cat "$pf"))"
        else echo "$(basename "$pf" .pid): NOT running"; rc=1; fi
    done
    C -s || rc=1
    return $rc
}

# ------------------------------------------------------------------ main
[ $# -eq 2 ] || usage
SUB=$1
DIR=$(realpath -m -- "$2")
case "$DIR" in
    /|/tmp|/root|/home|/usr|/usr/*|/var|/etc|/etc/*|/work|/work/main|/work/shared) SUB=refuse ;;
esac
[ "$SUB" != refuse ] || { log "ERROR: refusing DIR=$DIR"; exit 1; }
CONF="$DIR/ceph.conf"
case "$SUB" in
    up)     cmd_up ;;
    down)   cmd_down ;;
    status) cmd_status ;;
    *)      usage ;;
esac
