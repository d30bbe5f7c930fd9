#!/usr/bin/env bash
# Cost of the OSD stage collector per tier on a running test cluster (tests/ceph/cluster.sh up
# DIR; CEPH_OSD_PROFILE=ssd or hdd there picks BlueStore's settings). In alternating rounds:
#   1. per tier (collectors.osd.detail never = tier 1, always = tier 2), for tier 1 cut short
#      and for three floors, on the same two functions (log_op_stats and repop_commit) in the
#      same loaded OSDs: tier 1's programs stopped once they have read what Ceph stamped on the
#      op and the clock ("reads": CEPHSCOPE_BENCH_OSD_CUT=2); an empty BPF program ("floor");
#      only the chain of dependent 8-byte reads that reaches the op's first event ("chain": the
#      least any program that reads Ceph's stamps pays); that chain and a read of every event's
#      stamp ("stamps": the least that gives every stage). For each: uprobe hits per OSD op
#      (op_w + op_r + subop_w of the cluster's OSDs) and per client write, BPF run time per hit
#      and per client write, from the kernel's own accounting (bpf_stats), over a 4 KiB rados
#      bench write of THREADS threads;
#   2. per tier, the probe path's share of the OSDs' CPU samples (perf cpu-clock);
#   3. at one client thread (the CPUs not saturated, so the critical path shows): average
#      latency, IOPS and OSD CPU per client write without the daemon and with each tier,
#      alternating; the median of the with-minus-without differences;
#   4. the whole daemon with the shipped config (config/cephscope.yaml: every collector): the
#      runs and BPF run time of every program it loads per client write, by collector; in a
#      second write, its syscall and block programs beside three floors on their tracepoints
#      in the same OSDs (an empty program, one that asks whose event it is, one that reads the
#      clock: common.sh), and what the same runs of each floor add up to; IOPS with and
#      without it in alternating pairs (THREADS threads);
#   5. the same daemon's IOPS cost in one long write (THREADS threads) that it joins and leaves
#      in turn, each phase with it against the phases just before and after (PHASE seconds
#      each, default 15; ROUNDS phases with it). Not in the default PARTS;
#   6. where the OSDs' CPU goes: perf cpu-clock profiles of the OSDs in one long write (THREADS
#      threads), ROUNDS windows with the daemon (shipped config), each between two without (PHASE
#      seconds each): per symbol, the OSDs' CPU per client write with the daemon minus the mean
#      of its two neighbours, and the sum over the daemon's own paths (its programs, uprobe
#      traps, syscall tracing, the clock) in the OSDs and on the whole host. Not in the default
#      PARTS; needs perf.
# A benchmark: it prints figures and asserts nothing about time (MACHINE.md: noisy 2 cores).
#   usage: tests/bench/osd-overhead.sh BUILD_DIR CLUSTER_DIR [ROUNDS] [SECONDS]
#   THREADS=N sets rados bench -t of parts 1, 2, 4 and 5 (default 16); PARTS="1 4" runs only
#   those parts (default 1-4); COLLECTORS="syscall block" turns the shipped config's other
#   collectors off in parts 4 and 5, to see what each one costs. Run time is counted
#   (kernel.bpf_stats_enabled=1) where it is read; latency, IOPS and CPU (parts 3, 5, 6 and
#   part 4's pairs) are measured at the host's own setting, or at IOPS_STATS ("0", "1", or
#   "0 1" to alternate part 5's phases). Needs root, bpftrace, bpftool.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR CLUSTER_DIR [ROUNDS] [SECONDS]}
cluster=${2:?usage: $0 BUILD_DIR CLUSTER_DIR [ROUNDS] [SECONDS]}
rounds=${3:-3}
secs=${4:-10}
bin=$build/daemon/cephscope
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$bin" ] || { echo "no $bin: build first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
# shellcheck disable=SC1091
source "$cluster/env"
pool=$CEPHSCOPE_CEPH_POOL
osd_ids="0 1 2"
osd_pids="$CEPHSCOPE_CEPH_OSD_0_PID $CEPHSCOPE_CEPH_OSD_1_PID $CEPHSCOPE_CEPH_OSD_2_PID"
osd_bin=$(readlink -f "/proc/$CEPHSCOPE_CEPH_OSD_0_PID/exe")

# shellcheck source=tests/bench/common.sh
source "$repo/tests/bench/common.sh"
bench_need bpftrace bpftool
bench_begin osd "$pool"

