// Issue 29 ("one limit"): memory and performance lay out the same virtual stages. Memory used to
// clamp VPP to 64 chunks silently while the performance projection ran every stated one; a
// legal Megatron layout with more (here 160 layers on PP 2 x VPP 80, one layer a chunk) is now
// projected whole.
#include <gtest/gtest.h>

#include <string>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "support/config_text.h"

namespace projector {
namespace {

TEST(VirtualStages, MemoryHoldsEveryStatedChunk) {
  testing::TempDir dir;
  const std::string text =
      "num_layers: 160\nhidden_size: 512\nnum_attention_heads: 8\nffn_hidden_size: 2048\n"
      "swiglu: true\nnormalization: RMSNorm\nvocab_size: 32000\nadd_bias_linear: false\n"
      "bf16: true\nmicro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 1024\n"
      "pipeline_model_parallel_size: 2\nnum_virtual_stages_per_pipeline_rank: 80\n"
      "hidden_dropout: 0.0\nattention_dropout: 0.0\n";
  const JobSpec job = testing::load_config_text(dir, text, "mi300x");
  ASSERT_EQ(job.parallel.vpp, 80);
  const MemoryReport mem = project_memory(job);
  ASSERT_EQ(mem.ranks.size(), 2u);
  for (const RankMemory& r : mem.ranks) {
    EXPECT_EQ(r.virtual_stages.size(), 80u);
    EXPECT_EQ(r.num_layers, 80);  // 160 layers / (2 x 80) chunks, one each
    EXPECT_EQ(r.activation_per_chunk_bytes.size(), 80u);
  }
  EXPECT_GT(project_performance(job).iteration_s, 0.0);
}

}  // namespace
}  // namespace projector
