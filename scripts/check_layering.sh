#!/usr/bin/env bash
# Layering check (docs/architecture.md): a module's sources include only their own module's
# internal headers from src/ ("<module>/..."), and public headers only as "projector/<m>/...".
# Public headers of undeclared dependencies already fail the build (one include root per module);
# this catches the shared src/ include directory, and scripts/check_layering.py checks the declared
# dependencies of CMakeLists.txt against the includes. Usage: scripts/check_layering.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
cd "$root"
bad=0
for dir in src/*/; do
  m=$(basename "$dir")
  while IFS= read -r line; do
    echo "layering: $line (module '$m' includes another module's internal header)"
    bad=1
  done < <(grep -rnE '^#include "[a-z_]+/' "$dir" | grep -vE "#include \"(projector|$m)/" || true)
done
for dir in include/*/; do
  m=$(basename "$dir")
  if [ ! -d "$dir/projector/$m" ]; then
    echo "layering: $dir is not an include root of the form include/<m>/projector/<m>/"
    bad=1
  fi
done
# Declared module dependencies against the includes (unused edges, undeclared ones, by-path
# includes of another module's headers).
python3 scripts/check_layering.py . || bad=1
exit $bad
