#!/bin/bash
# In the guest: a single-node Ceph cluster for the kclient tests (tests/kernel/test_kclient.cpp):
# one mon, one memstore OSD (tmpfs cannot hold BlueStore), one MDS, auth none, pool size 1;
# an `rbd` pool and a CephFS named cephfs. Logs under $CEPHSCOPE_VM_OUT/ceph. Exits 0 when
# the file system is active; the daemons stay up until the guest powers off.
set -euo pipefail
out=${CEPHSCOPE_VM_OUT:-/tmp}/ceph
mkdir -p /etc/ceph /var/lib/ceph/mon/ceph-a /var/lib/ceph/osd/ceph-0 /var/lib/ceph/mds/ceph-a \
  /run/ceph "$out"
up() { cut -d' ' -f1 /proc/uptime; }
say() { echo "ceph-cluster: [$(up)] $*"; }

fsid=$(uuidgen)
cat > /etc/ceph/ceph.conf <<EOF
[global]
fsid = $fsid
mon initial members = a
mon host = [v2:127.0.0.1:3300,v1:127.0.0.1:6789]
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = 1073741824
osd memory target = 939524096
ms bind ipv6 = false
log file = $out/\$cluster-\$name.log
run dir = /run/ceph
EOF

say "mon"
monmaptool --create --addv a '[v2:127.0.0.1:3300,v1:127.0.0.1:6789]' --fsid "$fsid" /tmp/monmap > /dev/null
ceph-mon --mkfs -i a --monmap /tmp/monmap
ceph-mon -i a
ceph -s --connect-timeout 120 > /dev/null

say "osd"
uuid=$(uuidgen)
id=$(ceph osd new "$uuid")
ceph-osd -i "$id" --mkfs --osd-uuid "$uuid" > "$out/osd-mkfs.log" 2>&1
ceph-osd -i "$id"
for _ in $(seq 180); do ceph osd stat 2>/dev/null | grep -q '1 up' && break; sleep 1; done
ceph osd stat | grep -q '1 up' || { say "the OSD did not come up"; exit 1; }

say "pools and file system"
ceph osd pool create rbd 8 8 > /dev/null
ceph osd pool application enable rbd rbd > /dev/null
ceph osd pool create cephfs_metadata 8 8 > /dev/null
ceph osd pool create cephfs_data 8 8 > /dev/null
ceph fs new cephfs cephfs_metadata cephfs_data > /dev/null

say "mds"
ceph-mds -i a
for _ in $(seq 180); do ceph mds stat 2>/dev/null | grep -q 'up:active' && break; sleep 1; done
ceph mds stat 2>/dev/null | grep -q 'up:active' || { say "the MDS did not become active"; exit 1; }
say "up: $(ceph -s --connect-timeout 10 | grep -E 'mds:|osd:' | tr -s ' ' | paste -sd' ' -)"
