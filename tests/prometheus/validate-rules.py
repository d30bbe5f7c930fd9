#!/usr/bin/env python3
"""Checks cephscope's alert rules the way ceph-mixin's validate_rules does: every alert has the
labels (severity, type) and annotations (summary, description, documentation) it must have,
its documentation points at a section of docs/runbooks.md, and tests/prometheus/alerts.test.yml
holds a firing and a quiet case for it. Exit 1 with one line per problem."""
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "dashboards/rules/cephscope-alerts.yml"
TESTS = ROOT / "tests/prometheus/alerts.test.yml"
RUNBOOKS = ROOT / "docs/runbooks.md"
DOC_PREFIX = "https://github.com/cephscope/cephscope/blob/main/docs/runbooks.md#"
SEVERITIES = {"critical", "warning", "info"}


def anchors(markdown: str) -> set:
    """GitHub's anchors of the markdown's headings."""
    out = set()
    for line in markdown.splitlines():
        m = re.match(r"^#+\s+(.*)$", line)
        if m:
            text = m.group(1).strip().lower()
            out.add(re.sub(r"[^a-z0-9 _-]", "", text).replace(" ", "-"))
    return out


def main() -> int:
    problems = []
    rules = yaml.safe_load(ALERTS.read_text())
    tests = yaml.safe_load(TESTS.read_text())
    sections = anchors(RUNBOOKS.read_text())
    firing, quiet = set(), set()
    for case in tests.get("tests", []):
        for t in case.get("alert_rule_test", []):
            (firing if t.get("exp_alerts") else quiet).add(t["alertname"])
    names = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" not in rule:
                continue
            name = rule["alert"]
            names.append(name)
            labels = rule.get("labels", {})
            notes = rule.get("annotations", {})
            if labels.get("severity") not in SEVERITIES:
                problems.append(f"{name}: label severity must be one of {sorted(SEVERITIES)}")
            if not labels.get("type"):
                problems.append(f"{name}: label type is missing")
            for key in ("summary", "description", "documentation"):
                if not notes.get(key):
                    problems.append(f"{name}: annotation {key} is missing")
            doc = notes.get("documentation", "")
            if not doc.startswith(DOC_PREFIX):
                problems.append(f"{name}: documentation must point into docs/runbooks.md")
            elif doc[len(DOC_PREFIX):] not in sections:
                problems.append(f"{name}: docs/runbooks.md has no section #{doc[len(DOC_PREFIX):]}")
            if name not in firing:
                problems.append(f"{name}: no firing case in {TESTS.name}")
            if name not in quiet:
                problems.append(f"{name}: no quiet case in {TESTS.name}")
    if len(set(names)) != len(names):
        problems.append("alert names are not unique")
    for name in sorted((firing | quiet) - set(names)):
        problems.append(f"{TESTS.name} tests {name}, which is not an alert")
    for p in problems:
        print(f"validate-rules: {p}", file=sys.stderr)
    print(f"validate-rules: {len(names)} alerts, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
