// Benchmark-anchored projection (`--profiling-mode benchmark|both --profile P`): the measured
// profile's ratios become a cost provider in front of the kernel models (measured op times
// replace model times where the trace has them, the models fill the rest), what the bench could
// not run at full size is restored analytically (listed), and the measured time no modelled op
// stands for is added per microbatch. `--memory-mode benchmark`: the measured allocator peak
// anchors the memory projection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "projector/cost/measured.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/profile/profile.h"

namespace projector::profile {

// The cost provider a profile defines (ratios of its model comparison). Throws InputError when
// the profile was written without a job (no model comparison).
std::shared_ptr<const MeasuredScale> measured_scale(const MeasuredProfile& profile);

// What the target differs from the bench in, and how each difference is restored.
std::vector<std::string> restoration_steps(const MeasuredProfile& profile, const JobSpec& target);

struct ClassRow {
  std::string name;           // cost class or "collective all-reduce", "measured overhead", ...
  double simulated_ms = 0.0;  // per iteration on pipeline rank 0 (kernel models)
  double anchored_ms = 0.0;   // the same with the measured profile
};

struct BenchmarkProjection {
  PerfReport report;  // anchored
  PerfReport simulated;
  bool has_simulated = false;
  std::vector<std::string> restored;
  double overhead_ms = 0.0;     // per iteration: measured time no modelled op stands for
  std::vector<ClassRow> table;  // filled with `compare`
  // The traced step's blocks and phases, priced anchored: reproduces the trace's step for the
  // traced configuration.
  double step_equivalent_ms = 0.0;
};

// `compare` also runs the plain models and fills `simulated` and `table` (--profiling-mode both).
BenchmarkProjection project_benchmark(const JobSpec& target, const MeasuredProfile& profile,
                                      const PerfOptions& options, bool compare);

std::string benchmark_text(const BenchmarkProjection& b, const MeasuredProfile& profile);
std::string benchmark_json(const BenchmarkProjection& b, const MeasuredProfile& profile);

// Memory anchored on the measured caching-allocator peak (Primus' residual decomposition):
// the target's modelled peak plus what the bench measured beyond its own model, split into live
// tensors (allocated) and allocator overhead (reserved minus allocated).
struct MemoryAnchor {
  double measured_allocated_bytes = 0.0, measured_reserved_bytes = 0.0;
  double bench_model_allocated_bytes = 0.0, bench_model_fragmentation_bytes = 0.0;
  double live_excess_bytes = 0.0;       // measured allocated - modelled allocated (bench)
  double allocator_excess_bytes = 0.0;  // measured (reserved - allocated) - modelled fragmentation
  double target_model_bytes = 0.0;      // the target's modelled peak (point)
  double anchored_bytes = 0.0;
  double capacity_bytes = 0.0;
  MemoryVerdict verdict = MemoryVerdict::kUnknown;
};
// Throws InputError when the profile has no allocator samples or is not of a training step.
MemoryAnchor anchor_memory(const MeasuredProfile& profile, const MemoryReport& target);
std::string memory_anchor_text(const MemoryAnchor& a, const MeasuredProfile& profile);
std::string memory_anchor_json(const MemoryAnchor& a, const MeasuredProfile& profile);

}  // namespace projector::profile
