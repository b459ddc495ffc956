#!/usr/bin/env python3
"""Fit each framework profile's one end-to-end constant, kernel_gap_fraction (the share of the
compute stream spent between kernels), on the published runs of data/validation, and report the
fit in-sample and leave-one-family-out (docs/validation.md).

Every op cost is an isolated-kernel price (scripts/fit_kernels.py on data/kernels); what a training
step adds between kernels -- launch latency, host-side Python and synchronisation, allocator calls
-- is the framework's. Rule: for each profile, the gap whose median signed tokens/s error over the
profile's compared runs is 0 (linear interpolation on a 0.01 grid over [0, 0.40]), pooled
partially: the profile's own fit, weighted by its number of families n, is averaged with the fit
over every run of the same execution model (eager PyTorch profiles together, XLA profiles
together), weighted as w families. w is estimated from the runs (empirical Bayes, method of
moments): each family's own fit scatters around its profile's with variance s2 (pooled over the
profiles with two or more families), and the profiles' fits scatter around each other with
variance tau2 + s2 / n_h (n_h: the harmonic mean of the family counts), so the weight a profile's
mean deserves against the pool is n / s2 : 1 / tau2, i.e. w = s2 / tau2 (no tau2 left: the pool
alone; too few profiles or families to estimate it: w = 1). A profile resting on one or two
families (Megatron-DeepSpeed: vTrain's nine runs and BLOOM's one) so leans on what every
framework of its kind measures as far as the spread of families says it should. Runs marked
exclude_from_statistics take no part. A family is one source's runs of one model; the
leave-one-family-out error of a run is its error with the fits and w made without its family.
A profile with no runs keeps no constant (0: kernels back to back) and says so.

The same leave-one-family-out errors are the residuals behind every projection's calibrated 80 %
range (interval/interval.h): --residuals writes them, with each run's regime and family and its
peak-memory error, to data/validation/residuals.json; --check-residuals fails when that file is
stale (a ctest). Last, it prints the peak-memory errors of the runs that publish a peak, in-sample
and leave-one-family-out (those runs scored without the accelerator constants fitted on them,
MEMORY_FITTED).

Usage: scripts/fit_frameworks.py [--projector build/release/projector] [--write] [--residuals]
                                 [--check-residuals] [--self-test]
  --write: store the in-sample fits in data/frameworks/<profile>.yaml
  --check-residuals: also fails when a profile's shipped gap is not this fit
  --self-test: the fitting rules on hand-made runs (no projector needed)
Needs only the Python standard library; runs `projector validate` 41 x 3 + 2 x 3 times (~1-2 min).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = ["calibration_runs.yaml", "calibration_runs_moe_tpu.yaml", "calibration_runs_4.yaml"]
GRID = [i / 100.0 for i in range(0, 41)]
FIXED = {"torchrec"}  # fitted with its host model by tests/validate/recsys_fit_test.cpp


def set_gap(path, value, source):
    text = open(path).read()
    entry = ("  kernel_gap_fraction:\n    value: %s\n    source: \"%s\"\n" % (repr(value), source))
    pat = re.compile(r"^  kernel_gap_fraction:\n    value: .*\n    source: .*\n", re.M)
    if pat.search(text):
        text = pat.sub(lambda _m: entry, text, count=1)
    else:
        text = text.replace("\ndefaults:\n", "\ndefaults:\n" + entry, 1)
    open(path, "w").write(text)


def profiles(data_dir):
    d = os.path.join(data_dir, "frameworks")
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml") and f[:-5] not in FIXED)


def sweep(projector, data_dir):
    """run id -> {framework, family, regime, errors: [error % at each grid gap]}."""
    scratch = tempfile.mkdtemp()
    data = os.path.join(scratch, "data")
    shutil.copytree(data_dir, data)
    runs = {}
    for g in GRID:
        for p in profiles(data):
            set_gap(os.path.join(data, "frameworks", p + ".yaml"), g, "grid")
        for f in FILES:
            out = os.path.join(scratch, "v.json")
            subprocess.run([projector, "validate", os.path.join(data_dir, "validation", f),
                            "--data-dir", data, "--json", out], capture_output=True, check=False)
            for r in json.load(open(out))["runs"]:
                if r["status"] != "ok" or r.get("throughput_error_pct") is None:
                    continue
                if r.get("excluded_from_statistics"):
                    continue
                e = runs.setdefault(f + ":" + r["id"], {
                    "file": f, "id": r["id"], "framework": r["framework"],
                    "family": r["family"], "regime": r["regime"], "errors": [],
                    "memory": r.get("memory_error_pct")})
                e["errors"].append(r["throughput_error_pct"])
    shutil.rmtree(scratch)
    return {k: v for k, v in runs.items() if len(v["errors"]) == len(GRID)}


MEMORY_FITTED = ("fragmentation_expandable_fraction", "fragmentation_expandable_upper_fraction")


def memory_errors(projector, data_dir, without_fitted):
    """(file, run id) -> peak-memory error % of every run that publishes a peak. With
    `without_fitted`, the accelerator constants fitted on published peaks (MEMORY_FITTED: the
    expandable-segment residuals, fitted on torchtitan's H100 runs, the only published reserved
    peaks with expandable segments) are removed, so the fixed-segment residual applies: each run
    they were fitted on is scored without them, leave-one-family-out."""
    scratch = tempfile.mkdtemp()
    data = os.path.join(scratch, "data")
    shutil.copytree(data_dir, data)
    if without_fitted:
        acc = os.path.join(data, "hardware", "accelerators")
        for f in os.listdir(acc):
            path = os.path.join(acc, f)
            text = open(path).read()
            for key in MEMORY_FITTED:
                text = re.sub(r"(^\s*" + key + r": \{value: )[0-9.eE+-]+", r"\g<1>0", text,
                              flags=re.M)
            open(path, "w").write(text)
    out = {}
    for f in FILES:
        js = os.path.join(scratch, "m.json")
        subprocess.run([projector, "validate", os.path.join(data_dir, "validation", f),
                        "--data-dir", data, "--json", js], capture_output=True, check=False)
        for r in json.load(open(js))["runs"]:
            if r.get("memory_error_pct") is not None and not r.get("excluded_from_statistics"):
                out[(f, r["id"])] = r["memory_error_pct"]
    shutil.rmtree(scratch)
    return out


def print_memory(projector, data_dir):
    ins = memory_errors(projector, data_dir, False)
    lofo = memory_errors(projector, data_dir, True)
    print(f"\npeak memory, {len(ins)} published peaks (error %: leave-one-family-out / in-sample)")
    for k in sorted(ins):
        print(f"  {k[0] + ':' + k[1]:<80} {lofo.get(k, float('nan')):+6.1f} {ins[k]:+6.1f}")
    if ins:
        print(f"  MAPE leave-one-family-out {statistics.mean(abs(v) for v in lofo.values()):.1f} %,"
              f" in-sample {statistics.mean(abs(v) for v in ins.values()):.1f} %")


def fit_gap(members):
    """Gap with median signed error 0 over `members` (interpolated); 0 when none."""
    if not members:
        return 0.0
    med = [statistics.median(m["errors"][i] for m in members) for i in range(len(GRID))]
    for i in range(len(GRID) - 1):
        if med[i] >= 0.0 >= med[i + 1]:
            t = med[i] / (med[i] - med[i + 1]) if med[i] != med[i + 1] else 0.0
            return GRID[i] + t * (GRID[i + 1] - GRID[i])
    return GRID[0] if med[0] < 0.0 else GRID[-1]


POOL_WEIGHT_FALLBACK = 1.0  # w when the spread of families cannot be estimated


def pool_weight(runs):
    """w = s2 / tau2 over `runs` (one execution model; see the module docstring)."""
    by_profile = {}
    for r in runs:
        by_profile.setdefault(r["framework"], {}).setdefault(r["family"], []).append(r)
    fits = [[fit_gap(f) for f in fams.values()] for fams in by_profile.values()]
    multi = [v for v in fits if len(v) >= 2]
    dof = sum(len(v) - 1 for v in multi)
    if len(fits) < 2 or dof == 0:
        return POOL_WEIGHT_FALLBACK
    s2 = sum((x - statistics.mean(v)) ** 2 for v in multi for x in v) / dof
    n_h = len(fits) / sum(1.0 / len(v) for v in fits)
    tau2 = statistics.pvariance([statistics.mean(v) for v in fits]) - s2 / n_h
    return float("inf") if tau2 <= 0.0 else s2 / tau2


def execution_model(data_dir, profile):
    """'XLA' for profiles whose back-end compiles the whole step (MaxText), else 'eager-PyTorch'."""
    text = open(os.path.join(data_dir, "frameworks", profile + ".yaml")).read()
    m = re.search(r"^backend:\s*(\S+)", text, re.M)
    return "XLA" if m and m.group(1) == "maxtext" else "eager-PyTorch"


def pooled_gap(own, pool, weight):
    """Partial pooling of a profile's fit on `own` toward the fit on `pool` (both run lists),
    the pool counting as `weight` families."""
    if not own:
        return 0.0
    if weight == float("inf"):
        return fit_gap(pool)
    n = len({m["family"] for m in own})
    return (n * fit_gap(own) + weight * fit_gap(pool)) / (n + weight)


def error_at(run, gap):
    x = gap / (GRID[1] - GRID[0])
    i = min(int(x), len(GRID) - 2)
    t = x - i
    return run["errors"][i] * (1 - t) + run["errors"][i + 1] * t


def regime(run):
    r = run["regime"]
    out = ["all", "moe" if r["moe"] else "dense", r["accelerator_family"]]
    if r["accelerator_family"] == "TPU":
        out.append("tpu")
    return out + ["file " + run["file"]]


def residual_doc(runs, lofo_errors):
    out = []
    for key in sorted(runs):
        r = runs[key]
        mem = r["memory"]
        out.append({"file": r["file"], "id": r["id"], "family": r["family"],
                    "regime": r["regime"]["key"],
                    "throughput_residual_pct": round(lofo_errors[key], 2),
                    "memory_residual_pct": None if mem is None else round(mem, 2)})
    return {"schema_version": 1,
            "generated_by": "scripts/fit_frameworks.py --residuals",
            "metric": "100 x (predicted / measured - 1): tokens/s/GPU leave-one-family-out "
                      "(the framework's kernel_gap_fraction, its own fit and the pooled fit it "
                      "is averaged with, both made without the run's family), peak memory as "
                      "projected",
            "runs": out}


def self_test():
    """The fitting rules on runs made by hand (a ctest): each run's error falls 100 points per
    unit gap, so a run `zero`-ing at gap z has error 100 (z - g) %."""
    def run(family, z):
        return {"family": family, "errors": [100.0 * (z - g) for g in GRID]}
    a1, a2, b, c = run("A", 0.10), run("A", 0.10), run("B", 0.20), run("C", 0.30)
    p1, p2 = dict(run("P1", 0.05), framework="P"), dict(run("P2", 0.15), framework="P")
    q1, q2 = dict(run("Q1", 0.25), framework="Q"), dict(run("Q2", 0.35), framework="Q")
    checks = [
        # Median over runs: two runs of A and one of B -> A's zero.
        ("own fit", fit_gap([a1, a2, b]), 0.10),
        # Four runs A, A, B, C: the median is the mean of A and B, zero at 0.15.
        ("pooled fit", fit_gap([a1, a2, b, c]), 0.15),
        # Two families weigh 2 : 1 against the pool: (2 x 0.10 + 0.15) / 3.
        ("partial pooling", pooled_gap([a1, a2, b], [a1, a2, b, c], 1.0), 0.35 / 3.0),
        # One family against the pool: (0.30 + 0.15) / 2.
        ("one family", pooled_gap([c], [a1, a2, b, c], 1.0), 0.225),
        ("no runs", pooled_gap([], [a1, b], 1.0), 0.0),
        ("no spread between profiles", pooled_gap([c], [a1, a2, b, c], float("inf")), 0.15),
        # Profile P's families zero at 0.05 and 0.15, Q's at 0.25 and 0.35: s2 = (4 x 0.05^2) / 2
        # = 0.005; the profile means 0.10 and 0.30 have variance 0.01, less s2 / 2 -> tau2 =
        # 0.0075; w = 0.005 / 0.0075 = 2 / 3.
        ("weight", pool_weight([p1, p2, q1, q2]), 2.0 / 3.0),
        # One profile only: nothing to compare with, the fallback.
        ("weight, one profile", pool_weight([p1, p2]), 1.0),
        # Profiles that differ less than their families do: the pool alone.
        ("weight, no tau2", pool_weight([p1, q1, dict(p2, framework="Q"), dict(q2, framework="P")]),
         float("inf")),
    ]
    bad = [(n, got, want) for n, got, want in checks
           if not (got == want or abs(got - want) <= 1e-9)]
    for n, got, want in bad:
        print(f"self-test {n}: {got:.6f}, expected {want:.6f}")
    return 1 if bad else 0


def check_gaps(data_dir, gaps):
    """1 when a profile's shipped kernel_gap_fraction is not this fit (rounded as --write does)."""
    bad = 0
    for fw, g in sorted(gaps.items()):
        text = open(os.path.join(data_dir, "frameworks", fw + ".yaml")).read()
        m = re.search(r"^  kernel_gap_fraction:\n    value: (\S+)", text, re.M)
        if not m or abs(float(m.group(1)) - round(g, 3)) > 1e-9:
            print(f"stale gap: {fw} ships {m.group(1) if m else 'none'}, the fit gives "
                  f"{round(g, 3)} (scripts/fit_frameworks.py --write)")
            bad = 1
    return bad


