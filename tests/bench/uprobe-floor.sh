#!/usr/bin/env bash
# What one uprobe hit costs on this machine before cephscope's programs do anything: the floor
# under the OSD collector's per-op overhead (docs/collectors/osd.md, "Measurements").
#   1. a function whose first instruction is emulated (push), called in a tight loop: ns per
#      call without a probe, with an empty BPF program attached, and that program's run time;
#   2. with CLUSTER_DIR (tests/ceph/cluster.sh up): the same empty program on
#      PrimaryLogPG::log_op_stats in every ceph-osd during a 4 KiB rados bench write: its run
#      time per hit in place, where caches are cold.
# A benchmark: it prints figures and asserts nothing (MACHINE.md: noisy 2 cores). Needs root,
# cc and bpftrace.
#   usage: tests/bench/uprobe-floor.sh [CLUSTER_DIR]
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
for tool in cc bpftrace bpftool; do
  command -v "$tool" > /dev/null || { echo "needs $tool" >&2; exit 1; }
done
work=$(mktemp -d /tmp/cephscope-uprobe-floor-XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
tracer=
cleanup() {
  if [ -n "$tracer" ]; then kill "$tracer" 2>/dev/null && wait "$tracer" 2>/dev/null || true; fi
  sysctl -qw kernel.bpf_stats_enabled="$old_stats"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # a signal exits through cleanup: no daemon left attached
sysctl -qw kernel.bpf_stats_enabled=1

cat > "$work/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
long probed(long n);
/* push first: the kernel emulates it, as at most function entries in ceph-osd */
__asm__(".globl probed\n.type probed,@function\nprobed:\n push %rbp\n mov %rdi,%rax\n"
        " pop %rbp\n ret\n.size probed, .-probed\n");
int main(int argc, char **argv) {
  long n = atol(argv[1]), s = 0;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) s += probed(i);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  return s == 42;
}
C
cc -O2 -o "$work/loop" "$work/loop.c"

prog_ids() { bpftool prog show | awk '/^[0-9]+: kprobe / { sub(":", "", $1); print $1 }' | sort; }

# Attaches an empty program to PROBE (the only new kprobe-type program), runs CMD with its
# output in $work/cmd.out, and prints the program's run time per run.
empty_program_run_ns() {
  local probe=$1 id=
  shift
  prog_ids > "$work/ids.before"
  bpftrace -e "uprobe:$probe { }" > "$work/bpftrace.out" 2>&1 &
  tracer=$!
  for _ in $(seq 300); do
    grep -q '^Attaching' "$work/bpftrace.out" && id=$(prog_ids | comm -13 "$work/ids.before" -)
    [ -n "$id" ] && break
    sleep 0.1
  done
  [ -n "$id" ] || { echo "bpftrace did not attach to $probe:" >&2; cat "$work/bpftrace.out" >&2; exit 1; }
  "$@" > "$work/cmd.out"
  bpftool prog show id "$id" | awk '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) } }
    END { if (c > 0) printf "%.0f ns per run over %d runs\n", t / c, c; else print "no runs" }'
  kill "$tracer"
  wait "$tracer" 2>/dev/null || true
  tracer=
}

calls=200000
echo "== 1. tight loop, $calls calls of a push-first function"
echo "  without a probe: $("$work/loop" "$calls") ns per call"
run=$(empty_program_run_ns "$work/loop:probed" "$work/loop" "$calls")
echo "  with an empty BPF program: $(cat "$work/cmd.out") ns per call (trap, dispatch, return)"
echo "  the empty program's own run time (bpf_stats): $run"

cluster=${1:-}
[ -n "$cluster" ] || exit 0
# shellcheck disable=SC1091
source "$cluster/env"
osd=$(readlink -f "/proc/$CEPHSCOPE_CEPH_OSD_0_PID/exe")
sym=$(nm -D "$osd" | awk '/ T .*PrimaryLogPG12log_op_stats/ && !s { s = $3 } END { print s }')
echo "== 2. in place: an empty program on PrimaryLogPG::log_op_stats, 8 s 4 KiB rados bench write"
run=$(empty_program_run_ns "$osd:$sym" rados -p "$CEPHSCOPE_CEPH_POOL" bench 8 write -t 16 -b 4096 --no-cleanup)
echo "  the empty program's run time per hit: $run ($(awk '/^Average IOPS/ { print $NF }' "$work/cmd.out") IOPS)"
rados -p "$CEPHSCOPE_CEPH_POOL" cleanup > /dev/null 2>&1 || true
