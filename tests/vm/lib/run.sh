# run: boot one matrix kernel under qemu, run a command inside as root, return its status.
# shellcheck shell=bash

# Exit statuses of the harness itself (anything else is the command's own status).
VM_RC_USAGE=2
VM_RC_TIMEOUT=124
VM_RC_GUEST_DIED=125
VM_RC_SETUP=126

vm_run_usage() {
  cat <<'EOF'
usage: cephscope-vm run [OPTIONS] KERNEL -- CMD [ARGS...]

Boots KERNEL (see kernels.conf: 5.10, 6.1, 6.12) under qemu and runs CMD as root inside.
One argument is a shell command line; several are exec'd as they are. Exits with CMD's status,
or 124 (timeout), 125 (guest died twice: panic or no status), 126 (guest setup failed).

  --out DIR          keep the run's files in DIR (console.log, output.log, result, out/ ...);
                     default: a temporary folder, removed afterwards
  -e, --env K=V      set K=V in CMD's environment (repeatable); CEPHSCOPE_* variables of the
                     caller are passed through, except CEPHSCOPE_VM_*
  --share H[:G[:rw]] share host folder H at guest path G (default H), read-only unless :rw
  --hostfwd HP:GP    a virtio NIC on qemu's user network, restricted (no way out), that
                     forwards the host's 127.0.0.1:HP to the guest's 10.0.2.15:GP (the guest
                     brings eth0 up itself: guest/net-up.sh)
  --timeout SEC      limit for the whole guest run            [CEPHSCOPE_VM_TIMEOUT=1800]
  --boot-timeout SEC limit until CMD starts                   [CEPHSCOPE_VM_BOOT_TIMEOUT=300]
  --no-retry         do not boot again when the guest dies
  --mem SIZE, --smp N                                         [CEPHSCOPE_VM_MEM=2G, _SMP=2]

Always shared read-only at the same paths: the source tree (CEPHSCOPE_SOURCE_DIR) and the
build tree (CEPHSCOPE_BUILD_DIR, default SOURCE/build). CMD finds an ext4 file system on a
scratch virtio disk at $CEPHSCOPE_TEST_DIR and may leave files in $CEPHSCOPE_VM_OUT (the
run's out/ folder on the host).
EOF
}

# Write NAME=VALUE pairs NUL-separated for the guest's env -i.
vm_guest_env() { # RUN_DIR LABEL EXTRA_ENV...
  local dir=$1 label=$2; shift 2
  local kv name
  {
    printf '%s\0' PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root TERM=dumb LANG=C.UTF-8 \
      CEPHSCOPE_TEST_DIR=/mnt/cephscope-test CEPHSCOPE_VM_OUT=/cephscope-vm/out \
      "CEPHSCOPE_VM_KERNEL=$label"
    while IFS= read -r name; do
      case $name in CEPHSCOPE_VM_* | CEPHSCOPE_TEST_DIR) continue ;; esac
      printf '%s=%s\0' "$name" "${!name}"
    done < <(compgen -e | grep '^CEPHSCOPE_' || true)
    for kv in "$@"; do printf '%s\0' "$kv"; done
  } > "$dir/env0"
}

vm_kill_qemu() { # PID
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
}