# Runs the daemon with CONFIG and waits until WANT OSD probes are attached; leaves the
# programs it loaded in $work/ids.
launch_daemon() {
  local config=$1 want=$2 n
  prog_ids > "$work/ids.before"
  CEPHSCOPE_BENCH_OSD_CUT=${bench_cut:-} "$bin" --config "$config" 2>> "$work/daemon.log" &
  runner=$!
  for _ in $(seq 600); do
    curl -sf -o /dev/null "localhost:$port/metrics" || { sleep 0.2; continue; }  # not ready yet
    n=$(curl -s "localhost:$port/metrics" 2>/dev/null | grep '^cephscope_probe_attached{' |
      grep 'collector="osd"' | grep 'reason="ok"' | grep -c ' 1$' || true)
    if [ "${n:-0}" -ge "$want" ]; then
      prog_ids | comm -13 "$work/ids.before" - > "$work/ids"
      return 0
    fi
    sleep 0.2
  done
  echo "the osd probes did not attach; log:" >&2
  tail -20 "$work/daemon.log" >&2
  exit 1
}

# The daemon with only the OSD collector at DETAIL (never|always): 2 probes per OSD in tier
# 1, 7 in tier 2. With bench_cut set, its programs stop there (CEPHSCOPE_BENCH_OSD_CUT).
start_daemon() {
  cat > "$work/cephscope.yaml" <<CONF
listen: "127.0.0.1:$port"
log_level: warn
discovery: {scan_interval: 1s, rados_clients: false}
collectors: {syscall: {enabled: false}, block: {enabled: false}, vfs: {enabled: false},
  osd: {enabled: true, detail: $1}}
CONF
  launch_daemon "$work/cephscope.yaml" "$([ "$1" = never ] && echo 6 || echo 21)"
}

# The daemon with the shipped config, on our port (tier 1 until a window opens).
start_default_daemon() {
  sed "s/^listen: .*/listen: \"127.0.0.1:$port\"/" "$(dirname "$0")/../../config/cephscope.yaml" > "$work/default.yaml"
  grep -q "^listen: \"127.0.0.1:$port\"" "$work/default.yaml" || { echo "no listen line in config/cephscope.yaml" >&2; exit 1; }
  local want=6
  if [ -n "${COLLECTORS:-}" ]; then
    awk -v keep=" $COLLECTORS " '
      /^collectors:/ { in_collectors = 1; print; next }
      in_collectors && /^[^ ]/ { in_collectors = 0 }
      in_collectors && match($0, /^  [a-z]+:/) { name = substr($0, 3, RLENGTH - 3) }
      in_collectors && index(keep, " " name " ") == 0 { sub(/enabled: true/, "enabled: false") }
      { print }' "$work/default.yaml" > "$work/some.yaml"
    mv "$work/some.yaml" "$work/default.yaml"
    case " $COLLECTORS " in *" osd "*) ;; *) want=0 ;; esac
  fi
  launch_daemon "$work/default.yaml" "$want"
}

