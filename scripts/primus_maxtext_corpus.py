#!/usr/bin/env python3
"""Counts the Primus MaxText experiments (examples/maxtext/configs/**.yaml of a Primus checkout)
that `projector both` loads and projects, and lists the ones that fail with their first error
line (docs/maxtext.md).

Usage: scripts/primus_maxtext_corpus.py [--primus /work/shared/primus]
                                        [--projector build/release/projector] [--verbose]
Exit code 1 when any config fails. Standard library only.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--primus", default=os.environ.get("PRIMUS_PATH", "/work/shared/primus"))
    ap.add_argument("--projector", default=os.path.join(ROOT, "build", "release", "projector"))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    top = os.path.join(args.primus, "examples", "maxtext", "configs")
    configs = sorted(os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs
                     if f.endswith((".yaml", ".yml")))
    if not configs:
        print(f"no MaxText configs under {top}", file=sys.stderr)
        return 2
    failed = []
    for path in configs:
        r = subprocess.run([args.projector, "both", "--config", path, "--primus-path", args.primus],
                           capture_output=True, text=True, check=False)
        rel = os.path.relpath(path, top)
        if r.returncode != 0:
            first = (r.stderr.strip() or r.stdout.strip()).splitlines()
            failed.append((rel, first[0] if first else f"exit {r.returncode}"))
        elif args.verbose:
            print(f"ok   {rel}")
    for rel, why in failed:
        print(f"FAIL {rel}: {why}")
    print(f"Primus MaxText corpus: {len(configs) - len(failed)} of {len(configs)} configs load "
          f"and project ({top})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
