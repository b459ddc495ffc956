#!/usr/bin/env bash
# Runs every Megatron example config of a Primus checkout through `projector memory`,
# `performance` and `both` and prints one row per config: exit codes, verdict, peak memory, MFU,
# tokens/s and the number of warnings; then the totals (how many load, verdicts, median warnings).
#
#   scripts/primus_corpus.sh PRIMUS_DIR [PROJECTOR_BINARY] [extra projector flags...]
#
# The accelerator is the one the config's directory names (configs/MI300X/... -> mi300x). The
# checkout is passed as --primus-path, so its presets are the ones Primus would launch.
set -euo pipefail

if [[ $# -lt 1 || ! -d "$1/examples/megatron/configs" ]]; then
  echo "usage: $0 PRIMUS_DIR [PROJECTOR_BINARY] [extra flags...]" >&2
  echo "  PRIMUS_DIR must contain examples/megatron/configs" >&2
  exit 2
fi
primus=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${2:-$here/build/release/projector}
shift $(( $# >= 2 ? 2 : 1 ))
if [[ ! -x "$bin" ]]; then
  echo "projector binary not found: $bin (build it: cmake --build build/release)" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows.tsv"
: > "$rows"
while IFS= read -r cfg; do
  rel=${cfg#"$primus/examples/megatron/configs/"}
  arch=$(echo "${rel%%/*}" | tr '[:upper:]' '[:lower:]')
  for cmd in memory performance both; do
    set +e
    "$bin" "$cmd" -c "$cfg" --primus-path "$primus" --hardware "$arch" --json - "$@" \
      > "$tmp/$cmd.json" 2> "$tmp/$cmd.err"
    echo $? > "$tmp/$cmd.rc"
    set -e
  done
  python3 - "$rel" "$tmp" >> "$rows" <<'PY'
import json, sys
rel, tmp = sys.argv[1], sys.argv[2]
def load(cmd):
    rc = int(open(f"{tmp}/{cmd}.rc").read())
    try:
        doc = json.load(open(f"{tmp}/{cmd}.json"))
    except Exception:
        doc = None
    err = open(f"{tmp}/{cmd}.err").read().strip().splitlines()
    return rc, doc, err
rcs, docs, errs = {}, {}, {}
for cmd in ("memory", "performance", "both"):
    rcs[cmd], docs[cmd], errs[cmd] = load(cmd)
both = docs["both"] or {}
mem = both.get("memory") or docs["memory"] or {}
res = both.get("results") or (docs["performance"] or {}).get("results") or {}
verdict = mem.get("verdict", "-")
peak = mem.get("peak", {}).get("point_bytes")
peak = f"{peak / 2**30:.1f}" if peak else "-"
mfu = res.get("mfu_pct")
mfu = f"{mfu:.1f}" if mfu is not None else "-"
tps = res.get("tokens_per_s")
tps = f"{tps:.0f}" if tps is not None else "-"
warnings = len(both.get("warnings", mem.get("warnings", [])))
error = ""
for cmd in ("memory", "performance", "both"):
    if rcs[cmd] != 0:
        lines = [l for l in errs[cmd] if "error" in l] or errs[cmd] or ["?"]
        error = lines[0].replace("\t", " ")
        break
print("\t".join([rel, str(rcs["memory"]), str(rcs["performance"]), str(rcs["both"]),
                 verdict.replace(" ", "_"), peak, mfu, tps, str(warnings), error]))
PY
done < <(find "$primus/examples/megatron/configs" -name '*.yaml' | sort)

python3 - "$rows" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"{'config':58} {'mem':>3} {'perf':>4} {'both':>4} {'verdict':8} {'peak GiB':>8} "
      f"{'MFU %':>6} {'tokens/s':>10} {'warn':>4}  error")
for r in rows:
    print(f"{r[0]:58} {r[1]:>3} {r[2]:>4} {r[3]:>4} {r[4]:8} {r[5]:>8} {r[6]:>6} {r[7]:>10} "
          f"{r[8]:>4}  {r[9]}")
ok = [r for r in rows if r[1] == r[2] == r[3] == "0"]
verdicts = {}
for r in ok:
    verdicts[r[4]] = verdicts.get(r[4], 0) + 1
print()
print(f"configs: {len(rows)}; all three commands exit 0: {len(ok)}; "
      f"refused (exit 2): {sum(1 for r in rows if r[3] == '2')}; "
      f"other exit codes: {sum(1 for r in rows if r[3] not in ('0', '2'))}")
print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
if ok:
    w = [int(r[8]) for r in ok]
    print(f"warnings per loaded config: median {statistics.median(w):g}, max {max(w)}, "
          f"configs with none {sum(1 for x in w if x == 0)}")
PY
