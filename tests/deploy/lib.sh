# shellcheck shell=bash
# Shared by the deployment tests (tests/deploy/): a clean Debian 12 root filesystem from the
# host's mirror, cached as a tarball, and the .deb of the build tree.
DEPLOY_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib/debian-mirror.sh
source "$DEPLOY_HERE/../lib/debian-mirror.sh"
# shellcheck source=tests/lib/podman.sh
source "$DEPLOY_HERE/../lib/podman.sh"
DEPLOY_CACHE=${CEPHSCOPE_DEPLOY_CACHE:-${CEPHSCOPE_TEST_CACHE:-/var/cache/cephscope-tests}/deploy}

deploy_log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
deploy_die() { deploy_log "ERROR: $*"; exit 1; }

# deploy_root: prints the path of bookworm-minbase.tar, a `debootstrap --variant=minbase
# bookworm` root, made once per mirror (about a minute) and reused after.
deploy_root() {
  local mirror tar stamp work t0
  mirror=$(debian_mirror)
  tar=$DEPLOY_CACHE/bookworm-minbase.tar
  stamp="bookworm minbase $mirror"
  if [ -f "$tar" ] && [ "$(cat "$tar.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$tar"
    return 0
  fi
  command -v debootstrap >/dev/null || deploy_die "debootstrap missing (.ci/install-deps)"
  mkdir -p "$DEPLOY_CACHE"
  work=$(mktemp -d "$DEPLOY_CACHE/root.XXXXXX")
  t0=$SECONDS
  debootstrap --variant=minbase bookworm "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; deploy_die "debootstrap bookworm failed"; }
  tar -C "$work/root" -cf "$tar.tmp" .
  mv "$tar.tmp" "$tar"
  echo "$stamp" > "$tar.stamp"
  rm -rf "$work"
  deploy_log "debootstrap bookworm minbase: $((SECONDS - t0)) s"
  echo "$tar"
}

# deploy_image NAME: imports the clean root as the podman image NAME (once per tarball).
deploy_image() {
  local name=$1 tar
  tar=$(deploy_root)
  podman_configure || deploy_die "podman is not set up for this host"
  if podman image exists "$name" &&
    [ "$(podman image inspect --format '{{index .Labels "tarball"}}' "$name" 2>/dev/null)" = \
      "$(stat -c %Y "$tar")" ]; then
    return 0
  fi
  podman import --change "LABEL tarball=$(stat -c %Y "$tar")" "$tar" "$name" >/dev/null
}

# deploy_deb BUILD: builds and prints the path of BUILD's cephscope_*.deb.
deploy_deb() {
  local out
  out=$(cmake --build "$1" --target deb 2>&1) || { echo "$out" >&2; deploy_die "the deb target failed"; }
  out=$(echo "$out" | grep -E '\.deb$' | tail -n 1)
  [ -f "$out" ] || deploy_die "no .deb built"
  echo "$out"
}