# collector -> "runs ns", from the daemon's own bpf_stats series
collector_totals() {
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_runs_total\{/ { match($0, /collector="[^"]*"/); c = substr($0, RSTART+11, RLENGTH-12); runs[c] += $NF }
    /^cephscope_bpf_program_run_seconds_total\{/ { match($0, /collector="[^"]*"/); c = substr($0, RSTART+11, RLENGTH-12); ns[c] += $NF * 1e9 }
    END { for (c in runs) printf "%s %d %d\n", c, runs[c], ns[c] }' | sort
}
# The same per program: "collector/program runs ns".
program_totals() {
  curl -s "localhost:$port/metrics" | awk '
    /^cephscope_bpf_program_(runs_total|run_seconds_total)\{/ {
      match($0, /collector="[^"]*"/); c = substr($0, RSTART+11, RLENGTH-12)
      match($0, /program="[^"]*"/); p = c "/" substr($0, RSTART+9, RLENGTH-10)
      if ($0 ~ /^cephscope_bpf_program_runs_total/) runs[p] += $NF; else ns[p] += $NF * 1e9 }
    END { for (p in runs) printf "%s %d %d\n", p, runs[p], ns[p] }' | sort
}

# Runs bpftrace with one program BODY on each function tier 1 probes (log_op_stats, then
# repop_commit), in the same OSDs, and leaves its programs in $work/ids.
start_bpftrace() { # OP_BODY SUBOP_BODY
  local ops subops
  ops=$(nm -D "$osd_bin" | awk '/ T .*PrimaryLogPG12log_op_stats/ && !s { s = $3 } END { print s }')
  subops=$(nm -D "$osd_bin" | awk '/ T .*ReplicatedBackend12repop_commit/ && !s { s = $3 } END { print s }')
  prog_ids > "$work/ids.before"
  bpftrace -e "uprobe:$osd_bin:$ops { $1 } uprobe:$osd_bin:$subops { $2 }" > "$work/bpftrace.out" 2>&1 &
  runner=$!
  for _ in $(seq 300); do
    if grep -q '^Attaching' "$work/bpftrace.out"; then
      prog_ids | comm -13 "$work/ids.before" - > "$work/ids"
      [ "$(wc -l < "$work/ids")" -ge 2 ] && return 0
    fi
    sleep 0.1
  done
  echo "bpftrace did not attach:" >&2
  cat "$work/bpftrace.out" >&2
  exit 1
}

# The floor: an empty program.
start_floor() { start_bpftrace "" ""; }

# "OpRequest::events RepModify::op" offsets, from the OSD build's shipped profile.
read_offsets() {
  python3 - "$repo/config/profiles" "$osd_bin" <<'PY'
import glob, json, re, subprocess, sys
notes = subprocess.run(["readelf", "-n", sys.argv[2]], capture_output=True, text=True).stdout
build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
for path in glob.glob(sys.argv[1] + "/*.osd-stages.json"):
    profile = json.load(open(path))
    if profile["build_id"] == build_id:
        members = {(m["type"], m["path"]): m["offset"] for m in profile["members"] if m["status"] == "ok"}
        print(members[("OpRequest", "events")], members[("ReplicatedBackend::RepModify", "op")])
        break
PY
}

# The floors of any program that reads Ceph's stamps when an op ends, as 8-byte user reads:
# "chain", the dependent reads that reach the op's first event (the primary: the OpRequest,
# then its event list; a replica: the RepModify, its OpRequest, then the event list);
# "stamps", the chain and then every event's stamp (at most OSD_EVENTS_MAX, 24; an event is a
# utime_t and a std::string, 40 bytes), each its own read: the least that gives every stage.
start_reads_floor() { # chain|stamps
  local events repmod_op tail="" i
  read -r events repmod_op < <(read_offsets)
  [ -n "$repmod_op" ] || { echo "no shipped profile for $osd_bin" >&2; exit 1; }
  if [ "$1" = stamps ]; then
    tail="\$n = (*(uint64 *)(\$op + $events + 8) - \$e) / 40;"
    for i in $(seq 1 23); do
      tail="$tail if (\$n > $i) { \$s$i = *(uint64 *)(\$e + $((i * 40))); }"
    done
  fi
  start_bpftrace "\$op = arg1; \$e = *(uint64 *)(\$op + $events); \$s = *(uint64 *)\$e; $tail" \
    "\$rm = *(uint64 *)arg1; \$op = *(uint64 *)(\$rm + $repmod_op);
      \$e = *(uint64 *)(\$op + $events); \$s = *(uint64 *)\$e; $tail"
}

# "runs ns" summed over the programs in $work/ids
prog_totals() {
  local id
  while read -r id; do
    bpftool prog show id "$id" 2>/dev/null
  done < "$work/ids" | awk '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t += $(i + 1); if ($i == "run_cnt") c += $(i + 1) } }
    END { printf "%d %d\n", c, t }'
}

# op_w + op_r + subop_w of the cluster's OSDs
osd_ops() {
  local total=0 id
  for id in $osd_ids; do
    total=$((total + $(ceph --admin-daemon "$CEPHSCOPE_CEPH_DIR/run/osd.$id.asok" perf dump |
      python3 -c 'import json, sys; o = json.load(sys.stdin)["osd"]; print(o["op_w"] + o["op_r"] + o["subop_w"])')))
  done
  echo "$total"
}

# CPU ticks (utime + stime) of the three OSDs
osd_ticks() {
  local t=0 p
  for p in $osd_pids; do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
  done
  echo "$t"
}

# One 4 KiB write bench of THREADS threads; prints "writes iops latency_us cpu_us_per_write".
# Its objects stay (their deletes would be OSD ops too): bench_cleanup removes them.
bench() {
  local threads=$1 c0 c1 out
  c0=$(osd_ticks)
  out=$(rados -p "$pool" bench "$secs" write -t "$threads" -b 4096 --no-cleanup 2>&1)
  c1=$(osd_ticks)
  awk -v d=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
    /^Total writes made/ { o = $NF } /^Average IOPS/ { i = $NF } /^Average Latency/ { l = $NF }
    END { printf "%d %s %.1f %.1f\n", o, i, l * 1e6, d * 1e6 / hz / o }' <<< "$out"
}

# One round of part 1 under the running programs: prints
# "hits_per_osd_op hits_per_write ns_per_hit us_per_write"
cost_round() {
  local r0 t0 o0 r1 t1 o1 writes
  read -r r0 t0 < <(prog_totals)
  o0=$(osd_ops)
  read -r writes _ _ _ < <(bench "${THREADS:-16}")
  read -r r1 t1 < <(prog_totals)
  o1=$(osd_ops)
  if [ $((o1 - o0)) -le 0 ] || [ $((r1 - r0)) -le 0 ] || [ "${writes:-0}" -le 0 ]; then
    echo "no OSD ops or hits in a round (writes ${writes:-0}, ops $((o1 - o0)), hits $((r1 - r0))): is $cluster healthy?" >&2
    exit 1
  fi
  awk -v r=$((r1 - r0)) -v t=$((t1 - t0)) -v o=$((o1 - o0)) -v w="$writes" \
    'BEGIN { printf "%.2f %.2f %.0f %.2f\n", r / o, r / w, t / r, t / w / 1000 }'
}

clean_pool() { rados -p "$pool" cleanup > /dev/null 2>&1 || true; }

median() { sort -n | awk '{ v[NR] = $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "%.2f (%.2f-%.2f)", m, v[1], v[NR] }'; }

# "median, mean (min-max), the mean's 95% interval (Student's t)": whether the daemon's cost is
# measurable above the noise. Part 4's pairs are independent; part 5's neighbouring phases
# share the phase without between them, which makes its interval a little too narrow.
ratio_summary() { sort -n | awk 'BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086", tq, " ") }
  { v[NR] = $1; t += $1 } END {
  m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  mean = t / NR
  for (i = 1; i <= NR; i++) ss += (v[i] - mean) ^ 2
  printf "median %.3f, mean %.3f (%.3f-%.3f), %d phases", m, mean, v[1], v[NR], NR
  if (NR < 2) exit
  h = ((NR - 1 in tq) ? tq[NR - 1] : 2.0) * sqrt(ss / (NR - 1) / NR)
  printf "; 95%% interval of the mean %.3f-%.3f: %s", mean - h, mean + h,
    (mean + h < 1) ? "below 1, measurably" : (mean - h > 1) ? "above 1, measurably" : "1 inside it, no difference measurable" }'; }
# "second writes-finished" of the last per-second line of the long write (parts 5 and 6)
bench_at() { awk '$1 ~ /^[0-9]+$/ && NF >= 8 { s = $1; f = $4 } END { print s + 0, f + 0 }' "$work/long"; }
part() { case " ${PARTS:-1 2 3 4} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# kernel.bpf_stats_enabled while IOPS and CPU are measured (part 4's pairs, parts 5 and 6): the
# host's own setting by default, which is what a deployment runs with (the daemon never turns
# it on). Counting run time adds two clock reads to every program run, which only the phases
# with the daemon would pay. IOPS_STATS="0 1" alternates part 5's phases with the daemon
# between both settings, to show what the counting itself costs.
iops_stats=${IOPS_STATS:-$bench_old_stats}
for s in $iops_stats; do
  case $s in 0 | 1) ;; *) echo "IOPS_STATS takes 0 and 1, not $s" >&2; exit 1 ;; esac
done
set_stats() { sysctl -qw kernel.bpf_stats_enabled="$1"; }

if part 1; then
echo "== 1. BPF cost per hit, OSD op and client write: $rounds alternating rounds of $secs s, 4 KiB writes, ${THREADS:-16} threads"
for i in $(seq "$rounds"); do
  for what in tier1 tier2 floor reads chain stamps; do
    case $what in
      tier1) start_daemon never ;;
      tier2) start_daemon always ;;
      floor) start_floor ;;
      reads) bench_cut=2 start_daemon never ;;
      chain | stamps) start_reads_floor "$what" ;;
    esac
    read -r hpo hpw nph upw < <(cost_round)
    stop_runner
    clean_pool
    echo "$hpo $hpw $nph $upw" >> "$work/$what"
    printf '  round %d %-6s %5s hits per OSD op, %5s per client write, %5s ns per hit, %6s us per client write\n' \
      "$i" "$what" "$hpo" "$hpw" "$nph" "$upw"
  done
