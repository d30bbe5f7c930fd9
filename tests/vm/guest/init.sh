#!/bin/bash
# PID 1 of the guest inside the Debian root (after switch_root). Mounts the kernel file
# systems and the host shares, formats the scratch virtio disk, runs the command with its
# output on the second serial port, records its exit status in the control folder and powers
# the guest off. PID 1 must never exit (that would panic the kernel): every path ends in
# poweroff.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
CTL=/cephscope-vm
P9=trans=virtio,version=9p2000.L,msize=512000
SCRATCH_MNT=/mnt/cephscope-test

log() { echo "cephscope-vm-guest: [$(cut -d' ' -f1 /proc/uptime 2>/dev/null)] $*" > /dev/ttyS0; }
poweroff_now() {
  sync
  echo o > /proc/sysrq-trigger
  sleep 60
  exit 1
}
fail() {
  log "$*"
  echo "guest: $*" > "$CTL/init-failed"
  poweroff_now
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }

mount -t proc proc /proc || fail "cannot mount /proc"
log "Debian root up"
mount -t sysfs sysfs /sys || fail "cannot mount /sys"
echo 1 > /proc/sys/kernel/sysrq
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug || fail "cannot mount debugfs"
mount -t tracefs tracefs /sys/kernel/tracing || fail "cannot mount tracefs"
mount -t bpf bpf /sys/fs/bpf || fail "cannot mount bpffs"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || log "cgroup2 not mounted"
mkdir -p /usr/lib/modules /boot
mount -t 9p -o "$P9,ro,cache=loose" modules /usr/lib/modules || fail "cannot mount the kernel modules"
mount -t 9p -o "$P9,ro,cache=loose" boot /boot || fail "cannot mount /boot"
while IFS=$'\t' read -r tag path mode; do
  [ -n "$tag" ] || continue
  mkdir -p "$path" && mount -t 9p -o "$P9,$mode" "$tag" "$path" || fail "cannot mount share $tag at $path"
done < "$CTL/mounts"
hostname cephscope-vm
ip link set lo up
stty -F /dev/ttyS1 raw -echo 2>/dev/null

log "shares mounted"
# the scratch disk: a real block device for the tests' O_DIRECT IO
modprobe -q virtio_rng 2>/dev/null
modprobe -q virtio_blk || log "modprobe virtio_blk failed (builtin?)"
modprobe -q ext4 || log "modprobe ext4 failed (builtin?)"
dev=
for _ in $(seq 100); do
  for b in /sys/block/vd*; do
    [ -e "$b" ] && [ "$(cat "$b/serial" 2>/dev/null)" = cephscope-scratch ] && dev=/dev/${b##*/}
  done
  [ -n "$dev" ] && [ -b "$dev" ] && break
  sleep 0.1
done
[ -n "$dev" ] && [ -b "$dev" ] || fail "scratch disk not found"
mkfs.ext4 -q -F -L cephscope-test "$dev" || fail "mkfs.ext4 $dev failed"
mkdir -p "$SCRATCH_MNT" && mount -t ext4 "$dev" "$SCRATCH_MNT" || fail "cannot mount $dev"
mkdir -p "$CTL/out"

uname -r > "$CTL/uname"
mapfile -d '' envs < "$CTL/env0"
cd "$(cat "$CTL/cwd")" 2>/dev/null || cd /
log "command starts on $(uname -r), scratch $dev on $SCRATCH_MNT"
uptime_s > "$CTL/started"
env -i "${envs[@]}" /bin/bash "$CTL/cmd" < /dev/null > /dev/ttyS1 2>&1
rc=$?
uptime_s > "$CTL/finished"
log "command exited $rc"
echo "$rc" > "$CTL/rc.tmp" && mv "$CTL/rc.tmp" "$CTL/rc"
cd /
umount "$SCRATCH_MNT" 2>/dev/null
poweroff_now
