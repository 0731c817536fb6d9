#!/usr/bin/env python3
"""Checks the Grafana dashboard (run by `make check-monitoring`).

usage: check-dashboard.py DASHBOARD.json [--doc docs/metrics.md] [--rules RULES.yml ...]

- the dashboard is valid JSON with panels, unique panel ids, a grid position
  and a data source for every panel that has queries;
- every query (panel targets and template variables) parses as PromQL: each
  becomes a recording rule, Grafana's variables replaced by plain values, and
  `promtool check rules` reads the file;
- with --doc, every rhi_* metric named by the dashboard (and by the --rules
  files) is documented in that file, so a misspelt metric, which PromQL
  parses happily and which shows as an empty panel, fails here.

Exit 0 when everything holds; 1 with one line per problem otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# Grafana's variables, replaced by values that keep the query's meaning
# for the parser: intervals by a duration, label values by a regex.
VARIABLES = [
    (re.compile(r"\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}"), "1m"),
    (re.compile(r"\$__(interval_ms|range_s|range_ms)\b"), "60"),
    (re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?"), ".*"),
]
LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", re.S)
METRIC = re.compile(r"\brhi_[a-z0-9_]*[a-z0-9]")
SUFFIXES = ("_bucket", "_count", "_sum")


def substitute(expr):
    for pattern, value in VARIABLES:
        expr = pattern.sub(value, expr)
    return expr


def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []))


def queries(dash, problems):
    """Yields (where, expr) for every PromQL query of the dashboard."""
    ids = {}
    for p in walk(dash.get("panels", [])):
        title = p.get("title", "?")
        pid = p.get("id")
        if pid is None:
            problems.append(f"panel {title!r}: no id")
        elif pid in ids:
            problems.append(f"panel {title!r}: id {pid} also used by {ids[pid]!r}")
        else:
            ids[pid] = title
        if "gridPos" not in p:
            problems.append(f"panel {title!r}: no gridPos")
        targets = p.get("targets", [])
        if p.get("type") != "row" and not targets:
            problems.append(f"panel {title!r}: no queries")
        if targets and not p.get("datasource"):
            problems.append(f"panel {title!r}: no datasource")
        for t in targets:
            expr = t.get("expr", "")
            if not expr.strip():
                problems.append(f"panel {title!r} query {t.get('refId')}: empty expr")
                continue
            yield f"panel {pid} {title!r} query {t.get('refId')}", expr
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = LABEL_VALUES.match(q)
        if m:
            q = m.group(1)
        yield f"variable {v.get('name')!r}", q


def check_promql(exprs, promtool):
    """Runs every expression through `promtool check rules` as a recording
    rule; returns promtool's complaint, or "" when all parse."""
    lines = ["groups:", "  - name: dashboard", "    rules:"]
    for i, (where, expr) in enumerate(exprs):
        lines.append(f"      # {where}")
        lines.append(f"      - record: dashboard:query_{i}")
        lines.append(f"        expr: {json.dumps(substitute(expr))}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        out = (r.stdout + r.stderr).strip()
        # Name the query behind each "dashboard:query_N" in the message.
        return re.sub(r"dashboard:query_(\d+)", lambda m: exprs[int(m.group(1))][0], out)
    return ""


def documented(doc_path):
    with open(doc_path, encoding="utf-8") as f:
        return set(re.findall(r"`(rhi_[a-z0-9_]+)`", f.read()))


def base(metric):
    for s in SUFFIXES:
        if metric.endswith(s):
            return metric[: -len(s)]
    return metric


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("--doc", help="metrics reference that must name every rhi_* metric used")
    ap.add_argument("--rules", action="append", default=[], help="alert rules whose metrics --doc must name")
    ap.add_argument("--promtool", default="promtool")
    a = ap.parse_args()

    problems = []
    try:
        with open(a.dashboard, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{a.dashboard}: {e}", file=sys.stderr)
        return 1
    if not isinstance(dash, dict) or not dash.get("panels"):
        print(f"{a.dashboard}: not a dashboard (no panels)", file=sys.stderr)
        return 1
    exprs = list(queries(dash, problems))
    if exprs:
        complaint = check_promql(exprs, a.promtool)
        if complaint:
            problems.append("queries that do not parse:\n" + complaint)

    if a.doc:
        known = documented(a.doc)
        used = {}
        for where, expr in exprs:
            for m in METRIC.findall(expr):
                used.setdefault(base(m), where)
        for path in a.rules:
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if line.lstrip().startswith("#") or "expr:" not in line:
                        continue
                    for m in METRIC.findall(line):
                        used.setdefault(base(m), f"{path}:{n}")
        for m, where in sorted(used.items()):
            if m not in known:
                problems.append(f"{where}: metric {m} is not documented in {a.doc}")

    for p in problems:
        print(f"{a.dashboard}: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"{a.dashboard}: valid JSON, {len(exprs)} queries parse" + (f", every rhi_* metric in {a.doc}" if a.doc else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