done
for what in tier1 tier2 floor reads chain stamps; do
  printf '  %-6s median (min-max): hits per OSD op %s, per client write %s; ns per hit %s; us per client write %s\n' "$what" \
    "$(cut -d' ' -f1 "$work/$what" | median)" "$(cut -d' ' -f2 "$work/$what" | median)" \
    "$(cut -d' ' -f3 "$work/$what" | median)" "$(cut -d' ' -f4 "$work/$what" | median)"
done
paste -d' ' "$work/tier1" "$work/floor" | awk '{ print $3 - $7 }' > "$work/above"
echo "  tier 1 per hit above the floor, paired by round, ns: $(median < "$work/above")"
paste -d' ' "$work/reads" "$work/floor" | awk '{ print $3 - $7 }' > "$work/reads_above"
echo "  its reads alone above the floor, paired by round, ns: $(median < "$work/reads_above")"
paste -d' ' "$work/tier1" "$work/reads" | awk '{ print $3 - $7 }' > "$work/rest"
echo "  tier 1 per hit above its reads alone, paired by round, ns: $(median < "$work/rest")"
paste -d' ' "$work/chain" "$work/floor" | awk '{ print $3 - $7 }' > "$work/chain_above"
echo "  the chain of dependent reads alone above the floor, paired by round, ns: $(median < "$work/chain_above")"
paste -d' ' "$work/stamps" "$work/floor" | awk '{ print $3 - $7 }' > "$work/stamps_above"
echo "  the chain and every event's stamp above the floor, paired by round, ns: $(median < "$work/stamps_above")"
fi

