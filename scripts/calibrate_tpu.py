#!/usr/bin/env python3
"""Fit of the TPU in-step constants on the published TPU runs, and its leave-one-family-out error
(docs/tpu.md "Calibration").

Three constants are fitted, each the same for every TPU generation: they describe XLA's TPU code
generation and the ICI DMA engines, while the generations differ in what the cost models already
price from Google's tables (peaks, MXU size, HBM, links, torus shape). The compute kernels are
priced as isolated kernels (scripts/fit_kernels.py on data/kernels) and what a step adds between
them is MaxText's kernel_gap_fraction (scripts/fit_frameworks.py):
  hbm_permute_fraction       MoE token gathers / scatters, fraction of HBM bandwidth (same block)
  comm_compute_interference  slowdown of the compute a per-layer collective or host copy hides
                             behind, per second hidden (same block)
  ici_bw_eff                 fraction of the ICI link rate collectives reach (network files)
Rule: the combination on the grid below with the smallest mean absolute throughput error over the
TPU runs of both calibration files.

Leave-one-family-out: for each model family the combination is refitted on the other families'
runs and that family's errors are recorded; the printed held-out MAPE is what the rule achieves on
families it did not see.

Memory: XLA's buffer-assignment overhead, fragmentation_upper_fraction (a fraction of the
activations, the transient working set and the gathered-weight window, accelerator files), has
only an upper bound in these runs: each ran, so its projected peak with the overhead must fit
the HBM. Rule: the largest fraction on a 0.01 grid at which every TPU run fits (each run's own
bound is the largest fraction at which it fits; the fit is their minimum). Leave-one-family-out:
the bound from the other families, and whether the held-out runs fit under it.
fragmentation_fraction (the point estimate, 0.02) is not fitted.

Usage: scripts/calibrate_tpu.py [--projector build/release/projector] [--write]
--write stores the fitted values in data/hardware. Standard library only; about 10 minutes.
"""
import argparse
import itertools
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
NETWORKS = ["tpu_v4_ici", "tpu_v5e_ici", "tpu_v5p_ici", "tpu_v6e_ici", "tpu7x_ici"]
GRID = {
    "hbm_permute_fraction": [0.15, 0.3, 0.5],
    "comm_compute_interference": [0.25, 0.5, 0.75, 1.0],
    "ici_bw_eff": [0.45, 0.6, 0.75],
}


def families():
    """run id -> model family, read from the runs files (a small line scan)."""
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
    if key == "ici_bw_eff":
        files = [os.path.join(data_dir, "hardware", "networks", n + ".yaml") for n in NETWORKS]
        pattern = r"(\n  ici_bw_eff: )[0-9.e-]+"
    else:
        files = [os.path.join(data_dir, "hardware", "accelerators", a + ".yaml") for a in TPUS]
        pattern = r"(\n  " + key + r": \{value: )[0-9.e-]+"
    for path in files:
        text = open(path).read()
        text = re.sub(pattern, lambda m: m.group(1) + repr(value), text, count=1)
        open(path, "w").write(text)


def tpu_runs_file(tmp):
    """The TPU entries of both runs files, in one file (validating only them is faster)."""
    kept = []
    for path in RUN_FILES:
        entries = re.split(r"\n(?=- id: )", open(path).read())
        kept += [e for e in entries
                 if e.startswith("- id: ") and re.search(r"\n    accelerator: .*TPU", e)]
    out = os.path.join(tmp, "tpu_runs.yaml")
    open(out, "w").write("\n".join(kept) + "\n")
    return out


MEMORY_GRID = [round(0.02 + 0.01 * i, 2) for i in range(19)]


def set_fragmentation(data_dir, value):
    for a in TPUS:
        path = os.path.join(data_dir, "hardware", "accelerators", a + ".yaml")
        text = open(path).read()
        for key in ("fragmentation_fraction", "fragmentation_upper_fraction"):
            text = re.sub(r"(\n  " + key + r": \{value: )[0-9.e-]+",
                          lambda m: m.group(1) + repr(value), text, count=1)
        open(path, "w").write(text)


