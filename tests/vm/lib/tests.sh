# probe, kernel-tests and matrix: what the harness runs inside the guests.
# shellcheck shell=bash

VM_RESULTS=${CEPHSCOPE_VM_RESULTS:-$VM_BUILD_DIR/vm-results}
VM_KERNEL_TESTS_BIN=$VM_BUILD_DIR/tests/kernel/cephscope_kernel_tests
VM_DAEMON_BIN=${CEPHSCOPE_BIN:-$VM_BUILD_DIR/daemon/cephscope}
# The daemon runs the resolver found beside itself.
VM_RESOLVER_BIN=$(dirname "$VM_DAEMON_BIN")/cephscope-resolver
VM_HOOKPROBE_BIN=$VM_BUILD_DIR/tests/vm/cephscope_vm_hookprobe
VM_CHECK_CONFIG=${CEPHSCOPE_VM_CHECK_CONFIG:-$VM_SRC_DIR/config/cephscope.yaml}

# Every shared library a host binary needs must be in the guest root filesystem. A missing
# one is looked up with dpkg -S on the host (where the binary was linked) and its package is
# added to CEPHSCOPE_VM_EXTRA_PACKAGES, which keys a new root filesystem; the static list in
# common.sh should then learn it too.
vm_missing_packages() { # BINARY... -> packages, one a line
  local rootfs b lib p
  rootfs=$(vm_rootfs_dir)
  for b in "$@"; do
    [ -x "$b" ] || continue
    while read -r lib; do
      [ -n "$lib" ] || continue
      compgen -G "$rootfs/usr/lib/x86_64-linux-gnu/$lib" > /dev/null && continue
      compgen -G "$rootfs/lib/x86_64-linux-gnu/$lib" > /dev/null && continue
      p=$( { dpkg -S "/usr/lib/x86_64-linux-gnu/$lib" "/lib/x86_64-linux-gnu/$lib" 2>/dev/null || true; } |
        head -n 1 | cut -d: -f1)
      [ -n "$p" ] && echo "$p"
    done < <(readelf -d "$b" 2>/dev/null | awk '/\(NEEDED\)/ { gsub(/[\[\]]/, "", $5); print $5 }')
  done | sort -u
}
vm_ensure_rootfs_libs() { # BINARY...
  local extra
  extra=$(vm_missing_packages "$@" | paste -sd' ' -)
  [ -n "$extra" ] || return 0
  vm_log "the binaries need packages the root filesystem lacks: $extra (add them to VM_ROOTFS_PACKAGES in tests/vm/lib/common.sh)"
  CEPHSCOPE_VM_EXTRA_PACKAGES="${CEPHSCOPE_VM_EXTRA_PACKAGES:-} $extra"
  export CEPHSCOPE_VM_EXTRA_PACKAGES
  VM_DIE_RC=$VM_RC_SETUP cmd_prepare
}
vm_check_libs() { # BINARY...
  local rootfs b lib missing=()
  rootfs=$(vm_rootfs_dir)
  for b in "$@"; do
    [ -x "$b" ] || continue
    while read -r lib; do
      [ -n "$lib" ] || continue
      if ! compgen -G "$rootfs/usr/lib/x86_64-linux-gnu/$lib" > /dev/null &&
        ! compgen -G "$rootfs/lib/x86_64-linux-gnu/$lib" > /dev/null &&
        ! compgen -G "$rootfs/usr/lib/$lib" > /dev/null; then
        missing+=("$lib (needed by ${b##*/})")
      fi
    done < <(readelf -d "$b" 2>/dev/null | awk '/\(NEEDED\)/ { gsub(/[\[\]]/, "", $5); print $5 }')
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  vm_log "the guest root filesystem lacks: ${missing[*]}"
  vm_log "add the packages to VM_ROOTFS_PACKAGES in tests/vm/lib/common.sh (or CEPHSCOPE_VM_EXTRA_PACKAGES)"
  return 1
}

