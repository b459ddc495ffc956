#!/usr/bin/env bash
# Installs what the build and the tests need, when it is missing. Idempotent.
#  - Debian bookworm packages: the toolchain and libraries (toml++ reads torchtitan job TOMLs);
#    pybind11, the Python headers and pytest for the Python module; venv, pip, setuptools and wheel
#    for `pip install --no-build-isolation .` (make pip-check); Chromium (and a font for its
#    screenshots) for the HTML report tests; npm for the next step; clang with libFuzzer
#    (libclang-rt-14-dev) for the `fuzz` preset.
#  - The HTML report's chart bundles (vega, vega-lite, vega-embed), pinned in web/package-lock.json,
#    from the npm registry into web/node_modules (npm ci). Nothing else is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake ninja-build g++ make libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev libtomlplusplus-dev
      pybind11-dev python3-dev python3-pytest
      python3-venv python3-pip python3-setuptools python3-wheel
      chromium fonts-liberation clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's npm (it brings nodejs) unless a Node.js toolchain with npm is already installed.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm ci when the bundles are missing or the lock file changed since the last install.
stamp=web/node_modules/.package-lock.json
if [ ! -f web/node_modules/vega/build/vega.min.js ] || [ ! -f "$stamp" ] ||
   [ web/package-lock.json -nt "$stamp" ]; then
  echo "bootstrap: npm ci in web/ (vega, vega-lite, vega-embed for the HTML report)" >&2
  (cd web && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
