// Projected peaks against measured ones from data/validation (calibration_runs.yaml entries with
// peak_memory_*). Mapped by hand here; each mapping choice is stated.
//
// torchtitan Llama 3.1 8B on H100 (Dec 2024 benchmark tables): the reported figure is
// torch.cuda.max_memory_reserved, max over GPUs, i.e. the caching allocator's footprint. It
// excludes the CUDA context and NCCL buffers, so it is compared with allocator_*_bytes.
// Mapping:
//   * FSDP2 over dp_shard (x CP) -> FsdpKind::kFsdp2 (the fp32 sharded params are the master copy).
//   * loss: torch cross_entropy on .float() logits -> loss_grad_in_place = false (log_softmax +
//     nll_loss under autograd: the backward holds two fp32 gradients of the logits).
//   * "selective (per-op SAC)" (saves every second matmul output, recomputes the rest) ->
//     RecomputeGranularity::kOpPolicy.
//   * "Float8 (torchao dynamic tensorwise)" -> Fp8Recipe::kTensorwise.
//   * torchtitan's launcher exports expandable segments (TT5) -> kCachingExpandable.
// Reserved beyond allocated: the allocator replay reserves the hole the eager loss leaves (the
// bf16 logits, freed below the saved fp32 log-softmax, too small for either fp32 gradient of the
// backward: memory_detail::EagerLossChain): tokens x vocab x 2 bytes, 3.91 GiB at 16k tokens per
// microbatch, 7.83 GiB at 32k. What remains is a residual fraction of dynamic memory
// (activations, transient, FSDP window): 0.08 (point: median error 0) and 0.20 (upper: above every
// run) reproduce it (0.15 / 0.29 before the hole was replayed). They are FIT ON THESE RUNS, not a
// held-out result; they are the H100's fragmentation_expandable_fraction / _upper_fraction.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "support/model_builders.h"

namespace projector {
namespace {

constexpr double kGiB = 1073741824.0;

struct MeasuredRun {
  const char* id;
  int dp_shard;
  int cp;
  int local_batch;
  int seq;
  bool full_ac;  // else per-op SAC
  bool fp8;
  double measured_gib;
};

JobSpec torchtitan_job(const MeasuredRun& run) {
  JobSpec j;
  j.model = testing::llama31_8b();
  ParallelSpec& p = j.parallel;
  p.cp = run.cp;
  p.fsdp = FsdpKind::kFsdp2;
  p.stages = balanced_stages(j.model.num_layers(), 1, 1, 0);
  j.cluster.gpus_per_node = 8;
  j.cluster.nodes = run.dp_shard * run.cp / 8;
  j.runtime.micro_batch_size = run.local_batch;
  j.runtime.seq_length = run.seq;
  j.runtime.global_batch_size = run.local_batch * run.dp_shard;
  j.runtime.loss_grad_in_place = false;
  RecomputeSpec& rc = j.runtime.recompute;
  if (run.full_ac) {
    rc.granularity = RecomputeGranularity::kFull;
    rc.method = RecomputeMethod::kUniform;
    rc.num_layers = 1;
  } else {
    rc.granularity = RecomputeGranularity::kOpPolicy;
  }
  if (run.fp8) j.runtime.precision.fp8 = Fp8Recipe::kTensorwise;
  j.runtime.allocator = DeviceAllocatorKind::kCachingExpandable;
  auto& cal = j.cluster.accelerator.calibration;
  cal.fragmentation_expandable_fraction = {0.08, "fit: torchtitan H100 max-reserved runs"};
  cal.fragmentation_expandable_upper_fraction = {0.20, "fit: torchtitan H100 max-reserved runs"};
  return j;
}

TEST(MeasuredPeaks, TorchtitanLlama31_8bH100) {
  const MeasuredRun runs[] = {
      {"torchtitan-llama3.1-8b-fsdp-bf16-h100x8", 8, 1, 2, 8192, false, false, 82.4},
      {"torchtitan-llama3.1-8b-fsdp-compile-float8-h100x8", 8, 1, 2, 8192, false, true, 76.8},
      {"torchtitan-llama3.1-8b-fsdp-compile-float8-h100x128", 128, 1, 2, 8192, false, true, 61.8},
      {"torchtitan-llama3.1-8b-fsdp8-cp1-32k-h100x8", 8, 1, 1, 32768, true, true, 83.9},
      {"torchtitan-llama3.1-8b-fsdp1-cp8-262k-h100x8", 1, 8, 1, 262144, true, true, 84.5},
  };
  for (const MeasuredRun& run : runs) {
    const MemoryReport r = project_memory(torchtitan_job(run));
    const RankMemory& peak = r.ranks[static_cast<std::size_t>(r.peak_rank)];
    const double point = peak.allocator_point_bytes / kGiB;
    const double upper = peak.allocator_upper_bytes / kGiB;
    const double err = (point - run.measured_gib) / run.measured_gib;
    std::printf("  %-52s measured %6.2f  point %6.2f (%+5.1f %%)  upper %6.2f GiB\n", run.id,
                run.measured_gib, point, 100.0 * err, upper);
    // The upper bound stays within the tolerance band above the measurement (the fractions were
    // fitted before per-op SAC was modelled; the point estimate is what the gate checks).
    EXPECT_GE(upper, 0.95 * run.measured_gib) << run.id;
    EXPECT_GT(upper, point) << run.id;
    EXPECT_LT(std::fabs(err), 0.10) << run.id;
    // The replay reserves the eager loss's bf16 logits beyond the allocated peak (the rounding
    // of the other blocks adds well under 0.1 GiB).
    const double tokens = static_cast<double>(run.local_batch) * run.seq / run.cp;
    const double hole_gib = tokens * 128256.0 * 2.0 / kGiB;
    EXPECT_NEAR(peak.allocator_excess_bytes / kGiB, hole_gib, 0.1) << run.id;
  }
}

}  // namespace
}  // namespace projector
