// Cross-module invariant: the memory projection (optimizer state held) and the workload
// (optimizer-step traffic) read the same optimizer bytes per parameter (accounting.h), for every
// optimizer and dtype. Each expectation is worked out by hand: one step reads the gradient, the
// fp32 master weights and the states, writes master and states back and the working weights.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/workload/workload.h"
#include "support/job_builders.h"

namespace projector {
namespace {

struct Case {
  const char* name;
  OptimizerKind optimizer;
  Dtype grads, exp_avg, exp_avg_sq;
  double state_bytes;    // held per parameter
  double traffic_bytes;  // moved per parameter by one step
};

// bf16 weights. Adam fp32: states 4 + 4; traffic 4 (grad) + 2 x 4 (master) + 2 x 8 + 2 = 30.
// Adam with bf16 moments (precision-aware optimizer): 2 + 2; 4 + 8 + 2 x 4 + 2 = 22.
// SGD (Megatron --sgd-momentum 0.9) and Muon: one fp32 momentum, 4; 4 + 8 + 2 x 4 + 2 = 22.
// bf16 gradient buffer (grad_reduce_in_bf16) with Adam: 2 + 8 + 16 + 2 = 28.
constexpr Case kCases[] = {
    {"adam", OptimizerKind::kAdam, Dtype::kFp32, Dtype::kFp32, Dtype::kFp32, 8.0, 30.0},
    {"adam-bf16-moments", OptimizerKind::kAdam, Dtype::kFp32, Dtype::kBf16, Dtype::kBf16, 4.0,
     22.0},
    {"sgd", OptimizerKind::kSgd, Dtype::kFp32, Dtype::kFp32, Dtype::kFp32, 4.0, 22.0},
    {"muon", OptimizerKind::kMuon, Dtype::kFp32, Dtype::kFp32, Dtype::kFp32, 4.0, 22.0},
    {"adam-bf16-grads", OptimizerKind::kAdam, Dtype::kBf16, Dtype::kFp32, Dtype::kFp32, 8.0, 28.0},
};

TEST(OptimizerBytes, MemoryAndWorkloadAgree) {
  for (const Case& c : kCases) {
    // One GPU, no optimizer sharding: every parameter of the rank is stepped by it.
    testing::JobShape s{.nodes = 1, .gpn = 1, .gbs = 1, .dist_opt = false};
    JobSpec j = testing::make_job(testing::llama32_1b(), s);
    j.runtime.optimizer = c.optimizer;
    j.runtime.main_grads_dtype = c.grads;
    j.runtime.precision_aware_optimizer = c.exp_avg != Dtype::kFp32;
    j.runtime.exp_avg_dtype = c.exp_avg;
    j.runtime.exp_avg_sq_dtype = c.exp_avg_sq;

    const OptimizerBytes b = optimizer_bytes_per_param(j.runtime);
    EXPECT_DOUBLE_EQ(b.state_bytes, c.state_bytes) << c.name;
    EXPECT_DOUBLE_EQ(b.step_traffic_bytes, c.traffic_bytes) << c.name;

    MemoryOptions mo;
    mo.suggest_remedies = false;
    const MemoryReport report = project_memory(j, mo);
    const RankMemory& r = report.ranks.at(0);
    const double params = r.params.dense_params + r.params.expert_params;
    const double held = r.point[static_cast<int>(MemoryComponent::kOptimizerStates)] / params;
    EXPECT_DOUBLE_EQ(held, c.state_bytes) << c.name;
    EXPECT_DOUBLE_EQ(r.point[static_cast<int>(MemoryComponent::kMasterWeights)] / params, 4.0);

    const Workload w = build_workload(j);
    const IterationWork& it = w.ranks.at(0).iteration;  // w outlives it
    const double moved = it.optimizer.bytes / static_cast<double>(it.local_params);
    EXPECT_NEAR(moved, c.traffic_bytes, 1e-9 * c.traffic_bytes) << c.name;
    // The state bytes the workload moves are the ones memory holds: traffic minus gradient,
    // master and weights, halved (read + write).
    const double grad = bytes_per_element(c.grads);
    EXPECT_NEAR((moved - grad - 2.0 * 4.0 - 2.0) / 2.0, held, 1e-9) << c.name;
  }
}

}  // namespace
}  // namespace projector
