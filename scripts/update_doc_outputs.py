#!/usr/bin/env python3
"""Regenerate the sample program outputs in the Markdown docs from the real program.

A sample output is marked by an HTML comment on the line right before a fenced code block:

    <!-- projector-output: both --config examples/llama3.1_8B-BF16-pretrain.yaml -->
    ```
    ... exactly what `projector both --config examples/llama3.1_8B-BF16-pretrain.yaml`
    prints on stdout, run from the repository root ...
    ```

The text after `projector-output` and before `:` holds options (shell-quoted words); the text
after `:` is the command line without the program name (shell-quoted, as typed). Options:

  prompt         the block starts with the line `$ projector ARGS` (the command as written)
  section=TEXT   keep only the section that starts at the first line beginning with TEXT
                 (leading spaces ignored) and ends before the next empty line; the lines left
                 out before and after it are shown as one line `...` each
  lines=RANGES   keep only these 1-based lines of the (section of the) output, e.g. `1-12,20-24`;
                 every run of omitted lines (at the start, between ranges, at the end) is shown
                 as one line `...`
  exit=N         the exit status the command is expected to end with (default 0)

The script rewrites the body of every marked block in docs/*.md and README.md; text outside the
blocks is kept byte for byte. With --check nothing is written: it exits 1 and prints a unified
diff naming the file and the line of each block that differs from what the program prints (the
ctest `docs.outputs_are_current` runs it), so a change of the program's output fails the tests
until the docs are regenerated.

Determinism. Each command runs from the repository root with the environment variables the
program reads (PRIMUS_*, NNODES, GPUS_PER_NODE, BACKEND_PATH) removed, LC_ALL=C and TZ=UTC. The
output is then normalised in exactly these ways, and in no other:
  * the absolute path of the repository root is replaced by `.`, and the path of the binary by
    `projector`;
  * on the sweep's `Candidates:` line, the wall-clock and CPU times and the thread count
    (`projected in 1.500 s (2 thread(s); memory 0.02 s, performance 0.89 s CPU)`) become
    `... s` and `N thread(s)`: they depend on the machine, not on the program (its ranking does
    not depend on the thread count, docs/user-guide.md `projector sweep`);
  * trailing spaces are stripped from every line.
A command whose output still differs between two runs is a bug of this mechanism or of the
program: choose another command or extend this list here, with its reason.

Usage:
  python3 scripts/update_doc_outputs.py --binary build/release/projector          # rewrite
  python3 scripts/update_doc_outputs.py --binary build/release/projector --check  # compare
  [--root DIR] [FILE.md ...]   the repository root (default: this script's parent) and the
                               files to process (default: README.md and docs/*.md)
Needs only the Python standard library.
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys

MARKER = re.compile(r"^<!--\s*projector-output(?P<opts>[^:]*?)\s*:\s*(?P<cmd>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)(.*)$")
# Environment variables the program reads (docs/user-guide.md "Environment variables").
ENV_DROP_PREFIXES = ("PRIMUS_",)
ENV_DROP = {"NNODES", "GPUS_PER_NODE", "BACKEND_PATH"}
SWEEP_LINE = re.compile(r"^Candidates: .* projected in ", re.M)
SECONDS = re.compile(r"\b[0-9]+(?:\.[0-9]+)? s\b")
THREADS = re.compile(r"\b[0-9]+ thread\(s\)")


class DocError(Exception):
    pass


def parse_options(text, where):
    opts = {"prompt": False, "section": None, "lines": None, "exit": 0}
    for word in shlex.split(text):
        key, eq, value = word.partition("=")
        if key == "prompt" and not eq:
            opts["prompt"] = True
        elif key == "section" and value:
            opts["section"] = value
        elif key == "lines" and value:
            ranges = []
            for part in value.split(","):
                m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
                if not m:
                    raise DocError(f"{where}: bad lines= range '{part}'")
                lo = int(m.group(1))
                hi = int(m.group(2) or lo)
                if lo < 1 or hi < lo or (ranges and lo <= ranges[-1][1]):
                    raise DocError(f"{where}: lines= ranges must be increasing: '{value}'")
                ranges.append((lo, hi))
            opts["lines"] = ranges
        elif key == "exit" and re.fullmatch(r"\d+", value):
            opts["exit"] = int(value)
        else:
            raise DocError(f"{where}: unknown marker option '{word}'")
    return opts


def program_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ENV_DROP and not k.startswith(ENV_DROP_PREFIXES)}
    env["LC_ALL"] = "C"
    env["TZ"] = "UTC"
    return env


def normalise(text, root, binary):
    text = text.replace(os.path.abspath(binary), "projector")
    text = text.replace(root.rstrip("/") + "/", "./").replace(root.rstrip("/"), ".")
    if not text.strip():
        return []
    lines = [line.rstrip() for line in text.rstrip("\n").split("\n")]
    for i, line in enumerate(lines):
        if SWEEP_LINE.match(line):
            head, sep, tail = line.partition(" projected in ")
            lines[i] = head + sep + THREADS.sub("N thread(s)", SECONDS.sub("... s", tail))
    return lines


def select(lines, opts, where):
    before = after = False  # whether section= left out lines before / after it
    if opts["section"] is not None:
        start = next((i for i, line in enumerate(lines)
                      if line.lstrip().startswith(opts["section"])), None)
        if start is None:
            raise DocError(f"{where}: no output line starts with '{opts['section']}'")
        end = start
        while end < len(lines) and lines[end].strip():
            end += 1
        before, after = start > 0, end < len(lines)
        lines = lines[start:end]
    if opts["lines"] is not None:
        out = []
        pos = 1  # next line not yet kept or elided
        for lo, hi in opts["lines"]:
            if lo > len(lines):
                raise DocError(f"{where}: lines= {lo} is past the output's {len(lines)} lines")
            if lo > pos:
                out.append("...")
            out.extend(lines[lo - 1:hi])
            pos = hi + 1
        if pos <= len(lines):
            out.append("...")
        lines = out
    if before:
        lines = ["..."] + lines
    if after and (not lines or lines[-1] != "..."):
        lines = lines + ["..."]
    return lines


def run_block(binary, root, cmd, opts, where):
    args = shlex.split(cmd)
    proc = subprocess.run([binary] + args, cwd=root, env=program_env(), capture_output=True,
                          text=True, check=False)
    if proc.returncode != opts["exit"]:
        raise DocError(f"{where}: `projector {cmd}` exited {proc.returncode} (expected "
                       f"{opts['exit']}):\n{proc.stderr.strip()}")
    body = select(normalise(proc.stdout, root, binary), opts, where)
    if opts["prompt"]:
        body = [f"$ projector {cmd}"] + body
    return body


def process(path, rel, binary, root):
    """Returns (old text, new text, [(first line of a stale block, its command)])."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    out = []
    changes = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        m = MARKER.match(line)
        if not m:
            i += 1
            continue
        where = f"{rel}:{i + 1}"
        opts = parse_options(m.group("opts"), where)
        if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            raise DocError(f"{where}: a projector-output marker must be followed by a ``` block")
        fence = FENCE.match(lines[i + 1]).group(1)
        end = i + 2
        while end < len(lines) and lines[end].rstrip() != fence:
            end += 1
        if end >= len(lines):
            raise DocError(f"{where}: the code block after the marker is not closed")
        old = lines[i + 2:end]
        new = run_block(binary, root, m.group("cmd"), opts, where)
        if any(line.startswith(fence[:3]) for line in new):
            raise DocError(f"{where}: the output contains a code fence")
        if new != old:
            changes.append((i + 3, m.group("cmd")))
        out.append(lines[i + 1])
        out.extend(new)
        out.append(lines[end])
        i = end + 1
    return text, "\n".join(out), changes


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True, help="the projector binary to run")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 with a diff when a block is not current")
    ap.add_argument("--root", default=here, help="repository root (default: %(default)s)")
    ap.add_argument("files", nargs="*", help="Markdown files (default: README.md, docs/*.md)")
    a = ap.parse_args()
    root = os.path.realpath(a.root)
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        print(f"update_doc_outputs: {a.binary} is not an executable", file=sys.stderr)
        return 2
    files = a.files or ([os.path.join(root, "README.md")] +
                        sorted(glob.glob(os.path.join(root, "docs", "*.md"))))
    stale = 0
    blocks = 0
    try:
        for path in files:
            rel = os.path.relpath(os.path.abspath(path), root)
            old_text, new_text, changes = process(path, rel, binary, root)
            blocks += len(re.findall(r"(?m)^<!--\s*projector-output", old_text))
            if not changes:
                continue
            stale += len(changes)
            if a.check:
                for line_no, cmd in changes:
                    print(f"{rel}:{line_no}: the output of `projector {cmd}` differs")
                # One diff of the whole file: its hunk headers give the doc's own line numbers.
                sys.stdout.writelines(difflib.unified_diff(
                    old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                    fromfile=f"{rel} (in the doc)", tofile=f"{rel} (what the program prints)"))
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new_text)
                print(f"{rel}: {len(changes)} block(s) rewritten")
    except DocError as e:
        print(f"update_doc_outputs: {e}", file=sys.stderr)
        return 2
    if a.check and stale:
        print(f"update_doc_outputs: {stale} of {blocks} block(s) differ from the program; run "
              f"python3 scripts/update_doc_outputs.py --binary {a.binary}", file=sys.stderr)
        return 1
    if a.check:
        print(f"update_doc_outputs: {blocks} block(s) current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
