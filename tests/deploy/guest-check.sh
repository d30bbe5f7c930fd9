#!/bin/bash
# Runs inside the systemd-nspawn boot of tests/deploy/systemd.sh: checks the service as an
# operator drives it, writes /out/result.txt (PASS or the first failure), powers off.
set -u
exec > /out/log.txt 2>&1
finish() { echo "$1" > /out/result.txt; systemctl --no-block poweroff; exit 0; }
fail() { echo "FAIL: $*"; journalctl -u cephscope --no-pager | tail -n 30; finish "FAIL: $*"; }
prop() { systemctl show -p "$1" --value cephscope; }

systemctl start cephscope || fail "systemctl start"
# Type=notify: start returned after READY=1, so the first discovery and attach pass is done.
[ "$(prop ActiveState)" = active ] || fail "not active after start: $(prop ActiveState)"
echo "status: $(prop StatusText)"
[ -n "$(prop StatusText)" ] || fail "no STATUS line"
curl -sf http://127.0.0.1:9488/metrics > /out/metrics.txt || fail "no /metrics"
grep -q '^cephscope_build_info{.*revision=' /out/metrics.txt || fail "no cephscope_build_info"
grep -q '^cephscope_collector_up{collector="syscall",hook="tracepoint"} 1' /out/metrics.txt ||
  fail "syscall collector not up"
curl -sf http://127.0.0.1:9488/readyz >/dev/null || fail "not ready"
[ "$(prop WatchdogUSec)" = 1min ] || fail "WatchdogUSec $(prop WatchdogUSec)"
sleep 31
[ "$(prop WatchdogTimestampMonotonic)" != 0 ] || fail "no watchdog ping in 31 s"
echo "watchdog: last ping at $(prop WatchdogTimestamp)"

systemctl reload cephscope || fail "systemctl reload"
sleep 1
journalctl -u cephscope --no-pager | grep -q 'config reloaded' || fail "no reload in the log"
[ "$(prop ActiveState)" = active ] || fail "not active after reload"

pid=$(prop MainPID)
grep -h '^prog_id:' /proc/"$pid"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u > /out/prog-ids.txt
[ -s /out/prog-ids.txt ] || fail "the daemon holds no BPF program"
echo "the daemon holds $(wc -l < /out/prog-ids.txt) BPF programs"
systemd-analyze security cephscope --no-pager > /out/security.txt 2>&1
systemctl stop cephscope || fail "systemctl stop"
[ "$(prop ActiveState)" = inactive ] || fail "not inactive after stop: $(prop ActiveState)"
[ "$(prop MainPID)" = 0 ] || fail "a main process after stop"
journalctl -u cephscope --no-pager | tail -n 5
finish PASS
