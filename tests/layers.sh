#!/bin/bash
# Checks the daemon's layers, which follow the data flow:
#   core, config, libbpf, discovery, profile, collectors, metrics, server, endpoint, app
#   (main.cpp on top)
# A folder under daemon/ may include only itself and the folders before it, so folders never
# include each other. profile/ is also a library of its own (cephscope_profile: the profile
# CLI and its tests link it without the rest of the daemon), so it may include core only.
# resolver/ is another program (cephscope-resolver, the only code linking libdw): it may
# include core and profile, and no daemon folder may include it.
# Includes from outside daemon/ (bpf/, generated skeletons) are not checked. Fails too on an
# include cycle between files, and on a folder that is in no layer.
# Usage: layers.sh [REPO_ROOT]   (default: the repository this script is in)
set -euo pipefail

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
daemon=$root/daemon
layers=(core config libbpf discovery profile collectors metrics server endpoint app resolver)
declare -A may_include=([profile]="core profile" [resolver]="core profile resolver")

declare -A rank=([main]=${#layers[@]})
for i in "${!layers[@]}"; do
  rank[${layers[$i]}]=$i
done

problems=0
problem() {
  echo "layers: $*"
  problems=$((problems + 1))
}

# What `from` may include, for the messages.
allowed() {
  local from=$1
  if [[ -n ${may_include[$from]+set} ]]; then
    echo "${may_include[$from]}"
    return
  fi
  local out=() layer
  for layer in "${layers[@]}"; do
    ((rank[$layer] <= rank[$from])) && out+=("$layer")
  done
  echo "${out[*]}"
}

for dir in "$daemon"/*/; do
  name=$(basename "$dir")
  [[ -n ${rank[$name]+set} ]] || problem "daemon/$name/ is in no layer: add it to the list in tests/layers.sh"
done

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

while IFS= read -r -d '' file; do
  rel=${file#"$daemon"/}
  from=main
  [[ $rel == */* ]] && from=${rel%%/*}
  [[ -n ${rank[$from]+set} ]] || continue  # reported above
  while IFS= read -r inc; do
    if [[ $inc == ../* || $inc == */../* ]]; then
      problem "daemon/$rel includes \"$inc\": name daemon headers by folder, not by ../"
      continue
    fi
    if [[ $inc != */* ]]; then
      # Same folder, or a generated header (skeletons) found on the include path.
      [[ -f $(dirname "$file")/$inc ]] && echo "$rel $(dirname "$rel")/$inc" >>"$edges"
      continue
    fi
    to=${inc%%/*}
    [[ -d $daemon/$to ]] || continue  # not daemon code: bpf/, system headers
    [[ -f $daemon/$inc ]] && echo "$rel $inc" >>"$edges"
    [[ -n ${rank[$to]+set} ]] || continue  # reported above
    ok=no
    if [[ $to == resolver && $from != resolver ]]; then
      ok=no  # the daemon links no DWARF code
    elif [[ -n ${may_include[$from]+set} ]]; then
      [[ " ${may_include[$from]} " == *" $to "* ]] && ok=yes
    elif ((rank[$to] <= rank[$from])); then
      ok=yes
    fi
    [[ $ok == yes ]] || problem "daemon/$rel includes $inc: $from may include only $(allowed "$from")"
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find "$daemon" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) -print0 | sort -z)

# tsort names the files of a cycle on stderr.
if ! cycle=$(tsort "$edges" 2>&1 >/dev/null); then
  problem "include cycle:$(sed -n 's/^tsort: \([^:]*\)$/ \1/p' <<<"$cycle" | tr -d '\n')"
fi

if ((problems > 0)); then
  echo "layers: $problems problem(s)"
  exit 1
fi
echo "layers: daemon/ follows ${layers[*]}"