# A copy of the binaries the guest runs, shared over the build tree at its own path, so a
# rebuild on the host (a shared checkout) cannot swap them in the middle of a run and every
# kernel of a matrix tests the same ones. Waits (bounded) until none changed for 10 s.
# CEPHSCOPE_VM_SNAPSHOT=0 runs the build tree as it is.
vm_snapshot_build() { # DEST
  local dest=$1 f rel waited=0 newest now
  local files=("$VM_DAEMON_BIN" "$VM_RESOLVER_BIN" "$VM_KERNEL_TESTS_BIN" "$VM_BUILD_DIR/tests/kernel/io_driver"
    "$VM_BUILD_DIR/tests/kernel/fake_osd"
    "$VM_BUILD_DIR/tests/kernel/fake_osd.stripped" "$VM_HOOKPROBE_BIN"
    "$VM_BUILD_DIR/tests/kernel/usdt_thrower" "$VM_BUILD_DIR/tests/kernel/usdt_calls.py"
    "$VM_BUILD_DIR/tests/kernel/objecter_client"
    "$VM_BUILD_DIR/tests/kernel/objecter-markers/librados.so.2"
    "$VM_BUILD_DIR/tests/vm/cephscope_vm_loadcheck")
  for f in "$VM_BUILD_DIR"/skel/*.bpf.o; do [ -f "$f" ] && files+=("$f"); done
  while :; do
    newest=0
    for f in "${files[@]}"; do
      [ -f "$f" ] || continue
      now=$(stat -c %Y "$f")
      [ "$now" -gt "$newest" ] && newest=$now
    done
    [ $(($(date +%s) - newest)) -ge 10 ] && break
    [ $waited -lt 300 ] || { vm_log "the build keeps changing; snapshotting it anyway"; break; }
    [ $waited = 0 ] && vm_log "the build tree changed in the last 10 s: waiting for it to settle"
    sleep 5
    waited=$((waited + 5))
  done
  rm -rf "$dest"
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    case $f in "$VM_BUILD_DIR"/*) rel=${f#"$VM_BUILD_DIR"/} ;; *) continue ;; esac
    mkdir -p "$dest/$(dirname "$rel")"
    cp -p "$f" "$dest/$rel"
  done
  vm_log "binaries: a snapshot of $VM_BUILD_DIR ($(du -sh "$dest" | cut -f1)) shared at its path"
}

cmd_probe() { # [--out DIR] KERNEL
  local out= label=
  while [ $# -gt 0 ]; do
    case $1 in
      --out) out=$2; shift 2 ;;
      -*) vm_die "usage: cephscope-vm probe [--out DIR] KERNEL" ;;
      *) label=$1; shift ;;
    esac
  done
  [ -n "$label" ] || vm_die "usage: cephscope-vm probe [--out DIR] KERNEL"
  vm_check_label "$label"
  out=${out:-$VM_RESULTS/$label-probe}
  vm_call cmd_run --out "$out" -e "CEPHSCOPE_BUILD_DIR=$VM_BUILD_DIR" "$label" -- \
    "$VM_HERE/guest/probe.sh | tee \$CEPHSCOPE_VM_OUT/probe.txt"
  return $VM_CALL_RC
}

# The kernel tests probe what the kernel offers the vfs collector themselves. --expect also
# hands them kernels.conf's expectations as a cross-check (CEPHSCOPE_EXPECT_VFS_HOOKS,
# CEPHSCOPE_VFS_FSYNC: the probed facts must equal them; the caller's own values win).
# Without it they get no hints beyond the caller's CEPHSCOPE_* variables, passed through as
# to any run.
cmd_kernel_tests() { # [--out DIR] [--filter CATCH2-FILTER] [--expect] KERNEL
  # [endpoint] needs curl, openssl and htpasswd, and nothing of the kernel: the host runs it;
  # [userspace] tests the daemon's own logic, the same on every kernel: the host runs it too
  local out= label= filter='~[promtool]~[endpoint]~[kclient]~[userspace]' expect=0 hints=() rc=0
  local usage="usage: cephscope-vm kernel-tests [--out DIR] [--filter F] [--expect] KERNEL"
  while [ $# -gt 0 ]; do
    case $1 in
      --out) out=$2; shift 2 ;;
      --filter) filter=$2; shift 2 ;;
      --expect) expect=1; shift ;;
      -*) vm_die "$usage" ;;
      *) label=$1; shift ;;
    esac
  done
  [ -n "$label" ] || vm_die "$usage"
  vm_check_label "$label"
  local b
  for b in "$VM_KERNEL_TESTS_BIN" "$VM_DAEMON_BIN"; do
    [ -x "$b" ] && continue
    if [ "$b" = "$VM_KERNEL_TESTS_BIN" ] && [ "${CEPHSCOPE_VM_ALLOW_MISSING_TESTS:-0}" = 1 ]; then
      vm_log "WARNING: $b is not built: probe and --check only"
      continue
    fi
    vm_die "$b is not built: cmake -S $VM_SRC_DIR -B $VM_BUILD_DIR && cmake --build $VM_BUILD_DIR"
  done
  [ -f "$VM_CHECK_CONFIG" ] || vm_die "no configuration $VM_CHECK_CONFIG for cephscope --check"
  [ -x "$VM_HOOKPROBE_BIN" ] || vm_log "note: $VM_HOOKPROBE_BIN is not built; the probe reports facts only"
  local v conf hint_args=()
  for v in CEPHSCOPE_EXPECT_VFS_HOOKS CEPHSCOPE_VFS_FSYNC; do
    if [ -n "${!v+x}" ]; then
      hints+=("$v=${!v}") # the caller's: passed through, as to any run
    elif [ $expect = 1 ]; then
      case $v in
        *HOOKS) conf=$(vm_expected_hooks "$label") ;;
        *) conf=$(vm_expected_fsync "$label") ;;
      esac
      hints+=("$v=$conf")
      hint_args+=(-e "$v=$conf")
    fi
  done
  vm_log "vfs hints for the kernel tests: ${hints[*]:-none (they probe the kernel)}"
  out=${out:-$VM_RESULTS/$label}
  vm_rootfs_ready || VM_DIE_RC=$VM_RC_SETUP cmd_prepare "$label"
  vm_ensure_rootfs_libs "$VM_KERNEL_TESTS_BIN" "$VM_DAEMON_BIN" "$VM_RESOLVER_BIN" \
    "$VM_HOOKPROBE_BIN"
  vm_check_libs "$VM_KERNEL_TESTS_BIN" "$VM_DAEMON_BIN" "$VM_RESOLVER_BIN" "$VM_HOOKPROBE_BIN" ||
    return $VM_RC_SETUP
  local snap_share=()
  if [ "${CEPHSCOPE_VM_SNAPSHOT:-1}" = 1 ]; then
    if [ -z "${VM_SNAPSHOT_DIR:-}" ]; then
      mkdir -p "$out"
      vm_snapshot_build "$out/build-snapshot"
      VM_SNAPSHOT_DIR=$out/build-snapshot
    fi
    snap_share=(--share "$VM_SNAPSHOT_DIR:$VM_BUILD_DIR")
  fi
  # Prometheus in the loop for the kernel client: Debian's prometheus on the host scrapes the
  # kclient test's daemon through a forwarded port (tests/prometheus/kclient-in-the-loop.py)
  local prom_pid= prom_args=() prom_rc=
  rm -rf "$out/prometheus" "$out/rc"
  if [ "${CEPHSCOPE_VM_PROMETHEUS:-1}" = 1 ] && command -v prometheus > /dev/null; then
    mkdir -p "$out/prometheus"
    (cd "$VM_SRC_DIR/tests/prometheus" &&
      exec python3 kclient-in-the-loop.py "$out" > "$out/prometheus/check.log" 2>&1) &
    prom_pid=$!
    for _ in $(seq 300); do
      [ -s "$out/prometheus/hostfwd" ] || ! kill -0 "$prom_pid" 2> /dev/null && break
      sleep 0.1
    done
    if [ -s "$out/prometheus/hostfwd" ]; then
      prom_args=(--hostfwd "$(cat "$out/prometheus/hostfwd")"
        -e CEPHSCOPE_KCLIENT_PROMETHEUS=/cephscope-vm/prometheus)
    else
      vm_log "the kclient Prometheus check did not start: $(tail -n 3 "$out/prometheus/check.log")"
    fi
  else
    vm_log "WARNING: no Prometheus check of the kernel-client panels (prometheus not installed or CEPHSCOPE_VM_PROMETHEUS=0)"
  fi
  vm_call cmd_run --out "$out" "${snap_share[@]}" "${hint_args[@]}" "${prom_args[@]}" \
    -e "CEPHSCOPE_BIN=$VM_DAEMON_BIN" \
    -e "CEPHSCOPE_BUILD_DIR=$VM_BUILD_DIR" \
    -e "CEPHSCOPE_VM_CHECK_CONFIG=$VM_CHECK_CONFIG" \
    -e "CEPHSCOPE_VM_TEST_FILTER=$filter" \
    "$label" -- "$VM_HERE/guest/kernel-tests.sh"
  rc=$VM_CALL_RC
  if [ -n "$prom_pid" ]; then
    for _ in $(seq 600); do kill -0 "$prom_pid" 2> /dev/null || break; sleep 0.1; done
    kill "$prom_pid" 2> /dev/null || true
    prom_rc=0
    wait "$prom_pid" || prom_rc=$?
    case $prom_rc in 0) prom_rc=passed ;; 77) prom_rc=skipped ;; *) prom_rc=failed ;; esac
    # the whole log when it failed; its verdict otherwise
    if [ "$prom_rc" = failed ]; then
      sed 's/^/prometheus: /' "$out/prometheus/check.log"
    else
      tail -n 1 "$out/prometheus/check.log" | sed 's/^/prometheus: /'
    fi
    vm_log "kernel $label: the kernel-client panels in Prometheus $prom_rc ($out/prometheus/check.log)"
    echo "prometheus=$prom_rc" >> "$out/result"
    [ "$prom_rc" != failed ] || [ "$rc" != 0 ] || rc=1
  fi
  echo "vfs_hints=${hints[*]}" >> "$out/result"
  echo "filter=$filter" >> "$out/result"
  if [ -f "$out/out/kernel-tests.summary" ]; then
    vm_log "kernel $label: $(tail -n 1 "$out/out/kernel-tests.summary")"
  fi
  return $rc
}

cmd_matrix() { # [--no-docs] [KERNEL...]
  local labels=() docs=1 l rc=0 status=()
  while [ $# -gt 0 ]; do
    case $1 in
      --no-docs) docs=0; shift ;;
      -*) vm_die "usage: cephscope-vm matrix [--no-docs] [KERNEL...]" ;;
      *) labels+=("$1"); shift ;;
    esac
  done
  [ ${#labels[@]} -gt 0 ] || mapfile -t labels < <(vm_kernel_labels)
  local t0
  t0=$(vm_now)
  cmd_prepare "${labels[@]}"
  local prep_s
  prep_s=$(vm_since "$t0")
  mkdir -p "$VM_RESULTS"
  echo "$prep_s" > "$VM_RESULTS/prepare.seconds"
  # one snapshot of the binaries for every kernel
  if [ "${CEPHSCOPE_VM_SNAPSHOT:-1}" = 1 ] && [ -x "$VM_DAEMON_BIN" ]; then
    vm_snapshot_build "$VM_RESULTS/build-snapshot"
    export VM_SNAPSHOT_DIR=$VM_RESULTS/build-snapshot
  fi
  for l in "${labels[@]}"; do
    local r=0
    if [ -x "$VM_KERNEL_TESTS_BIN" ] && [ -x "$VM_DAEMON_BIN" ]; then
      vm_call cmd_kernel_tests --expect "$l"
    elif [ -x "$VM_DAEMON_BIN" ]; then
      CEPHSCOPE_VM_ALLOW_MISSING_TESTS=1 vm_call cmd_kernel_tests --expect "$l"
    else
      vm_log "kernel tests not built ($VM_KERNEL_TESTS_BIN): probing $l only"
      rm -rf "${VM_RESULTS:?}/$l"
      vm_call cmd_probe --out "$VM_RESULTS/$l" "$l"
    fi
    r=$VM_CALL_RC
    status+=("$l=$r")
    [ $r = 0 ] || rc=1
  done
  local report_args=(--results "$VM_RESULTS" --labels "${labels[*]}")
  if [ $docs = 1 ]; then
    "$VM_HERE/report.sh" "${report_args[@]}" --output "$VM_SRC_DIR/docs/kernel-matrix.md"
  fi
  "$VM_HERE/report.sh" "${report_args[@]}" --output "$VM_RESULTS/kernel-matrix.md"
  vm_log "matrix: ${status[*]} (prepare ${prep_s}s, total $(vm_since "$t0")s)"
  return $rc
}
