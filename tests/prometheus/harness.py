"""What the Prometheus-in-the-loop scripts of this folder share: free ports, HTTP GETs and
bounded waits."""
import http.server
import collections
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path


class Webhook(http.server.BaseHTTPRequestHandler):
    """Alertmanager's webhook receiver: every notification, with the time it came."""
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Webhook.received.append((time.time(), json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, pred, timeout, period=0.5):
    """Polls PRED until it is true; connection errors count as not yet. Fails the test after
    TIMEOUT seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if pred():
                return True
        except OSError:
            pass
        time.sleep(period)
    raise SystemExit(f"FAILED: {what} within {timeout} s")


def host_cluster(prefix):
    """The e2e layer's host cluster (CEPHSCOPE_CEPH_DIR/cluster.json) and a fresh work folder
    in it; skips the test (status 77) outside ctest's e2e fixture."""
    cluster_dir = os.environ.get("CEPHSCOPE_CEPH_DIR")
    if not cluster_dir:
        print("skipped: CEPHSCOPE_CEPH_DIR is unset (run through ctest -L e2e)")
        raise SystemExit(77)
    cluster = json.loads((Path(cluster_dir) / "cluster.json").read_text())
    return cluster, Path(tempfile.mkdtemp(prefix=prefix, dir=cluster_dir))


def wait_host_osds_attached(query, cluster, timeout=180):
    """Waits until Prometheus (QUERY: an expression -> its results) has scraped OSD probes
    attached in every OSD of the host cluster, by its fsid: the daemon attaches one process at
    a time, and the Reef containers' or the bystander's OSDs (other builds, profiles resolved
    first) may come before the host's by tens of seconds."""
    expr = ('count by (target) (cephscope_probe_attached{collector="osd", reason="ok", '
            f'fsid="{cluster["fsid"]}"}})')
    wait_until(f"prometheus scraping OSD probes attached in all {len(cluster['osds'])} OSDs of "
               f"the host cluster", lambda: len(query(expr)) >= len(cluster["osds"]), timeout)


def start_daemon(daemon_bin, work, procs):
    """cephscope with every collector, BlueStore's stages (tier 2: the OSD detail dashboard's
    BlueStore panels) and its own profile cache in WORK, appended to PROCS; returns its port
    once /readyz answers."""
    port = free_port()
    (work / "cephscope.yaml").write_text(
        f'listen: "127.0.0.1:{port}"\nlog_level: info\n'
        "discovery: {scan_interval: 1s}\n"
        "collectors: {osd: {detail: always}}\n"
        f"profiles: {{cache_dir: {work}/profiles}}\n")
    procs.append(subprocess.Popen([daemon_bin, "--config.file", str(work / "cephscope.yaml")],
                                  stdout=open(work / "cephscope.log", "w"),
                                  stderr=subprocess.STDOUT))
    wait_until("cephscope ready", lambda: get(f"http://127.0.0.1:{port}/readyz") != "", 60)
    return port


def daemon_evidence(port, work, log):
    """What the daemon itself served and logged, for a failed test's report: its OSD series
    by family, its collectors' up and attach statuses, and its warnings and OSD lines."""
    try:
        text = get(f"http://127.0.0.1:{port}/metrics", timeout=30)
    except OSError as e:
        log(f"daemon /metrics: {e}")
        text = ""
    families = collections.Counter(
        m.group(1) for m in re.finditer(r"^(cephscope_osd_[a-z_]+?)(?:_bucket|_sum|_count)?[{ ]",
                                        text, re.M))
    log(f"daemon /metrics: {len(text)} bytes, OSD families: {dict(sorted(families.items()))}")
    for line in text.splitlines():
        if line.startswith(("cephscope_collector_up", "cephscope_targets")) or (
                line.startswith("cephscope_probe_attached") and 'collector="osd"' in line):
            log(f"daemon /metrics: {line}")
    lines = (work / "cephscope.log").read_text(errors="replace").splitlines()
    picked = [x for x in lines if "level=warn" in x or "level=error" in x or "osd" in x]
    for line in picked[:60]:
        log(f"daemon log: {line[:400]}")