if part 2 && command -v perf > /dev/null; then
  echo "== 2. the probe path's share of the OSDs' CPU samples (perf cpu-clock, $secs s)"
  for detail in never always; do
    start_daemon "$detail"
    perf record -q -e cpu-clock -F 2999 -a -o "$work/perf.data" -- sleep "$secs" &
    perf_pid=$!
    bench "${THREADS:-16}" > /dev/null
    wait "$perf_pid" || true
    stop_runner
    clean_pool
    share=$(perf report -i "$work/perf.data" --no-children --pid="${osd_pids// /,}" --percentage relative \
      --sort symbol --stdio 2> /dev/null | awk '
      $2 == "[k]" && $3 ~ /^(bpf_prog_|uprobe_|__uprobe_|find_active_uprobe|find_uprobe|arch_uprobe|htab_|bpf_lru_|prealloc_lru|copy_from_user_nofault|bpf_probe_read|ktime_get_mono_fast|bpf_get_current)/ {
        sub("%", "", $1); s += $1 }
      END { printf "%.2f", s }')
    echo "  detail: $detail: $share% of the OSDs' CPU samples"
  done
fi

if part 3; then
echo "== 3. one client thread, $rounds alternating rounds of $secs s: none, tier 1, tier 2 (kernel.bpf_stats_enabled=${iops_stats%% *})"
set_stats "${iops_stats%% *}"
for i in $(seq "$rounds"); do
  read -r _ iops0 lat0 cpu0 < <(bench 1)
  clean_pool
  start_daemon never
  read -r _ iops1 lat1 cpu1 < <(bench 1)
  stop_runner
  clean_pool
  start_daemon always
  read -r _ iops2 lat2 cpu2 < <(bench 1)
  stop_runner
  clean_pool
  echo "  round $i: none $lat0 us, $iops0 IOPS, $cpu0 us OSD CPU per write | tier 1 $lat1 us, $iops1 IOPS, $cpu1 us | tier 2 $lat2 us, $iops2 IOPS, $cpu2 us"
  echo "$((${lat1%.*} - ${lat0%.*})) $((${lat2%.*} - ${lat0%.*}))" >> "$work/lat"
  awk -v a="$cpu1" -v b="$cpu2" -v c="$cpu0" 'BEGIN { printf "%.1f %.1f\n", a - c, b - c }' >> "$work/cpu"
done
echo "  added latency per client write, us: tier 1 $(cut -d' ' -f1 "$work/lat" | median), tier 2 $(cut -d' ' -f2 "$work/lat" | median)"
echo "  added OSD CPU per client write (3 OSDs), us: tier 1 $(cut -d' ' -f1 "$work/cpu" | median), tier 2 $(cut -d' ' -f2 "$work/cpu" | median)"
set_stats 1
fi

if part 4; then
echo "== 4. the whole daemon, shipped config: every program per client write, $secs s, ${THREADS:-16} threads"
start_default_daemon
collector_totals > "$work/c0"
program_totals > "$work/p0"
read -r r0 t0 < <(prog_totals)
read -r writes iops _ _ < <(bench "${THREADS:-16}")
read -r r1 t1 < <(prog_totals)
collector_totals > "$work/c1"
program_totals > "$work/p1"
stop_runner
clean_pool
join "$work/c0" "$work/c1" | awk -v w="$writes" '
  { printf "  %-8s %8.1f runs, %7.2f us of BPF run time per client write\n", $1, ($4 - $2) / w, ($5 - $3) / w / 1000 }'
# Programs that run at least once per ten client writes, each with its cost per run.
join "$work/p0" "$work/p1" | awk -v w="$writes" '($4 - $2) / w >= 0.1 {
  printf "    %-30s %6.2f runs, %6.2f us per client write, %6.0f ns per run\n", $1, ($4 - $2) / w, ($5 - $3) / w / 1000, ($5 - $3) / ($4 - $2) }'
