# What the OSD benchmarks share (sourced after common.sh): one test cluster's OSDs, Ceph's op
# counters and the OSDs' CPU over one rados bench write, the uprobes a tracer holds on ceph-osd
# and its programs' run-time totals, cephscope's tier 1 started alone, a median, and where a
# tracer attached with an empty program (bpftrace) at the same functions.
# They read: work, port, runner (common.sh); bin (the daemon), secs, threads, bluestore_layer.
# shellcheck shell=bash disable=SC2154 # those variables are the caller's

# Reads CLUSTER's env (tests/ceph/cluster.sh, tests/e2e/fixture.sh): sets pool, osd_ids,
# osd_pids (one per id) and osd_bin (the OSDs' binary).
osd_cluster_load() { # CLUSTER
  local id v
  # shellcheck disable=SC1091
  source "$1/env"
  pool=$CEPHSCOPE_CEPH_POOL
  read -r -a osd_ids <<< "${CEPHSCOPE_CEPH_OSD_IDS:?no OSDs in $1/env}"
  osd_pids=()
  for id in "${osd_ids[@]}"; do
    v=CEPHSCOPE_CEPH_OSD_${id}_PID
    osd_pids+=("${!v}")
  done
  osd_bin=$(readlink -f "/proc/${osd_pids[0]}/exe")
}

# "op_w op_r subop_w" summed over the cluster's OSDs (admin sockets)
osd_ops() {
  local id
  for id in "${osd_ids[@]}"; do
    printf 'osd.%s ' "$id"
    ceph --admin-daemon "$CEPHSCOPE_CEPH_DIR/run/osd.$id.asok" perf dump |
      python3 -c 'import json, sys; o = json.load(sys.stdin)["osd"]; print(o["op_w"], o["op_r"], o["subop_w"])'
  done > "$work/osd_ops.each"
  awk '{ w += $2; r += $3; s += $4 } END { printf "%d %d %d\n", w, r, s }' "$work/osd_ops.each"
}

# CPU ticks (utime + stime) of the OSDs
osd_ticks() {
  local t=0 p
  for p in "${osd_pids[@]}"; do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
  done
  echo "$t"
}

# One 4 KiB write of THREADS threads; prints "writes iops osd_cpu_us_per_write".
bench() {
  local c0 c1 out
  c0=$(osd_ticks)
  out=$(rados -p "$pool" bench "$secs" write -t "$threads" -b 4096 --no-cleanup 2>&1)
  c1=$(osd_ticks)
  awk -v d=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
    /^Total writes made/ { o = $NF } /^Average IOPS/ { i = $NF }
    END { if (o > 0) printf "%d %s %.1f\n", o, i, d * 1e6 / hz / o; else print "0 0 0" }' <<< "$out"
}

clean_pool() { rados -p "$pool" cleanup > /dev/null 2>&1 || true; }

# "prog_id file_offset file" of every uprobe process PID holds on ceph-osd (bpftool perf show:
# "pid P  fd F: prog_id I  uprobe  filename PATH  offset O"); PATH may be /proc/N/root/...
uprobes_of() { # PID
  bpftool perf show 2> /dev/null | awk -v pid="$1" '$1 == "pid" && $2 == pid {
    u = 0; for (i = 1; i < NF; i++) { if ($i == "uprobe") u = 1; if ($i == "prog_id") p = $(i + 1); if ($i == "filename") f = $(i + 1); if ($i == "offset") o = $(i + 1) }
    if (u) print p, o, f }' | while read -r p o f; do
    [ "$(readlink -f "$f")" = "$osd_bin" ] && echo "$p $o $f"
  done
}

# "name runs run_time_ns" of each program listed in FILE (one id a line)
prog_each() { # FILE
  local id
  sort -u "$1" | while read -r id; do
    bpftool prog show id "$id" 2> /dev/null
  done | awk '/^[0-9]+: / { c = 0; t = 0; for (i = 1; i < NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
    print n, c, t }' | sort
}

# "runs ns" summed over the programs listed in FILE
prog_totals() { # FILE
  prog_each "$1" | awk '{ c += $2; t += $3 } END { printf "%d %d\n", c, t }'
}

# Notes the programs the running tracer (runner) loaded ($work/all) and those of them attached
# to ceph-osd ($work/osd).
note_programs() {
  prog_ids | comm -13 "$work/ids.before" - > "$work/all"
  uprobes_of "$runner" | awk '{ print $1 }' | sort -u > "$work/osd"
}

# Waits until the running tracer holds at least MIN uprobes on ceph-osd, and at least one, and
# the number has stayed the same for 3 s (a tracer attaches one function and process after
# another), at most LIMIT seconds; prints the number.
wait_uprobes() { # MIN LIMIT WHAT LOG
  local n=0 last=-1 same=0 t
  for t in $(seq $(($2 * 5))); do
    n=$(uprobes_of "$runner" | wc -l)
    if [ "$n" -gt 0 ] && [ "$n" -ge "$1" ]; then
      if [ "$n" = "$last" ]; then same=$((same + 1)); else same=0; fi
      [ "$same" -ge 15 ] && { echo "$n"; return 0; }
    fi
    last=$n
    ps -p "$runner" > /dev/null || break
    sleep 0.2
  done
  echo "$3 did not attach to $osd_bin within $2 s ($n uprobes, t=$t); its output:" >&2
  tail -20 "$4" >&2
  exit 1
}

