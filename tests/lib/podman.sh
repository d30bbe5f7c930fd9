# shellcheck shell=bash
# podman as this host needs it (see /work/shared/MACHINE.md "Containers"): runc (crun fails on
# the host's hybrid cgroups), cgroupfs (no systemd cgroups) and no default ulimits (raising
# them is not permitted). Sourced by tests/ceph/image.sh and tests/deploy/.

podman_settings_ok() {
    local s
    s=$(podman info --format '{{.Host.CgroupManager}} {{.Host.OCIRuntime.Name}}' 2>/dev/null) || return 1
    [ "$s" = "cgroupfs runc" ]
}

PODMAN_CONF_TEXT='# Written by cephscope tests/lib/podman.sh (see /work/shared/MACHINE.md "Containers"):
# crun fails on this host'"'"'s hybrid cgroups, systemd cgroups are not available, and raising
# ulimits is not permitted.
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"'

# Writes /etc/containers/containers.conf when absent; an existing one is left alone unless
# podman then shows other settings, in which case a drop-in overrides them. Fails (status 1,
# with podman's view on stderr) when podman still does not use runc and cgroupfs.
podman_configure() {
    local f=/etc/containers/containers.conf d=/etc/containers/containers.conf.d
    if [ ! -e "$f" ]; then
        echo "podman.sh: writing $f (runc, cgroupfs, no default ulimits)" >&2
        mkdir -p /etc/containers
        printf '%s\n' "$PODMAN_CONF_TEXT" > "$f"
    elif ! grep -Eq '^[[:space:]]*default_ulimits[[:space:]]*=[[:space:]]*\[[[:space:]]*\]' "$f" \
         || ! podman_settings_ok; then
        if ! [ -e "$d/50-cephscope.conf" ]; then
            echo "podman.sh: $f exists with other settings: adding the drop-in $d/50-cephscope.conf" >&2
            mkdir -p "$d"
            printf '%s\n' "$PODMAN_CONF_TEXT" > "$d/50-cephscope.conf"
        fi
    fi
    podman_settings_ok && return 0
    echo "podman.sh: podman does not use runc and cgroupfs (podman info: $(podman info \
--format '{{.Host.CgroupManager}} {{.Host.OCIRuntime.Name}}' 2>&1 | head -n 3))" >&2
    return 1
}
