#!/usr/bin/env python3
"""Prometheus in the loop for the kernel client (kernel-matrix layer): Debian's prometheus on
the host scrapes, every second, the daemon of the kclient test in a guest (qemu's user network
forwards a port of the host's loopback to it: `cephscope-vm run --hostfwd`), with the shipped
rule files. The test (tests/kernel/test_kclient.cpp) hands over what it drove (facts.json in
the folder the two share) and waits until this has seen a scrape after that (and, before its
second batch, mark.json: a scrape of every series before it grows); then every panel
of the dashboards that reads the kclient collector (panels.KCLIENT), its variables substituted
and $__rate_interval the whole run, is evaluated at that scrape's time and must hold:

  - data, with the series of what the test drove (its rbd device, its CephFS client, create);
  - heatmaps: buckets that never decrease with `le`, a +Inf rate over the run above 0 and at
    most the requests the daemon counted (SLACK); quantiles above 0 and within the test's own
    time (NaN allowed for the other series: no requests in the window);
  - rates (requests, bytes, errors) above 0 and their sum over the run at most the counter's
    value, give or take Prometheus' extrapolation (SLACK); MDS errors exactly 0;
  - the counters under them equal what the test drove (rbd writes and their bytes, the
    tracked writer's CephFS writes) or hold at least it (creates, not_found errors);
  - the kernel client's recording rules yield series.

  kclient-in-the-loop.py RUN_DIR   (the guest's control folder; files in RUN_DIR/prometheus)
Exit 0 passed, 1 failed, 77 skipped (the collector is unavailable on this kernel, or the
guest ran no kclient test: say why).
"""
import json
import math
import subprocess
import sys
import time
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path

from harness import free_port, get, wait_until
from panels import DASHBOARDS, KCLIENT, Prom, panel_targets, substitute

GUEST_PORT = 9488
# Prometheus extrapolates a rate up to 1.1 average scrape intervals (1 s) past the first and
# the last sample in the window: a rate over the run times the run may pass the counter's
# value by at most that many seconds of it.
SLACK = 2.2
T0 = time.monotonic()