awk -v r=$((r1 - r0)) -v t=$((t1 - t0)) -v w="$writes" \
  'BEGIN { printf "  every program the daemon loaded: %.1f runs, %.2f us per client write\n", r / w, t / w / 1000 }'
# The floors of the syscall and block programs' runs, in the OSDs: in a second write, the same
# daemon beside the floors (common.sh) on the tracepoints where those programs ran. The floors
# attach first, so that on each event they run first: a program that runs first pays for the
# lines of the event's own path that the work before it evicted.
join "$work/p0" "$work/p1" | awk -v w="$writes" '($4 - $2) / w >= 0.1 && $1 ~ /^(syscall\/(enter|exit)|block\/(btf|tp))_/ {
  p = $1; sub(/^[a-z]*\//, "", p)
  if (sub(/^enter_/, "", p)) print "tracepoint:syscalls:sys_enter_" p
  else if (sub(/^exit_/, "", p)) print "tracepoint:syscalls:sys_exit_" p
  else { sub(/^(btf|tp)_/, "", p); print "tracepoint:block:block_" p } }' | sort -u > "$work/probes"
# bpftrace's programs carry the first 15 characters of their tracepoint's name, by which the
# floors are found: two tracepoints that share them (sys_enter_pwrite64, sys_enter_pwritev)
# get no floor, and their programs are left out of the sums.
awk -F: '{ k = substr($3, 1, 15); n[k]++; line[NR] = $0; key[NR] = k }
  END { for (i = 1; i <= NR; i++) if (n[key[i]] == 1) print line[i]; else print "  no floor for " line[i] ": another tracepoint has the same first 15 characters" > "/dev/stderr" }' \
  "$work/probes" > "$work/floor_probes"
if [ -s "$work/floor_probes" ]; then
  start_floors "$(paste -sd, "$work/floor_probes")"
  start_default_daemon
  program_totals > "$work/p2"
  snapshot_floors 0
  read -r writes _ _ _ < <(bench "${THREADS:-16}")
  program_totals > "$work/p3"
  snapshot_floors 1
  floor_deltas
  stop_floors
  stop_runner
  clean_pool
  echo "  beside the floors on their tracepoints (another $secs s write): per client write, and ns per run"
  join "$work/p2" "$work/p3" | awk -v w="$writes" '($4 - $2) / w >= 0.1 { print $1, ($4 - $2) / w, ($5 - $3) / ($4 - $2) }' |
    hook_of_program | sort | join - "$work/empty.d" | join - "$work/pid.d" | join - "$work/clock.d" |
    awk '{ printf "    %-30s %6.2f runs, %6.0f ns per run; its hook: empty %4.0f, pid alone %4.0f, clock alone %4.0f\n", $2, $3, $4, $6, $8, $10
      runs += $3; t += $3 * $4; e += $3 * $6; c += $3 * $10 }
      END { printf "  these programs: %.1f runs, %.2f us per client write; the same runs of an empty program %.2f us, of one that reads the clock %.2f us\n", runs, t / 1000, e / 1000, c / 1000 }'
fi
# A bench right after a cleanup runs while the OSDs still trim the deletes: the order within a
# pair alternates (without first, then with first), so that this favours neither side.
set_stats "${iops_stats%% *}"
echo "  the pairs run with kernel.bpf_stats_enabled=${iops_stats%% *}"
for i in $(seq "$rounds"); do
  for side in $( ((i % 2)) && echo "without with" || echo "with without"); do
    [ "$side" = with ] && start_default_daemon
    read -r _ iops _ _ < <(bench "${THREADS:-16}")
    [ "$side" = with ] && stop_runner
    clean_pool
    if [ "$side" = with ]; then with=$iops; else base=$iops; fi
  done
  r=$(awk -v a="$with" -v b="$base" 'BEGIN { printf "%.3f", a / b }')
  echo "$r" >> "$work/ratios"
  echo "  pair $i ($( ((i % 2)) && echo "without first" || echo "with first")): without $base IOPS, with $with IOPS, ratio $r"
