#!/usr/bin/python3
"""A fleet's worth of cephscope in Prometheus: the simulated fleet (simulate.py) scraped by
Debian's Prometheus servers in one of three shapes, with the shipped recording rules and
alerts, alerts routed through a real Alertmanager to a webhook this script serves.

  (a) one server scrapes every node;
  (b) two servers shard the nodes by hashmod of the address, a third federates from both
      only the recording rules the fleet dashboard reads (FEDERATED);
  (c) a server in agent mode scrapes every node and remote-writes to a receiver
      (--web.enable-remote-write-receiver) that evaluates the rules and alerts.

Each shape runs with classic histograms (text exposition) or native ones (protobuf,
--enable-feature=native-histograms: Prometheus 2.42 keeps one form per scrape).

Measured, once the rules have data and the slow-ops alert fired: head series, samples
appended per second, RSS and CPU of every server, scrape duration, each rule group's
evaluation time against its interval, and the latency of every dashboard query (range
queries over the last 10 minutes at Grafana's step, variables set to the fleet, one host and
one OSD; p50 and p99 of RUNS runs). Checked (exit 1 otherwise): every node scraped up, every
recording rule has series, CephscopeOSDSlowOps fires in Prometheus and reaches the webhook for
the simulated slow OSDs and no other. Timings are printed, never asserted.

  fleet.py --shape a --form classic --nodes 100 --interval 30 --runs 10 [--out FILE.json]

The test's copies of the rule files have `for:` shortened to one interval; the shipped files
are not touched.
"""
import argparse
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT / "tests/prometheus"))
import exposition as ex  # noqa: E402
from harness import Webhook, free_port  # noqa: E402

RULES = [ROOT / "dashboards/rules/cephscope-rules.yml", ROOT / "dashboards/rules/cephscope-alerts.yml"]
# What the federating server of shape (b) takes from the shards: what the fleet dashboard
# reads (the rules per host, device class and pool, and the slowest OSDs' top five), not the
# per-OSD quantiles nor the per-host sums of classic buckets.
FEDERATED = ('{__name__=~"cephscope:(host|device_class|pool)_.*|cephscope:.*:top5_.*", '
             '__name__!~".*_bucket:.*"}')
T0 = time.monotonic()


def log(msg):
    print(f"[fleet {time.monotonic() - T0:7.1f}s] {msg}", flush=True)


def get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def wait_until(what, pred, timeout, period=2.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if pred():
                return True
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(period)
    raise SystemExit(f"FAILED: {what} within {timeout:.0f} s")


def cpu_busy():
    """(busy, total) jiffies of the whole machine."""
    f = open("/proc/stat").readline().split()[1:]
    v = [int(x) for x in f]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def proc_cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_mib(pid):
    for ln in open(f"/proc/{pid}/status"):
        if ln.startswith("VmRSS"):
            return int(ln.split()[1]) / 1024
    return 0.0


class Prom:
    def __init__(self, name, port, proc):
        self.name, self.port, self.proc = name, port, proc
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr, timeout=120):
        url = self.base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        doc = json.loads(get(url, timeout))
        if doc.get("status") != "success":
            raise RuntimeError(f"{expr}: {doc}")
        return doc["data"]["result"]

    def query_range(self, expr, start, end, step, timeout=120):
        url = self.base + "/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": expr, "start": start, "end": end, "step": step})
        doc = json.loads(get(url, timeout))
        if doc.get("status") != "success":
            raise RuntimeError(f"{expr}: {doc}")
        return doc["data"]["result"]

    def own_metrics(self):
        """Its own /metrics: {name: [(labels dict, value)]}."""
        out = {}
        for n, labels, v in ex.read_text(get(self.base + "/metrics"))[1]:
            out.setdefault(n, []).append((dict(labels), v))
        return out

    def alerts(self):
        return json.loads(get(self.base + "/api/v1/alerts"))["data"]["alerts"]


