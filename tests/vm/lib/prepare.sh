# prepare: build the guest root filesystem and fetch the matrix kernels, once, into the
# cache ($CEPHSCOPE_VM_CACHE, default /var/cache/cephscope-tests/vm). Every artefact is keyed and
# stamped (.complete); a later prepare reuses what is there without touching the network.
# shellcheck shell=bash

# Bump when the way the root filesystem is made changes (forces a rebuild).
VM_ROOTFS_RECIPE=1

vm_rootfs_packages() {
  # shellcheck disable=SC2206
  local extra=(${CEPHSCOPE_VM_EXTRA_PACKAGES:-})
  printf '%s\n' "${VM_ROOTFS_PACKAGES[@]}" "${extra[@]}" | awk 'NF' | sort -u
}
vm_rootfs_dir() {
  local key
  key=$( { echo "recipe=$VM_ROOTFS_RECIPE suite=$VM_ROOTFS_SUITE"; vm_rootfs_packages;
    echo "apt: ${VM_ROOTFS_APT_PACKAGES[*]}"; } | vm_sha)
  echo "$VM_CACHE/rootfs/$VM_ROOTFS_SUITE-minbase-$key"
}
vm_kernel_dir() { echo "$VM_CACHE/kernels/$1"; }
vm_kernel_ready() { [ -f "$(vm_kernel_dir "$1")/.complete" ]; }
vm_rootfs_ready() { [ -f "$(vm_rootfs_dir)/.complete" ]; }

