#!/usr/bin/env bash
# The layering check's own test: the fixture tree tests/data/layering_bad breaks each rule of
# scripts/check_layering.py once; the check must exit 1 and name every break.
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
out=$(python3 scripts/check_layering.py tests/data/layering_bad)
rc=$?
[ "$rc" -eq 1 ] || { echo "expected exit 1, got $rc"; exit 1; }
for want in "module 'a' does not depend on 'b'" "climbs out of the module" "by path" \
            "declares projector_a but includes nothing" "outside projector_module" \
            "module 'c' depends on itself"; do
  grep -qF "$want" <<<"$out" || { echo "missing: $want"; echo "$out"; exit 1; }
done
echo "layering check self-test: 6 of 6 violations reported"
