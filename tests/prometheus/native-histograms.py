#!/usr/bin/env python3
"""Native histograms (Ceph layer): cephscope on the real host cluster under rados bench,
scraped by two Debian prometheus servers at once, one classic (text exposition, `_bucket`
series) and one with `--enable-feature=native-histograms` (protobuf exposition, which
cephscope answers with each histogram also in its native form). Checks, at one evaluation
time on both: histogram_quantile() of every OSD's write latency (p50, p90, p99) agrees within
one bucket (a factor of 2), the native server stores the native form (no `_bucket`
series), the shipped recording rules that read histograms yield the same series on both and
neither server refuses a rule's result, and every dashboard query has data on the native
server. Prints both quantiles and both servers' stored series side by side.

  native-histograms.py DAEMON_BINARY   (CEPHSCOPE_CEPH_DIR names the cluster, as for e2e)
"""
import json
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from harness import (daemon_evidence, free_port, get, host_cluster, start_daemon,
                     wait_host_osds_attached)
from panels import Prom, check_dashboards

QUANTILES = (0.5, 0.9, 0.99)
RULES = [Path(__file__).resolve().parents[2] / "dashboards" / "rules" / f
         for f in ("cephscope-rules.yml", "cephscope-alerts.yml")]
# The recording rules that read histograms, each checked on both servers: the same series
# (label sets) on each. The cephscope-fleet group's quantiles over a host's OSDs, a device
# class (here `unknown`: Ceph's exporter is not scraped) and a pool are among them: Prometheus
# 2.42 drops a rule's native histogram at random (a sum of rates whose buckets round above
# its count), so those rules record quantiles, and this is where their native form is tested.
RECORDED = ("cephscope:osd_op_seconds:p99_5m", "cephscope:osd_subop_seconds:p99_5m",
            'cephscope:osd_op_stage_seconds:p50_5m{op="write"}',
            "cephscope:osd_latency_bound_seconds",
            'cephscope:host_osd_op_stage_seconds:p99_5m{op="write"}',
            'cephscope:host_osd_op_stage_seconds:p50_5m{op="read"}',
            "cephscope:host_osd_subop_stage_seconds:p99_5m", "cephscope:host_osd_op_seconds:p99_5m",
            'cephscope:host_osd_op_stage_seconds_sum:rate5m{op="write"}',
            'cephscope:host_osd_op_stage_seconds_count:rate5m{op="write"}',
            "cephscope:device_class_osd_op_seconds:p99_5m", "cephscope:pool_client_op_seconds:p99_5m")
T0 = time.monotonic()


