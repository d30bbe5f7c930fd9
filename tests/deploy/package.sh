#!/usr/bin/env bash
# The Debian package as an operator installs it: BUILD's .deb into a clean Debian 12 root (a
# podman container from a local debootstrap root), dependencies from Debian's mirror with
# apt, then `cephscope --config.check` there; the conffile, the unit, the shipped files and a
# purge are checked too. Prints the package's size and contents.
#
#   tests/deploy/package.sh BUILD
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
source "$(dirname "$0")/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 BUILD" >&2; exit 2; }
build=$(cd "$1" && pwd)
deb=$(deploy_deb "$build")
image=localhost/cephscope-test-bookworm:clean
deploy_image "$image"
deploy_log "$(basename "$deb"): $(stat -c %s "$deb") bytes, $(dpkg-deb -c "$deb" | grep -c '^-') files, \
installed size $(dpkg-deb -f "$deb" Installed-Size) KiB"

# Privileged with the host's pid namespace and tracefs, as the daemon runs: --config.check then
# loads every collector for real.
podman run --rm --net=host --pid=host --privileged -v "$deb:/tmp/cephscope.deb:ro" \
  -v /sys/kernel/tracing:/sys/kernel/tracing "$image" /bin/bash -euc '
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends /tmp/cephscope.deb > /tmp/apt.log 2>&1 ||
  { tail -n 30 /tmp/apt.log; exit 1; }
echo "installed: $(dpkg-query -W -f="\${Package} \${Version} \${Status}" cephscope)"
test "$(cat /var/lib/dpkg/info/cephscope.conffiles)" = /etc/cephscope/cephscope.yaml
for f in /usr/sbin/cephscope /usr/libexec/cephscope/cephscope-resolver \
    /usr/lib/systemd/system/cephscope.service /usr/share/cephscope/rules/cephscope-alerts.yml \
    /usr/share/cephscope/dashboards/osd-latency.json /usr/share/doc/cephscope/operations.md; do
  test -s "$f" || { echo "missing: $f"; exit 1; }
done
ls /usr/share/cephscope/profiles/*.json >/dev/null
grep -q "^ExecStart=/usr/sbin/cephscope --config.file /etc/cephscope/cephscope.yaml$" \
  /usr/lib/systemd/system/cephscope.service
cephscope --version
cephscope --config.check > /tmp/check.txt
cat /tmp/check.txt
grep -q "^collector=syscall .*status=ok" /tmp/check.txt
# A changed conffile survives a reinstall; a purge removes it.
echo "# local change" >> /etc/cephscope/cephscope.yaml
dpkg -i --force-confold /tmp/cephscope.deb >/dev/null
grep -q "^# local change$" /etc/cephscope/cephscope.yaml
dpkg --purge cephscope >/dev/null
test ! -e /etc/cephscope/cephscope.yaml && test ! -e /usr/sbin/cephscope
echo "package: installed, checked, purged"
'
