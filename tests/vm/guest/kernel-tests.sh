#!/bin/bash
# In the guest: the kernel layer of cephscope on this kernel, in one boot.
#   1. probe.sh: what the kernel offers and which hooks load/attach/fire   -> probe.txt
#   2. cephscope --check: the hook each collector picks                     -> check.txt
#   3. the Catch2 kernel tests (filter $CEPHSCOPE_VM_TEST_FILTER, set by tests/vm/lib/tests.sh)
#                                                                           -> kernel-tests.xml
# Files land in $CEPHSCOPE_VM_OUT. Exit status: the kernel tests', or 1 when --check failed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${CEPHSCOPE_VM_OUT:?}
build=${CEPHSCOPE_BUILD_DIR:?}
bin=${CEPHSCOPE_BIN:-$build/daemon/cephscope}
tests=$build/tests/kernel/cephscope_kernel_tests
config=${CEPHSCOPE_VM_CHECK_CONFIG:?}
filter=${CEPHSCOPE_VM_TEST_FILTER:?set by tests/vm/lib/tests.sh}
mkdir -p "$out"
ts() { cut -d' ' -f1 /proc/uptime; }
section() { echo "=== [$(ts)s] $*"; }

hints=$(env | grep -E '^CEPHSCOPE_(EXPECT_VFS_HOOKS|VFS_FSYNC)=' | paste -sd' ' -)
section "kernel $(uname -r), vfs hints: ${hints:-none (the tests probe)}, test dir $CEPHSCOPE_TEST_DIR"
section "probe"
t0=$(ts)
"$here/probe.sh" "$CEPHSCOPE_TEST_DIR" | tee "$out/probe.txt"
awk -v a="$t0" -v b="$(ts)" 'BEGIN { printf "%.1f\n", b - a }' > "$out/probe.seconds"

section "$bin --check --config $config"
check_rc=0
"$bin" --check --config "$config" > "$out/check.txt" 2> "$out/check.stderr" || check_rc=$?
cat "$out/check.txt"
[ -s "$out/check.stderr" ] && sed 's/^/check stderr: /' "$out/check.stderr" | tail -n 20
echo "$check_rc" > "$out/check.rc"
[ $check_rc = 0 ] || echo "cephscope --check exited $check_rc"

if [ ! -x "$tests" ]; then
  section "kernel tests: $tests is not built"
  touch "$out/kernel-tests.not-built"
  exit $check_rc
fi
section "kernel tests: $tests \"$filter\""
t0=$(ts)
# Catch2 v2 has one reporter: XML streams per test case and carries durations and failures.
# The full XML (with the tests' INFO, e.g. daemon logs) goes to a file; the console gets the
# summary as the tests go.
stdbuf -oL "$tests" "$filter" -r xml -d yes | tee "$out/kernel-tests.xml" |
  awk -v progress=1 -f "$here/../catch2-summary.awk" | tee "$out/kernel-tests.summary"
tests_rc=${PIPESTATUS[0]}
awk -v a="$t0" -v b="$(ts)" 'BEGIN { printf "%.1f\n", b - a }' > "$out/kernel-tests.seconds"
echo "$tests_rc" > "$out/kernel-tests.rc"
section "kernel tests exited $tests_rc (full report: kernel-tests.xml in the run's out/ folder)"

# The kclient test (tests/kernel/test_kclient.cpp) against a cluster of the guest's own, where
# the root filesystem has Ceph: after the other tests, whose IO it would disturb.
kclient_rc=0
if [ "${CEPHSCOPE_VM_KCLIENT:-1}" = 1 ] && command -v ceph-mon > /dev/null; then
  section "ceph cluster for the kclient test"
  # the host's Prometheus scrapes the test's daemon (tests/prometheus/kclient-in-the-loop.py):
  # the NIC comes up beside the cluster (which keeps to 127.0.0.1)
  net_pid=
  if [ -n "${CEPHSCOPE_KCLIENT_PROMETHEUS:-}" ]; then
    "$here/net-up.sh" &
    net_pid=$!
  fi
  if "$here/ceph-cluster.sh"; then
    if [ -n "$net_pid" ] && ! wait "$net_pid"; then
      unset CEPHSCOPE_KCLIENT_PROMETHEUS
    fi
    section "kclient test: $tests \"[kclient]\""
    CEPHSCOPE_KCLIENT_CEPH=1 stdbuf -oL "$tests" "[kclient]" -r xml -d yes |
      tee "$out/kclient-tests.xml" | awk -v progress=1 -f "$here/../catch2-summary.awk" |
      tee "$out/kclient-tests.summary"
    kclient_rc=${PIPESTATUS[0]}
    # the hook each collector picks now that the test loaded libceph, rbd and ceph
    "$bin" --check --config "$config" > "$out/check-kclient.txt" 2>&1 || true
    grep '^collector=kclient' "$out/check-kclient.txt" || true
    # the verifier on kclient.bpf.o needs the modules' BTF: again, now that they are loaded
    loadcheck=$build/tests/vm/cephscope_vm_loadcheck
    if [ -x "$loadcheck" ] && [ -f "$build/skel/kclient.bpf.o" ]; then
      { grep -v '^object=kclient.bpf.o ' "$out/probe.txt"; "$loadcheck" "$build/skel/kclient.bpf.o"; } \
        > "$out/probe.txt.new" && mv "$out/probe.txt.new" "$out/probe.txt"
    fi
  else
    echo "the guest's Ceph cluster did not start (logs: ceph/ in the run's out/ folder)"
    kclient_rc=1
  fi
  echo "$kclient_rc" > "$out/kclient-tests.rc"
elif [ -n "${CEPHSCOPE_KCLIENT_PROMETHEUS:-}" ]; then
  echo '{"kclient": "not tested here (CEPHSCOPE_VM_KCLIENT=0 or no Ceph in the root)"}' \
    > "$CEPHSCOPE_KCLIENT_PROMETHEUS/facts.json"
fi
[ $tests_rc = 0 ] || exit "$tests_rc"
[ $kclient_rc = 0 ] || exit "$kclient_rc"
exit $check_rc