def log(msg):
    print(f"[native {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def series(metric):
    """A result's labels but its name, as one comparable, printable key."""
    return ",".join(f"{k}={v}" for k, v in sorted(metric.items()) if k != "__name__")


def query(port, expr, at):
    qs = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    return json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?{qs}"))["data"]["result"]


def main():
    daemon_bin = sys.argv[1]
    cluster, work = host_cluster("cephscope-native-")
    procs = []
    try:
        port = start_daemon(daemon_bin, work, procs)
        servers = {}
        for form, flags in (("classic", []), ("native", ["--enable-feature=native-histograms"])):
            p = free_port()
            (work / f"{form}.yml").write_text(
                "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                f"rule_files: [{', '.join(str(r) for r in RULES)}]\n"
                f"scrape_configs: [{{job_name: cephscope, static_configs: "
                f"[{{targets: ['127.0.0.1:{port}']}}]}}]\n")
            procs.append(subprocess.Popen(
                ["prometheus", f"--config.file={work}/{form}.yml",
                 f"--storage.tsdb.path={work}/{form}-tsdb", f"--web.listen-address=127.0.0.1:{p}",
                 *flags], stdout=open(work / f"{form}.log", "w"), stderr=subprocess.STDOUT))
            servers[form] = p
        for p in servers.values():
            wait_host_osds_attached(lambda expr, p=p: query(p, expr, time.time()), cluster)

        rados = ["rados", "-c", cluster["conf"], "-p", cluster["pool"]]
        subprocess.run(rados + ["bench", "20", "write", "-t", "16", "-b", "4096", "--no-cleanup"],
                       check=True, stdout=subprocess.DEVNULL)
        # reads too, for the dashboards' read panels
        subprocess.run(rados + ["bench", "8", "seq", "-t", "16"], check=True,
                       stdout=subprocess.DEVNULL)
        time.sleep(3)
        at = time.time() - 2  # both servers have scraped up to here
        window = 'rate(cephscope_osd_op_seconds{x}{{op="write"}}[20s])'
        failed = []
        log(f"{'osd':8} {'q':>5} {'classic':>12} {'native':>12} {'ratio':>6}")
        for q in QUANTILES:
            classic = {r["metric"]["ceph_daemon"]: float(r["value"][1]) for r in query(
                servers["classic"], f"histogram_quantile({q}, sum by (ceph_daemon, le) "
                f"({window.format(x='_bucket')}))", at)}
            native = {r["metric"]["ceph_daemon"]: float(r["value"][1]) for r in query(
                servers["native"], f"histogram_quantile({q}, sum by (ceph_daemon) "
                f"({window.format(x='')}))", at)}
            if set(classic) != set(native) or len(classic) < len(cluster["osds"]):
                failed.append(f"p{q}: OSDs classic {sorted(classic)} native {sorted(native)}")
                continue
            for osd in sorted(classic):
                ratio = native[osd] / classic[osd]
                log(f"{osd:8} {q:5} {classic[osd] * 1e3:10.3f}ms {native[osd] * 1e3:10.3f}ms "
                    f"{ratio:6.3f}")
                if not 0.5 <= ratio <= 2:  # one bucket: the slots are powers of two
                    failed.append(f"{osd} p{q}: classic {classic[osd]} native {native[osd]}")
        # The shipped recording rules, on either form.
        for rule in RECORDED:
            values = {form: {series(r["metric"]): float(r["value"][1])
                             for r in query(p, rule, at)} for form, p in servers.items()}
            log(f"{rule}: classic {len(values['classic'])} series, native "
                f"{len(values['native'])}")
            if not values["native"] or set(values["classic"]) != set(values["native"]):
                failed.append(f"{rule}: classic {values['classic']} native {values['native']}")
        # The dashboards too: every panel query has data on the server that keeps only the
        # native form (their queries read `classic or native`).
        if check_dashboards(Prom(servers["native"]), cluster["osds"][0]["name"], log):
            failed.append("dashboard queries without data on the native server (above)")
        # Every rule's every result stored: a result Prometheus refuses (2.42: a native
        # histogram whose buckets round above its count) leaves the series stale until the
        # next evaluation, so a panel over it has data or not by chance.
        for form in servers:
            refused = [line for line in (work / f"{form}.log").read_text().splitlines()
                       if "Rule evaluation result discarded" in line]
            if refused:
                failed.append(f"{form} server refused {len(refused)} rule results, the first: "
                              f"{refused[0][:400]}")
        stored_buckets = query(servers["native"], "count(cephscope_osd_op_seconds_bucket)", at)
        if stored_buckets:
            failed.append("the native server stored classic _bucket series")
        for form, p in servers.items():
            head = json.loads(get(f"http://127.0.0.1:{p}/api/v1/status/tsdb"))["data"]["headStats"]
            osd = query(p, 'count({__name__=~"cephscope_osd_op_seconds.*"})', at)
            log(f"{form}: {head['numSeries']} series stored, of which cephscope_osd_op_seconds*: "
                f"{osd[0]['value'][1] if osd else 0}")
        for f in failed:
            log(f"FAIL {f}")
        if failed:
            daemon_evidence(port, work, log)
        return 1 if failed else 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    sys.exit(main())
