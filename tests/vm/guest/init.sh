#!/bin/bash
# PID 1 of the guest in the Debian root (after switch_root; initramfs-init mounted everything).
# Runs the command with its output on the second serial port, records its exit status in the
# control folder and powers the guest off. PID 1 must never exit (the kernel would panic):
# every path ends in poweroff.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
CTL=/cephscope-vm
up() { local u; read -r u _ < /proc/uptime; echo "$u"; }
log() { echo "cephscope-vm-guest: [$(up)] $*" > /dev/ttyS0; }
poweroff_now() {
  sync
  echo o > /proc/sysrq-trigger
  sleep 60
  exit 1
}
trap poweroff_now EXIT

read -r kver < /proc/sys/kernel/osrelease
echo "$kver" > "$CTL/uname"
mkdir -p "$CTL/out"
mapfile -d '' envs < "$CTL/env0"
cd "$(< "$CTL/cwd")" 2>/dev/null || cd /
log "command starts on $kver"
up > "$CTL/started"
env -i "${envs[@]}" /bin/bash "$CTL/cmd" < /dev/null > /dev/ttyS1 2>&1
rc=$?
up > "$CTL/finished"
log "command exited $rc"
echo "$rc" > "$CTL/rc.tmp" && mv "$CTL/rc.tmp" "$CTL/rc"
cd /
umount /mnt/cephscope-test 2>/dev/null
poweroff_now
