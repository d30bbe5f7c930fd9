#!/usr/bin/env bash
# Offline validation of deploy/kubernetes/ (no cluster runs here): installs the pinned
# validators of tests/deploy/npm/package.json from the npm registry into a cache
# (/var/cache/cephscope-tests/deploy/npm, reused while package.json is unchanged) and runs
# validate-kubernetes.mjs on every manifest.
#
#   tests/deploy/validate-kubernetes.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${CEPHSCOPE_DEPLOY_CACHE:-${CEPHSCOPE_TEST_CACHE:-/var/cache/cephscope-tests}/deploy}/npm
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "validate-kubernetes: node and npm missing (.ci/install-deps)" >&2
  exit 1
fi
mkdir -p "$cache"
if ! cmp -s "$here/npm/package.json" "$cache/package.json" || [ ! -d "$cache/node_modules" ]; then
  cp "$here/npm/package.json" "$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error >&2) ||
    { rm -f "$cache/package.json"; echo "validate-kubernetes: npm install failed" >&2; exit 1; }
fi
cp "$here/validate-kubernetes.mjs" "$cache/"
node "$cache/validate-kubernetes.mjs" "$here"/../../deploy/kubernetes/*.yaml
