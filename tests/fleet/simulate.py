#!/usr/bin/python3
"""A fleet of simulated cephscope nodes on loopback addresses, from one process.

Each node replays the exposition captured from the daemon on a real Pacific cluster
(tests/fleet/fixture/, made by capture.sh): the captured OSDs' series are relabelled into
OSDS_PER_NODE OSDs per node (ceph_daemon osd.<node*OSDS_PER_NODE + k>, globally unique), each
cluster of NODES_PER_CLUSTER nodes has its own fsid, and every counter, histogram bucket,
_sum and _count advances at the rate it advanced between the two captured scrapes, times a
factor of its own OSD (0.6-1.4, fixed per OSD), so that rates, quantiles and rules see live
data. A few OSDs (--slow) also count slow ops; no other OSD does. Node i listens on
127.10.<i // 200>.<i % 200 + 1>:PORT and serves text (0.0.4), or protobuf with native
histograms when the scraper asks for it, as the daemon does. A simulated ceph-mgr exporter
(--mgr) serves ceph_osd_metadata (hostname, device_class) for every OSD.

Efficiency: each node's exposition is prepared once as bytes with holes for the values that
move; a scrape formats only those values (a histogram's native form is rebuilt from its moving
classic counts) and joins. The prepared files name every target (--targets-dir: file_sd JSON
with a `host` label, the ground truth of slow OSDs).

  simulate.py --nodes 100 --port 9488 --duration 1800 --targets-dir DIR [--slow 3]
"""
import argparse
import asyncio
import gzip
import json
import os
import random
import resource
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import exposition as ex  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixture"
COUNTER_SUFFIXES = ("_total", "_bucket", "_count", "_sum")
SLOW_STAGE = ("write", "commit")  # op and stage the slow OSDs count slow ops in


def node_address(i):
    return f"127.10.{i // 200}.{i % 200 + 1}"


def fsid_of(cluster):
    return f"f1ee7000-0000-4000-8000-{cluster:012d}"


