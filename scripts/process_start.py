#!/usr/bin/env python3
"""Whole-process start-up time of the CLI (issue 29): repeated runs, median and minimum.

    python3 scripts/process_start.py [--binary build/release/projector] [--runs 50]

The job is the 405B example on 16,384 GPUs (2,048 nodes, GBS 2,048). `/bin/true` is timed the same
way: the floor of spawning any process from Python on this machine.
"""
import argparse
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd, runs):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out), min(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=str(ROOT / "build/release/projector"))
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    job = [a.binary, "performance", "--config", str(ROOT / "examples/llama3.1_405B-BF16-pretrain.yaml"),
           "--nodes", "2048", "--gbs", "2048"]
    cases = [("/bin/true (spawn floor)", ["/bin/true"]),
             ("projector --version", [a.binary, "--version"]),
             ("projector performance 405B x 16384 GPUs", job)]
    for name, cmd in cases:
        timed(cmd, 3)  # warm the page cache
        med, low = timed(cmd, a.runs)
        print(f"{name:42s} median {med:6.2f} ms   min {low:6.2f} ms   ({a.runs} runs)")


if __name__ == "__main__":
    main()
