#!/usr/bin/env bash
# cephscope under systemd as PID 1: a Debian 12 root with systemd and BUILD's .deb, booted
# with systemd-nspawn (the host's kernel, so the daemon's BPF is real). A unit inside runs
# the checks (guest-check.sh) and powers off; this script reads what it wrote:
#   - `systemctl start` returns once the daemon said READY (Type=notify), /metrics serves,
#     STATUS is set and the watchdog is pinged;
#   - `systemctl reload` reloads (the log says so) and the service stays active;
#   - `systemctl stop` ends it, and none of its BPF programs remains in the kernel (checked
#     here with bpftool, by the ids the daemon held);
#   - `systemd-analyze security cephscope` is printed.
#
#   tests/deploy/systemd.sh BUILD
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
source "$(dirname "$0")/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 BUILD" >&2; exit 2; }
build=$(cd "$1" && pwd)
command -v systemd-nspawn >/dev/null || deploy_die "systemd-nspawn missing (apt-get install systemd-container)"
command -v bpftool >/dev/null || deploy_die "bpftool missing"
deb=$(deploy_deb "$build")
tar=$(deploy_root)

work=$(mktemp -d /var/tmp/cephscope-systemd.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/out"
tar -C "$work/root" -xf "$tar"
cp "$deb" "$work/root/var/tmp/cephscope.deb"  # nspawn mounts a tmpfs on /tmp
t0=$SECONDS
systemd-nspawn -q -D "$work/root" --register=no --keep-unit --pipe /bin/bash -euc '
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends systemd systemd-sysv dbus curl \
  /var/tmp/cephscope.deb > /var/tmp/apt.log 2>&1 || { tail -n 30 /var/tmp/apt.log; exit 1; }' ||
  deploy_die "installing systemd and the package failed"
deploy_log "root with systemd and $(basename "$deb"): $((SECONDS - t0)) s"
install -m 755 "$DEPLOY_HERE/guest-check.sh" "$work/root/usr/local/bin/cephscope-guest-check"
cat > "$work/root/etc/systemd/system/cephscope-guest-check.service" <<'UNIT'
[Unit]
Description=cephscope deployment checks
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/bin/cephscope-guest-check
[Install]
WantedBy=multi-user.target
UNIT
ln -s /etc/systemd/system/cephscope-guest-check.service \
  "$work/root/etc/systemd/system/multi-user.target.wants/cephscope-guest-check.service"
# The package enabled cephscope.service; the checks start it themselves.
rm -f "$work/root/etc/systemd/system/multi-user.target.wants/cephscope.service"

t0=$SECONDS
# The capabilities the unit grants, which nspawn does not give a container by default, and the
# two syscalls its seccomp filter leaves out; tracefs from the host.
timeout 300 systemd-nspawn -q -D "$work/root" -b --register=no --keep-unit \
  --capability=CAP_BPF,CAP_PERFMON,CAP_SYS_PTRACE,CAP_CHECKPOINT_RESTORE,CAP_DAC_READ_SEARCH \
  --system-call-filter='bpf perf_event_open' --bind=/sys/kernel/tracing \
  --bind="$work/out:/out" > "$work/console.log" 2>&1 || true
deploy_log "boot, checks and power-off: $((SECONDS - t0)) s"
cat "$work/out/log.txt" 2>/dev/null || true
result=$(cat "$work/out/result.txt" 2>/dev/null || echo "no result")
if [ "$result" != PASS ]; then
  tail -n 40 "$work/console.log" >&2
  deploy_die "checks under systemd: $result"
fi
left=0
while read -r id; do
  if bpftool prog show id "$id" >/dev/null 2>&1; then
    echo "program $id still loaded after the stop" >&2
    left=$((left + 1))
  fi
done < "$work/out/prog-ids.txt"
[ "$left" -eq 0 ] || deploy_die "$left of the daemon's BPF programs outlived it"
deploy_log "stop: none of the daemon's $(wc -w < "$work/out/prog-ids.txt") BPF programs remains"
echo "systemd-analyze security cephscope:"
cat "$work/out/security.txt"
echo "systemd: start, status, watchdog, reload, stop checked"
