#!/usr/bin/env bash
# Loads and projects every torchtitan experiment of a Primus checkout (default: the project's
# shared snapshot) with `projector both`, and prints one line per config and the counts:
#   scripts/primus_torchtitan_corpus.sh [PRIMUS_PATH] [PROJECTOR]
# A config counts as projected when the command exits 0 (a memory verdict of OOM is a result,
# not a failure); the last lines are "loaded N/T, projected M/T".
set -uo pipefail
primus=${1:-/work/shared/primus}
bin=${2:-$(dirname "$0")/../build/release/projector}
configs=("$primus"/examples/torchtitan/configs/*/*.yaml)
total=0 loaded=0 projected=0
for c in "${configs[@]}"; do
  total=$((total + 1))
  name=${c#"$primus"/examples/torchtitan/configs/}
  # The GPU the config was written for (MI300X/, MI325X/, MI355X/).
  hw=$(echo "${name%%/*}" | tr "[:upper:]" "[:lower:]")
  if ! out=$("$bin" config -c "$c" --primus-path "$primus" --hardware "$hw" 2>&1); then
    printf '%-55s LOAD FAILED: %s\n' "$name" "$(echo "$out" | tail -1)"
    continue
  fi
  loaded=$((loaded + 1))
  if ! out=$("$bin" both -c "$c" --primus-path "$primus" --hardware "$hw" 2>&1); then
    printf '%-55s PROJECTION FAILED: %s\n' "$name" "$(echo "$out" | tail -1)"
    continue
  fi
  projected=$((projected + 1))
  tps=$(echo "$out" | awk '/Tokens\/s\/GPU/ {print $2}')
  verdict=$(echo "$out" | awk '/^HBM capacity/ {print $NF}')
  printf '%-55s ok  tokens/s/GPU %-10s memory %s\n' "$name" "$tps" "$verdict"
done
echo "loaded $loaded/$total, projected $projected/$total"
[ "$projected" -eq "$total" ]