def check_residuals(path, doc):
    try:
        shipped = json.load(open(path))
    except (OSError, ValueError):
        print(f"stale: {path} missing or not JSON")
        return 1
    a = {(r["file"], r["id"]): r for r in shipped.get("runs", [])}
    b = {(r["file"], r["id"]): r for r in doc["runs"]}
    bad = sorted(set(a) ^ set(b))
    for k in set(a) & set(b):
        x, y = a[k], b[k]
        if x["regime"] != y["regime"] or x["family"] != y["family"]:
            bad.append(k)
        for f in ("throughput_residual_pct", "memory_residual_pct"):
            if (x[f] is None) != (y[f] is None) or (x[f] is not None and abs(x[f] - y[f]) > 0.05):
                bad.append(k)
    for k in sorted(set(bad)):
        print("stale residual:", k)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--residuals", action="store_true")
    ap.add_argument("--check-residuals", action="store_true",
                    help="fail when residuals.json or a profile's gap is not this fit")
    ap.add_argument("--self-test", action="store_true", help="check the fitting rules by hand")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    data_dir = os.path.join(ROOT, "data")
    runs = sweep(a.projector, data_dir)
    by_fw = {}
    for r in runs.values():
        by_fw.setdefault(r["framework"], []).append(r)
    kind = {fw: execution_model(data_dir, fw) for fw in by_fw}
    by_kind = {}
    for r in runs.values():
        by_kind.setdefault(kind[r["framework"]], []).append(r)
    weights = {k: pool_weight(v) for k, v in by_kind.items()}
    gaps = {fw: pooled_gap(m, by_kind[kind[fw]], weights[kind[fw]]) for fw, m in by_fw.items()}
    stats = {}
    lofo_errors = {}
    for key, r in runs.items():
        fw = by_fw[r["framework"]]
        train = [m for m in fw if m["family"] != r["family"]]
        pool = [m for m in by_kind[kind[r["framework"]]] if m["family"] != r["family"]]
        lofo = error_at(r, pooled_gap(train, pool, pool_weight(pool)))
        lofo_errors[key] = lofo
        ins = error_at(r, gaps[r["framework"]])
        for g in regime(r):
            stats.setdefault(g, []).append((ins, lofo, key))
    print(f"{'profile':<20} {'runs':>5} {'families':>8} {'own fit':>8} {'gap':>6}")
    for fw in sorted(by_fw):
        fams = len({m['family'] for m in by_fw[fw]})
        print(f"{fw:<20} {len(by_fw[fw]):>5} {fams:>8} {fit_gap(by_fw[fw]):>8.3f} "
              f"{gaps[fw]:>6.3f}")
    for k in sorted(by_kind):
        print(f"pooled fit ({k}): {fit_gap(by_kind[k]):.3f} over {len(by_kind[k])} runs, "
              f"weight {weights[k]:.2f} families")
    print(f"\n{'regime':<40} {'n':>4} {'LOFO MAPE':>10} {'LOFO worst':>11} {'in-sample':>10}")
    for g in sorted(stats):
        v = stats[g]
        lofo = [abs(x[1]) for x in v]
        ins = [abs(x[0]) for x in v]
        worst = max(v, key=lambda x: abs(x[1]))
        print(f"{g:<40} {len(v):>4} {statistics.mean(lofo):>9.1f}% {worst[1]:>+10.1f}% "
              f"{statistics.mean(ins):>9.1f}%")
    over = sorted((x for x in stats["all"] if abs(x[1]) > 30.0), key=lambda x: -abs(x[1]))
    print(f"\nruns beyond 30 % leave-one-family-out: {len(over)}")
    for ins, lofo, key in over:
        print(f"  {key:<80} LOFO {lofo:+.1f}%  in-sample {ins:+.1f}%")
    print_memory(a.projector, data_dir)
    residuals_path = os.path.join(data_dir, "validation", "residuals.json")
    if a.check_residuals:
        stale = check_residuals(residuals_path, residual_doc(runs, lofo_errors))
        return check_gaps(data_dir, gaps) or stale
    if a.residuals:
        with open(residuals_path, "w") as f:
            json.dump(residual_doc(runs, lofo_errors), f, indent=1)
            f.write("\n")
    if a.write:
        for fw, g in gaps.items():
            fams = len({m['family'] for m in by_fw[fw]})
            runs = f"{len(by_fw[fw])} compared runs ({fams} families) of data/validation read "
            own = fit_gap(by_fw[fw])
            pool = by_kind[kind[fw]]
            w = weights[kind[fw]]
            pooled = (f"; pooled {fams} : {w:.2f} with {fit_gap(pool):.3f}, the same fit over all "
                      f"{len(pool)} runs of the {kind[fw]} profiles (the weight estimated from "
                      f"how the families' fits scatter within and between profiles)")
            if w == float("inf"):
                pooled = (f"; the pooled fit {fit_gap(pool):.3f} over all {len(pool)} runs of the "
                          f"{kind[fw]} profiles taken whole: its profiles differ less than their "
                          f"families do")
            if own <= GRID[0] and g <= GRID[0] and by_fw[fw]:
                # At the bound: the runs are slower than projected even with no gaps.
                med = statistics.median(m["errors"][0] for m in by_fw[fw])
                src = (f"fit (scripts/fit_frameworks.py): at its bound 0 over the {runs}with "
                       f"this profile; with no gaps their median signed tokens/s error is "
                       f"{med:+.1f} % (their ops are priced slower than these runs ran "
                       f"them)")
            else:
                src = (f"fit (scripts/fit_frameworks.py): {own:.3f} gives median signed tokens/s "
                       f"error 0 over the {runs}with this profile, every op priced as an "
                       f"isolated kernel (data/kernels fits){pooled}")
            set_gap(os.path.join(data_dir, "frameworks", fw + ".yaml"), round(g, 3), src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
