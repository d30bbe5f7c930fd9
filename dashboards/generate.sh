#!/usr/bin/env bash
# Generates the Grafana dashboards (*.json) from their jsonnet sources in this folder.
#
#   dashboards/generate.sh          rewrite every *.json
#   dashboards/generate.sh --check  exit 1 when a committed *.json differs from its source
set -euo pipefail
cd "$(dirname "$0")"
command -v jsonnet >/dev/null || { echo "generate.sh: jsonnet is not installed (apt-get install jsonnet)" >&2; exit 2; }
check=0
[ "${1:-}" = --check ] && check=1
stale=0
for src in *.jsonnet; do
  out=${src%.jsonnet}.json
  tmp=$(mktemp)
  jsonnet -J . "$src" > "$tmp"
  if [ $check = 1 ]; then
    if ! cmp -s "$tmp" "$out"; then
      echo "generate.sh: dashboards/$out is stale: run dashboards/generate.sh" >&2
      stale=1
    fi
    rm -f "$tmp"
  else
    mv "$tmp" "$out"
  fi
done
exit $stale
