// Rendering of performance projections: the human summary, the versioned JSON document
// (docs/json-schema.md) and the Chrome/Perfetto trace of the simulated timeline.
#pragma once

#include <string>
#include <vector>

#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/perf/perf.h"

namespace projector {

inline constexpr int kPerfJsonSchemaVersion = PerfReport::kSchemaVersion;

// Console summary in ms, GiB, tokens/s, TFLOP/s.
std::string perf_summary_text(const JobSpec& job, const PerfReport& rep);
// Per-op table of every chunk (op, phase, shape, FLOPs, bytes, time, exposed, provenance).
// Consecutive identical layers are one block ("layers 3-60 (58x dense_layer)"), times per layer.
std::string op_table_text(const JobSpec& job, const PerfReport& rep);
// The whole projection as JSON (indent < 0: compact).
std::string perf_json(const JobSpec& job, const PerfReport& rep, int indent = 2);
// {"traceEvents": [...]} with one process per pipeline rank and one thread per stream.
std::string chrome_trace_json(const PerfReport& rep);
// One node count of `--scan-nodes` (strong scaling over data parallelism: the global batch is
// fixed).
struct ScalingPoint {
  int nodes = 0;
  std::string error;  // why this size is impossible (an InputError's message); the rest unset
  int world_size = 0;
  int dp = 0;
  int num_microbatches = 0;
  double iteration_s = 0.0;
  double tokens_per_s = 0.0;
  double tokens_per_s_per_gpu = 0.0;
  double mfu = 0.0;
  // The calibrated 80 % range of tokens/s/GPU at this size; 0 when the regime has no residuals.
  double tokens_per_s_per_gpu_lo = 0.0;
  double tokens_per_s_per_gpu_hi = 0.0;
};
// The `scaling` array of `performance --json` (docs/json-schema.md).
std::string scaling_json(const std::vector<ScalingPoint>& points, int indent = 2);
// Short description of an op's shape ("4096x14336x4096 bf16", "b2 h32/8 s8192 d128 causal").
std::string describe_op_shape(const Op& op);

}  // namespace projector
