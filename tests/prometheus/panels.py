"""The dashboards' queries against a real Prometheus (Ceph layer): every panel query of every
dashboard in dashboards/, with its variables substituted, and every label_values template
variable must return data. Shared by the in-the-loop test (a classic server) and the native
histograms test (a server that keeps only the native form) on the host's cluster, and by the
kernel client's test (kclient-in-the-loop.py), which checks the panels of the kclient
collector (KCLIENT) against the daemon in a kernel-matrix guest: the host has no kernel client
at work, so the host's tests leave those panels to it."""
import json
import re
import urllib.parse
from pathlib import Path

from harness import get

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
# Queue freezes: no series where fentry is refused (the probes say why) or where nothing froze
# a queue during the test; such panels are listed with the reason.
FREEZES = ("cephscope_block_queue_frozen_seconds", "cephscope_block_queue_freezes_total")
KCLIENT = "cephscope_kclient_"


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


def substitute(expr, daemon, rate_interval="1m"):
    for var, value in (("$__rate_interval", rate_interval), ("$cluster", ".*"), ("$job", ".*"),
                       ("$fsid", ".*"), ("$instance", ".*"), ("$osd_instance", ".*"), ("$ceph_daemon", daemon),
                       ("$device", ".*")):
        expr = expr.replace(var, value)
    return expr


def panel_targets(select):
    """(dashboard file, panel title, expression) of every panel target whose expression
    SELECT accepts, variables not substituted."""
    for path in sorted(DASHBOARDS.glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                if select(target["expr"]):
                    yield path.name, panel["title"], target["expr"]


def check_dashboards(prom, daemon, log):
    """Every template variable and every panel but the kernel client's (KCLIENT)."""
    queries = failed = 0
    pending = []
    kclient = sorted({(f, t) for f, t, _ in panel_targets(lambda e: KCLIENT in e)})
    if kclient:
        pending.append(f"{len(kclient)} kernel-client panels (checked in the kernel-matrix "
                       "guest: kclient-in-the-loop.py)")
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
                if KCLIENT in target["expr"]:
                    continue
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