class Fleet:
    def __init__(self, nodes, osds_per_node, nodes_per_cluster, slow, seed=43):
        self.nodes, self.per_node, self.per_cluster = nodes, osds_per_node, nodes_per_cluster
        cap = json.loads((FIXTURE / "capture.json").read_text())
        self.dt = cap["t_b"] - cap["t_a"]
        self.fsid = cap["fsid"]
        self.captured = cap["osds"]
        if osds_per_node % len(self.captured):
            raise SystemExit(f"--osds-per-node must be a multiple of {len(self.captured)}")
        rnd = random.Random(seed)
        self.factor = [[0.6 + 0.8 * rnd.random() for _ in range(osds_per_node + 1)]
                       for _ in range(nodes)]
        # slow OSDs: spread over the fleet, a fixed local index
        self.slow = {}
        for k in range(slow):
            node = (7 + k * max(1, nodes // max(slow, 1))) % nodes
            self.slow[node] = (5 + 7 * k) % osds_per_node
        text_a = ex.read_text(gzip.decompress((FIXTURE / "a.txt.gz").read_bytes()))[1]
        self.comments, text_b = ex.read_text(gzip.decompress((FIXTURE / "b.txt.gz").read_bytes()))
        before = {(n, l): v for n, l, v in text_a}
        self.text = [(n, l, v, self._rate(n, before.get((n, l)), v)) for n, l, v in text_b
                     if self._keep(l)]
        pb_a = ex.read_families(gzip.decompress((FIXTURE / "a.pb.gz").read_bytes()))
        self.families = ex.read_families(gzip.decompress((FIXTURE / "b.pb.gz").read_bytes()))
        self.pb_before = {(f[0], labels): v for f in pb_a for labels, v in f[3]}

    def _keep(self, labels):
        return all(v == self.fsid for n, v in labels if n == "fsid")

    def _rate(self, name, a, b):
        if a is None or not name.endswith(COUNTER_SUFFIXES) or b < a:
            return 0.0
        return (b - a) / self.dt

    def osd_of(self, labels):
        """Index of the captured OSD the series belongs to (ceph_daemon or target), or None."""
        for n, v in labels:
            if n in ("ceph_daemon", "target") and v in self.captured:
                return self.captured.index(v)
        return None

    def copies(self, node, labels):
        """(local OSD index or per_node for the node's own series, relabelled labels) for
        every copy of a captured series on NODE."""
        fsid = fsid_of(node // self.per_cluster)
        k = self.osd_of(labels)
        if k is None:
            yield self.per_node, tuple((n, fsid if n == "fsid" else v) for n, v in labels)
            return
        step = len(self.captured)
        for local in range(k, self.per_node, step):
            name = f"osd.{node * self.per_node + local}"
            out = []
            for n, v in labels:
                if n in ("ceph_daemon", "target") and v in self.captured:
                    v = name
                elif n == "fsid":
                    v = fsid
                elif n == "pid":
                    v = str(int(v) + 1000 * local)
                out.append((n, v))
            yield local, tuple(out)

    def slow_rate(self, node, local, name, labels):
        """Slow ops: only the slow OSDs count them, at 0.2/s, in one op and stage."""
        if name != "cephscope_osd_slow_ops_total":
            return None
        d = dict(labels)
        if self.slow.get(node) == local and (d.get("op"), d.get("stage")) == SLOW_STAGE:
            return 0.2
        return 0.0

    # ------------------------------------------------------------ text

    def text_template(self, node):
        """[chunk, slot, chunk, slot, ..., chunk]: chunks are bytes, slots (base, rate, int)."""
        parts, pending, seen = [], [], set()
        for name, labels, base, rate in self.text:
            fam = name
            for suffix in ("_bucket", "_count", "_sum"):
                if name.endswith(suffix) and name[:-len(suffix)] in self.comments:
                    fam = name[:-len(suffix)]
            if fam not in seen and fam in self.comments:
                seen.add(fam)
                pending.append("\n".join(self.comments[fam]) + "\n")
            for local, lab in self.copies(node, labels):
                r = self.slow_rate(node, local, name, lab)
                r = rate * self.factor[node][local] if r is None else r
                if name.endswith("_bucket") or name.endswith("_count"):
                    r = float(int(r * 1e6)) / 1e6
                pending.append(f"{name}{ex.text_labels(lab)} ")
                if r == 0.0:
                    pending.append(ex.fmt_value(base) + "\n")
                    continue
                parts.append("".join(pending).encode())
                pending = []
                parts.append((base, r, name.endswith(("_bucket", "_count")) or
                              (float(base).is_integer() and "seconds" not in name)))
                pending.append("\n")
        parts.append("".join(pending).encode())
        return parts

    # ------------------------------------------------------------ protobuf

    def pb_template(self, node):
        """[(family head, [bytes or (labels bytes, kind, base, rate, bounds)])]; a family
        with nothing that moves is one bytes object."""
        out = []
        for name, help_, kind, metrics in self.families:
            if not self._family_kept(metrics):
                continue
            head = ex.enc_family_head(name, help_, kind)
            items, moving = [], False
            for labels, value in metrics:
                if not self._keep(labels):
                    continue
                before = self.pb_before.get((name, labels))
                for local, lab in self.copies(node, labels):
                    lb = ex.enc_labels(lab)
                    f = self.factor[node][local]
                    if kind == ex.HISTOGRAM:
                        count, total, buckets = value
                        bounds = [ex.bound_field(ub) for ub, _ in buckets]
                        cums = [c for _, c in buckets]
                        if before is None or before[0] >= count:
                            items.append(ex.ld(4, lb + ex.enc_histogram(count, total, bounds, cums)))
                            continue
                        bc, bs, bb = before
                        rc = int((count - bc) / self.dt * f * 1e6) / 1e6
                        rs = (total - bs) / self.dt * f
                        rcs = [int((c - p) / self.dt * f * 1e6) / 1e6
                               for c, (_, p) in zip(cums, bb)]
                        items.append((lb, kind, (count, total, cums), (rc, rs, rcs), bounds))
                        moving = True
                    else:
                        r = self.slow_rate(node, local, name, lab)
                        if r is None:
                            r = 0.0
                            if before is not None and kind == ex.COUNTER and value > before:
                                r = (value - before) / self.dt * f
                        if r == 0.0:
                            items.append(ex.ld(4, lb + ex.enc_scalar(kind, value)))
                        else:
                            items.append((lb, kind, value, r, None))
                            moving = True
            if moving:
                out.append((head, items))
            else:
                body = head + b"".join(items)
                out.append(ex.enc_varint(len(body)) + body)
        return out

    def _family_kept(self, metrics):
        return any(self._keep(labels) for labels, _ in metrics)


def render_text(parts, e):
    out = parts[:]
    for i in range(1, len(out), 2):
        base, r, is_int = out[i]
        v = base + r * e
        out[i] = (str(int(v)) if is_int else repr(v)).encode()
    return b"".join(out)


def render_pb(template, e):
    out = []
    for fam in template:
        if isinstance(fam, bytes):
            out.append(fam)
            continue
        head, items = fam
        body = [head]
        for it in items:
            if isinstance(it, bytes):
                body.append(it)
                continue
            lb, kind, base, rate, bounds = it
            if kind == ex.HISTOGRAM:
                count, total, cums = base
                rc, rs, rcs = rate
                body.append(ex.ld(4, lb + ex.enc_histogram(
                    int(count + rc * e), total + rs * e, bounds,
                    [int(c + r * e) for c, r in zip(cums, rcs)])))
            else:
                body.append(ex.ld(4, lb + ex.enc_scalar(kind, base + rate * e)))
        b = b"".join(body)
        out.append(ex.enc_varint(len(b)))
        out.append(b)
    return b"".join(out)


class Server:
    def __init__(self, fleet, port, mgr_port):
        self.fleet, self.port, self.mgr_port = fleet, port, mgr_port
        self.t0 = time.time()
        self.text = {}
        self.pb = {}
        self.scrapes = {"text": 0, "protobuf": 0}
        self.bytes = 0
        self.render_s = 0.0

    def prepare(self):
        t = time.process_time()
        for i in range(self.fleet.nodes):
            self.text[node_address(i)] = self.fleet.text_template(i)
            self.pb[node_address(i)] = self.fleet.pb_template(i)
        return time.process_time() - t

    def body(self, addr, accept):
        e = time.time() - self.t0
        t = time.process_time()
        if "application/vnd.google.protobuf" in accept:
            out, ctype, kind = render_pb(self.pb[addr], e), ex.PROTOBUF_TYPE, "protobuf"
        else:
            out, ctype, kind = render_text(self.text[addr], e), ex.TEXT_TYPE, "text"
        self.render_s += time.process_time() - t
        self.scrapes[kind] += 1
        self.bytes += len(out)
        return out, ctype

    def mgr_body(self):
        f = self.fleet
        lines = ["# HELP ceph_osd_metadata OSD Metadata", "# TYPE ceph_osd_metadata untyped"]
        for i in range(f.nodes):
            cls = "hdd" if i % 2 == 0 else "ssd"
            for k in range(f.per_node):
                lines.append(f'ceph_osd_metadata{{ceph_daemon="osd.{i * f.per_node + k}",'
                             f'cluster_addr="{node_address(i)}",device_class="{cls}",'
                             f'hostname="fleet-{i:04d}",objectstore="bluestore"}} 1.0')
        return ("\n".join(lines) + "\n").encode(), ex.TEXT_TYPE

    async def handle(self, reader, writer):
        addr = writer.get_extra_info("sockname")[0]
        port = writer.get_extra_info("sockname")[1]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "/"
                hdr = {ln.split(":", 1)[0].lower(): ln.split(":", 1)[1].strip()
                       for ln in lines[1:] if ":" in ln}
                if port == self.mgr_port:
                    body, ctype = self.mgr_body()
                elif path.startswith("/metrics"):
                    body, ctype = self.body(addr, hdr.get("accept", ""))
                elif path.startswith("/stats"):
                    body, ctype = json.dumps(self.stats()).encode(), "application/json"
                else:
                    body, ctype = b"ok\n", "text/plain"
                writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def stats(self):
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {"uptime_s": time.time() - self.t0, "cpu_s": ru.ru_utime + ru.ru_stime,
                "render_cpu_s": self.render_s, "scrapes": self.scrapes,
                "bytes_served": self.bytes, "max_rss_mib": ru.ru_maxrss / 1024}


def write_targets(fleet, port, mgr_port, out):
    out.mkdir(parents=True, exist_ok=True)
    groups = [{"targets": [f"{node_address(i)}:{port}"],
               "labels": {"host": f"fleet-{i:04d}"}} for i in range(fleet.nodes)]
    (out / "nodes.json").write_text(json.dumps(groups))
    if mgr_port:
        (out / "mgr.json").write_text(json.dumps([{"targets": [f"127.10.255.1:{mgr_port}"]}]))
    slow = sorted(f"osd.{n * fleet.per_node + k}" for n, k in fleet.slow.items())
    (out / "truth.json").write_text(json.dumps({
        "nodes": fleet.nodes, "osds_per_node": fleet.per_node, "slow_osds": slow,
        "slow_op_stage": SLOW_STAGE,
        "host": {"instance": f"{node_address(1)}:{port}", "name": "fleet-0001"},
        "osd": f"osd.{fleet.per_node + 4}",
        "fsids": sorted({fsid_of(i // fleet.per_cluster) for i in range(fleet.nodes)})}))


async def serve(server, nodes, port, mgr_port, duration):
    servers = [await asyncio.start_server(server.handle, node_address(i), port, backlog=64)
               for i in range(nodes)]
    if mgr_port:
        servers.append(await asyncio.start_server(server.handle, "127.10.255.1", mgr_port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), duration)
    except asyncio.TimeoutError:
        pass
    for s in servers:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--osds-per-node", type=int, default=24)
    ap.add_argument("--nodes-per-cluster", type=int, default=25)
    ap.add_argument("--port", type=int, default=9488)
    ap.add_argument("--mgr", type=int, default=0, help="port of the simulated ceph-mgr exporter")
    ap.add_argument("--slow", type=int, default=3, help="OSDs that count slow ops")
    ap.add_argument("--duration", type=float, default=3600, help="seconds, then exit")
    ap.add_argument("--targets-dir", type=Path, required=True)
    ap.add_argument("--check", action="store_true",
                    help="render node 0 once in both forms to stdout's sizes and exit")
    args = ap.parse_args()
    fleet = Fleet(args.nodes, args.osds_per_node, args.nodes_per_cluster, args.slow)
    server = Server(fleet, args.port, args.mgr)
    prep = server.prepare()
    write_targets(fleet, args.port, args.mgr, args.targets_dir)
    a0 = node_address(0)
    t = time.process_time()
    txt = render_text(server.text[a0], 1.0)
    t_text = time.process_time() - t
    t = time.process_time()
    pb = render_pb(server.pb[a0], 1.0)
    t_pb = time.process_time() - t
    print(json.dumps({"event": "ready", "nodes": args.nodes, "prepare_cpu_s": round(prep, 2),
                      "text_bytes_per_node": len(txt), "protobuf_bytes_per_node": len(pb),
                      "text_series_per_node": sum(1 for ln in txt.split(b"\n")
                                                  if ln and not ln.startswith(b"#")),
                      "render_cpu_ms_text": round(t_text * 1e3, 1),
                      "render_cpu_ms_protobuf": round(t_pb * 1e3, 1),
                      "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
          flush=True)
    if args.check:
        return 0
    asyncio.run(serve(server, args.nodes, args.port, args.mgr, args.duration))
    print(json.dumps({"event": "done", **server.stats()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
