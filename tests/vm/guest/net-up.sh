#!/bin/bash
# In the guest: the NIC of `cephscope-vm run --hostfwd` up at qemu's user-network address
# (10.0.2.15/24), so the host's forwarded port reaches a listener on it. No udev in the guest:
# the driver is loaded here and the interface keeps the kernel's name. Exit 1 without a NIC.
set -euo pipefail
modprobe virtio_net
for _ in $(seq 50); do [ -e /sys/class/net/eth0 ] && break; sleep 0.1; done
[ -e /sys/class/net/eth0 ] || { echo "net-up: no eth0 (was the guest started with --hostfwd?)" >&2; exit 1; }
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
