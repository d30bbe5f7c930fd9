"""The dashboards' queries against a real Prometheus (Ceph layer): every panel query of every
dashboard in dashboards/, with its variables substituted, and every label_values template
variable must return data. Shared by the in-the-loop test (a classic server) and the native
histograms test (a server that keeps only the native form)."""
import json
import re
import urllib.parse
from pathlib import Path

from harness import get

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
# Queue freezes: no series where fentry is refused (the probes say why) or where nothing froze
# a queue during the test; such panels are listed with the reason.
FREEZES = ("cephscope_block_queue_frozen_seconds", "cephscope_block_queue_freezes_total")


class Prom:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr):
        url = self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        doc = json.loads(get(url))
        if doc.get("status") != "success":
            raise RuntimeError(f"{expr}: {doc}")
        return doc["data"]["result"]

    def label_values(self, label, match):
        url = (self.base + f"/api/v1/label/{label}/values?" +
               urllib.parse.urlencode({"match[]": match}))
        return json.loads(get(url))["data"]

    def alerts(self):
        return json.loads(get(self.base + "/api/v1/alerts"))["data"]["alerts"]


def substitute(expr, daemon):
    for var, value in (("$__rate_interval", "1m"), ("$cluster", ".*"), ("$job", ".*"),
                       ("$fsid", ".*"), ("$instance", ".*"), ("$ceph_daemon", daemon), ("$device", ".*")):
        expr = expr.replace(var, value)
    return expr


def check_dashboards(prom, daemon, log):
    queries = failed = 0
    pending = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        for var in board["templating"]["list"]:
            m = re.match(r"label_values\((.*),\s*(\w+)\)$", (var.get("definition") or ""))
            if not m:
                continue
            queries += 1
            values = prom.label_values(m.group(2), substitute(m.group(1), daemon))
            if var["name"] == "cluster":
                log(f"{path.name}: variable cluster: {values or 'not set here (no external label)'}")
                continue
            if not values:
                failed += 1
                log(f"FAILED {path.name}: variable {var['name']} has no values")
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                expr = substitute(target["expr"], daemon)
                queries += 1
                result = prom.query(expr)
                if any(p in expr for p in FREEZES) and not result:
                    probe = prom.query('cephscope_probe_attached{probe="blk_freeze_queue_start"}')
                    why = (probe[0]["metric"].get("reason") if probe else "no probe status")
                    pending.append(f"{path.name}: {panel['title']} (freeze probe: {why}; "
                                   "no freeze during the test)" if why == "ok" else
                                   f"{path.name}: {panel['title']} (freeze probe: {why})")
                    continue
                if not result:
                    failed += 1
                    log(f"FAILED {path.name}: panel '{panel['title']}' has no data: {expr}")
    log(f"dashboards: {queries} queries, {failed} without data, pending: {pending or 'none'}")
    return failed