vm_prepare_rootfs() {
  local dir tmp t0 pkgs mirror
  dir=$(vm_rootfs_dir)
  if [ -f "$dir/.complete" ]; then
    vm_log "rootfs: cached $dir"
    return 0
  fi
  vm_need_tools debootstrap
  t0=$(vm_now)
  mirror=$(vm_mirror)
  pkgs=$(vm_rootfs_packages | paste -sd, -)
  mkdir -p "$VM_CACHE/rootfs"
  tmp=$dir.tmp.$$
  rm -rf "$tmp"
  vm_log "rootfs: debootstrap --variant=minbase $VM_ROOTFS_SUITE from $mirror (+ $pkgs)"
  if ! debootstrap --variant=minbase --include="$pkgs" "$VM_ROOTFS_SUITE" "$tmp" "$mirror" \
      > "$VM_CACHE/rootfs/debootstrap.log" 2>&1; then
    tail -n 30 "$VM_CACHE/rootfs/debootstrap.log" >&2
    rm -rf "$tmp"
    vm_die "debootstrap failed (log: $VM_CACHE/rootfs/debootstrap.log)"
  fi
  vm_log "rootfs: apt-get install ${VM_ROOTFS_APT_PACKAGES[*]} in the new root"
  echo "deb $mirror $VM_ROOTFS_SUITE main" > "$tmp/etc/apt/sources.list"
  cp /etc/resolv.conf "$tmp/etc/resolv.conf" 2>/dev/null || true
  printf '#!/bin/sh\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d" # no service starts in the chroot
  chmod 755 "$tmp/usr/sbin/policy-rc.d"
  if ! { chroot "$tmp" apt-get update &&
    chroot "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "${VM_ROOTFS_APT_PACKAGES[@]}"; } >> "$VM_CACHE/rootfs/debootstrap.log" 2>&1; then
    tail -n 30 "$VM_CACHE/rootfs/debootstrap.log" >&2
    rm -rf "$tmp"
    vm_die "apt-get install in the root filesystem failed (log: $VM_CACHE/rootfs/debootstrap.log)"
  fi
  rm -f "$tmp/usr/sbin/policy-rc.d"
  rm -f "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*_Packages
  echo cephscope-vm > "$tmp/etc/hostname"
  # shellcheck disable=SC2016
  chroot "$tmp" dpkg-query -W -f '${Package} ${Version}\n' > "$tmp/.manifest" 2>/dev/null || true
  vm_rootfs_packages > "$tmp/.packages"
  vm_since "$t0" > "$tmp/.seconds"
  touch "$tmp/.complete"
  mv "$tmp" "$dir"
  vm_log "rootfs: built $dir in $(vm_since "$t0")s ($(du -sh "$dir" | cut -f1))"
}

# Private apt state for one suite family, so the host's own apt is never touched.
vm_apt() { # APTDIR apt-get|apt-cache ARGS...
  local a=$1; shift
  local tool=$1; shift
  "$tool" -q -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts="$a/sources.list.d" \
    -o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status" -o Dir::Cache="$a/cache" \
    -o Acquire::Languages=none -o APT::Get::List-Cleanup=0 "$@"
}

vm_prepare_kernel() {
  local label=$1 kdir suite suites a mirror smirror s pkg ver kver t0 deb tree
  kdir=$(vm_kernel_dir "$label")
  if [ -f "$kdir/.complete" ] && [ "${CEPHSCOPE_VM_REFRESH:-0}" != 1 ]; then
    vm_log "kernel $label: cached $(cat "$kdir/package") ($(cat "$kdir/kver"))"
    return 0
  fi
  vm_need_tools apt-get apt-cache dpkg depmod
  t0=$(vm_now)
  suite=$(vm_kernel_field "$label" 2)
  suites=$(vm_kernel_field "$label" 3)
  mirror=$(vm_mirror)
  smirror=$(vm_security_mirror)
  a=$VM_CACHE/apt/$suite
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/sources.list.d"
  : > "$a/status"
  : > "$a/sources.list"
  for s in ${suites//,/ }; do
    case $s in
      *-security) echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $smirror $s main" ;;
      *) echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $s main" ;;
    esac >> "$a/sources.list"
  done
  vm_log "kernel $label: apt-get update ($suites)"
  vm_apt "$a" apt-get update > "$a/update.log" 2>&1 ||
    { tail -n 20 "$a/update.log" >&2; vm_die "apt-get update for $suite failed"; }
  pkg=${CEPHSCOPE_VM_KERNEL_PACKAGE:-}
  [ -n "$pkg" ] && [ "$label" = "${CEPHSCOPE_VM_KERNEL_PACKAGE_FOR:-}" ] || pkg=
  if [ -z "$pkg" ]; then
    pkg=$(vm_apt "$a" apt-cache depends linux-image-amd64 |
          awk '$1 ~ /Depends:$/ && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
  fi
  [ -n "$pkg" ] || vm_die "kernel $label: cannot resolve linux-image-amd64 in $suite"
  ver=$(vm_apt "$a" apt-cache policy "$pkg" | awk '/Candidate:/ { print $2 }')
  vm_log "kernel $label: $pkg $ver"
  rm -rf "$kdir.tmp"
  mkdir -p "$kdir.tmp/dl"
  (cd "$kdir.tmp/dl" && vm_apt "$a" apt-get download "$pkg" > ../download.log 2>&1) ||
    { tail -n 20 "$kdir.tmp/download.log" >&2; vm_die "kernel $label: download of $pkg failed"; }
  deb=$(ls "$kdir.tmp"/dl/*.deb)
  tree=$kdir.tmp/tree
  dpkg -x "$deb" "$tree"
  # merged-/usr packages (trixie on) ship usr/lib/modules; depmod -b and modprobe -d want lib/modules
  if [ ! -e "$tree/lib/modules" ]; then mkdir -p "$tree/lib"; ln -s ../usr/lib/modules "$tree/lib/modules"; fi
  kver=$(ls "$tree/lib/modules/")
  [ "$(echo "$kver" | wc -l)" = 1 ] && [ -f "$tree/boot/vmlinuz-$kver" ] ||
    vm_die "kernel $label: unexpected package layout in $deb"
  depmod -b "$tree" "$kver"
  echo "$pkg" > "$kdir.tmp/package"
  echo "$ver" > "$kdir.tmp/version"
  echo "$kver" > "$kdir.tmp/kver"
  rm -rf "$deb" "$kdir.tmp/dl"
  vm_since "$t0" > "$kdir.tmp/seconds"
  touch "$kdir.tmp/.complete"
  rm -rf "$kdir"
  mv "$kdir.tmp" "$kdir"
  vm_log "kernel $label: $kver ready in $(vm_since "$t0")s"
}

# The kernel image qemu boots. Debian's bzImage decompresses itself, which takes seconds
# under TCG; the uncompressed ELF inside boots directly through its PVH entry point (qemu
# -kernel vmlinux, CONFIG_PVH=y in Debian's kernels). Falls back to the bzImage.
vm_kernel_image() { # LABEL -> prints path
  local kdir kver bz elf off magic tool
  kdir=$(vm_kernel_dir "$1")
  kver=$(cat "$kdir/kver")
  bz=$kdir/tree/boot/vmlinuz-$kver
  elf=$kdir/vmlinux-$kver
  if [ "${CEPHSCOPE_VM_BZIMAGE:-0}" = 1 ] || ! grep -q '^CONFIG_PVH=y' "$kdir/tree/boot/config-$kver"; then
    echo "$bz"; return 0
  fi
  if [ ! -f "$elf" ]; then
    for magic in $'\xfd7zXZ\x00':xz $'\x28\xb5\x2f\xfd':zstd $'\x1f\x8b\x08':gzip; do
      tool=${magic##*:}
      off=$( (LC_ALL=C grep -abo "${magic%:*}" "$bz" 2>/dev/null || true) | head -n 1 | cut -d: -f1)
      [ -n "$off" ] && command -v "$tool" > /dev/null || continue
      # trailing bytes after the stream make the decompressor complain: the ELF is checked below
      tail -c +$((off + 1)) "$bz" | "$tool" -dc 2>/dev/null > "$elf.tmp" || true
      if [ "$(head -c 4 "$elf.tmp" | od -An -c | tr -d ' \n')" = 177ELF ] &&
        readelf -n "$elf.tmp" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)'; then
        mv "$elf.tmp" "$elf"
        break
      fi
      rm -f "$elf.tmp"
    done
  fi
  if [ -f "$elf" ]; then echo "$elf"; else echo "$bz"; fi
}

# Tiny busybox initramfs per kernel: loads what is needed to mount the 9p root and hands over
# to guest/init.sh inside the Debian root. Keyed by its inputs; rebuilt in a second when they change.
VM_INITRD_MODULES=(virtio_pci 9pnet_virtio 9p overlay virtio_blk ext4 virtio_rng)
vm_initrd() { # LABEL -> prints path
  local label=$1 kdir kver busybox key out w m ko b
  kdir=$(vm_kernel_dir "$label")
  kver=$(cat "$kdir/kver")
  busybox=${CEPHSCOPE_VM_BUSYBOX:-/bin/busybox}
  [ -x "$busybox" ] && file -L "$busybox" | grep -q 'statically linked' ||
    vm_die "need a static busybox at $busybox (apt-get install busybox-static)"
  key=$( { cat "$VM_HERE/guest/initramfs-init"; echo "${VM_INITRD_MODULES[*]}"; sha256sum < "$busybox"; } | vm_sha)
  out=$kdir/initrd-$key.cpio.gz
  if [ -f "$out" ]; then echo "$out"; return 0; fi
  w=$(mktemp -d)
  mkdir -p "$w"/{bin,dev,proc,sys,mods,newroot,ctl,lower,rw}
  cp "$busybox" "$w/bin/busybox"
  ln -s busybox "$w/bin/sh"
  : > "$w/mods/order"
  for m in "${VM_INITRD_MODULES[@]}"; do
    modprobe -d "$kdir/tree" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
  done | awk '!seen[$0]++' | while read -r ko; do
    b=$(basename "$ko")
    case $b in # busybox insmod wants plain .ko
      *.ko.xz) b=${b%.xz}; xz -dc "$ko" > "$w/mods/$b" ;;
      *.ko.zst) b=${b%.zst}; zstd -qdc "$ko" > "$w/mods/$b" ;;
      *.ko.gz) b=${b%.gz}; gzip -dc "$ko" > "$w/mods/$b" ;;
      *) cp "$ko" "$w/mods/$b" ;;
    esac
    echo "$b" >> "$w/mods/order"
  done
  install -m 755 "$VM_HERE/guest/initramfs-init" "$w/init"
  rm -f "$kdir"/initrd-*.cpio.gz
  (cd "$w" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
  mv "$out.tmp" "$out"
  vm_log "kernel $label: initramfs $(basename "$out") (modules: $(tr '\n' ' ' < "$w/mods/order"))"
  rm -rf "$w"
  echo "$out"
}

cmd_prepare() { # [LABEL...]
  local labels=("$@") l t0
  [ ${#labels[@]} -gt 0 ] || mapfile -t labels < <(vm_kernel_labels)
  for l in "${labels[@]}"; do vm_check_label "$l"; done
  vm_need_tools qemu-system-x86_64 cpio file flock
  t0=$(vm_now)
  vm_lock
  vm_prepare_rootfs
  for l in "${labels[@]}"; do
    vm_prepare_kernel "$l"
    vm_initrd "$l" > /dev/null
    vm_kernel_image "$l" > /dev/null
  done
  vm_unlock
  vm_log "prepare: done in $(vm_since "$t0")s (cache $VM_CACHE)"
}
