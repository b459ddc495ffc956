#!/usr/bin/env bash
# One libFuzzer run of a projector fuzz target: run_fuzzer.sh BINARY SEED_DIR WORK_DIR SECONDS
# [extra libFuzzer flags]. New inputs go to WORK_DIR/corpus (the seeds are only read), findings
# to WORK_DIR/artifacts. Limits: 10 s per input (a hang), 2 GiB of memory.
set -euo pipefail
bin=$1 seeds=$2 work=$3 seconds=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
  -dict="$(dirname "$0")/../fuzz/projector.dict" -artifact_prefix="$work/artifacts/" \
  -print_final_stats=1 "$@" "$work/corpus" "$seeds"
