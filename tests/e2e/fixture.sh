#!/usr/bin/env bash
# fixture.sh - the CTest fixtures of the e2e layer (see tests/e2e/CMakeLists.txt).
#
#   fixture.sh packages     install Ceph and its debug symbols (tests/ceph/install.sh)
#   fixture.sh up DIR       bring a test cluster up in DIR (a stale one left there by an
#                           interrupted run is taken down first)
#   fixture.sh down DIR     take it down and remove DIR
#   fixture.sh ct-image RELEASE        build or confirm the images of RELEASE (reef|tentacle,
#                                      tests/ceph/image.sh)
#   fixture.sh ct-up RELEASE DIR       a container cluster of RELEASE in DIR (a stale one is
#                                      taken down first; tests/ceph/container-cluster.sh)
#   fixture.sh ct-down RELEASE DIR     take it down
#   fixture.sh ct-smoke DIR            tests/ceph/container-smoke.sh DIR
#
# Exits 77 (CTest's SKIP_RETURN_CODE) with "skipped: needs root" when not run as root.
set -euo pipefail

CEPH_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../ceph" && pwd)
if [ "$(id -u)" != 0 ]; then
    echo "skipped: needs root (the e2e layer runs a real Ceph cluster)"
    exit 77
fi
case "${1:-}" in
    packages)
        exec "$CEPH_TESTS/install.sh" ;;
    up)
        [ $# -eq 2 ] || { echo "usage: $0 up DIR" >&2; exit 2; }
        if [ -e "$2" ]; then
            echo "fixture.sh: $2 exists (an interrupted run?): taking it down first"
            "$CEPH_TESTS/cluster.sh" down "$2"
        fi
        exec "$CEPH_TESTS/cluster.sh" up "$2" ;;
    down)
        [ $# -eq 2 ] || { echo "usage: $0 down DIR" >&2; exit 2; }
        exec "$CEPH_TESTS/cluster.sh" down "$2" ;;
    ct-image)
        [ $# -eq 2 ] || { echo "usage: $0 ct-image RELEASE" >&2; exit 2; }
        exec "$CEPH_TESTS/image.sh" "$2" ;;
    ct-up)
        [ $# -eq 3 ] || { echo "usage: $0 ct-up RELEASE DIR" >&2; exit 2; }
        if [ -e "$3" ]; then
            echo "fixture.sh: $3 exists (an interrupted run?): taking it down first"
            "$CEPH_TESTS/container-cluster.sh" down "$2" "$3"
        fi
        exec "$CEPH_TESTS/container-cluster.sh" up "$2" "$3" ;;
    ct-down)
        [ $# -eq 3 ] || { echo "usage: $0 ct-down RELEASE DIR" >&2; exit 2; }
        exec "$CEPH_TESTS/container-cluster.sh" down "$2" "$3" ;;
    ct-smoke)
        [ $# -eq 2 ] || { echo "usage: $0 ct-smoke DIR" >&2; exit 2; }
        exec "$CEPH_TESTS/container-smoke.sh" "$2" ;;
    *)
        sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2 ;;
esac
