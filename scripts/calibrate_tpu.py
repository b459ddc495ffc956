#!/usr/bin/env python3
"""Fit of the TPU in-step efficiencies on the published TPU runs, and its leave-one-family-out error
(docs/tpu.md "Calibration").

The TPU calibration has two fitted constants, each the same for every TPU generation (they are
properties of XLA's TPU code generation, the generations differing in what the cost models already
price: peaks, MXU size, HBM, ICI): `training_efficiency` (compute-bound kernels inside a training
step relative to the large-GEMM fraction) and `hbm_permute_fraction` (the MoE token gathers and
scatters). Rule: the pair on a grid (efficiency 0.60..1.00 by 0.02, permute fraction 0.05..0.80)
that minimises the mean absolute throughput error over the TPU runs of both calibration files.

Leave-one-family-out: for each model family the pair is refitted on the other families' runs and
that family's errors are recorded; the printed held-out MAPE is what the rule achieves on families
it did not see.

Usage: scripts/calibrate_tpu.py [--projector build/release/projector] [--write]
--write stores the fitted pair in data/hardware/accelerators/tpu*.yaml. Standard library only.
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
RUN_FILES = [os.path.join(ROOT, "data", "validation", f)
             for f in ("calibration_runs.yaml", "calibration_runs_moe_tpu.yaml")]
TPUS = ["tpu_v4", "tpu_v5e", "tpu_v5p", "tpu_v6e"]  # tpu7x borrows tpu_v5p's calibration
EFFICIENCIES = [round(0.60 + 0.02 * i, 2) for i in range(21)]
PERMUTE = [0.05, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8]


def families():
    """run id -> model family, read from the runs files (a tiny YAML scan)."""
    out = {}
    for path in RUN_FILES:
        run = None
        in_model = False
        for line in open(path):
            m = re.match(r"^- id: (\S+)", line)
            if m:
                run, in_model = m.group(1), False
            elif re.match(r"^  model:", line):
                in_model = True
            elif re.match(r"^  \S", line):
                in_model = False
            elif in_model and run and re.match(r"^    family: ", line):
                out[run] = line.split(":", 1)[1].strip()
    return out


def set_value(data_dir, key, value):
    for accel in TPUS:
        path = os.path.join(data_dir, "hardware", "accelerators", accel + ".yaml")
        text = open(path).read()
        text = re.sub(r"(\n  " + key + r": \{value: )[0-9.e-]+", lambda m: m.group(1) + repr(value),
                      text, count=1)
        open(path, "w").write(text)


def tpu_runs_file(tmp):
    """The TPU entries of both runs files, in one file (validating only them is faster)."""
    kept = []
    for path in RUN_FILES:
        entries = re.split(r"\n(?=- id: )", open(path).read())
        kept += [e for e in entries if e.startswith("- id: ") and
                 re.search(r"\n    accelerator: .*TPU", e)]
    out = os.path.join(tmp, "tpu_runs.yaml")
    open(out, "w").write("\n".join(kept) + "\n")
    return out


def validate(projector, data_dir, runs):
    """run id -> signed throughput error % of every compared TPU run."""
    result = {}
    for path in [runs]:
        out = os.path.join(data_dir, "report.json")
        subprocess.run([projector, "validate", path, "--data-dir", data_dir, "--json", out],
                       check=False, capture_output=True)
        for r in json.load(open(out))["runs"]:
            if r["status"] == "ok" and r.get("throughput_error_pct") is not None and \
                    r["regime"]["accelerator_family"] == "TPU":
                result[r["id"]] = r["throughput_error_pct"]
    return result


def mape(errs, ids):
    return statistics.mean(abs(errs[i]) for i in ids) if ids else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    fam = families()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "data")
        shutil.copytree(os.path.join(ROOT, "data"), data_dir)
        runs = tpu_runs_file(tmp)
        grid = {}
        for eff in EFFICIENCIES:
            set_value(data_dir, "training_efficiency", eff)
            for perm in PERMUTE:
                set_value(data_dir, "hbm_permute_fraction", perm)
                grid[(eff, perm)] = validate(args.projector, data_dir, runs)
    ids = sorted(next(iter(grid.values())).keys())
    best = min(grid, key=lambda k: mape(grid[k], ids))
    errs = grid[best]
    print(f"fitted on {len(ids)} TPU runs: training_efficiency {best[0]}, "
          f"hbm_permute_fraction {best[1]}")
    for i in ids:
        print(f"  {i:<48} {fam.get(i, '?'):<28} {errs[i]:+7.1f}")
    print(f"in-sample MAPE {mape(errs, ids):.1f} %, max {max(abs(errs[i]) for i in ids):.1f} %")
    held = {}
    for f in sorted({fam.get(i, '?') for i in ids}):
        train = [i for i in ids if fam.get(i) != f]
        test = [i for i in ids if fam.get(i) == f]
        pick = min(grid, key=lambda k: mape(grid[k], train))
        for i in test:
            held[i] = grid[pick][i]
        print(f"  without {f:<28} fit {pick}: held-out {', '.join(f'{held[i]:+.1f}' for i in test)}")
    print(f"leave-one-family-out MAPE {mape(held, ids):.1f} %, max "
          f"{max(abs(v) for v in held.values()):.1f} %")
    if args.write:
        set_value(os.path.join(ROOT, "data"), "training_efficiency", best[0])
        set_value(os.path.join(ROOT, "data"), "hbm_permute_fraction", best[1])


if __name__ == "__main__":
    main()
