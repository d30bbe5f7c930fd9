"""What the Prometheus-in-the-loop scripts of this folder share: free ports, HTTP GETs and
bounded waits."""
import http.server
import json
import os
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