def log(msg):
    print(f"[kclient-prom {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def wait_for_file(run, names, prom):
    """The first of NAMES (in RUN/prometheus) the test wrote: (name, its JSON, host time);
    (None, None, host time) when the guest finished without."""
    seen, polls = False, 0
    while True:
        polls += 1
        # every 2 s: the host's CPUs run the guest
        if not seen and polls % 20 == 0 and any(t["health"] == "up" for t in prom_targets(prom)):
            seen = True
            log("first scrape of the guest's daemon")
        for name in names:
            if (run / "prometheus" / name).exists():
                return name, json.loads((run / "prometheus" / name).read_text()), time.time()
        if (run / "rc").exists():
            return None, None, time.time()
        time.sleep(0.1)


def answer(prom, work, name, t):
    """Waits for a scrape after host time T, then answers NAME.scraped with its timestamp."""
    wait_until(f"a scrape of the guest's daemon after {name}", lambda: scraped_after(prom, t),
               30, period=0.1)
    at = float(prom.query("timestamp(up == 1)")[0]["value"][1])
    (work / f"{name}.scraped").write_text(f"{at:.3f}\n")
    return at


def prom_targets(prom):
    try:
        return json.loads(get(prom.base + "/api/v1/targets"))["data"]["activeTargets"]
    except OSError:
        return []


def scraped_after(prom, t):
    """True once a scrape that started after host time T succeeded."""
    for target in prom_targets(prom):
        last = target.get("lastScrape", "")[:26].rstrip("Z")
        if target["health"] == "up" and not last.startswith("0001") and datetime.fromisoformat(
                last).replace(tzinfo=timezone.utc).timestamp() > t:
            return True
    return False


class Checks:
    """Queries at AT (a scrape's timestamp) over the WINDOW seconds back to the first scrape:
    with samples at both ends, a rate over it is not extrapolated past them."""

    def __init__(self, prom, at, window):
        self.prom, self.at, self.window, self.failed, self.count = prom, at, window, 0, 0
        self.range = f"{round(window * 1000)}ms"

    def total(self, selector, join=""):
        """The counters of SELECTOR summed at their highest over the run: a tracked process's
        series go away with it (its TTL)."""
        return self.value(f"sum(max_over_time({selector}[{self.range}]){join})")

    def query(self, expr):
        doc = json.loads(get(self.prom.base + "/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr, "time": f"{self.at:.3f}"})))
        if doc.get("status") != "success":
            raise RuntimeError(f"{expr}: {doc}")
        return [(r["metric"], float(r["value"][1])) for r in doc["data"]["result"]]

    def value(self, expr):
        result = self.query(expr)
        return result[0][1] if result else float("nan")

    def check(self, ok, what):
        self.count += 1
        if not ok:
            self.failed += 1
            log(f"FAILED {what}")
        return ok


def has(series, **labels):
    return [v for m, v in series if all(m.get(k) == x for k, x in labels.items())]


def check_panels(c, facts):
    dev, client = facts["device"], facts["cephfs_client"]
    w = c.window
    mounted = " and on (instance, job, client) cephscope_kclient_cephfs_mount_info"
    req = "cephscope_kclient_osd_request_seconds_count"
    nbytes = "cephscope_kclient_osd_request_bytes_total"
    errors = "cephscope_kclient_osd_request_errors_total"
    # per panel: the series it must hold, and the counter its sum over the run stays within
    spec = {
        "krbd request latency": ({}, (f'{req}{{device!=""}}',)),
        "krbd request p99": ({"device": dev, "op": "write"}, None),
        "krbd requests per second": ({"device": dev, "op": "write"},
                                     (f'{req}{{device="{dev}", op="write"}}',)),
        "krbd bytes": ({"device": dev, "op": "write"}, (f'{nbytes}{{device="{dev}", op="write"}}',)),
        "krbd request errors": ({"device": dev, "op": "read", "class": "not_found"},
                                (f'{errors}{{device="{dev}", op="read", class="not_found"}}',)),
        "CephFS data request latency": ({}, (f'{req}{{device=""}}', mounted)),
        "CephFS data request p99": ({"client": client, "op": "write"}, None),
        "CephFS data bytes": ({"client": client, "op": "write"},
                              (f'{nbytes}{{client="{client}", op="write"}}',)),
        "CephFS data request errors": ({"client": client, "op": "read", "class": "not_found"},
                                       (f'{errors}{{client="{client}", op="read", class="not_found"}}',)),
        "MDS request latency": ({}, ("cephscope_kclient_mds_request_seconds_count",)),
        "MDS request p99": ({"op": "create"}, None),
        "MDS requests per second": ({"op": "create"},
                                    ('cephscope_kclient_mds_request_seconds_count{op="create"}',)),
        "MDS request errors": ({"op": "create"}, None),
    }
    panels = list(panel_targets(lambda e: KCLIENT in e))
    c.check(sorted(t for _, t, _ in panels) == sorted(spec),
            f"the kernel-client panels are {sorted(t for _, t, _ in panels)}: this test knows {sorted(spec)}")
    for board, title, template in panels:
        if title not in spec:
            continue
        must, total_expr = spec[title]
        series = c.query(substitute(template, ".*", rate_interval=c.range))
        name = f"{board}: {title}"
        if not c.check(series, f"{name}: no data"):
            continue
        values = [v for _, v in series]
        # a quantile of a series that did not grow in the window is NaN (no data in Grafana)
        c.check(all((math.isnan(v) and total_expr is None) or 0 <= v < math.inf for v in values),
                f"{name}: values {values}")
        total = c.total(*total_expr) if total_expr else None
        if "le" in series[0][0]:  # heatmap: cumulative buckets
            by_le = sorted((float(m["le"]), v) for m, v in series)
            # The buckets the daemon exposed are cumulative. The panel's rates of them need not
            # be: Prometheus extrapolates each series' rate on its own, towards the start of the
            # window no further than where that counter would reach 0, and a bucket with a
            # smaller first sample goes further back (a few requests show it).
            buckets = total_expr[0].replace("_count", "_bucket")
            counts = sorted((float(m["le"]), v) for m, v in c.query(
                f"sum by (le) (max_over_time({buckets}[{c.range}]))"))
            c.check(len(counts) == len(by_le)
                    and all(a[1] <= b[1] for a, b in zip(counts, counts[1:])),
                    f"{name}: exposed buckets decrease with le: {counts}")
            inf = by_le[-1][1] * w
            c.check(0 < inf <= total + by_le[-1][1] * SLACK,
                    f"{name}: {inf:.2f} requests over the run, the daemon counted {total}")
            log(f"{name}: {len(by_le)} buckets, {inf:.1f} requests over the run (counted {total:.0f})")
            continue
        mine = has(series, **must)
        if not c.check(mine, f"{name}: no series with {must}: {[m for m, _ in series]}"):
            continue
        if title == "MDS request errors":
            c.check(all(v == 0 for v in values), f"{name}: errors {values} (none aborted or timed out)")
            log(f"{name}: {len(series)} ops, all 0")
        elif total_expr is None:  # a quantile
            c.check(all(0 < v <= facts["seconds"] for v in mine),
                    f"{name}: {mine} s not within (0, {facts['seconds']}] s")
            log(f"{name}: {must} p99 {mine[0] * 1e3:.2f} ms ({len(series)} series)")
        else:
            over_run = sum(mine) * w
            c.check(0 < over_run <= total + sum(mine) * SLACK,
                    f"{name}: {over_run:.2f} over the run, the counter holds {total}")
            log(f"{name}: {must} {sum(mine):.4g}/s, {over_run:.1f} over the run (counter {total:.0f})")


def check_counters(c, facts):
    dev, client = facts["device"], facts["cephfs_client"]
    exact = {
        f'cephscope_kclient_osd_request_seconds_count{{device="{dev}", op="write"}}': facts["rbd_writes"],
        f'cephscope_kclient_osd_request_bytes_total{{device="{dev}", op="write"}}': facts["rbd_write_bytes"],
        f'cephscope_kclient_osd_request_seconds_count{{client="{client}", process="io_driver", op="write"}}': facts["driver_writes"],
        f'cephscope_kclient_osd_request_bytes_total{{client="{client}", process="io_driver", op="write"}}': facts["driver_write_bytes"],
    }
    at_least = {  # krbd's partition scan reads unwritten blocks too; CephFS creates its folder
        f'cephscope_kclient_osd_request_errors_total{{device="{dev}", class="not_found"}}': facts["rbd_hole_reads"],
        f'cephscope_kclient_osd_request_errors_total{{client="{client}", class="not_found"}}': facts["cephfs_hole_reads"],
        f'cephscope_kclient_mds_request_seconds_count{{client="{client}", op="create"}}': facts["mds_creates"],
    }
    for selector, want in list(exact.items()) + list(at_least.items()):
        got = c.total(selector)
        c.check(got == want if selector in exact else got >= want,
                f"{selector} = {got}, the test drove {want}")
        log(f"{selector} = {got:.0f} (the test drove {want}{'' if selector in exact else ' or more'})")
    for record in ("cephscope:kclient_osd_request_seconds:p99_5m", "cephscope:kclient_mds_request_seconds:p99_5m"):
        n = len(c.query(record))
        c.check(n > 0, f"recording rule {record}: no series")
        log(f"recording rule {record}: {n} series")


def main():
    run = Path(sys.argv[1]).resolve()
    work = run / "prometheus"
    work.mkdir(exist_ok=True)
    host_port, prom_port = free_port(), free_port()
    rules = [DASHBOARDS / "rules/cephscope-rules.yml", DASHBOARDS / "rules/cephscope-alerts.yml"]
    (work / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{', '.join(str(r) for r in rules)}]\n"
        f"scrape_configs: [{{job_name: cephscope, static_configs: [{{targets: ['127.0.0.1:{host_port}']}}]}}]\n")
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/tsdb",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=open(work / "prometheus.log", "w"), stderr=subprocess.STDOUT)
    try:
        prom = Prom(prom_port)
        wait_until("prometheus ready", lambda: get(prom.base + "/-/ready") != "", 60)
        (work / "hostfwd").write_text(f"{host_port}:{GUEST_PORT}\n")
        log(f"prometheus :{prom_port} scrapes 127.0.0.1:{host_port} (the guest's :{GUEST_PORT})")
        # mark.json: every series is to be scraped before the test's second batch
        name, facts, t = wait_for_file(run, ("mark.json", "facts.json"), prom)
        if name == "mark.json":
            answer(prom, work, name, t)
            log("a scrape after the mark: the test's second batch follows")
            name, facts, t = wait_for_file(run, ("facts.json",), prom)
        if facts is None:
            log("FAILED: the guest finished and the kclient test handed nothing over")
            return 1
        if facts.get("kclient") != "ok":
            (work / "facts.json.scraped").write_text("skipped\n")
            log(f"skipped: the kclient collector is {facts.get('kclient')} on this kernel")
            return 77
        # the checks run at the scrape after the facts, back to the first one
        at = answer(prom, work, name, t)
        first = float(prom.query("min_over_time(timestamp(up == 1)[1h:100ms])")[0]["value"][1])
        log(f"the test drove: {facts}")
        c = Checks(prom, at, at - first)
        check_panels(c, facts)
        check_counters(c, facts)
        log(f"{c.count} checks at {at:.3f}, over the run's {c.window:.1f} s, {c.failed} failed")
        return 1 if c.failed else 0
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