def memory_bounds(projector, data_dir, runs):
    """run id -> the largest overhead fraction on MEMORY_GRID at which its peak fits."""
    original = {a: open(os.path.join(data_dir, "hardware", "accelerators", a + ".yaml")).read()
                for a in TPUS}
    bound = {}
    for f in MEMORY_GRID:
        set_fragmentation(data_dir, f)
        out = os.path.join(data_dir, "memory.json")
        subprocess.run([projector, "validate", runs, "--data-dir", data_dir, "--json", out],
                       check=False, capture_output=True)
        for r in json.load(open(out))["runs"]:
            if r["status"] != "ok":
                continue
            bound.setdefault(r["id"], 0.0)
            if not r["predicted"].get("out_of_memory", False):  # the peak grows with f
                bound[r["id"]] = max(bound[r["id"]], f)
    for a, text in original.items():
        open(os.path.join(data_dir, "hardware", "accelerators", a + ".yaml"), "w").write(text)
    return bound


def set_upper_fragmentation(data_dir, value):
    for a in TPUS:
        path = os.path.join(data_dir, "hardware", "accelerators", a + ".yaml")
        text = re.sub(r"(\n  fragmentation_upper_fraction: \{value: )[0-9.e-]+",
                      lambda m: m.group(1) + repr(value), open(path).read(), count=1)
        open(path, "w").write(text)


def validate(projector, data_dir, runs):
    """run id -> signed throughput error % of every compared TPU run."""
    out = os.path.join(data_dir, "report.json")
    subprocess.run([projector, "validate", runs, "--data-dir", data_dir, "--json", out],
                   check=False, capture_output=True)
    return {r["id"]: r["throughput_error_pct"] for r in json.load(open(out))["runs"]
            if r["status"] == "ok" and r.get("throughput_error_pct") is not None}


def mape(errs, ids):
    return statistics.mean(abs(errs[i]) for i in ids) if ids else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    fam = families()
    keys = list(GRID)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = os.path.join(tmp, "data")
        shutil.copytree(os.path.join(ROOT, "data"), data_dir)
        runs = tpu_runs_file(tmp)
        bound = memory_bounds(args.projector, data_dir, runs)
        grid = {}
        for combo in itertools.product(*(GRID[k] for k in keys)):
            for k, v in zip(keys, combo):
                set_value(data_dir, k, v)
            grid[combo] = validate(args.projector, data_dir, runs)
    ids = sorted(next(iter(grid.values())).keys())
    best = min(grid, key=lambda c: mape(grid[c], ids))
    errs = grid[best]
    print(f"fitted on {len(ids)} TPU runs: " + ", ".join(f"{k} {v}" for k, v in zip(keys, best)))
    for i in ids:
        print(f"  {i:<48} {fam.get(i, '?'):<42} {errs[i]:+7.1f}")
    print(f"in-sample MAPE {mape(errs, ids):.1f} %, max {max(abs(errs[i]) for i in ids):.1f} %")
    held = {}
    for f in sorted({fam.get(i, '?') for i in ids}):
        train = [i for i in ids if fam.get(i) != f]
        test = [i for i in ids if fam.get(i) == f]
        pick = min(grid, key=lambda c: mape(grid[c], train))
        for i in test:
            held[i] = grid[pick][i]
        print(f"  without {f:<42} fit {pick}: held-out "
              + ", ".join(f"{held[i]:+.1f}" for i in test))
    print(f"leave-one-family-out MAPE {mape(held, ids):.1f} %, "
          f"max {max(abs(v) for v in held.values()):.1f} %")
    upper = min(bound.values())
    print(f"fragmentation_upper_fraction {upper}: every TPU run fits up to it "
          f"(per-run bounds {min(bound.values())}-{max(bound.values())})")
    fails = 0
    for f in sorted({fam.get(i, '?') for i in bound}):
        others = [bound[i] for i in bound if fam.get(i) != f]
        b = min(others) if others else upper
        out = [i for i in bound if fam.get(i) == f and bound[i] < b]
        fails += len(out)
        print(f"  without {f:<42} bound {b}: held-out runs projected out of memory: {len(out)}")
    print(f"leave-one-family-out: {fails} of {len(bound)} runs projected out of memory")
    if args.write:
        for k, v in zip(keys, best):
            set_value(os.path.join(ROOT, "data"), k, v)
        set_upper_fragmentation(os.path.join(ROOT, "data"), upper)


if __name__ == "__main__":
    main()
