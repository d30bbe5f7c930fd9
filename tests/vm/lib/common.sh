# Shared settings and helpers of the kernel-matrix harness (sourced by cephscope-vm).
# shellcheck shell=bash
# shellcheck disable=SC2034  # settings used by the other sourced files

VM_HERE=${VM_HERE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# shellcheck source=tests/lib/debian-mirror.sh
source "$VM_HERE/../lib/debian-mirror.sh"
VM_SRC_DIR=${CEPHSCOPE_SOURCE_DIR:-$(cd "$VM_HERE/../.." && pwd)}
VM_BUILD_DIR=${CEPHSCOPE_BUILD_DIR:-$VM_SRC_DIR/build}
VM_CACHE=${CEPHSCOPE_VM_CACHE:-${CEPHSCOPE_TEST_CACHE:-/var/cache/cephscope-tests}/vm}
VM_MEM=${CEPHSCOPE_VM_MEM:-2G}
VM_SMP=${CEPHSCOPE_VM_SMP:-2}
VM_ACCEL=${CEPHSCOPE_VM_ACCEL:-tcg}
VM_TIMEOUT=${CEPHSCOPE_VM_TIMEOUT:-1800}        # whole run of one guest (boot + command)
VM_BOOT_TIMEOUT=${CEPHSCOPE_VM_BOOT_TIMEOUT:-300} # qemu start until the command starts
VM_SCRATCH_SIZE=${CEPHSCOPE_VM_SCRATCH_SIZE:-256M}
VM_LOCK_TIMEOUT=${CEPHSCOPE_VM_LOCK_TIMEOUT:-3600}
VM_ROOTFS_SUITE=bookworm

# Runtime packages of the guest root filesystem: what the project's binaries link against
# plus the tools the guest scripts use. Extra ones: CEPHSCOPE_VM_EXTRA_PACKAGES (space separated).
VM_ROOTFS_PACKAGES=(
  libbpf1 libelf1 libdw1 zlib1g libdebuginfod1 libstdc++6
  libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libcivetweb1
  libyaml-cpp0.7 libspdlog1.10 libfmt9 libsystemd0 libdeflate0 libssl3 libcrypt1 libcapstone4
  dmsetup mdadm
  bpftool iproute2 util-linux procps e2fsprogs kmod
)
# Installed with apt-get inside the new root after debootstrap (whose own --include cannot
# configure packages this large): the kclient tests' single-node cluster (mon, memstore OSD,
# MDS) with krbd and CephFS.
VM_ROOTFS_APT_PACKAGES=(ceph-mon ceph-osd ceph-mds ceph-common uuid-runtime)

vm_log() { printf 'cephscope-vm: %s\n' "$*" >&2; }
vm_die() { printf 'cephscope-vm: error: %s\n' "$*" >&2; exit "${VM_DIE_RC:-2}"; }

# Monotonic seconds with one decimal, for phase timings.
vm_now() { awk '{ printf "%.1f", $1 }' /proc/uptime; }
vm_since() { awk -v a="$1" '{ printf "%.1f", $1 - a }' /proc/uptime; }

# Debian mirror the host already uses (apt sources), overridable.
vm_mirror() {
  if [ -n "${CEPHSCOPE_VM_MIRROR:-}" ]; then echo "$CEPHSCOPE_VM_MIRROR"; return; fi
  debian_mirror
}
vm_security_mirror() {
  if [ -n "${CEPHSCOPE_VM_SECURITY_MIRROR:-}" ]; then echo "$CEPHSCOPE_VM_SECURITY_MIRROR"; return; fi
  local m
  m=$( { cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      2>/dev/null || true; } | { grep -o 'https\?://[^ ]*debian-security[^ ]*' || true; } | head -n1)
  [ -n "$m" ] || { m=$(vm_mirror); m=${m%/debian}/debian-security; }
  echo "$m"
}

# kernels.conf lookups
vm_kernel_labels() { awk '!/^#/ && NF >= 3 { print $1 }' "$VM_HERE/kernels.conf"; }
vm_kernel_field() { # LABEL FIELD(2=suite 3=apt suites 4=expected hooks)
  awk -v l="$1" -v f="$2" '!/^#/ && $1 == l { print $f; found = 1 } END { exit !found }' \
    "$VM_HERE/kernels.conf"
}
vm_check_label() {
  vm_kernel_field "$1" 2 >/dev/null ||
    vm_die "unknown kernel '$1' (known: $(vm_kernel_labels | tr '\n' ' '))"
}
vm_expected_hooks() { local h; h=$(vm_kernel_field "$1" 4); [ "$h" = - ] && h=; echo "$h"; }
vm_expected_fsync() { local f; f=$(vm_kernel_field "$1" 5); echo "${f:-seen}"; }

vm_need_tools() {
  local missing=() t
  for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  VM_DIE_RC=${VM_TOOLS_RC:-2} vm_die "missing tools: ${missing[*]} (apt-get install qemu-system-x86 debootstrap busybox-static cpio kmod xz-utils zstd)"
}

vm_sha() { sha256sum | cut -c1-12; }

# Hold the cache lock (bounded wait) around prepare steps; other runs only read the cache.
vm_lock() {
  mkdir -p "$VM_CACHE"
  exec {VM_LOCK_FD}>"$VM_CACHE/.lock"
  if ! flock -n "$VM_LOCK_FD"; then
    vm_log "waiting for another prepare (lock $VM_CACHE/.lock, up to ${VM_LOCK_TIMEOUT}s)"
    flock -w "$VM_LOCK_TIMEOUT" "$VM_LOCK_FD" || vm_die "cache lock not released in ${VM_LOCK_TIMEOUT}s"
  fi
}
vm_unlock() { [ -n "${VM_LOCK_FD:-}" ] && exec {VM_LOCK_FD}>&- ; VM_LOCK_FD=; }

# Runs "$@" in a subshell with set -e in force (a `f || rc=$?` call would switch it off inside
# f) and leaves its exit status in VM_CALL_RC; always returns 0.
vm_call() {
  local err_trap
  err_trap=$(trap -p ERR)
  trap - ERR # the subshell's status is an answer, not an internal error
  set +e
  (
    eval "$err_trap"
    set -e
    "$@"
  )
  VM_CALL_RC=$?
  set -e
  eval "$err_trap"
  return 0
}
