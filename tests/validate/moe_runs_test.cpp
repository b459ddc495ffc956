// Issue 16: the MoE runs of calibration_runs_moe_tpu.yaml. The DeepSeek-V4 entry is projected
// from its compressed_attention block (issue 28; without it it stops as not_modelled rather than
// be read as a 64-head MHA); the GB200 Llama-4 Scout runs are read with local batch 1 (torchao's
// README for the same run) and fit the part.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kDataDir = PROJECTOR_DEFAULT_DATA_DIR;

const std::vector<RunEntry>& runs() {
  static const std::vector<RunEntry> r =
      load_runs(kDataDir + "/validation/calibration_runs_moe_tpu.yaml");
  return r;
}

std::vector<RunEntry> only(const std::string& prefix) {
  std::vector<RunEntry> out;
  for (const RunEntry& e : runs()) {
    if (e.id.rfind(prefix, 0) == 0) out.push_back(e);
  }
  return out;
}

// The 16-layer V4-Flash run: V4 attention with the stated ratios (0 x 3, 4 x 7, 128 x 6), four
// hyper-connection streams, the first three layers hash-routed; it projects and fits (its error
// is reported, never fitted: the entry is excluded from the statistics).
TEST(MoeRuns, DeepSeekV4IsProjected) {
  const std::vector<RunEntry> v4 = only("mi355x-8gpu-dsv4");
  ASSERT_EQ(v4.size(), 1u);
  const MappedRun m = map_run(v4[0], kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_TRUE(m.not_modelled.empty()) << m.not_modelled;
  const ModelSpec& model = m.job.model;
  ASSERT_EQ(model.num_layers(), 16);
  EXPECT_EQ(model.hc_mult, 4);
  int ratios[3] = {0, 0, 0};  // 0, 4, 128
  for (const LayerSpec& l : model.layers) {
    EXPECT_EQ(l.attention.kind, AttentionKind::kCompressed);
    const int r = l.attention.compressed.compress_ratio;
    ++ratios[r == 0 ? 0 : r == 4 ? 1 : 2];
  }
  EXPECT_EQ(ratios[0], 3);
  EXPECT_EQ(ratios[1], 7);
  EXPECT_EQ(ratios[2], 6);
  EXPECT_TRUE(model.layers[2].moe.hash_routing);
  EXPECT_FALSE(model.layers[3].moe.hash_routing);
  const ValidationReport rep = validate(v4, make_default_project_fn(), kDataDir);
  ASSERT_EQ(rep.runs.size(), 1u);
  EXPECT_EQ(rep.runs[0].status, "ok") << rep.runs[0].reason;
  EXPECT_FALSE(rep.runs[0].predicted.out_of_memory);
}

// Local batch 1 x 256 FSDP ranks; 8192 tokens per GPU per step; the projection fits 186 GB.
TEST(MoeRuns, Gb200ScoutRunsFitWithBatchOne) {
  const std::vector<RunEntry> gb = only("gb200-llama4-scout");
  ASSERT_EQ(gb.size(), 2u);
  for (const RunEntry& e : gb) {
    const MappedRun m = map_run(e, kDataDir);
    ASSERT_TRUE(m.mapped) << m.reason;
    EXPECT_EQ(m.job.runtime.micro_batch_size, 1) << e.id;
    EXPECT_EQ(m.job.runtime.global_batch_size, 256) << e.id;
  }
  const ValidationReport rep = validate(gb, make_default_project_fn(), kDataDir);
  for (const RunResult& r : rep.runs) {
    ASSERT_EQ(r.status, "ok") << r.id << ": " << r.reason;
    EXPECT_FALSE(r.predicted.out_of_memory) << r.id;
  }
}

// calibration_runs_4.yaml states the recipe's MoE switches: moe_a2a_overlap (Megatron-Core's
// combined 1F1B) and moe_permute_fusion (TE's fused permute) reach the job as the Megatron
// adapter's keys would; a run whose layout Megatron would not allow the overlap keeps it off.
TEST(MoeRuns, RecipeOverlapAndPermuteFusionAreRead) {
  const std::vector<RunEntry> all = load_runs(kDataDir + "/validation/calibration_runs_4.yaml");
  int overlapped = 0, fused = 0;
  for (const RunEntry& e : all) {
    const MappedRun m = map_run(e, kDataDir);
    if (!m.mapped) continue;
    const RuntimeSpec& rt = m.job.runtime;
    const bool stated_overlap = e.training.moe_a2a_overlap.value_or(false);
    const bool allowed = e.training.pp.value_or(1) == 1 || e.training.vpp.value_or(1) >= 2;
    EXPECT_EQ(combined_forward_backward(m.job), stated_overlap && allowed) << e.id;
    if (combined_forward_backward(m.job)) ++overlapped;
    if (e.training.moe_permute_fusion) {
      EXPECT_EQ(rt.moe_permute_fusion, *e.training.moe_permute_fusion) << e.id;
      fused += rt.moe_permute_fusion ? 1 : 0;
    }
    if (e.id.find("delay") != std::string::npos ||
        e.training.overlap.find("delay_wgrad") != std::string::npos) {
      EXPECT_EQ(rt.moe_overlap.has(MoeOverlap::kDelayedWgrad), combined_forward_backward(m.job))
          << e.id;
    }
  }
  EXPECT_GE(overlapped, 4);  // 6 entries state it; two of them are not mapped (free text)
  EXPECT_GE(fused, 20);
}

// training.cuda_graphs reaches the job as the Megatron adapter reads cuda_graph_impl /
// cuda_graph_modules: the TE scopes by name, full_iteration alone, "none" / "unknown" as none.
TEST(MoeRuns, CudaGraphScopesAreRead) {
  int scoped = 0, full = 0;
  for (const char* f :
       {"/validation/calibration_runs_4.yaml", "/validation/calibration_runs.yaml"}) {
    for (const RunEntry& e : load_runs(kDataDir + f)) {
      const MappedRun m = map_run(e, kDataDir);
      if (!m.mapped) continue;
      const CudaGraphs& g = m.job.runtime.cuda_graphs;
      const std::string& text = e.training.cuda_graphs;
      if (text.find("full_iteration") != std::string::npos) {
        EXPECT_TRUE(g.full_iteration) << e.id;
        ++full;
      } else if (text.find("scope [attn, moe_router, moe_preprocess]") != std::string::npos) {
        EXPECT_TRUE(g.has(CudaGraphModule::kAttn)) << e.id;
        EXPECT_TRUE(g.has(CudaGraphModule::kMoeRouter)) << e.id;
        EXPECT_TRUE(g.has(CudaGraphModule::kMoePreprocess)) << e.id;
        EXPECT_FALSE(g.has(CudaGraphModule::kMamba)) << e.id;
        // Every such entry names transformer_engine: TE's static input buffers apply.
        EXPECT_EQ(g.impl, CudaGraphImpl::kTransformerEngine) << e.id;
        ++scoped;
      } else if (text.empty() || text.starts_with("none") || text.starts_with("unknown")) {
        EXPECT_FALSE(g.any()) << e.id;
      }
    }
  }
  EXPECT_GE(scoped, 3);
  EXPECT_GE(full, 1);
}

// training.optimizer_states names Megatron's precision-aware optimizer and its dtypes. The AMD
// Qwen3-30B-A3B run states bf16 main grads and bf16 moments: its gradient buffer is then as large
// as its bf16 weights, and its Adam moments half of what Megatron's fp32 states take (the same
// entry with the phrase removed); other phrasings keep what they name, "off" keeps fp32.
TEST(MoeRuns, PrecisionAwareOptimizerStatesAreRead) {
  const std::vector<RunEntry> all = load_runs(kDataDir + "/validation/calibration_runs_4.yaml");
  const RunEntry* amd = nullptr;
  for (const RunEntry& e : all) {
    if (e.id == "amd-primus-qwen3-30b-a3b-bf16-mi355x8-ep8-mbs8-recompute5") amd = &e;
  }
  ASSERT_NE(amd, nullptr);
  RunEntry plain = *amd;
  plain.training.optimizer_states = "fp32 Adam states";
  const MappedRun stated = map_run(*amd, kDataDir);
  const MappedRun fp32 = map_run(plain, kDataDir);
  ASSERT_TRUE(stated.mapped && fp32.mapped);
  const RuntimeSpec& rt = stated.job.runtime;
  EXPECT_TRUE(rt.precision_aware_optimizer);
  EXPECT_EQ(rt.main_grads_dtype, Dtype::kBf16);
  EXPECT_EQ(rt.exp_avg_dtype, Dtype::kBf16);
  EXPECT_EQ(rt.exp_avg_sq_dtype, Dtype::kBf16);
  EXPECT_FALSE(fp32.job.runtime.precision_aware_optimizer);
  auto part = [](const JobSpec& j, MemoryComponent c) {
    return project_memory(j).ranks[0].point[static_cast<int>(c)];
  };
  EXPECT_NEAR(part(stated.job, MemoryComponent::kGradients),
              part(stated.job, MemoryComponent::kWeights), 1.0);
  EXPECT_NEAR(part(stated.job, MemoryComponent::kOptimizerStates),
              0.5 * part(fp32.job, MemoryComponent::kOptimizerStates), 1.0);

  RunEntry other = *amd;
  other.training.optimizer_states =
      "precision-aware optimizer: fp32 main params/grads, bf16 exp_avg / exp_avg_sq";
  const RuntimeSpec o = map_run(other, kDataDir).job.runtime;
  EXPECT_EQ(o.main_grads_dtype, Dtype::kFp32);
  EXPECT_EQ(o.exp_avg_dtype, Dtype::kBf16);
  EXPECT_EQ(o.exp_avg_sq_dtype, Dtype::kBf16);
  other.training.optimizer_states = "precision-aware optimizer: bf16 exp_avg_sq, CPU offload";
  const RuntimeSpec sq = map_run(other, kDataDir).job.runtime;
  EXPECT_TRUE(sq.precision_aware_optimizer);  // "offload" is not "off"
  EXPECT_EQ(sq.exp_avg_dtype, Dtype::kFp32);
  EXPECT_EQ(sq.exp_avg_sq_dtype, Dtype::kBf16);
  other.training.optimizer_states = "fp32 Adam states (precision-aware optimizer off)";
  EXPECT_FALSE(map_run(other, kDataDir).job.runtime.precision_aware_optimizer);
  other.training.optimizer_states = "fp32 Adam states (use_precision_aware_optimizer False)";
  EXPECT_FALSE(map_run(other, kDataDir).job.runtime.precision_aware_optimizer);
}

}  // namespace
}  // namespace projector
