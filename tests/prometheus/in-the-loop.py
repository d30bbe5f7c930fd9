#!/usr/bin/env python3
"""Prometheus in the loop (Ceph layer): cephscope on the real host cluster under rados bench,
scraped every second by Debian's prometheus with the shipped rules, alerts routed through a
real prometheus-alertmanager to a webhook this test serves.

Checks: every panel query of every dashboard (variables substituted) and every template
variable returns data through Prometheus' HTTP API (the client panels from rados bench's own
ops); every recording rule yields series; a forced slow op (an OSD stopped
for a moment) fires CephscopeOSDSlowOps in Prometheus and Alertmanager delivers it to the
webhook. The test shortens `for:` and the intervals in its own copies of the rules and
configs, never in the shipped files.

  in-the-loop.py DAEMON_BINARY     (CEPHSCOPE_CEPH_DIR names the cluster, as for the e2e layer)
"""
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from harness import (Webhook, daemon_evidence, free_port, get, host_cluster, start_daemon,
                     wait_host_osds_attached, wait_until)
from panels import DASHBOARDS, Prom, check_dashboards

KCLIENT_RULES = "cephscope:kclient_"

RULES = [DASHBOARDS / "rules/cephscope-rules.yml", DASHBOARDS / "rules/cephscope-alerts.yml"]
T0 = time.monotonic()