def one(metrics, name, **match):
    return sum(v for labels, v in metrics.get(name, [])
               if all(labels.get(k) == x for k, x in match.items()))


class Run:
    def __init__(self, args):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix=f"fleet-{args.shape}-{args.form}-",
                                          dir=args.work_root))
        self.procs = []
        self.servers = {}
        self.interval = args.interval

    def spawn(self, name, argv):
        log_file = open(self.work / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT)
        self.procs.append((name, p))
        return p

    # ------------------------------------------------------------ set-up

    def start_simulator(self):
        a = self.args
        self.sim_port = a.port or free_port()
        self.mgr_port = free_port()
        targets = self.work / "targets"
        p = self.spawn("simulator", [sys.executable, str(HERE / "simulate.py"),
                                     "--nodes", str(a.nodes), "--port", str(self.sim_port),
                                     "--mgr", str(self.mgr_port), "--slow", str(a.slow),
                                     "--duration", str(a.max_seconds), "--targets-dir", str(targets)])
        self.sim = p
        wait_until("simulator ready", lambda: "ready" in (self.work / "simulator.log").read_text(),
                   600, 1)
        self.sim_ready = json.loads((self.work / "simulator.log").read_text().splitlines()[0])
        self.truth = json.loads((targets / "truth.json").read_text())
        self.targets = targets
        log(f"simulator: {self.sim_ready}")

    def start_alertmanager(self):
        self.hook_port = free_port()
        hook = http.server.ThreadingHTTPServer(("127.0.0.1", self.hook_port), Webhook)
        threading.Thread(target=hook.serve_forever, daemon=True).start()
        self.am_port = free_port()
        (self.work / "alertmanager.yml").write_text(
            "route: {receiver: test, group_by: [alertname, ceph_daemon], group_wait: 1s, "
            "group_interval: 1s, repeat_interval: 1h}\n"
            f"receivers: [{{name: test, webhook_configs: [{{url: 'http://127.0.0.1:{self.hook_port}/'}}]}}]\n")
        self.spawn("alertmanager", [
            "prometheus-alertmanager", f"--config.file={self.work}/alertmanager.yml",
            f"--storage.path={self.work}/am", f"--web.listen-address=127.0.0.1:{self.am_port}",
            "--cluster.listen-address="])

    def rule_copies(self):
        out = []
        for f in RULES:
            copy = self.work / f.name
            copy.write_text(re.sub(r"(\n\s+for:) \S+", rf"\1 {self.interval}s", f.read_text()))
            out.append(str(copy))
        return out

    def node_jobs(self, shard=None):
        relabel = ""
        if shard is not None:
            relabel = (", relabel_configs: [{source_labels: [__address__], modulus: 2, "
                       "target_label: __tmp_hash, action: hashmod}, "
                       f"{{source_labels: [__tmp_hash], regex: '{shard}', action: keep}}]")
        timeout = self.timeout()
        return (f"scrape_configs:\n"
                f"  - {{job_name: cephscope, scrape_timeout: {timeout}s, file_sd_configs: "
                f"[{{files: ['{self.targets}/nodes.json']}}]{relabel}}}\n"
                f"  - {{job_name: ceph, file_sd_configs: [{{files: ['{self.targets}/mgr.json']}}]}}\n")

    def timeout(self):
        return self.interval if self.interval < 10 else max(10, int(self.interval * 0.9))

    def prometheus(self, name, config, extra=()):
        port = free_port()
        path = self.work / f"{name}.yml"
        path.write_text(config)
        argv = ["prometheus", f"--config.file={path}", f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn"]
        if self.args.form == "native":
            argv.append("--enable-feature=native-histograms")
        if "--enable-feature=agent" in extra:
            argv.append(f"--storage.agent.path={self.work}/{name}-wal")
        else:
            argv.append(f"--storage.tsdb.path={self.work}/{name}-tsdb")
        argv += list(extra)
        p = self.spawn(name, argv)
        self.servers[name] = Prom(name, port, p)
        return self.servers[name]

    def global_cfg(self, labels=""):
        i = self.interval
        return (f"global: {{scrape_interval: {i}s, evaluation_interval: {i}s"
                f"{', external_labels: {' + labels + '}' if labels else ''}}}\n")

    def alerting(self):
        return (f"alerting: {{alertmanagers: [{{static_configs: [{{targets: "
                f"['127.0.0.1:{self.am_port}']}}]}}]}}\n")

    def start_shape(self):
        rules = f"rule_files: [{', '.join(self.rule_copies())}]\n"
        shape = self.args.shape
        if shape == "a":
            self.query_server = self.prometheus("prometheus", self.global_cfg() + rules +
                                                self.alerting() + self.node_jobs())
            self.rule_servers = [self.query_server]
        elif shape == "b":
            shards = [self.prometheus(f"shard{k}", self.global_cfg(f"shard: '{k}'") + rules +
                                      self.alerting() + self.node_jobs(k)) for k in (0, 1)]
            fed_targets = ", ".join(f"'127.0.0.1:{s.port}'" for s in shards)
            self.prometheus("federate", self.global_cfg() +
                            "scrape_configs:\n"
                            f"  - {{job_name: federate, honor_labels: true, metrics_path: /federate, "
                            f"scrape_timeout: {self.timeout()}s, "
                            f"params: {{'match[]': ['{FEDERATED}']}}, "
                            f"static_configs: [{{targets: [{fed_targets}]}}]}}\n")
            self.query_server = shards[0]
            self.rule_servers = shards
        else:
            recv = self.prometheus("receiver", self.global_cfg() + rules + self.alerting(),
                                   ["--web.enable-remote-write-receiver"])
            native = ", send_native_histograms: true" if self.args.form == "native" else ""
            self.prometheus("agent", self.global_cfg() +
                            f"remote_write: [{{url: 'http://127.0.0.1:{recv.port}/api/v1/write'{native}}}]\n"
                            + self.node_jobs(), ["--enable-feature=agent"])
            self.query_server = recv
            self.rule_servers = [recv]
        for s in self.servers.values():
            wait_until(f"{s.name} ready", lambda s=s: s.proc.poll() is not None or
                       get(s.base + "/-/ready") != b"", 120, 1)
            if s.proc.poll() is not None:
                raise SystemExit(f"FAILED: {s.name} exited: "
                                 f"{(self.work / (s.name + '.log')).read_text()[-2000:]}")

    # ------------------------------------------------------------ checks and figures

    def up_count(self):
        return sum(int(float(r["value"][1])) for s in self.rule_servers
                   for r in s.query('up{job="cephscope"}')) if self.args.shape != "c" else \
            len(self.query_server.query('count by (instance) (cephscope_build_info)'))

    def warm_up(self):
        n = self.args.nodes
        wait_until(f"{n} nodes scraped", lambda: self.up_count() >= n,
                   self.interval * 6 + 300, 5)
        log(f"all {n} nodes scraped")
        # Rules over what the capture has no series of aside: the kernel client's (no kernel
        # client on the capture's host) and the bluestore layer's (the capture predates that
        # layer); on a native server also the per-host sums of classic buckets (`_bucket:`).
        records = [r["record"] for f in RULES for g in yaml_groups(f) for r in g["rules"]
                   if "record" in r and not r["record"].startswith("cephscope:kclient_")
                   and "bluestore_amplification" not in r["record"]
                   and not (self.args.form == "native" and "_bucket:" in r["record"])]
        wait_until("every recording rule with series",
                   lambda: all(any(s.query(f'count({r})') for s in self.rule_servers)
                               for r in records), self.interval * 8 + 300, 5)
        log("every recording rule has series")

    def firing(self):
        out = set()
        for s in self.rule_servers:
            for a in s.alerts():
                if a["labels"]["alertname"] == "CephscopeOSDSlowOps" and a["state"] == "firing":
                    out.add(a["labels"]["ceph_daemon"])
        return out

    def delivered(self):
        return {al["labels"].get("ceph_daemon") for _, body in Webhook.received
                for al in body.get("alerts", [])
                if al["labels"].get("alertname") == "CephscopeOSDSlowOps" and al["status"] == "firing"}

    def check_alerts(self):
        want = set(self.truth["slow_osds"])
        wait_until("CephscopeOSDSlowOps firing for the slow OSDs", lambda: self.firing() >= want,
                   self.interval * 6 + 300, 5)
        wait_until("CephscopeOSDSlowOps delivered", lambda: self.delivered() >= want, 120, 2)
        got, hooked = self.firing(), self.delivered()
        ok = got == want and hooked == want
        log(f"slow ops alert: firing {sorted(got)}, delivered {sorted(hooked)}, simulated "
            f"{sorted(want)}: {'ok' if ok else 'FAILED'}")
        return ok, sorted(got), sorted(hooked)

    def server_figures(self, window):
        """Every server over WINDOW seconds: head series, samples/s, RSS, CPU share, rule
        groups; scrape durations from the scraping servers' own series."""
        before = {}
        b0 = cpu_busy()
        sim0 = proc_cpu_s(self.sim.pid)
        for name, s in self.servers.items():
            m = s.own_metrics()
            before[name] = (time.monotonic(), proc_cpu_s(s.proc.pid), appended(m), m)
        time.sleep(window)
        b1 = cpu_busy()
        out = {"machine_cpu_busy": (b1[0] - b0[0]) / max(1, b1[1] - b0[1]),
               "simulator_cpu_share": (proc_cpu_s(self.sim.pid) - sim0) / window,
               "simulator_rss_mib": proc_rss_mib(self.sim.pid), "servers": {}}
        for name, s in self.servers.items():
            t0, c0, a0, _ = before[name]
            m = s.own_metrics()
            dt = time.monotonic() - t0
            a1 = appended(m)
            groups = {}
            for labels, v in m.get("prometheus_rule_group_last_duration_seconds", []):
                g = labels["rule_group"].split(";")[-1]
                groups[g] = {"last_s": v, "interval_s": one(
                    m, "prometheus_rule_group_interval_seconds", rule_group=labels["rule_group"]),
                    "missed": one(m, "prometheus_rule_group_iterations_missed_total",
                                  rule_group=labels["rule_group"])}
            fig = {"head_series": one(m, "prometheus_tsdb_head_series") or
                   one(m, "prometheus_agent_active_series"),
                   "samples_per_s": (a1 - a0) / dt,
                   "rss_mib": proc_rss_mib(s.proc.pid),
                   "cpu_share": (proc_cpu_s(s.proc.pid) - c0) / dt,
                   "rule_groups": groups,
                   "remote_write_samples_per_s": None}
            sent = "prometheus_remote_storage_samples_total"
            if sent in m:
                fig["remote_write_samples_per_s"] = (one(m, sent) - one(before[name][3], sent)) / dt
            out["servers"][name] = fig
        scrape = {}
        for name, s in self.servers.items():
            # the agent has no query API; its scrapes' scrape_duration_seconds reach the
            # receiver by remote write
            try:
                r = s.query('scrape_duration_seconds') if name != "agent" else []
            except (OSError, RuntimeError):
                r = []
            vals = sorted(float(x["value"][1]) for x in r if x["metric"].get("job") in
                          ("cephscope", "federate"))
            if vals:
                scrape["agent" if name == "receiver" else name] = {
                    "targets": len(vals), "p50_s": vals[len(vals) // 2], "max_s": vals[-1]}
        out["scrape_duration"] = scrape
        return out

    def scopes(self):
        """The dashboards' variables set to the fleet, to one host and to one OSD of it."""
        s = self.query_server
        r = s.query('count by (instance) (cephscope_build_info)')
        host = sorted(x["metric"]["instance"] for x in r)[0]
        osd_of_host = s.query(f'cephscope_target_info{{instance="{host}", kind="ceph-osd"}}')
        osd = sorted(x["metric"]["ceph_daemon"] for x in osd_of_host)[0]
        # osd_instance: the OSD detail dashboard's hidden variable, the host of its one OSD
        return {"fleet": {"instance": ".*", "ceph_daemon": ".*", "one_osd": osd, "osd_instance": host},
                "host": {"instance": host, "ceph_daemon": ".*", "one_osd": osd, "osd_instance": host},
                "osd": {"instance": ".*", "ceph_daemon": osd, "one_osd": osd, "osd_instance": host}}

    def dashboard_queries(self, s, boards="*"):
        iv = self.interval
        scopes = self.scopes()
        exprs = []
        for path in sorted((ROOT / "dashboards").glob(boards + ".json")):
            board = json.loads(path.read_text())
            for panel in board["panels"]:
                for i, t in enumerate(panel.get("targets", [])):
                    exprs.append((path.stem, panel["title"], i, t["expr"], t.get("instant", False)))
        end = time.time()
        span = min(600, self.elapsed())
        step = max(15, iv)
        results = []
        for scope, v in scopes.items():
            for board, title, i, expr, instant in exprs:
                e = expr
                for var, val in (("$__rate_interval", f"{4 * iv}s"), ("$cluster", ".*"),
                                 ("$job", ".*"), ("$fsid", ".*"), ("$device", ".*"),
                                 ("$instance", v["instance"]), ("$osd_instance", v["osd_instance"])):
                    e = e.replace(var, val)
                e = e.replace('ceph_daemon="$ceph_daemon"', f'ceph_daemon="{v["one_osd"]}"')
                e = e.replace("$ceph_daemon", v["ceph_daemon"])
                times, series, err = [], 0, None
                for _ in range(self.args.runs):
                    t = time.monotonic()
                    try:
                        if instant:  # a table: Grafana asks for one instant
                            series = len(s.query(e, timeout=120))
                        else:
                            series = len(s.query_range(e, end - span, end, step, timeout=120))
                    except (OSError, RuntimeError) as x:
                        err = str(x)[:200]
                    times.append(time.monotonic() - t)
                    if times[-1] > self.args.give_up:
                        break  # far over the target: the runs left would say nothing more
                times.sort()
                results.append({"server": s.name, "scope": scope, "dashboard": board,
                                "panel": title, "target": i,
                                "runs": len(times),
                                "p50_s": times[len(times) // 2], "p99_s": times[-1],
                                "series": series, "error": err})
        return results

    def elapsed(self):
        return time.monotonic() - self.t_start

    def run(self):
        a = self.args
        try:
            self.start_simulator()
            self.start_alertmanager()
            self.t_start = time.monotonic()
            self.start_shape()
            log(f"servers: {', '.join(f'{n} :{s.port}' for n, s in self.servers.items())}; "
                f"work {self.work}")
            self.warm_up()
            ok, firing, delivered = self.check_alerts()
            figures = self.server_figures(max(60, 2 * self.interval))
            log(json.dumps(figures))
            queries = self.dashboard_queries(self.query_server) if a.runs else []
            if a.runs and "federate" in self.servers:
                # what the federating server holds: the recording rules, which the fleet
                # dashboard reads
                queries += self.dashboard_queries(self.servers["federate"], "fleet")
            sim = json.loads(get(f"http://{self.truth['host']['instance']}/stats"))
            report = {"shape": a.shape, "form": a.form, "nodes": a.nodes,
                      "osds_per_node": self.truth["osds_per_node"], "interval_s": self.interval,
                      "runs": a.runs, "simulator": {**self.sim_ready, **sim},
                      "alerts_ok": ok, "slow_osds": self.truth["slow_osds"],
                      "firing": firing, "delivered": delivered, "figures": figures,
                      "queries": queries, "wall_s": time.monotonic() - T0}
            summarize(report)
            if a.out:
                Path(a.out).write_text(json.dumps(report, indent=1))
            for name, s in self.servers.items():
                if s.proc.poll() is not None:
                    log(f"FAILED: {name} exited")
                    ok = False
            return 0 if ok else 1
        finally:
            for _, p in reversed(self.procs):
                p.terminate()
            for name, p in self.procs:
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
            if not a.keep:
                shutil.rmtree(self.work, ignore_errors=True)


def appended(m):
    return (one(m, "prometheus_tsdb_head_samples_appended_total") +
            one(m, "prometheus_agent_samples_appended_total"))


def yaml_groups(path):
    import yaml
    return yaml.safe_load(path.read_text())["groups"]


def summarize(r):
    f = r["figures"]
    log(f"== shape ({r['shape']}) {r['form']}, {r['nodes']} nodes x {r['osds_per_node']} OSDs, "
        f"scrape and evaluation every {r['interval_s']} s ==")
    log(f"machine CPU busy {f['machine_cpu_busy'] * 100:.0f}% of 2 cores; simulator "
        f"{f['simulator_cpu_share'] * 100:.0f}% of a core, RSS {f['simulator_rss_mib']:.0f} MiB")
    for name, s in f["servers"].items():
        worst = max(s["rule_groups"].values(), key=lambda g: g["last_s"], default=None)
        log(f"{name}: head series {s['head_series']:,.0f}, samples/s {s['samples_per_s']:,.0f}, "
            f"RSS {s['rss_mib']:,.0f} MiB, CPU {s['cpu_share'] * 100:.0f}% of a core"
            + (f", remote write {s['remote_write_samples_per_s']:,.0f} samples/s"
               if s["remote_write_samples_per_s"] else "")
            + (f", slowest rule group {worst['last_s']:.2f} s of {worst['interval_s']:.0f} s"
               if worst else ""))
    for name, d in f["scrape_duration"].items():
        if "p50_s" in d:
            log(f"{name}: scrape duration p50 {d['p50_s']:.2f} s, max {d['max_s']:.2f} s "
                f"({d['targets']} targets)")
    qs = r["queries"]
    for server, scope in sorted({(x["server"], x["scope"]) for x in qs}):
        q = [x for x in qs if x["scope"] == scope and x["server"] == server]
        q.sort(key=lambda x: -x["p99_s"])
        over = [x for x in q if x["p99_s"] > 1.0]
        log(f"queries on {server}, {scope}: {len(q)}, p99 max {q[0]['p99_s']:.2f} s "
            f"({q[0]['dashboard']}: {q[0]['panel']}), median of p50 "
            f"{sorted(x['p50_s'] for x in q)[len(q) // 2]:.3f} s, over 1 s: {len(over)}, "
            f"errors: {sum(1 for x in q if x['error'])}")
        for x in over[:8]:
            log(f"   {x['p99_s']:.2f} s  {x['dashboard']}: {x['panel']} [{x['target']}]")


def main():
    # SIGTERM (ctest's timeout, kill) ends through Run.run's clean-up: no server left behind
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices="abc", default="a")
    ap.add_argument("--form", choices=("classic", "native"), default="classic")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--interval", type=int, default=30, help="scrape and evaluation, s")
    ap.add_argument("--runs", type=int, default=10, help="runs of each dashboard query")
    ap.add_argument("--give-up", type=float, default=10.0,
                    help="stop a query's runs after one slower than this, s")
    ap.add_argument("--slow", type=int, default=3)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-seconds", type=int, default=5400)
    ap.add_argument("--work-root", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out")
    return Run(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