# One boot. Sets ATTEMPT_OUTCOME (done|setup-failed|timeout|died) and the phase times.
vm_boot_once() {
  local dir=$1 kimg=$2 initrd=$3 scratch=$4; shift 4
  local qemu_args=("$@") t0 now qpid tailpid started_at= rc_at= append accel
  ATTEMPT_OUTCOME=died BOOT_S= CMD_S= SHUTDOWN_S=
  rm -f "$dir"/{rc,started,finished,uname,init-failed,scratch-dev}
  rm -rf "$dir/out"
  : > "$dir/output.log"
  : > "$dir/console.log"
  # a fresh ext4 per boot; formatting here costs nothing, in the guest it is slow under TCG
  rm -f "$scratch"
  truncate -s "$VM_SCRATCH_SIZE" "$scratch"
  mkfs.ext4 -q -F -L cephscope-test -E lazy_itable_init=1,lazy_journal_init=1 "$scratch" ||
    vm_die "mkfs.ext4 of the scratch image failed"
  case $VM_ACCEL in
    kvm) accel=(-accel kvm -cpu host) ;;
    tcg) accel=(-accel tcg,thread=multi,tb-size=256 -cpu max) ;;
    *) vm_die "CEPHSCOPE_VM_ACCEL must be tcg or kvm" ;;
  esac
  append="console=ttyS0 rdinit=/init panic=-1 oops=panic softlockup_panic=1 mitigations=off"
  append+=" nokaslr tsc=reliable no_timer_check audit=0 loglevel=4 ${CEPHSCOPE_VM_APPEND:-}"
  t0=$(vm_now)
  # `timeout` is a backstop: qemu cannot outlive the harness by long even if the harness is
  # SIGKILLed (the loop below normally stops it first)
  timeout -k 10 $((${VM_TIMEOUT%.*} + 120)) qemu-system-x86_64 -nodefaults -no-user-config -nographic -no-reboot \
    -machine q35 "${accel[@]}" -smp "$VM_SMP" -m "$VM_MEM" \
    -kernel "$kimg" -initrd "$initrd" -append "$append" \
    -serial "file:$dir/console.log" -serial "file:$dir/output.log" \
    -device virtio-rng-pci \
    -drive "if=none,id=scratch,file=$scratch,format=raw,cache=unsafe" \
    -device virtio-blk-pci,drive=scratch,serial=cephscope-scratch \
    "${qemu_args[@]}" < /dev/null > "$dir/qemu.log" 2>&1 &
  qpid=$!
  VM_QEMU_PID=$qpid
  tail -n +1 -f -s 0.3 --pid="$qpid" "$dir/output.log" &
  tailpid=$!
  while kill -0 "$qpid" 2>/dev/null; do
    sleep 0.3
    now=$(vm_since "$t0")
    if [ -z "$started_at" ] && [ -f "$dir/started" ]; then started_at=$now; fi
    if [ -z "$rc_at" ] && [ -f "$dir/rc" ]; then rc_at=$now; fi
    if [ -n "$rc_at" ]; then
      # the command is done; give the guest a bounded time to power off
      if awk -v n="$now" -v r="$rc_at" 'BEGIN { exit !(n - r > 60) }'; then vm_kill_qemu "$qpid"; fi
      continue
    fi
    if [ -f "$dir/init-failed" ]; then
      if [ -z "${fail_at:-}" ]; then fail_at=$now; fi
      if awk -v n="$now" -v r="$fail_at" 'BEGIN { exit !(n - r > 30) }'; then vm_kill_qemu "$qpid"; fi
      continue
    fi
    if [ -z "$started_at" ] && awk -v n="$now" -v l="$VM_BOOT_TIMEOUT" 'BEGIN { exit !(n > l) }'; then
      vm_log "the guest did not start the command within ${VM_BOOT_TIMEOUT}s: stopping qemu"
      ATTEMPT_OUTCOME=boot-timeout
      vm_kill_qemu "$qpid"
      break
    fi
    if awk -v n="$now" -v l="$VM_TIMEOUT" 'BEGIN { exit !(n > l) }'; then
      vm_log "TIMEOUT: the guest run exceeded ${VM_TIMEOUT}s (command running for $(awk -v n="$now" -v s="$started_at" 'BEGIN { printf "%.0f", n - s }')s): stopping qemu"
      ATTEMPT_OUTCOME=timeout
      vm_kill_qemu "$qpid"
      break
    fi
  done
  wait "$qpid" 2>/dev/null || true # qemu's own status says little: the control folder decides
  VM_QEMU_PID=
  now=$(vm_since "$t0")
  # let tail print what is left, bounded
  for _ in $(seq 20); do kill -0 "$tailpid" 2>/dev/null || break; sleep 0.2; done
  kill "$tailpid" 2>/dev/null || true
  wait "$tailpid" 2>/dev/null || true
  [ -z "$rc_at" ] && [ -f "$dir/rc" ] && rc_at=$now
  [ -z "$started_at" ] && [ -f "$dir/started" ] && started_at=$now
  if [ -n "$started_at" ]; then BOOT_S=$started_at; fi
  if [ -n "$rc_at" ]; then
    ATTEMPT_OUTCOME=done
    CMD_S=$(awk -v a="$started_at" -v b="$rc_at" 'BEGIN { printf "%.1f", b - a }')
    SHUTDOWN_S=$(awk -v a="$rc_at" -v b="$now" 'BEGIN { printf "%.1f", b - a }')
  elif [ -f "$dir/init-failed" ]; then
    ATTEMPT_OUTCOME=setup-failed
  fi
  TOTAL_S=$now
}

