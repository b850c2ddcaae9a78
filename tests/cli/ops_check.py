#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Checks of barrierctl's machine-readable output, with Debian's parsers (test_barrierctl_ops.sh).

  ops_check.py schema SCHEMA FILE HEALTH   status --json against docs/status.schema.json;
                                           HEALTH is the expected health, or "error"
  ops_check.py metrics FILE NCPU up|down   metrics through prometheus_client's OpenMetrics parser

Exit 0 when every check holds, 1 with one line per problem otherwise.
"""
import json
import math
import sys

import jsonschema
from prometheus_client.openmetrics.parser import text_string_to_metric_families


def declared_keys(schema, defs_name):
    """Every property name the schema declares for one of its $defs, nested objects included."""
    names = set()

    def walk(node):
        if isinstance(node, dict):
            names.update(node.get("properties", {}).keys())
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema["$defs"][defs_name])
    return names


def used_keys(doc):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from used_keys(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from used_keys(v)


def check_schema(schema_path, doc_path, health):
    schema = json.load(open(schema_path))
    doc = json.load(open(doc_path))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    bad = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
           for e in cls(schema).iter_errors(doc)]
    # The schema lets readers expect additions; what we print must still all be documented.
    kind = "error" if health == "error" else "status"
    extra = set(used_keys(doc)) - declared_keys(schema, kind)
    if extra:
        bad.append(f"fields not in the schema: {sorted(extra)}")
    if health == "error":
        if "error" not in doc:
            bad.append("no error field")
    elif doc.get("health") != health:
        bad.append(f"health {doc.get('health')!r}, want {health!r}")
    return bad


def check_metrics(path, ncpu, want):
    text = open(path).read()
    bad = []
    if not text.endswith("# EOF\n"):
        bad.append("the text does not end with '# EOF'")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    up = fams.get("barrierd_up")
    if not up or len(up.samples) != 1:
        return bad + ["no barrierd_up sample"]
    if want == "down":
        if up.samples[0].value != 0 or len(fams) != 1:
            bad.append(f"a stopped or missing daemon: want barrierd_up 0 alone, got {sorted(fams)}")
        return bad
    if up.samples[0].value != 1:
        bad.append("barrierd_up is not 1")
    need = ["barrierd_heartbeat_age_seconds", "barrierd_heartbeat_period_seconds",
            "barrierd_lagging_cpus", "barrierd_passes", "barrierd_credit_passes",
            "barrierd_doorbell_rings", "barrierd_nudges", "barrierd_cpu_credits",
            "barrierd_cpu_lag_seconds", "barrierd_cpus", "barrierd_daemon_cpu_seconds"]
    bad += [f"no family {n}" for n in need if n not in fams]
    for f in fams.values():
        if not f.documentation:
            bad.append(f"{f.name}: no HELP")
        if f.name.endswith("_seconds") and f.unit != "seconds":
            bad.append(f"{f.name}: no UNIT seconds")
        for s in f.samples:
            if not math.isfinite(s.value) or s.value < 0:
                bad.append(f"{s.name}{s.labels}: {s.value} is not a finite value >= 0")
            if f.type == "counter" and not s.name.endswith("_total"):
                bad.append(f"counter sample {s.name} without _total")
    if bad:
        return bad
    one = {n: fams[n].samples[0].value for n in need if len(fams[n].samples) == 1}
    period = one["barrierd_heartbeat_period_seconds"]
    if not 0 < period <= 60 or one["barrierd_heartbeat_age_seconds"] > 3 * period:
        bad.append(f"heartbeat age {one['barrierd_heartbeat_age_seconds']} s against a live "
                   f"daemon's period {period} s")
    if one["barrierd_lagging_cpus"] > ncpu:
        bad.append(f"{one['barrierd_lagging_cpus']} lagging CPUs of {ncpu}")
    if one["barrierd_credit_passes"] > one["barrierd_passes"] or one["barrierd_passes"] < 1:
        bad.append("credit passes above passes, or no pass at all")
    cpus = [str(c) for c in range(ncpu)]
    credits = {(s.labels["cpu"], s.labels["kind"]) for s in fams["barrierd_cpu_credits"].samples}
    want_credits = {(c, k) for c in cpus for k in ("event", "idle", "offline")}
    if credits != want_credits:
        bad.append(f"per-CPU credits: missing {sorted(want_credits - credits)}, "
                   f"extra {sorted(credits - want_credits)}")
    lags = sorted(s.labels["cpu"] for s in fams["barrierd_cpu_lag_seconds"].samples)
    if lags != sorted(cpus):
        bad.append(f"per-CPU lags for CPUs {lags}, want {cpus}")
    if sum(s.value for s in fams["barrierd_cpus"].samples) != ncpu:
        bad.append("barrierd_cpus{state} does not add up to the CPUs")
    modes = sorted(s.labels.get("mode") for s in fams["barrierd_daemon_cpu_seconds"].samples)
    if modes != ["system", "user"]:
        bad.append(f"daemon CPU time by mode {modes}")
    return bad


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "schema":
        bad = check_schema(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "metrics":
        bad = check_metrics(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for b in bad:
        print(f"  {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
