// The projection `projector validate` compares with published runs: the full performance
// projection plus the memory projection of the same job.
#include <algorithm>

#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "projector/validate/validate.h"

namespace projector {

ProjectFn make_default_project_fn() {
  return [](const JobSpec& job) {
    PerfOptions po;
    po.keep_op_table = false;
    po.routing_skew_bracket = true;
    const PerfReport rep = project_performance(job, po);
    // Published runs count chips; a chip of several devices (TPU7x) is reported per chip.
    const double per_chip = std::max(1, job.cluster.devices_per_chip);
    Prediction p;
    p.tokens_per_sec_per_gpu = rep.tokens_per_s_per_gpu * per_chip;
    p.step_time_s = rep.iteration_s;
    p.model_tflops_per_gpu = rep.model_tflops_per_gpu * per_chip;
    p.hardware_tflops_per_gpu = rep.hardware_tflops_per_gpu * per_chip;
    p.mfu_pct = 100.0 * rep.mfu;
    if (rep.routing_skew.applies) {
      p.skewed_tokens_per_sec_per_gpu = rep.routing_skew.tokens_per_s_per_gpu * per_chip;
      p.skew_load_factor = rep.routing_skew.load_factor;
    }
    if (rep.has_memory) {
      // Published peaks are the framework allocator's (max reserved / allocated) on the worst
      // rank: compare with the caching-allocator part of the projection.
      double peak = 0.0;
      double allocated = 0.0;
      for (const RankMemory& r : rep.memory.ranks) {
        peak = std::max(peak, r.allocator_point_bytes);
        allocated = std::max(allocated, r.peak_allocated_bytes);
      }
      p.peak_memory_gib = peak * per_chip / (1024.0 * 1024.0 * 1024.0);
      p.peak_allocated_gib = allocated * per_chip / (1024.0 * 1024.0 * 1024.0);
      p.peak_device_gib = rep.memory.peak_point_bytes * per_chip / (1024.0 * 1024.0 * 1024.0);
      p.out_of_memory = rep.memory.verdict == MemoryVerdict::kOom;
      p.out_of_memory_point = p.out_of_memory;
      const RankMemory& at = rep.memory.ranks[static_cast<std::size_t>(rep.memory.peak_rank)];
      p.peak_bytes = Prediction::PeakBytes{rep.memory.peak_point_bytes, rep.memory.peak_upper_bytes,
                                           at.allocator_point_bytes, rep.memory.capacity_bytes};
    }
    return p;
  };
}

}  // namespace projector
