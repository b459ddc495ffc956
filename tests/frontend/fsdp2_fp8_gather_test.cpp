// Primus' use_fsdp2_fp8_all_gather (PR19): with torch FSDP2 and tensorwise FP8, the GEMM weights
// all-gather in fp8 and the GEMMs use them as gathered, while the shard keeps its dtype. Checked
// on the bundled Flux 12B FP8 example switched to FSDP2 as Primus' FSDP2 FP8 example runs it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/util/error.h"
#include "projector/workload/workload.h"
#include "support/config_text.h"

namespace projector {
namespace {

const char* kFlux = "MI300X/diffusion/flux_12b_ddp_energon_schnell_resample_te_spec_fp8.yaml";

JobSpec flux_fsdp2(bool fp8_gather, const std::string& recipe = "tensorwise") {
  return testing::load_bundled_primus_example(
      kFlux, "mi300x",
      {"use_torch_fsdp2=true", "use_distributed_optimizer=false", "fp8_recipe=" + recipe,
       std::string("use_fsdp2_fp8_all_gather=") + (fp8_gather ? "true" : "false")});
}

double gathered_bytes(const JobSpec& job) {
  double b = 0.0;
  for (const Op& op : build_workload(job).ranks[0].iteration.param_gather) b += op.bytes;
  return b;
}

double component(const MemoryReport& m, MemoryComponent c) {
  return m.ranks[0].point[static_cast<std::size_t>(c)];
}

// The gathers move the fp8-eligible GEMM weights in one byte instead of two (bf16): they shrink
// by exactly those weights' count (per gather); the sharded weights stay as large; the fp8 weight
// copies lose the rowwise cast (the gathered weight is it).
TEST(Fsdp2Fp8AllGather, GemmWeightsTravelInOneByte) {
  const JobSpec on = flux_fsdp2(true);
  const JobSpec off = flux_fsdp2(false);
  ASSERT_EQ(on.parallel.fsdp, FsdpKind::kFsdp2);
  EXPECT_TRUE(on.runtime.precision.fp8_param);
  EXPECT_TRUE(on.runtime.precision.fp8_gather_only);
  EXPECT_FALSE(off.runtime.precision.fp8_gather_only);

  const VirtualStage& st = on.parallel.stages[0];
  const StageParams sp = stage_params(on.model, on.parallel, st, false, &on.runtime.precision);
  const double q_gemm = sp.dense_gemm_params - sp.bf16_gemm_params;
  ASSERT_GT(q_gemm, 0.0);
  const double b_on = gathered_bytes(on);
  const double b_off = gathered_bytes(off);
  ASSERT_GT(b_off, 0.0);
  // reshard_after_forward gathers before the forward and again before the backward.
  const double gathers = on.parallel.reshard_after_forward ? 2.0 : 1.0;
  EXPECT_NEAR(b_off - b_on, gathers * q_gemm * (2.0 - 1.0), 1e-6 * b_off);

  const MemoryReport m_on = project_memory(on);
  const MemoryReport m_off = project_memory(off);
  EXPECT_DOUBLE_EQ(component(m_on, MemoryComponent::kWeights),
                   component(m_off, MemoryComponent::kWeights));
  const double copies_off = component(m_off, MemoryComponent::kFp8WeightCopies);
  const double copies_on = component(m_on, MemoryComponent::kFp8WeightCopies);
  ASSERT_GT(copies_off, 0.0);
  EXPECT_NEAR(copies_on, on.runtime.precision.fp8_transpose_cached ? copies_off / 2.0 : 0.0,
              1e-6 * copies_off);
}

// Primus refuses it with delayed scaling; without FSDP2 it does nothing and says so.
TEST(Fsdp2Fp8AllGather, PrimusRefusalsAndNoOps) {
  try {
    flux_fsdp2(true, "delayed");
    ADD_FAILURE() << "delayed scaling with use_fsdp2_fp8_all_gather loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("use_fsdp2_fp8_all_gather"), std::string::npos)
        << e.what();
  }
  const JobSpec ddp =
      testing::load_bundled_primus_example(kFlux, "mi300x", {"use_fsdp2_fp8_all_gather=true"});
  EXPECT_FALSE(ddp.runtime.precision.fp8_gather_only);
  bool said = false;
  for (const std::string& w : ddp.warnings) {
    said = said ||
           w.find("use_fsdp2_fp8_all_gather: set without use_torch_fsdp2") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace projector
