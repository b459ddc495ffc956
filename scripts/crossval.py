#!/usr/bin/env python3
"""Two-fold cross-validation of the fitted in-step efficiencies (docs/validation.md).

For each fitted constant (A100 training_efficiency, H100 training_efficiency over bf16 runs,
H100 fp8_training_efficiency over fp8 runs) the runs it was fitted on are split in two folds by
sorted id (even / odd positions). The constant is refitted on one fold with the documented rule
(median signed throughput error 0, by bisection) and the other fold's errors are recorded. The
printed held-out MAPE is what the fit achieves on runs it did not see.

Usage: scripts/crossval.py [--projector build/release/projector]
Needs only the Python standard library; runs `projector validate` about 60 times (~1.5 min).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, "data", "validation", "calibration_runs.yaml")

# (label, accelerator file, calibration key, which runs: catalogue name and fp8 flag)
CONSTANTS = [
    ("A100 training_efficiency", "a100_80gb", "training_efficiency", ("a100_80gb", False)),
    ("H100 training_efficiency", "h100_sxm", "training_efficiency", ("h100_sxm", False)),
    ("H100 fp8_training_efficiency", "h100_sxm", "fp8_training_efficiency", ("h100_sxm", True)),
]


def read_value(data_dir, accel, key):
    text = open(os.path.join(data_dir, "hardware", "accelerators", accel + ".yaml")).read()
    return float(re.search(r"\n  " + key + r": \{value: ([0-9.]+)", text).group(1))


def write_value(data_dir, accel, key, value):
    path = os.path.join(data_dir, "hardware", "accelerators", accel + ".yaml")
    text = open(path).read()
    text = re.sub(r"(\n  " + key + r": \{value: )[0-9.]+", lambda m: m.group(1) + repr(value),
                  text, count=1)
    open(path, "w").write(text)


def validate(projector, data_dir):
    """run id -> (catalogue accelerator, fp8, signed throughput error %)."""
    out = os.path.join(data_dir, "report.json")
    subprocess.run([projector, "validate", RUNS, "--data-dir", data_dir, "--json", out],
                   check=False, capture_output=True)
    result = {}
    for r in json.load(open(out))["runs"]:
        if r["status"] != "ok" or r.get("throughput_error_pct") is None:
            continue
        accel = re.search(r"-> catalogue '([^']+)'", r["assumptions"][0]).group(1)
        result[r["id"]] = (accel, r["regime"]["fp8"], r["throughput_error_pct"])
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "data")
        shutil.copytree(os.path.join(ROOT, "data"), data_dir)
        base = validate(args.projector, data_dir)
        for label, accel, key, (cat, fp8) in CONSTANTS:
            fitted = read_value(data_dir, accel, key)
            ids = sorted(k for k, v in base.items() if v[0] == cat and v[1] == fp8)
            folds = [ids[0::2], ids[1::2]]
            held = []
            for i in (0, 1):
                train, test = folds[i], folds[1 - i]
                lo, hi = 0.5, 1.0  # the catalogue accepts (0, 1]
                for _ in range(10):  # the throughput error grows with the efficiency
                    mid = (lo + hi) / 2
                    write_value(data_dir, accel, key, mid)
                    errs = validate(args.projector, data_dir)
                    if statistics.median(errs[k][2] for k in train) > 0:
                        hi = mid
                    else:
                        lo = mid
                write_value(data_dir, accel, key, (lo + hi) / 2)
                errs = validate(args.projector, data_dir)
                held += [errs[k][2] for k in test]
                print(f"{label}: fold {i}: fitted {(lo + hi) / 2:.3f} on {len(train)} runs")
            write_value(data_dir, accel, key, fitted)
            inside = [base[k][2] for k in ids]
            print(f"{label}: {len(ids)} runs, in-sample MAPE {statistics.mean(map(abs, inside)):.1f} %"
                  f" (fitted {fitted}), held-out MAPE {statistics.mean(map(abs, held)):.1f} %,"
                  f" held-out max {max(map(abs, held)):.1f} %")


if __name__ == "__main__":
    main()