done
echo "  IOPS with/without the daemon, pairs: $(ratio_summary < "$work/ratios" | sed 's/phases/pairs/')"
set_stats 1
fi

if part 5; then
# Pairs of separate benches drift apart by more than the daemon costs: each bench starts on a
# cluster still trimming the last one's deletes, and a pair of 10 s benches differs by 5-25%
# with no daemon at all. Here one write runs throughout and the daemon comes and goes, so each
# phase with it is compared with the phases just before and after it, on the same cluster state.
phase=${PHASE:-15}
echo "== 5. IOPS in one ${THREADS:-16}-thread write, the daemon (shipped config${COLLECTORS:+, only: $COLLECTORS}) started and stopped in turn: $rounds phases with it, $((rounds + 1)) without, $phase s each"
# the host's "busy idle" ticks (idle and iowait are idle)
host_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }
# "IOPS osd_cpu_us_per_write daemon_cpu_percent host_idle_percent" over the next PHASE seconds
# of the running bench (the daemon's share when one runs, else 0). The host's idle share tells
# a loss of CPU (idle flat, CPU per write up) from one of latency (idle up).
phase_iops() {
  local s0 f0 s1 f1 c0 c1 d0=0 d1=0 b0 i0 b1 i1
  read -r s0 f0 < <(bench_at)
  c0=$(osd_ticks)
  read -r b0 i0 < <(host_ticks)
  [ -n "$runner" ] && d0=$(awk '{ print $14 + $15 }' "/proc/$runner/stat")
  sleep "$phase"
  read -r s1 f1 < <(bench_at)
  c1=$(osd_ticks)
  read -r b1 i1 < <(host_ticks)
  [ -n "$runner" ] && d1=$(awk '{ print $14 + $15 }' "/proc/$runner/stat")
  [ $((s1 - s0)) -gt 0 ] && [ $((f1 - f0)) -gt 0 ] || { echo "the long bench printed nothing for $phase s" >&2; exit 1; }
  awk -v f=$((f1 - f0)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v d=$((d1 - d0)) -v p="$phase" \
    -v b=$((b1 - b0)) -v i=$((i1 - i0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%d %.0f %.1f %.1f\n", f / s, c * 1e6 / hz / f, d * 100 / hz / p, 100 * i / (b + i) }'
}
stdbuf -oL rados -p "$pool" bench $((rounds * (2 * phase + 30) + phase + 30)) write \
  -t "${THREADS:-16}" -b 4096 --no-cleanup > "$work/long" 2>&1 &
long=$!
sleep 5
read -r -a stats_cycle <<< "$iops_stats"
set_stats "$bench_old_stats"
read -r before cpu_before _ idle_before < <(phase_iops)
for i in $(seq "$rounds"); do
  stats=${stats_cycle[$(((i - 1) % ${#stats_cycle[@]}))]}
  set_stats "$stats"
  start_default_daemon
  sleep 2  # its start-up's own work done
  read -r with cpu_with daemon_cpu idle_with < <(phase_iops)
  stop_runner
  set_stats "$bench_old_stats"
  sleep 2
  read -r after cpu_after _ idle_after < <(phase_iops)
  r=$(awk -v w="$with" -v a="$before" -v b="$after" 'BEGIN { printf "%.3f", 2 * w / (a + b) }')
  echo "$r" >> "$work/phase_ratios.$stats"
  awk -v w="$cpu_with" -v a="$cpu_before" -v b="$cpu_after" 'BEGIN { printf "%.3f\n", 2 * w / (a + b) }' >> "$work/cpu_ratios.$stats"
  echo "  phase $i (bpf_stats $stats): without $before IOPS ($cpu_before us OSD CPU per write, host idle $idle_before%), with $with ($cpu_with us, idle $idle_with%; daemon $daemon_cpu% of a CPU), without $after ($cpu_after us, idle $idle_after%): ratio $r"
  before=$after
  cpu_before=$cpu_after
  idle_before=$idle_after
done
kill "$long" 2> /dev/null || true
wait "$long" 2> /dev/null || true
clean_pool
for stats in $(printf '%s\n' "${stats_cycle[@]}" | sort -u); do
  echo "  kernel.bpf_stats_enabled=$stats during the phases with the daemon:"
  echo "    IOPS with/without the daemon, each phase against its neighbours: $(ratio_summary < "$work/phase_ratios.$stats")"
  echo "    OSD CPU per client write, with/without: $(ratio_summary < "$work/cpu_ratios.$stats")"
done
set_stats 1
fi

part 6 || exit 0
bench_need perf  # part 6
phase=${PHASE:-15}
echo "== 6. the OSDs' CPU per client write by symbol, with the daemon (shipped config) against the windows just before and after: $rounds windows with it, $phase s each"
stdbuf -oL rados -p "$pool" bench $((rounds * (2 * phase + 20) + phase + 30)) write \
  -t "${THREADS:-16}" -b 4096 --no-cleanup > "$work/long" 2>&1 &
long=$!
set_stats "${iops_stats%% *}"
echo "  profiled with kernel.bpf_stats_enabled=${iops_stats%% *}"
# Profiles the host for PHASE seconds into $work/NAME.data; notes "NAME client_writes".
profile_window() { # NAME
  local f0 f1
  read -r _ f0 < <(bench_at)
  perf record -q -a -e cpu-clock -F 1000 -o "$work/$1.data" -- sleep "$phase" > /dev/null 2>&1
  read -r _ f1 < <(bench_at)
  echo "$1 $((f1 - f0))" >> "$work/windows"
}
sleep 5
profile_window w0
for i in $(seq "$rounds"); do
  start_default_daemon
  sleep 2
  profile_window "d$i"
  stop_runner
  sleep 2
  profile_window "w$i"
done
kill "$long" 2> /dev/null || true
wait "$long" 2> /dev/null || true
clean_pool
# "window samples symbol" of each window: the OSDs' samples, then the whole host's.
for scope in osd host; do
  only=()
  if [ $scope = osd ]; then only=("--pid=${osd_pids// /,}"); fi
  while read -r name _; do
    perf report -i "$work/$name.data" --stdio --no-children --sort sym -F sample,sym "${only[@]}" 2> /dev/null |
      awk -v n="$name" '$1 ~ /^[0-9]+$/ && $2 ~ /^\[/ { s = $3; for (i = 4; i <= NF; i++) s = s " " $i; print n "\t" $1 "\t" $2 " " s }'
  done < "$work/windows" > "$work/samples.$scope"
done
python3 - "$work/windows" "$work/samples.osd" "$work/samples.host" <<'PY'
import collections, re, sys
writes = dict((n, int(w)) for n, w in (l.split() for l in open(sys.argv[1])))
own = re.compile(r"bpf|uprobe|swbp|xol|syscall_trace|syscall_exit_work|perf_syscall|trace_call|"
                 r"pvclock|ktime_get|read_tsc|sched_clock|copy_from_user_nofault|rcu_read_unlock_trace")
def per_write(path):  # window -> symbol -> us of CPU per client write
    cpu = collections.defaultdict(collections.Counter)
    for line in open(path):
        name, samples, symbol = line.rstrip("\n").split("\t")
        cpu[name][symbol] += int(samples) * 1000.0 / max(writes[name], 1)  # 1 kHz: a sample is 1 ms
    return cpu
rounds = sum(1 for n in writes if n.startswith("d"))
def with_minus_neighbours(cpu):  # symbol -> mean over rounds of d_i - (w_{i-1} + w_i) / 2
    diff = collections.Counter()
    for i in range(1, rounds + 1):
        d, a, b = cpu[f"d{i}"], cpu[f"w{i - 1}"], cpu[f"w{i}"]
        for k in set(d) | set(a) | set(b):
            diff[k] += (d[k] - (a[k] + b[k]) / 2) / rounds
    return diff
cpu = per_write(sys.argv[2])
for i in range(1, rounds + 1):
    w = sum(cpu[f"d{i}"].values())
    n = (sum(cpu[f"w{i - 1}"].values()) + sum(cpu[f"w{i}"].values())) / 2
    print(f"  window {i}: {w:.0f} us of OSD CPU per client write with the daemon, {n:.0f} in its neighbours: {w - n:+.0f}")
diff = with_minus_neighbours(cpu)
print(f"  mean: {sum(diff.values()):+.1f} us per client write")
print(f"  the daemon's own paths in the OSDs (BPF programs, uprobe traps, syscall tracing, the clock): "
      f"{sum(v for k, v in diff.items() if own.search(k)):+.1f} us per client write")
print("  the symbols that moved most (us per client write, with minus neighbours):")
for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:20]:
    print(f"    {v:+7.1f}  {k[:90]}")
host = with_minus_neighbours(per_write(sys.argv[3]))
print(f"  the daemon's own paths on the whole host (every process, interrupts): "
      f"{sum(v for k, v in host.items() if own.search(k)):+.1f} us per client write")
PY
