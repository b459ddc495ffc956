#!/usr/bin/env python3
"""Trims a public Kineto / Chrome trace for use as a test fixture (tests/profile/data/README.md).

Every kept event is copied unchanged; only whole categories the profile reader ignores are dropped
(flow arrows, Python stack frames) and top-level keys not in --keep-keys (free-form metadata such as
environment dumps). Usage: trim_trace.py IN OUT.json.gz [--drop-cat CAT ...] [--keep-keys K ...]
"""
import argparse
import gzip
import json

DEFAULT_DROP = ["ac2g", "fwdbwd", "python_function"]
DEFAULT_KEYS = ["schemaVersion", "deviceProperties", "distributedInfo", "record_shapes",
                "profile_memory", "traceName", "displayTimeUnit", "baseTimeNanoseconds",
                "roctracer_version", "cupti_version", "cuda_runtime_version", "hip_runtime_version"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--drop-cat", nargs="*", default=DEFAULT_DROP)
    ap.add_argument("--keep-keys", nargs="*", default=DEFAULT_KEYS)
    a = ap.parse_args()
    opener = gzip.open if a.src.endswith(".gz") else open
    with opener(a.src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kept = [e for e in events if e.get("cat") not in set(a.drop_cat)]
    out = {k: doc[k] for k in a.keep_keys if isinstance(doc, dict) and k in doc}
    out["traceEvents"] = kept
    with gzip.open(a.dst, "wt", compresslevel=9) as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"{a.src}: kept {len(kept)} of {len(events)} events")


if __name__ == "__main__":
    main()
