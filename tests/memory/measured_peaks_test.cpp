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
// Overheads: fragmentation of the caching allocator as a fraction of dynamic memory (activations,
// transient, FSDP window). The allocated totals come out below the reserved peaks on all five
// runs; 0.15 (point: median error 0) and 0.29 (upper: above every run) are the fractions that
// reproduce that gap (0.28 / 0.35 before the loss's second fp32 gradient was counted). They are
// FIT ON THESE RUNS (the README lists them as calibration data), not a held-out result; they
// belong in the H100 accelerator calibration (fragmentation_fraction / _upper_fraction).
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
  auto& cal = j.cluster.accelerator.calibration;
  cal.fragmentation_fraction = {0.15, "fit: torchtitan H100 max-reserved runs"};
  cal.fragmentation_upper_fraction = {0.29, "fit: torchtitan H100 max-reserved runs"};
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
  }
}

}  // namespace
}  // namespace projector
