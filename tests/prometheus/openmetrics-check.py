#!/usr/bin/python3
"""The daemon's OpenMetrics exposition, read by prometheus_client's strict OpenMetrics parser
(Debian's python3-prometheus-client): it must parse whole, hold every series the plain text
format holds (those present in a text scrape before it and one after), under the same names,
and its exemplars must be trace ids. Prints what it read.

  openmetrics-check.py PORT   (the daemon on 127.0.0.1:PORT)
"""
import re
import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

# What Prometheus 2.42 asks for without native histograms.
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
          "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def fetch(port, accept):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.headers.get("Content-Type", ""), r.read().decode()


def series(families):
    return {(s.name, tuple(sorted(s.labels.items()))) for f in families for s in f.samples}


def main():
    port = int(sys.argv[1])
    _, before = fetch(port, "text/plain")
    content_type, om = fetch(port, ACCEPT)
    _, after = fetch(port, "text/plain")
    if not content_type.startswith("application/openmetrics-text; version=1.0.0"):
        print(f"FAIL: Content-Type {content_type!r} for Prometheus' Accept")
        return 1
    try:
        families = list(parse_om(om))
    except ValueError as e:
        print(f"FAIL: the OpenMetrics parser refused the exposition: {e}")
        return 1
    om_series = series(families)
    text_series = series(parse_text(before)) & series(parse_text(after))
    missing = sorted(text_series - om_series)
    exemplars = [s.exemplar for f in families for s in f.samples if s.exemplar]
    bad = [e for e in exemplars if set(e.labels) != {"trace_id"} or
           not TRACE_ID.match(e.labels["trace_id"])]
    print(f"openmetrics: {len(families)} families, {len(om_series)} series "
          f"({len(text_series)} in both text scrapes), {len(exemplars)} exemplars")
    for e in exemplars[:3]:
        print(f"  exemplar {e.labels['trace_id']} {e.value} s at {e.timestamp}")
    if missing:
        print(f"FAIL: {len(missing)} text series missing from OpenMetrics, the first: {missing[:3]}")
    if bad:
        print(f"FAIL: exemplars without one trace_id label of 32 hex digits: {bad[:3]}")
    return 1 if missing or bad else 0


if __name__ == "__main__":
    sys.exit(main())
