# shellcheck shell=bash
# debian_mirror: the Debian mirror the host's apt sources use (not the security one), for
# scripts that fetch packages of other suites without touching the host's apt state
# (tests/vm, tests/ceph/image.sh, config/profiles/generate.sh).
debian_mirror() {
  local m
  m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
  [ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $2 !~ /security/ && $0 ~ /debian/ { print $2; exit }')
  echo "${m:-http://deb.debian.org/debian}"
}
