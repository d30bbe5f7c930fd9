#!/usr/bin/python3
"""Markdown tables of docs/fleet.md from the reports of fleet.py (--out FILE.json).

  table.py REPORT.json...
"""
import json
import sys


def fmt(x, unit=""):
    return f"{x:,.0f}{unit}"


def main(paths):
    reports = [json.loads(open(p).read()) for p in paths]
    print("| shape | form | server | head series | samples/s | RSS | CPU, share of a core "
          "| scrape duration p50 / max | slowest rule group / interval | slow-ops alert |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in reports:
        f = r["figures"]
        for name, s in f["servers"].items():
            worst = max(s["rule_groups"].items(), key=lambda g: g[1]["last_s"], default=None)
            sd = f["scrape_duration"].get(name, {})
            scrape = (f"{sd['p50_s'] * 1e3:,.0f} / {sd['max_s'] * 1e3:,.0f} ms"
                      if "p50_s" in sd else "-")
            rw = s.get("remote_write_samples_per_s")
            samples = fmt(s["samples_per_s"]) + (f" (sent {fmt(rw)})" if rw else "")
            print(f"| ({r['shape']}) {r['nodes']} nodes | {r['form']} | {name} | "
                  f"{fmt(s['head_series'])} | {samples} | {fmt(s['rss_mib'])} MiB | "
                  f"{s['cpu_share'] * 100:.0f}% | {scrape} | "
                  + (f"{worst[0]} {worst[1]['last_s']:.2f} s / {worst[1]['interval_s']:.0f} s"
                     if worst else "-")
                  + f" | {'fired for the ' + str(len(r['slow_osds'])) + ' slow OSDs only' if r['alerts_ok'] else 'FAILED'} |")
        print(f"|  |  | machine | CPU busy {f['machine_cpu_busy'] * 100:.0f}% of 2 cores; "
              f"simulator {f['simulator_cpu_share'] * 100:.1f}% of a core, RSS "
              f"{f['simulator_rss_mib']:,.0f} MiB |  |  |  |  |  |  |")
    print()
    print("| shape | form | server | scope | queries | p99 <= 1 s | median p50 | slowest p99 (panel) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in reports:
        qs = r["queries"]
        for server, scope in sorted({(x.get("server", "-"), x["scope"]) for x in qs}):
            q = sorted((x for x in qs if x.get("server", "-") == server and x["scope"] == scope),
                       key=lambda x: -x["p99_s"])
            p50 = sorted(x["p50_s"] for x in q)[len(q) // 2]
            ok = sum(1 for x in q if x["p99_s"] <= 1.0)
            print(f"| ({r['shape']}) {r['nodes']} | {r['form']} | {server} | {scope} | {len(q)} "
                  f"| {ok} | {p50 * 1e3:,.0f} ms | {q[0]['p99_s']:.2f} s ({q[0]['dashboard']}: "
                  f"{q[0]['panel']}) |")
    print()
    print("Over 1 s (p99 of the runs; a query slower than --give-up ran once):")
    for r in reports:
        for x in sorted(r["queries"], key=lambda x: -x["p99_s"]):
            if x["p99_s"] > 1.0:
                print(f"- ({r['shape']}) {r['form']} {x.get('server', '-')} {x['scope']}: "
                      f"{x['dashboard']}: {x['panel']}: p50 {x['p50_s']:.2f} s, p99 "
                      f"{x['p99_s']:.2f} s ({x.get('runs', r['runs'])} runs, {x['series']} series)")


if __name__ == "__main__":
    main(sys.argv[1:])