def log(msg):
    print(f"[in-the-loop {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def check_recording_rules(prom, rule_files):
    import yaml
    failed = 0
    # the kernel client's rules read what only the kernel-matrix guest has: checked there
    # (kclient-in-the-loop.py)
    records = [r["record"] for f in rule_files for g in yaml.safe_load(f.read_text())["groups"]
               for r in g["rules"] if "record" in r and not r["record"].startswith(KCLIENT_RULES)]
    for name in records:
        n = len(prom.query(name))
        if n == 0:
            failed += 1
            log(f"FAILED recording rule {name}: no series")
        else:
            log(f"recording rule {name}: {n} series")
    return failed


def main():
    daemon_bin = sys.argv[1]
    cluster, work = host_cluster("cephscope-prom-")
    procs = []
    stopped = []
    ok = False
    try:
        port = start_daemon(daemon_bin, work, procs)

        # the webhook, alertmanager, prometheus
        hook_port = free_port()
        hook = http.server.ThreadingHTTPServer(("127.0.0.1", hook_port), Webhook)
        threading.Thread(target=hook.serve_forever, daemon=True).start()
        am_port = free_port()
        (work / "alertmanager.yml").write_text(
            "route: {receiver: test, group_by: [alertname, ceph_daemon], group_wait: 1s, "
            "group_interval: 1s, repeat_interval: 1h}\n"
            f"receivers: [{{name: test, webhook_configs: [{{url: 'http://127.0.0.1:{hook_port}/'}}]}}]\n")
        procs.append(subprocess.Popen(
            ["prometheus-alertmanager", f"--config.file={work}/alertmanager.yml",
             f"--storage.path={work}/am", f"--web.listen-address=127.0.0.1:{am_port}",
             "--cluster.listen-address="],
            stdout=open(work / "alertmanager.log", "w"), stderr=subprocess.STDOUT))
        rule_copies = []
        for f in RULES:  # the test's own copies: `for:` shortened to 5 s
            copy = work / f.name
            copy.write_text(re.sub(r"(\n\s+for:) \S+", r"\1 5s", f.read_text()))
            rule_copies.append(copy)
        prom_port = free_port()
        (work / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: [{', '.join(str(c) for c in rule_copies)}]\n"
            f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['127.0.0.1:{am_port}']}}]}}]}}\n"
            f"scrape_configs: [{{job_name: cephscope, static_configs: [{{targets: ['127.0.0.1:{port}']}}]}}]\n")
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={work}/prometheus.yml",
             f"--storage.tsdb.path={work}/tsdb", f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=open(work / "prometheus.log", "w"), stderr=subprocess.STDOUT))
        prom = Prom(prom_port)
        wait_until("alertmanager ready", lambda: get(f"http://127.0.0.1:{am_port}/-/ready") != "", 60)
        wait_until("prometheus ready", lambda: get(prom.base + "/-/ready") != "", 60)
        wait_host_osds_attached(prom.query, cluster)
        log(f"cephscope :{port}, prometheus :{prom_port}, alertmanager :{am_port}, webhook :{hook_port}")

        # load: writes then reads, through rados bench on the cluster
        rados = ["rados", "-c", cluster["conf"], "-p", cluster["pool"]]
        subprocess.run(rados + ["bench", "20", "write", "-t", "16", "-b", "4096", "--no-cleanup"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(rados + ["bench", "10", "seq", "-t", "16"], check=True,
                       stdout=subprocess.DEVNULL)
        time.sleep(3)
        failed = check_dashboards(prom, cluster["osds"][0]["name"], log)
        failed += check_recording_rules(prom, rule_copies)

        # a forced slow op: a replica stopped for 3 s under writes
        victim = cluster["osds"][-1]
        bench = subprocess.Popen(rados + ["bench", "15", "write", "-t", "16", "-b", "4096",
                                          "--no-cleanup"], stdout=subprocess.DEVNULL)
        time.sleep(3)
        os.kill(victim["pid"], signal.SIGSTOP)
        stopped.append(victim["pid"])
        t_stop = time.time()
        time.sleep(3)
        os.kill(victim["pid"], signal.SIGCONT)
        stopped.remove(victim["pid"])
        bench.wait()
        log(f"{victim['name']} stopped for 3 s under writes")

        def firing():
            return [a for a in prom.alerts()
                    if a["labels"]["alertname"] == "CephscopeOSDSlowOps" and a["state"] == "firing"]
        wait_until("CephscopeOSDSlowOps firing in Prometheus", lambda: firing(), 120)
        # activeAt: when the expression first held (pending); firing follows after `for:` (5 s)
        t_pending = min(datetime.fromisoformat(a["activeAt"][:26].rstrip("Z")).replace(
            tzinfo=timezone.utc).timestamp() for a in firing())
        stages = sorted({(a["labels"]["ceph_daemon"], a["labels"]["stage"]) for a in firing()})
        log(f"CephscopeOSDSlowOps pending {t_pending - t_stop:.1f} s after the stop, firing after "
            f"its 5 s for: {stages}")

        def delivered():
            return [al for _, body in Webhook.received for al in body.get("alerts", [])
                    if al["labels"].get("alertname") == "CephscopeOSDSlowOps"
                    and al["status"] == "firing"]
        wait_until("CephscopeOSDSlowOps delivered to the webhook", lambda: delivered(), 60)
        t_hook = next(t for t, body in Webhook.received
                      if any(al["labels"].get("alertname") == "CephscopeOSDSlowOps"
                             for al in body.get("alerts", [])))
        first = delivered()[0]
        log(f"webhook received it {t_hook - t_stop:.1f} s after the stop: {first['labels']}, "
            f"documentation {first['annotations'].get('documentation')}")
        for key in ("summary", "description", "documentation"):
            if not first["annotations"].get(key):
                failed += 1
                log(f"FAILED: the delivered alert has no {key}")
        subprocess.run(rados + ["cleanup"], stdout=subprocess.DEVNULL)
        if failed:
            log(f"FAILED: {failed} checks")
            daemon_evidence(port, work, log)
            return 1
        log("passed")
        ok = True
        return 0
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        if ok and os.environ.get("CEPHSCOPE_KEEP_TEST_DIR") is None:
            shutil.rmtree(work, ignore_errors=True)
        elif not ok:
            for name in ("cephscope.log", "prometheus.log", "alertmanager.log"):
                lines = (work / name).read_text(errors="replace").splitlines()[-15:]
                print(f"---- {work / name} (last lines) ----\n" + "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
