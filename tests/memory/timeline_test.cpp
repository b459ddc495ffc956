// The allocation timeline and the allocator replay (docs/memory.md "Timeline", "Allocator"):
// a 2-stage 1F1B timeline derived by hand, and cross-module invariants of the replay.
#include <gtest/gtest.h>

#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "support/config_text.h"
#include "support/model_builders.h"

namespace projector {
namespace {

constexpr std::size_t idx(MemoryComponent c) {
  return static_cast<std::size_t>(c);
}

JobSpec llama8b(int pp, int microbatches) {
  JobSpec j;
  j.model = testing::llama31_8b();
  j.parallel.pp = pp;
  j.parallel.stages = balanced_stages(j.model.num_layers(), pp, 1, 0);
  j.cluster.nodes = 1;
  j.cluster.gpus_per_node = pp;
  j.runtime.micro_batch_size = 1;
  j.runtime.seq_length = 4096;
  j.runtime.global_batch_size = microbatches;
  return j;
}

double allocator_static(const RankMemory& r) {
  double s = 0.0;
  for (const MemoryComponent c :
       {MemoryComponent::kWeights, MemoryComponent::kFp8WeightCopies, MemoryComponent::kGradients,
        MemoryComponent::kMasterWeights, MemoryComponent::kOptimizerStates,
        MemoryComponent::kFsdpUnsharded, MemoryComponent::kWorkspace}) {
    s += r.point[idx(c)];
  }
  return s;
}

// Llama 3.1 8B, PP 2, 4 microbatches, 1F1B. Each stage has 16 layers of 4096 x 139,392 bytes
// (memory_test.cpp FlashGqaSwiglu): A0 = 16 x 4096 x 139,392 = 9,135,194,112 bytes on the first
// stage (no dropout, so the embedding keeps nothing). Rank 0 runs F0 F1 B0 F2 B1 F3 B2 B3 (one
// warm-up forward): with S its static buffers and T its temporary, the timeline is
//   F0: S + A + T, F1 .. B2: S + 2A + T (a forward after each backward), B3: S + A + T,
// and the peak moment is the first to reach S + 2A + T: action 1, the forward of microbatch 1.
// Rank 1 (the last stage) alternates F and B: S1 + A1 + T1 at every action, first at action 0.
TEST(Timeline, TwoStageOneFOneBByHand) {
  const MemoryReport rep = project_memory(llama8b(2, 4));
  ASSERT_EQ(rep.ranks.size(), 2u);
  const RankMemory& r0 = rep.ranks[0];
  const double a = 16.0 * 4096.0 * 139392.0;
  EXPECT_DOUBLE_EQ(r0.activation_per_chunk_bytes[0], a);
  const double s = allocator_static(r0);
  const double t = r0.point[idx(MemoryComponent::kTransient)];
  ASSERT_EQ(r0.timeline_bytes.size(), 8u);
  const double expected[8] = {s + a + t,     s + 2 * a + t, s + 2 * a + t, s + 2 * a + t,
                              s + 2 * a + t, s + 2 * a + t, s + 2 * a + t, s + a + t};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(r0.timeline_bytes[i], expected[i]) << i;
  EXPECT_EQ(r0.moment.action, 1);
  EXPECT_EQ(r0.moment.phase, "F");
  EXPECT_EQ(r0.moment.microbatch, 1);
  EXPECT_DOUBLE_EQ(r0.moment.held_bytes, 2 * a);
  EXPECT_DOUBLE_EQ(r0.point[idx(MemoryComponent::kActivations)], 2 * a);
  EXPECT_DOUBLE_EQ(r0.peak_allocated_bytes, s + 2 * a + t);
  EXPECT_EQ(r0.in_flight.per_chunk, std::vector<double>{2.0});

  const RankMemory& r1 = rep.ranks[1];
  const double a1 = r1.activation_per_chunk_bytes[0];
  const double s1 = allocator_static(r1);
  const double t1 = r1.point[idx(MemoryComponent::kTransient)];
  for (const double b : r1.timeline_bytes) EXPECT_DOUBLE_EQ(b, s1 + a1 + t1);
  EXPECT_EQ(r1.moment.action, 0);
  EXPECT_EQ(r1.moment.temporary, "logits and loss backward");
}

// What the replay reserves is never below what is allocated, and the fragmentation component is
// the replay's excess plus the residual fraction of the dynamic memory.
TEST(AllocatorReplay, ReservedCoversAllocatedAndDecomposes) {
  JobSpec j = llama8b(2, 8);
  j.runtime.recompute.granularity = RecomputeGranularity::kFull;
  j.runtime.recompute.method = RecomputeMethod::kUniform;
  j.runtime.recompute.num_layers = 4;
  const MemoryReport rep = project_memory(j);
  EXPECT_TRUE(rep.allocator_replayed);
  const double frac = j.cluster.accelerator.calibration.fragmentation_fraction.value;
  for (const RankMemory& r : rep.ranks) {
    EXPECT_GE(r.allocator_excess_bytes, 0.0);
    EXPECT_GT(r.allocator_segments, 0);
    const double dynamic = r.point[idx(MemoryComponent::kActivations)] +
                           r.point[idx(MemoryComponent::kTransient)] +
                           r.point[idx(MemoryComponent::kFsdpUnsharded)];
    EXPECT_NEAR(r.point[idx(MemoryComponent::kFragmentation)],
                frac * dynamic + r.allocator_excess_bytes, 1.0);
    EXPECT_NEAR(r.allocator_point_bytes,
                r.peak_allocated_bytes + r.point[idx(MemoryComponent::kFragmentation)], 1.0);
  }
}

// Steady-state 1F1B steps free one microbatch's blocks and allocate the next one's of the same
// sizes: more microbatches reserve nothing more (4, 5 and 6 microbatches are all replayed whole:
// the replay shortens only beyond (vpp + 2) x pp = 6).
TEST(AllocatorReplay, SteadyStateReservesNothingMore) {
  for (const bool full : {false, true}) {
    double excess[3];
    for (int m = 4; m <= 6; ++m) {
      JobSpec j = llama8b(2, m);
      if (full) {
        j.runtime.recompute.granularity = RecomputeGranularity::kFull;
        j.runtime.recompute.method = RecomputeMethod::kUniform;
        j.runtime.recompute.num_layers = 4;
      }
      excess[m - 4] = project_memory(j).ranks[0].allocator_excess_bytes;
    }
    EXPECT_DOUBLE_EQ(excess[1], excess[0]) << full;
    EXPECT_DOUBLE_EQ(excess[2], excess[0]) << full;
  }
}

// Full recompute in groups of 4 layers: the backward's working set (a group re-materialised) is
// a large temporary whose freed segment the next forward's small checkpoints split, so the fixed-
// segment allocator reserves a new one; expandable segments grow the free tail instead.
TEST(AllocatorReplay, ExpandableSegmentsStrandLess) {
  JobSpec j = llama8b(2, 8);
  j.runtime.recompute.granularity = RecomputeGranularity::kFull;
  j.runtime.recompute.method = RecomputeMethod::kUniform;
  j.runtime.recompute.num_layers = 4;
  const double fixed = project_memory(j).ranks[0].allocator_excess_bytes;
  j.runtime.allocator = DeviceAllocatorKind::kCachingExpandable;
  const double expandable = project_memory(j).ranks[0].allocator_excess_bytes;
  EXPECT_GT(fixed, 0.0);
  EXPECT_LT(expandable, fixed);
}

// XLA reserves what is live: no replay, no excess.
TEST(AllocatorReplay, XlaReservesTheAllocatedPeak) {
  JobSpec j = llama8b(2, 4);
  j.runtime.allocator = DeviceAllocatorKind::kXla;
  const MemoryReport rep = project_memory(j);
  EXPECT_FALSE(rep.allocator_replayed);
  for (const RankMemory& r : rep.ranks) EXPECT_EQ(r.allocator_excess_bytes, 0.0);
}

// A sweep's screen (no replay) differs from the full projection by the replay's excess only.
TEST(AllocatorReplay, WithoutReplayTheExcessIsAllThatChanges) {
  JobSpec j = llama8b(2, 8);
  j.runtime.recompute.granularity = RecomputeGranularity::kFull;
  j.runtime.recompute.method = RecomputeMethod::kUniform;
  j.runtime.recompute.num_layers = 4;
  MemoryOptions off;
  off.replay_allocator = false;
  const MemoryReport a = project_memory(j);
  const MemoryReport b = project_memory(j, off);
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_DOUBLE_EQ(a.ranks[r].peak_allocated_bytes, b.ranks[r].peak_allocated_bytes);
    EXPECT_NEAR(a.ranks[r].total_point_bytes - b.ranks[r].total_point_bytes,
                a.ranks[r].allocator_excess_bytes, 1.0);
  }
}

// The eager loss's hole (memory_detail::EagerLossChain) on one GPU, 4096 tokens, vocabulary
// 128256: PyTorch's cross entropy on upcast logits leaves the bf16 logits' 4096 x 128256 x 2 bytes
// (1.0 GB) reserved beyond the allocated peak; a loss that writes its gradient in place (Megatron)
// or on fp32 params has no upcast copy and no hole. Both allocators (allocator_test.cpp derives
// the hole on the bare sequence).
TEST(AllocatorReplay, EagerLossReservesItsLogitsHole) {
  const double hole = 4096.0 * 128256.0 * 2.0;
  for (const auto kind : {DeviceAllocatorKind::kCaching, DeviceAllocatorKind::kCachingExpandable}) {
    JobSpec j = llama8b(1, 1);
    j.runtime.allocator = kind;
    j.runtime.loss_grad_in_place = false;
    // With fixed segments the second flush places layer blocks in the cached loss segments: a
    // few per cent more (measured 5.3 %).
    const double tol = kind == DeviceAllocatorKind::kCaching ? 0.06 : 0.02;
    EXPECT_NEAR(project_memory(j).ranks[0].allocator_excess_bytes, hole, tol * hole);
    j.runtime.loss_grad_in_place = true;
    EXPECT_LT(project_memory(j).ranks[0].allocator_excess_bytes, 0.1 * hole);
    j.runtime.loss_grad_in_place = false;
    j.runtime.precision.params_dtype = Dtype::kFp32;
    EXPECT_LT(project_memory(j).ranks[0].allocator_excess_bytes, 0.1 * hole);
  }
}

// The residual beyond the replay is the accelerator file's constant for the job's allocator: a
// torchtitan job on the H100 runs expandable segments (its launcher) and takes the H100's
// expandable-segment residual; the same job with fixed segments (--alloc-conf) takes the fixed
// one. Both from data/hardware/accelerators/h100_sxm.yaml.
TEST(AllocatorReplay, ResidualOfTheJobsAllocator) {
  LoadRequest r = testing::bundled_request(
      std::string(PROJECTOR_TEST_DATA_DIR) + "/torchtitan/upstream/llama3_8b.toml", "h100_sxm");
  for (const bool expandable : {true, false}) {
    if (!expandable) r.cli.alloc_conf = "expandable_segments:False";
    const JobSpec job = load_job(r);
    const auto& cal = job.cluster.accelerator.calibration;
    const double frac =
        expandable ? cal.fragmentation_expandable_fraction.value : cal.fragmentation_fraction.value;
    EXPECT_GT(cal.fragmentation_expandable_fraction.value, cal.fragmentation_fraction.value);
    const RankMemory rm = project_memory(job).ranks[0];
    const double dynamic = rm.point[idx(MemoryComponent::kActivations)] +
                           rm.point[idx(MemoryComponent::kTransient)] +
                           rm.point[idx(MemoryComponent::kFsdpUnsharded)];
    EXPECT_NEAR(rm.point[idx(MemoryComponent::kFragmentation)],
                frac * dynamic + rm.allocator_excess_bytes, 1.0)
        << expandable;
  }
}

}  // namespace
}  // namespace projector
