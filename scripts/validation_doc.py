#!/usr/bin/env python3
"""Regenerate the result blocks of docs/validation.md from this build.

Each block sits between `<!-- results: FILE -->` and `<!-- /results -->` and holds the summary
table `projector validate data/validation/FILE.yaml` prints, followed by one line per run (signed
throughput error, the metric compared, the peak-memory error where the source measured it, and
whether the run was projected out of memory although it ran). Text outside the markers is kept.

Usage: scripts/validation_doc.py [--projector build/release/projector] [--check]
  --check  exit 1 when the document differs from what this build prints (nothing written)
Needs only the Python standard library.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "validation.md")
BLOCK = re.compile(r"(<!-- results: ([a-z_0-9]+) -->\n)(.*?)(<!-- /results -->)", re.S)


def summary_lines(text):
    """The summary part of the text report: from the 'N runs:' line to the end."""
    lines = text.rstrip("\n").split("\n")
    for i, line in enumerate(lines):
        if re.match(r"^\d+ runs: ", line):
            return lines[i:]
    raise SystemExit("projector validate printed no summary")


def run_lines(report):
    out = []
    for r in report["runs"]:
        rid = r["id"][:58]
        if r["status"] != "ok":
            out.append(f"{rid:<58} {r['status']}")
            continue
        err = r.get("throughput_error_pct")
        basis = (r.get("throughput_basis") or "").split(" ")[0]
        line = f"{rid:<58} {err:+7.1f}  {basis:<24}"
        mem = r.get("memory_error_pct")
        if mem is not None:
            line += f" mem {mem:+6.1f}"
        if (r.get("predicted") or {}).get("out_of_memory"):
            line += "  projected OOM"
        cp = r.get("config_path")
        if cp is not None:  # the user's path: the run's own framework config
            cerr = cp.get("throughput_error_pct")
            line += f"  config {cerr:+7.1f}" if cerr is not None else f"  config {cp['status']}"
        out.append(line.rstrip())
    return out


def block_for(projector, name):
    path = os.path.join(ROOT, "data", "validation", name + ".yaml")
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "v.json")
        proc = subprocess.run([projector, "validate", path, "--json", js], capture_output=True,
                              text=True, check=False)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"projector validate {name}: exit {proc.returncode}\n{proc.stderr}")
        with open(js) as f:
            report = json.load(f)
    body = summary_lines(proc.stdout) + [""] + run_lines(report)
    return "```\n" + "\n".join(body) + "\n```\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    with open(DOC) as f:
        doc = f.read()
    new = BLOCK.sub(lambda m: m.group(1) + block_for(args.projector, m.group(2)) + m.group(4), doc)
    if args.check:
        sys.exit(0 if new == doc else 1)
    if new != doc:
        with open(DOC, "w") as f:
            f.write(new)


if __name__ == "__main__":
    main()
