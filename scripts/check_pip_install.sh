#!/usr/bin/env bash
# `make pip-check` (and CI, .ci/run): the pip package installed offline into a fresh venv works from
# another directory, and compiles in no path of this tree (docs/python.md#install-with-pip).
#  - venv from Debian's python3 with --system-site-packages: setuptools 66 needs the `wheel`
#    package (python3-wheel) to build the wheel; nothing is downloaded (--no-index).
#  - the package's CMake build folder is build/temp.*/cmake in this tree, reused by the next run.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python=/usr/bin/python3
[ -x "$python" ] || python=python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="$work/venv"
example="$repo/examples/llama3.1_8B-BF16-pretrain.yaml"

"$python" -m venv --system-site-packages "$venv"
start=$(date +%s)
"$venv/bin/pip" install --no-build-isolation --no-index --no-cache-dir --quiet "$repo"
echo "pip-check: pip install --no-build-isolation took $(($(date +%s) - start)) s"

cd "$work"  # not the source tree: the installed files only
mkdir elsewhere && cd elsewhere
unset PYTHONPATH

# The module, from the venv, with its catalogues.
"$venv/bin/python" - "$example" "$venv" <<'PY'
import os
import sys

import projector

example, venv = sys.argv[1], sys.argv[2]
assert os.path.realpath(projector.__file__).startswith(os.path.realpath(venv)), projector.__file__
job = projector.load(example)
mem = projector.memory(job)
perf = projector.performance(job)
assert mem["verdict"], mem
assert perf["results"]["tokens_per_s_per_gpu"] > 0
print("pip-check: import projector:", projector.__file__)
print("pip-check: memory verdict", mem["verdict"], "-",
      round(perf["results"]["tokens_per_s_per_gpu"]), "tokens/s/GPU")
PY

# The `projector` command: the CLI in the package, its catalogues and HTML assets beside it.
projector="$venv/bin/projector"
"$projector" --version
"$projector" both --config "$example" > both.txt
"$projector" hardware list > hardware.txt
"$projector" both --config "$example" --html report.html --json report.json > /dev/null
"$venv/bin/python" -m projector memory --config "$example" > memory.txt
grep -q "vega" report.html && [ "$(stat -c %s report.html)" -gt 500000 ] ||
  { echo "pip-check: report.html lacks the inlined Vega bundles" >&2; exit 1; }
[ "$(wc -l < hardware.txt)" -gt 5 ] || { echo "pip-check: hardware list is short" >&2; exit 1; }
echo "pip-check: projector both / hardware list ($(wc -l < hardware.txt) lines) / --html" \
     "($(stat -c %s report.html) bytes) ran from $PWD"

# tests/python against the installed module and the installed CLI (pytest: python3-pytest).
PROJECTOR_BINARY="$projector" PYTHONDONTWRITEBYTECODE=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests/python"

# No path of this tree in the installed binary or module (PROJECTOR_RELOCATABLE). GCC may store a
# short string constant as immediates, split into pieces, so this grep alone proves little ...
site="$("$venv/bin/python" -c 'import os, projector; print(os.path.dirname(projector.__file__))')"
for f in "$site/bin/projector" "$site"/projector.*.so; do
  n=$(grep -c -a -F "$repo" "$f" || true)
  if [ "$n" != 0 ]; then
    echo "pip-check: $f contains the source path $repo ($n lines)" >&2
    exit 1
  fi
done
# ... hence: a copy of the package in another folder reads its own data/ and web/, and fails
# without them (no fallback to this tree).
mkdir moved && cp -r "$site" moved/
moved="$PWD/moved/projector"
"$moved/bin/projector" both --config "$example" --html moved.html > /dev/null
PYTHONPATH="$PWD/moved" "$python" -c "
import os, sys, projector
assert os.path.dirname(projector.__file__) == sys.argv[2], projector.__file__
projector.memory(projector.load(sys.argv[1]))" "$example" "$moved"
mv "$moved/data" "$moved/data.off"
mv "$moved/web/report.css" "$moved/report.css.off"
if "$moved/bin/projector" both --config "$example" > /dev/null 2>&1; then
  echo "pip-check: $moved/bin/projector ran without its data/" >&2
  exit 1
fi
if PYTHONPATH="$PWD/moved" "$python" -c "
import sys, projector
projector.load(sys.argv[1])" "$example" > /dev/null 2>&1; then
  echo "pip-check: the module in $moved loaded a job without its data/" >&2
  exit 1
fi
mv "$moved/data.off" "$moved/data"
err=$("$moved/bin/projector" both --config "$example" --html none.html 2>&1 > /dev/null) &&
  { echo "pip-check: --html worked without $moved/web/report.css" >&2; exit 1; }
case "$err" in
  *"$moved/web/report.css"*) ;;
  *) echo "pip-check: --html without report.css did not name $moved/web: $err" >&2; exit 1 ;;
esac
echo "pip-check: OK (no source-tree path in bin/projector or the module; a moved copy reads" \
     "its own data/ and web/)"
