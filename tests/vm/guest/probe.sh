#!/bin/bash
# In the guest: what this kernel offers the collectors, one "key=value" fact per line, then
# the hook probe's load/attach/fire results (cephscope_vm_hookprobe, when built).
#   probe.sh [TEST_DIR]
set -uo pipefail
dir=${1:-${CEPHSCOPE_TEST_DIR:-/tmp}}
build=${CEPHSCOPE_BUILD_DIR:-}
kver=$(uname -r)
T=/sys/kernel/tracing
yn() { if "$@" > /dev/null 2>&1; then echo yes; else echo no; fi; }

echo "fact=uname value=$kver"
for c in CONFIG_DEBUG_INFO_BTF CONFIG_DEBUG_INFO_BTF_MODULES CONFIG_KPROBES CONFIG_KPROBE_EVENTS \
    CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS CONFIG_FPROBE CONFIG_BPF_LSM; do
  v=$(grep -m1 "^$c=" "/boot/config-$kver" 2>/dev/null | cut -d= -f2)
  echo "fact=$c value=${v:-n}"
done
echo "fact=vmlinux_btf value=$(yn test -r /sys/kernel/btf/vmlinux)"
# Debian's kernels default to perf_event_paranoid=3: perf_event_open (tracepoints, kprobes)
# then needs CAP_SYS_ADMIN, CAP_PERFMON is not enough
echo "fact=kernel.perf_event_paranoid value=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo -)"
echo "fact=kernel.unprivileged_bpf_disabled value=$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null || echo -)"
echo "fact=module_btf_files value=$(find /sys/kernel/btf -mindepth 1 ! -name vmlinux 2>/dev/null | wc -l)"
echo "fact=kprobe_pmu value=$(yn test -r /sys/bus/event_source/devices/kprobe/type)"
echo "fact=tracefs_kprobe_events value=$(yn test -w $T/kprobe_events)"

# kprobes really fire: a tracefs kprobe event on vfs_read, no BPF involved
hits=-
if [ -w $T/kprobe_events ] && echo 'p:cephscope_vm/cephscope_vm_vfs_read vfs_read' >> $T/kprobe_events 2>/dev/null; then
  echo 1 > $T/events/cephscope_vm/cephscope_vm_vfs_read/enable
  for _ in 1 2 3 4 5; do cat /proc/version > /dev/null; done
  echo 0 > $T/events/cephscope_vm/cephscope_vm_vfs_read/enable
  hits=$(awk '$1 == "cephscope_vm_vfs_read" || $1 == "cephscope_vm/cephscope_vm_vfs_read" { print $2 }' $T/kprobe_profile)
  echo '-:cephscope_vm/cephscope_vm_vfs_read' >> $T/kprobe_events
fi
echo "fact=tracefs_kprobe_vfs_read_hits value=${hits:-0}"

# the functions the vfs collector hooks: in BTF (fentry needs it) and traceable (ftrace/kprobe)
btf=$(bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | awk '$2 == "FUNC" { print $3 }' | tr -d "'")
for f in vfs_read vfs_write vfs_readv vfs_writev vfs_fsync_range; do
  inbtf=no; traceable=no
  grep -qx "$f" <<< "$btf" && inbtf=yes
  grep -qE "^$f( |\$)" $T/available_filter_functions 2>/dev/null && traceable=yes
  echo "fact=func_$f value=btf:$inbtf,traceable:$traceable"
done
for tp in block/block_rq_complete block/block_rq_issue block/block_rq_insert block/block_bio_queue \
    syscalls/sys_enter_read sched/sched_process_exec; do
  echo "fact=tracepoint_${tp//\//:} value=$(yn test -d $T/events/$tp)"
done
bpftool feature probe kernel 2>/dev/null |
  awk '/^eBPF program_type (kprobe|tracepoint|raw_tracepoint|tracing) is/ { print "fact=prog_type_" $3 " value=" ($5 == "available" ? "yes" : "no") }'

probe=$build/tests/vm/cephscope_vm_hookprobe
if [ -n "$build" ] && [ -x "$probe" ]; then
  "$probe" "$dir"
else
  echo "fact=hookprobe value=not-built"
fi

# the verifier on every program of the project's BPF objects, one program at a time
check=$build/tests/vm/cephscope_vm_loadcheck
objs=()
for o in "$build"/skel/*.bpf.o; do
  [ -f "$o" ] && [ "${o##*/}" != vm_hookprobe.bpf.o ] && objs+=("$o")
done
if [ -n "$build" ] && [ -x "$check" ] && [ ${#objs[@]} -gt 0 ]; then
  "$check" "${objs[@]}"
else
  echo "fact=loadcheck value=not-built"
fi
