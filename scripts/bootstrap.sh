#!/usr/bin/env bash
# Installs the build dependencies from Debian bookworm when they are missing. Idempotent.
set -euo pipefail
pkgs=(cmake ninja-build g++ make libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