cmd_run() {
  local label= out= retry=1 envs=() shares=() net=() t0 prep_s dir scratch_dir kdir kver kimg initrd
  while [ $# -gt 0 ]; do
    case $1 in
      --) shift; break ;;
      -h | --help) vm_run_usage; exit 0 ;;
      --out) out=$2; shift 2 ;;
      -e | --env) envs+=("$2"); shift 2 ;;
      --share) shares+=("$2"); shift 2 ;;
      --hostfwd)
        net=(-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${2%%:*}-:${2#*:}"
          -device virtio-net-pci,netdev=net0)
        shift 2 ;;
      --timeout) VM_TIMEOUT=$2; shift 2 ;;
      --boot-timeout) VM_BOOT_TIMEOUT=$2; shift 2 ;;
      --no-retry) retry=0; shift ;;
      --mem) VM_MEM=$2; shift 2 ;;
      --smp) VM_SMP=$2; shift 2 ;;
      -*) vm_run_usage >&2; exit $VM_RC_USAGE ;;
      *) [ -z "$label" ] || { vm_run_usage >&2; exit $VM_RC_USAGE; }; label=$1; shift ;;
    esac
  done
  [ -n "$label" ] && [ $# -gt 0 ] || { vm_run_usage >&2; exit $VM_RC_USAGE; }
  vm_check_label "$label"
  VM_TOOLS_RC=$VM_RC_SETUP vm_need_tools qemu-system-x86_64 mkfs.ext4

  # prepare (a no-op when the cache has it)
  t0=$(vm_now)
  if ! vm_rootfs_ready || ! vm_kernel_ready "$label"; then
    VM_DIE_RC=$VM_RC_SETUP cmd_prepare "$label"
  fi
  kdir=$(vm_kernel_dir "$label")
  kver=$(cat "$kdir/kver")
  kimg=$(vm_kernel_image "$label")
  initrd=$(VM_DIE_RC=$VM_RC_SETUP vm_initrd "$label")
  prep_s=$(vm_since "$t0")

  # the run's folder (shared read-write with the guest as its control folder)
  if [ -n "$out" ]; then
    mkdir -p "$out"
    dir=$(cd "$out" && pwd)
    rm -rf "$dir"/{rc,started,finished,uname,init-failed,scratch-dev,result,out,output*.log,console*.log,cmd,env0,cwd,mounts,init.sh}
  else
    dir=$(mktemp -d "${TMPDIR:-/tmp}/cephscope-vm-run.XXXXXX")
  fi
  scratch_dir=$(mktemp -d "${TMPDIR:-/tmp}/cephscope-vm-scratch.XXXXXX")
  VM_RUN_DIR=$dir VM_RUN_TMP=$([ -n "$out" ] || echo "$dir") VM_SCRATCH_DIR=$scratch_dir
  trap vm_run_cleanup EXIT
  trap 'vm_log "interrupted"; exit 130' INT TERM

  install -m 755 "$VM_HERE/guest/init.sh" "$dir/init.sh"
  if [ $# -eq 1 ]; then
    printf '%s\n' "$1" > "$dir/cmd"
  else
    { printf 'exec'; printf ' %q' "$@"; echo; } > "$dir/cmd"
  fi
  vm_guest_env "$dir" "$label" "${envs[@]}"

  # 9p shares
  local rootfs fs=() n=0 s h g p mode cwd=/ paths=() parts=()
  rootfs=$(vm_rootfs_dir)
  fs+=(-virtfs "local,path=$dir,mount_tag=ctl,security_model=none")
  fs+=(-virtfs "local,path=$rootfs,mount_tag=rootfs,security_model=passthrough,multidevs=remap,readonly=on")
  fs+=(-virtfs "local,path=$(readlink -f "$kdir/tree/lib/modules"),mount_tag=modules,security_model=none,readonly=on")
  fs+=(-virtfs "local,path=$kdir/tree/boot,mount_tag=boot,security_model=none,readonly=on")
  paths=("$VM_SRC_DIR")
  case "$(readlink -f "$VM_BUILD_DIR")/" in
    "$(readlink -f "$VM_SRC_DIR")"/*) ;;
    *) [ -d "$VM_BUILD_DIR" ] && paths+=("$VM_BUILD_DIR") ;;
  esac
  : > "$dir/mounts"
  for s in "${paths[@]}" "${shares[@]}"; do
    # H[:G][:rw|:ro]
    IFS=: read -r -a parts <<< "$s"
    h=${parts[0]} g= mode=ro
    for p in "${parts[@]:1}"; do
      case $p in rw | ro) mode=$p ;; *) g=$p ;; esac
    done
    h=$(readlink -f "$h")
    [ -n "$g" ] || g=$h
    [ -d "$h" ] || vm_die "share $h is not a folder"
    local ro=,readonly=on
    [ $mode = rw ] && ro=
    fs+=(-virtfs "local,path=$h,mount_tag=share$n,security_model=passthrough,multidevs=remap$ro")
    printf 'share%s\t%s\t%s\n' "$n" "$g" "$mode" >> "$dir/mounts"
    case "$PWD/" in "$h"/*) cwd=$g${PWD#"$h"} ;; esac
    n=$((n + 1))
  done
  # shorter paths first, so nested shares land on top of their parents
  sort -t $'\t' -k2,2 -o "$dir/mounts" "$dir/mounts"
  echo "$cwd" > "$dir/cwd"

  vm_log "kernel $label ($kver, ${kimg##*/}): booting qemu -accel $VM_ACCEL -smp $VM_SMP -m $VM_MEM (prepare ${prep_s}s)"
  local attempt=1 max=$((1 + retry)) status
  while :; do
    vm_boot_once "$dir" "$kimg" "$initrd" "$scratch_dir/scratch.img" "${fs[@]}" "${net[@]}"
    case $ATTEMPT_OUTCOME in
      done) status=$(cat "$dir/rc"); break ;;
      timeout) status=$VM_RC_TIMEOUT; break ;;
      setup-failed)
        vm_log "guest setup failed: $(cat "$dir/init-failed")"
        status=$VM_RC_SETUP; break ;;
      *)
        vm_log "the guest died or hung before reporting a status (attempt $attempt/$max, outcome $ATTEMPT_OUTCOME)"
        grep -m3 -E 'Kernel panic|BUG:|Oops|general protection' "$dir/console.log" | sed 's/^/  console: /' >&2 || true
        status=$VM_RC_GUEST_DIED
        [ $attempt -lt $max ] || break
        mv "$dir/console.log" "$dir/console.attempt$attempt.log"
        mv "$dir/output.log" "$dir/output.attempt$attempt.log"
        attempt=$((attempt + 1))
        vm_log "booting again"
        ;;
    esac
  done
  if [ "$ATTEMPT_OUTCOME" != done ]; then
    echo "----- guest console, last 40 lines ($dir/console.log) -----" >&2
    tail -n 40 "$dir/console.log" >&2
    echo "-----" >&2
  fi
  local uname=unknown gboot=
  [ -f "$dir/uname" ] && uname=$(cat "$dir/uname")
  [ -f "$dir/started" ] && gboot=$(cat "$dir/started")
  {
    echo "kernel=$label"
    echo "uname=$uname"
    echo "package=$(cat "$kdir/package") $(cat "$kdir/version")"
    echo "status=$status"
    echo "outcome=$ATTEMPT_OUTCOME"
    echo "attempts=$attempt"
    echo "prepare_s=$prep_s"
    echo "boot_s=${BOOT_S:-}"
    echo "guest_uptime_at_start_s=$gboot"
    echo "command_s=${CMD_S:-}"
    echo "shutdown_s=${SHUTDOWN_S:-}"
    echo "total_s=$TOTAL_S"
    echo "accel=$VM_ACCEL smp=$VM_SMP mem=$VM_MEM"
  } > "$dir/result"
  vm_log "kernel $label ran uname -r = $uname: exit $status ($ATTEMPT_OUTCOME, attempts $attempt)"
  vm_log "timings: prepare ${prep_s}s, boot ${BOOT_S:--}s, command ${CMD_S:--}s, shutdown ${SHUTDOWN_S:--}s, total $(awk -v p="$prep_s" -v t="$TOTAL_S" 'BEGIN { printf "%.1f", p + t }')s"
  [ -n "$out" ] && vm_log "run files: $dir"
  return "$status"
}

vm_run_cleanup() {
  [ -n "${VM_QEMU_PID:-}" ] && vm_kill_qemu "$VM_QEMU_PID"
  [ -n "${VM_SCRATCH_DIR:-}" ] && rm -rf "$VM_SCRATCH_DIR"
  if [ -n "${VM_RUN_TMP:-}" ] && [ "${CEPHSCOPE_VM_KEEP:-0}" != 1 ]; then rm -rf "$VM_RUN_TMP"; fi
  return 0
}
