// Megatron's defer_embedding_wgrad_compute (MG28): the last pipeline stage moves the output
// layer's weight-gradient GEMM of its first wgrad_deferral_limit microbatches into a drain after
// its last backward, and keeps their inputs and logit gradients until then. Checked on the shipped
// NeMo 24.07 Nemotron-4 340B recipe (data/validation/configs), which sets both keys.
#include <gtest/gtest.h>

#include <string>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/accounting.h"
#include "projector/perf/perf.h"
#include "projector/util/error.h"

namespace projector {
namespace {

LoadRequest nemotron(const std::vector<std::string>& sets = {}) {
  LoadRequest r;
  r.config_path =
      default_data_dir() +
      "/validation/configs/calibration_runs/nemo-24.07-nemotron4-340b-fp8-h100x128.yaml";
  r.data_dir = default_data_dir();
  r.hardware = "h100_sxm";
  r.cli.nodes = 16;
  r.cli.gpus_per_node = 8;
  r.set_overrides = sets;
  return r;
}

const ChunkTiming& output_chunk(const PerfReport& rep) {
  const ChunkTiming* out = nullptr;
  for (const ChunkTiming& ct : rep.chunks) {
    for (const PricedOp& po : ct.ops) {
      if (po.op.name == "output.logits.wgrad") out = &ct;
    }
  }
  EXPECT_NE(out, nullptr);
  return *out;
}

double output_wgrad_s(const ChunkTiming& ct) {
  double t = 0.0;
  for (const PricedOp& po : ct.ops) {
    if (po.op.name == "output.logits.wgrad") t += po.time_s * po.repeat;
  }
  return t;
}

// The recipe states wgrad_deferral_limit 22; 32 sequences over DP 2 at MBS 1 are 16 microbatches,
// so all 16 are deferred. The output chunk's W keeps (16 - 16) / 16 of its wgrad GEMM, the last
// rank drains 16 of them, and the step gets no longer than without the deferral.
TEST(DeferredOutputWgrad, MovesTheGemmIntoTheDrain) {
  const JobSpec deferred = load_job(nemotron());
  ASSERT_TRUE(deferred.runtime.defer_output_wgrad);
  EXPECT_EQ(deferred.runtime.output_wgrad_deferral_limit, 22);
  ASSERT_EQ(deferred.microbatches_per_flush(), 16);
  EXPECT_EQ(deferred.deferred_output_wgrads(), 16);
  const JobSpec plain = load_job(nemotron({"defer_embedding_wgrad_compute=false"}));
  EXPECT_EQ(plain.deferred_output_wgrads(), 0);

  const PerfReport a = project_performance(deferred);
  const PerfReport b = project_performance(plain);
  const ChunkTiming& ca = output_chunk(a);
  const ChunkTiming& cb = output_chunk(b);
  const double gemm = output_wgrad_s(cb);
  ASSERT_GT(gemm, 0.0);
  EXPECT_NEAR(ca.deferred_wgrad_s, 16.0 * gemm, 1e-9 * gemm);
  EXPECT_NEAR(ca.w_s, cb.w_s - gemm, 1e-9 * gemm);
  EXPECT_DOUBLE_EQ(cb.deferred_wgrad_s, 0.0);
  // The drain overlaps the flush: the step is no longer, and shorter by at most the GEMMs moved.
  EXPECT_LE(a.iteration_s, b.iteration_s + 1e-12);
  EXPECT_GE(a.iteration_s, b.iteration_s - 16.0 * gemm);

  // A limit below the microbatches defers only that many: 4 of 16 leave 12 / 16 in each W.
  const JobSpec four = load_job(nemotron({"wgrad_deferral_limit=4"}));
  EXPECT_EQ(four.deferred_output_wgrads(), 4);
  const ChunkTiming& c4 = output_chunk(project_performance(four));
  EXPECT_NEAR(c4.deferred_wgrad_s, 4.0 * gemm, 1e-9 * gemm);
  EXPECT_NEAR(c4.w_s, cb.w_s - gemm * 4.0 / 16.0, 1e-9 * gemm);
}

// The last rank keeps 16 microbatches' output-layer input (its sequence-parallel shard,
// 4096 x 18432 / TP 8 in bf16) and logit gradient (4096 x 256000 / TP 8 in bf16) until the drain:
// 16 x (18.87 MB + 262.14 MB) more activations than without the deferral; the other ranks none.
TEST(DeferredOutputWgrad, TheLastStageHoldsTheBuffers) {
  const MemoryReport a = project_memory(load_job(nemotron()));
  const MemoryReport b =
      project_memory(load_job(nemotron({"defer_embedding_wgrad_compute=false"})));
  const double per_mb = 4096.0 * 18432.0 * 2.0 / 8.0 + 4096.0 * 256000.0 / 8.0 * 2.0;
  const auto act = static_cast<std::size_t>(MemoryComponent::kActivations);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    const double extra = a.ranks[r].has_output ? 16.0 * per_mb : 0.0;
    EXPECT_NEAR(a.ranks[r].upper[act] - b.ranks[r].upper[act], extra, 1e-6 * per_mb) << r;
  }
  EXPECT_TRUE(a.ranks.back().has_output);
}

// Megatron refuses the deferral without pipeline parallelism (whoever sets PP) and without
// gradient_accumulation_fusion, and a negative limit: the error names the key and its line.
TEST(DeferredOutputWgrad, MegatronsRefusalsAreErrors) {
  LoadRequest pp1 =
      nemotron({"pipeline_model_parallel_size=1", "num_virtual_stages_per_pipeline_rank=1"});
  pp1.cli.pp = 1;
  try {
    load_job(pp1);
    ADD_FAILURE() << "PP 1 with defer_embedding_wgrad_compute loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("defer_embedding_wgrad_compute"), std::string::npos)
        << e.what();
  }
  for (const char* set : {"gradient_accumulation_fusion=false", "wgrad_deferral_limit=-1"}) {
    try {
      load_job(nemotron({set}));
      ADD_FAILURE() << set << " loaded";
    } catch (const InputError& e) {
      const std::string key = std::string(set).substr(0, std::string(set).find('='));
      const std::string what = e.what();
      EXPECT_TRUE(what.find("defer_embedding_wgrad_compute") != std::string::npos ||
                  what.find(key) != std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace projector