# cephscope tier 1: the OSD collector only, detail never: 2 probes per OSD, or 4 with the
# bluestore layer (BLUESTORE_LAYER=1; the default config has it on)
start_tier1() {
  local layer=false probes=2
  [ "$bluestore_layer" = 1 ] && layer=true probes=4
  cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, rados_clients: false}
collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: false},
  kclient: {enabled: false}, rados: {enabled: false},
  osd: {enabled: true, detail: never, bluestore_layer: $layer}}
CONF
  prog_ids > "$work/ids.before"
  "$bin" --config "$work/cephscope.yaml" >> "$work/daemon.log" 2>&1 &
  runner=$!
  wait_uprobes $((probes * ${#osd_ids[@]})) 120 cephscope "$work/daemon.log" > /dev/null
  note_programs
}

# cephscope's client writes in this cluster: the sum of cephscope_osd_op_seconds_count
# {op="write"} of the series with its fsid; each OSD's ("osd.N count") in $work/tier1.each
tier1_writes() { # 0 when nothing serves (an empty program's round)
  { curl -s "localhost:$port/metrics" || true; } | awk -v fsid="fsid=\"$CEPHSCOPE_CEPH_FSID\"" \
    -v each="$work/tier1.each" '
    /^cephscope_osd_op_seconds_count\{/ && /op="write"/ && index($0, fsid) {
      s += $NF; match($0, /ceph_daemon="[^"]*"/); n[substr($0, RSTART + 13, RLENGTH - 14)] += $NF }
    END { for (d in n) printf "%s %d\n", d, n[d] > each; close(each); printf "%d\n", s }'
}

# Where cephscope's writes and Ceph's op_w differ, OSD by OSD, between two snapshots of
# tier1.each and osd_ops.each (suffixes .0 and .1): "osd.N: cephscope C, op_w W" lines.
writes_by_osd() {
  delta() { join -a 1 -e 0 -o 0,1.2,2.2 <(sort "$work/$1.1") <(sort "$work/$1.0") | awk '{ print $1, $2 - $3 }'; }
  join -a 1 -a 2 -e 0 -o 0,1.2,2.2 <(delta osd_ops.each) <(delta tier1.each) |
    awk '$2 != $3 { printf "    %s: cephscope %d, op_w %d\n", $1, $3, $2 }'
}

# The median of the numbers on stdin, one a line ("-" for none)
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { printf "-"; exit }
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.3g", m }'; }

# The empty programs, at the functions in $work/targets.NAME ("file_offset file" lines)
start_empty() { # NAME
  prog_ids > "$work/ids.before"
  bpftrace -e "$(probe_list "$work/targets.$1") { }" > "$work/bpftrace.out" 2>&1 &
  runner=$!
  wait_uprobes "$(wc -l < "$work/uprobe_sites.$1")" 120 bpftrace "$work/bpftrace.out" > /dev/null
  note_programs
  # the empty programs must sit where that side's programs do
  uprobes_of "$runner" | awk '{ print $2 }' | sort -u > "$work/empty_sites"
  if ! cmp -s "$work/empty_sites" "$work/uprobe_sites.$1"; then
    echo "  warning: the empty programs for $1 attached at other offsets than its programs:" \
      "$(paste -sd' ' "$work/empty_sites") against $(paste -sd' ' "$work/uprobe_sites.$1")" >&2
  fi
}

# A file offset of ceph-osd as the virtual address bpftrace takes (the LOAD segment holding it)
offset_to_vaddr() { # FILE OFFSET
  readelf -lW "$1" | awk -v o="$2" '$1 == "LOAD" {
    off = 0; va = 0; sz = 0
    for (k = 2; k <= 5; k++) { if (k == 4) continue
      h = tolower(substr($k, 3)); v = 0
      for (j = 1; j <= length(h); j++) v = v * 16 + index("0123456789abcdef", substr(h, j, 1)) - 1
      if (k == 2) off = v; else if (k == 3) va = v; else sz = v }
    if (r == "" && o >= off && o < off + sz) r = sprintf("%x", o - off + va) }
    END { if (r != "") print r }'
}

# bpftrace's probe list for the sites in FILE: by symbol where one starts at the address (as the
# other benches attach), else by address. ceph-osd's symbols are listed once ($work/syms).
probe_list() { # FILE
  local off f va sym list=""
  if [ ! -s "$work/syms" ]; then
    { nm --defined-only "$osd_bin" 2> /dev/null || true; nm -D --defined-only "$osd_bin" 2> /dev/null || true; } |
      awk '$2 == "T" || $2 == "t" || $2 == "W" || $2 == "w"' > "$work/syms"
  fi
  while read -r off f; do
    va=$(offset_to_vaddr "$f" "$off")
    [ -n "$va" ] || { echo "offset $off is in no LOAD segment of $f" >&2; exit 1; }
    sym=$(awk -v a="$(printf '%016x' "0x$va")" '$1 == a && s == "" { s = $3 } END { print s }' "$work/syms")
    list="$list${list:+, }uprobe:$osd_bin:${sym:-0x$va}"
  done < "$1"
  echo "$list"
}

# Where a tracer attached: "file_offset file" of each site, one per offset ($work/targets.NAME),
# and the offsets alone ($work/uprobe_sites.NAME).
note_sites() { # NAME
  uprobes_of "$runner" | awk '!seen[$2]++ { print $2, $3 }' | sort > "$work/targets.$1"
  awk '{ print $1 }' "$work/targets.$1" | sort -u > "$work/uprobe_sites.$1"
}
