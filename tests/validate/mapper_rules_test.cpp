// The validation mapper reads what an entry states and never fails on what it leaves open (issue
// 11, item 8): a named schedule without a VPP, a framework default that makes the layout illegal,
// bandwidth units, MLA dimensions from the mla block, all-null blocks, wrongly typed fields, and
// model families the projections do not model yet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "projector/validate/validate.h"
#include "validate/mapper.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

bool has_assumption(const MappedRun& m, const std::string& prefix) {
  return std::any_of(m.assumptions.begin(), m.assumptions.end(),
                     [&](const std::string& a) { return a.starts_with(prefix); });
}

// A 32-layer Llama-like model on 16 H100s; `training` and `model_extra` complete the entry.
MappedRun map_one(const std::string& training, const std::string& model_extra = "",
                  const std::string& framework = "Megatron-Core") {
  const std::string text =
      "- id: t\n  framework: " + framework +
      "\n  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 16, per_node: 8}\n"
      "  model:\n    family: llama3\n    num_layers: 32\n    hidden_size: 4096\n"
      "    num_attention_heads: 32\n    num_kv_heads: 8\n    vocab_size: 128256\n"
      "    activation: swiglu\n    norm: rmsnorm\n    position_embedding: rope\n" +
      model_extra + "  training: " + training + "\n";
  const std::vector<RunEntry> runs = parse_runs(text, "t.yaml");
  return map_run(runs.at(0), kData);
}

// "interleaved" without a VPP: the smallest VPP that splits 32 layers over PP 4 is 2, recorded.
TEST(MapperRules, NamedScheduleWithoutVpp) {
  const MappedRun m = map_one(
      "{tp: 1, pp: 4, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, "
      "pipeline_schedule: interleaved 1F1B}");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.runtime.schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ(m.job.parallel.vpp, 2);
  EXPECT_TRUE(has_assumption(m, "training.vpp = 2")) << m.assumptions.size();
  const MappedRun v = map_one(
      "{tp: 1, pp: 4, vpp: 1, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, "
      "pipeline_schedule: DualPipeV}");
  ASSERT_TRUE(v.mapped) << v.reason;
  EXPECT_EQ(v.job.parallel.vpp, 2);  // a V-shape schedule runs two chunks per rank
}

// FP8 weights from the entry's precision text (Megatron's flag named) or else the framework
// profile's recipes: a NeMo FP8 run with neither keeps its delayed-scaled weights in FP8 (NM3), a
// Megatron-Core one does not unless the entry names fp8_param_gather; MXFP8 NeMo runs do not.
TEST(MapperRules, Fp8WeightsFromTextOrTheProfile) {
  const std::string base =
      "{tp: 2, pp: 1, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, precision: ";
  const auto fp8_param = [&](const std::string& precision, const std::string& framework) {
    const MappedRun m = map_one(base + precision + "}", "", framework);
    EXPECT_TRUE(m.mapped) << m.reason;
    return m.job.runtime.precision.fp8_param;
  };
  EXPECT_TRUE(fp8_param("FP8 (Transformer Engine)", "NeMo 24.07"));
  EXPECT_FALSE(fp8_param("FP8 (Transformer Engine)", "Megatron-Core"));
  EXPECT_TRUE(fp8_param("'FP8 tensorwise, fp8_param_gather'", "Megatron-Core"));
  EXPECT_TRUE(fp8_param("'MXFP8 (--fp8-recipe mxfp8, --fp8-param-gather)'", "Megatron-Core"));
  EXPECT_FALSE(fp8_param("MXFP8", "NeMo 24.07"));
  EXPECT_FALSE(fp8_param("BF16", "NeMo 24.07"));
}

// Megatron's ETP = TP would make ETP x EP x PP = 2 x 16 x 1 = 32 not divide 16 GPUs: the other
// documented choice, ETP 1, is taken and listed.
TEST(MapperRules, EtpDefaultFallsBack) {
  const std::string moe =
      "    type: moe\n    moe: {num_experts: 16, topk: 2, moe_ffn_hidden_size: 1024}\n";
  const MappedRun m = map_one(
      "{tp: 2, pp: 1, ep: 16, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096}", moe);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.parallel.etp, 1);
  EXPECT_TRUE(has_assumption(m, "training.etp = 1 (megatron-core: ETP 2 would make"));
  const MappedRun fits = map_one(
      "{tp: 2, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096}", moe);
  ASSERT_TRUE(fits.mapped) << fits.reason;
  EXPECT_EQ(fits.job.parallel.etp, 2);
}

// Megatron's account_for_embedding / loss_in_pipeline_split: 30 layers + embedding + loss = 32
// over PP 4 x VPP 2 = 8 virtual stages of 4, so the first builds 3 layers beside the embedding and
// the last 3 beside the loss (by hand). Without the flags 30 layers do not fill 8 stages evenly.
TEST(MapperRules, EmbeddingAndLossCountInTheSplit) {
  const auto map30 = [](const std::string& flags) {
    std::string text =
        "- id: t\n  framework: Megatron-Core\n"
        "  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 16, per_node: 8}\n"
        "  model:\n    family: llama3\n    num_layers: 30\n    hidden_size: 4096\n"
        "    num_attention_heads: 32\n    num_kv_heads: 8\n    vocab_size: 128256\n"
        "  training: {tp: 1, pp: 4, vpp: 2, micro_batch_size: 1, global_batch_size: 64, "
        "seq_len: 4096" +
        flags + "}\n";
    return map_run(parse_runs(text, "t.yaml").at(0), kData);
  };
  const MappedRun m = map30(
      ", account_for_embedding_in_pipeline_split: true, account_for_loss_in_pipeline_split: true");
  ASSERT_TRUE(m.mapped) << m.reason;
  const std::vector<VirtualStage>& st = m.job.parallel.stages;
  ASSERT_EQ(st.size(), 8u);
  EXPECT_TRUE(st.front().has_embedding);
  EXPECT_EQ(st.front().num_layers, 3);
  EXPECT_TRUE(st.back().has_output);
  EXPECT_EQ(st.back().num_layers, 3);
  for (std::size_t i = 1; i + 1 < st.size(); ++i) EXPECT_EQ(st[i].num_layers, 4) << i;
  // Without the flags the run still maps (it ran): the first 30 mod 8 = 6 stages take one more.
  const MappedRun plain = map30("");
  ASSERT_TRUE(plain.mapped) << plain.reason;
  EXPECT_EQ(plain.job.parallel.stages.front().num_layers, 4);
  EXPECT_EQ(plain.job.parallel.stages.back().num_layers, 3);
  // Megatron refuses the flags beside a stated layout; so does the mapper, naming both.
  const MappedRun both = map30(
      ", pipeline_layout: 'Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*2L', "
      "account_for_loss_in_pipeline_split: true");
  EXPECT_FALSE(both.mapped);
  EXPECT_NE(both.reason.find("account_for_*_in_pipeline_split"), std::string::npos) << both.reason;
}

// training.recompute_modules decides what a selective recompute replays (Megatron's names); the
// framework's default set (core_attn) applies only when no list is stated.
TEST(MapperRules, StatedRecomputeModules) {
  const std::string moe =
      "    type: moe\n    moe: {num_experts: 16, topk: 2, moe_ffn_hidden_size: 1024}\n";
  const std::string base =
      "{tp: 1, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, "
      "recompute: selective";
  const MappedRun m = map_one(base + ", recompute_modules: [layernorm, moe]}", moe);
  ASSERT_TRUE(m.mapped) << m.reason;
  const RecomputeModules& mods = m.job.runtime.recompute.modules;
  EXPECT_TRUE(mods.has(RecomputeModule::kLayernorm));
  EXPECT_TRUE(mods.has(RecomputeModule::kMoe));
  EXPECT_FALSE(mods.has(RecomputeModule::kCoreAttn));
  const MappedRun d = map_one(base + "}", moe);
  ASSERT_TRUE(d.mapped) << d.reason;
  EXPECT_TRUE(d.job.runtime.recompute.modules.has(RecomputeModule::kCoreAttn));
  EXPECT_FALSE(d.job.runtime.recompute.modules.has(RecomputeModule::kMoe));
  // A list beside full recompute changes nothing; an unknown name is dropped, the rest kept.
  const MappedRun full = map_one(
      "{tp: 1, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, "
      "recompute: full, recompute_modules: [moe]}",
      moe);
  ASSERT_TRUE(full.mapped) << full.reason;
  EXPECT_EQ(full.job.runtime.recompute.granularity, RecomputeGranularity::kFull);
  const MappedRun odd = map_one(base + ", recompute_modules: [warp_drive, mlp]}", moe);
  ASSERT_TRUE(odd.mapped) << odd.reason;
  EXPECT_TRUE(odd.job.runtime.recompute.modules.has(RecomputeModule::kMlp));
}

// Primus-Turbo's sync-free MoE stage 1 and above fuse the token permutation (the Megatron
// adapter's rule for turbo_sync_free_moe_stage); a stated moe_permute_fusion wins, and without
// Primus-Turbo the phrase means nothing.
TEST(MapperRules, SyncFreeStageFusesThePermute) {
  const std::string moe =
      "    type: moe\n    moe: {num_experts: 16, topk: 2, moe_ffn_hidden_size: 1024}\n";
  const auto run = [&](const std::string& dispatcher, const std::string& extra,
                       const std::string& framework) {
    return map_one(
        "{tp: 1, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, "
        "seq_len: 4096, moe_dispatcher: '" +
            dispatcher + "'" + extra + "}",
        moe, framework);
  };
  const std::string primus = "Primus (Megatron-LM backend) + Primus-Turbo";
  const MappedRun one = run("Primus-Turbo DeepEP, sync-free MoE stage 1", "", primus);
  ASSERT_TRUE(one.mapped) << one.reason;
  EXPECT_TRUE(one.job.runtime.moe_permute_fusion);
  EXPECT_EQ(one.job.runtime.sync_free_moe_stage, 1);
  EXPECT_TRUE(has_assumption(one, "training.moe_permute_fusion = true"));
  EXPECT_FALSE(
      run("Primus-Turbo DeepEP, sync-free MoE stage 0", "", primus).job.runtime.moe_permute_fusion);
  EXPECT_FALSE(
      run("Primus-Turbo DeepEP, sync-free MoE stage 2", ", moe_permute_fusion: false", primus)
          .job.runtime.moe_permute_fusion);
  EXPECT_EQ(run("flex, DeepEP backend, sync-free stage 2", "", "Megatron-Core")
                .job.runtime.sync_free_moe_stage,
            0);
}

// The SMs (CUs) a deduplicating dispatcher's kernels take: a count the text states, else the
// profile's default for the kernel (Megatron: DeepEP 20, HybridEP 32; data/frameworks), as the
// Megatron adapter reads an unstated moe_deepep_num_sms; the all-to-all dispatcher takes none.
TEST(MapperRules, DispatcherUnitsStatedOrTheProfileDefault) {
  const std::string moe =
      "    type: moe\n    moe: {num_experts: 16, topk: 2, moe_ffn_hidden_size: 1024}\n";
  const auto units = [&](const std::string& dispatcher, const std::string& framework) {
    const MappedRun m = map_one(
        "{tp: 1, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, "
        "seq_len: 4096, moe_dispatcher: '" +
            dispatcher + "'}",
        moe, framework);
    EXPECT_TRUE(m.mapped) << m.reason;
    return m.job.runtime.moe_comm_compute_units;
  };
  const std::pair<const char*, int> rows[] = {
      {"flex, DeepEP backend", 20},
      {"flex (HybridEP backend), no all-to-all overlap", 32},
      {"flex, HybridEP backend (moe_hybridep_num_sms=32 in perf overrides)", 32},
      {"flex, HybridEP backend (moe-hybridep-num-sms 24)", 24},
      {"DeepEP (flex) on 24 SMs", 24},
      {"Primus-Turbo DeepEP (turbo_deepep_num_cu 80), sync-free MoE stage 1", 80},
      {"alltoall (no flex backend)", 0},
  };
  for (const auto& [text, n] : rows) EXPECT_EQ(units(text, "Megatron-Core"), n) << text;
  const MappedRun d = map_one(
      "{tp: 1, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, "
      "moe_dispatcher: 'flex, DeepEP backend'}",
      moe, "Megatron-Core");
  EXPECT_TRUE(has_assumption(d, "training.moe_deepep_num_sms = 20"));
}

// Fine-grained activation offloading as a run's overlap text names it: the modules it lists, as
// the Megatron adapter reads offload_modules; without module names nothing is offloaded.
TEST(MapperRules, ActivationOffloadModulesFromText) {
  const std::string moe =
      "    type: moe\n    moe: {num_experts: 16, topk: 2, moe_ffn_hidden_size: 1024}\n";
  const auto run = [&](const std::string& overlap) {
    return map_one(
        "{tp: 1, pp: 1, ep: 8, micro_batch_size: 1, global_batch_size: 64, "
        "seq_len: 4096, overlap: '" +
            overlap + "'}",
        moe);
  };
  const MappedRun m =
      run("overlap_grad_reduce; fine-grained activation offloading to host of expert_fc1 and "
          "moe_act outputs");
  ASSERT_TRUE(m.mapped) << m.reason;
  const OffloadSpec& off = m.job.runtime.offload;
  EXPECT_TRUE(off.has(OffloadModule::kExpertFc1));
  EXPECT_TRUE(off.has(OffloadModule::kMoeAct));
  EXPECT_FALSE(off.has(OffloadModule::kCoreAttn));
  EXPECT_FALSE(run("overlap_grad_reduce, moe_act fusion").job.runtime.offload.any());
  EXPECT_FALSE(run("activation offloading (modules not stated)").job.runtime.offload.any());
}

// A Megatron hybrid stack stated in model.block: one layer per pattern symbol, Mamba-2 with the
// sizes the text gives, the MoE block on the 'E' layers (moe_layer_freq is then descriptive).
TEST(MapperRules, HybridStackFromItsPattern) {
  const auto run = [](const std::string& block, int layers) {
    const std::string text =
        "- id: t\n  framework: Megatron-Core\n"
        "  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 8, per_node: 8}\n"
        "  model:\n    family: nemotron_h\n    type: moe\n    num_layers: " +
        std::to_string(layers) +
        "\n    hidden_size: 2048\n    ffn_hidden_size: 4096\n    num_attention_heads: 16\n"
        "    num_kv_heads: 2\n    vocab_size: 131072\n    activation: squared_relu\n"
        "    position_embedding: none\n    block: '" +
        block +
        "'\n    moe: {num_experts: 16, topk: 2, moe_ffn_hidden_size: 1024, moe_layer_freq: "
        "the E layers}\n  training: {tp: 1, pp: 1, ep: 8, micro_batch_size: 1, "
        "global_batch_size: 64, seq_len: 4096}\n";
    return map_run(parse_runs(text, "t.yaml").at(0), kData);
  };
  const MappedRun m =
      run("hybrid_layer_pattern ME*-ME (Mamba-2: 32 heads x head_dim 64, state 128, 8 groups)", 6);
  ASSERT_TRUE(m.mapped) << m.reason;
  const std::vector<LayerSpec>& l = m.job.model.layers;
  ASSERT_EQ(l.size(), 6u);
  EXPECT_EQ(l[0].kind, LayerKind::kMamba);
  EXPECT_EQ(l[0].mamba.num_heads, 32);
  EXPECT_EQ(l[0].mamba.state_dim, 128);
  EXPECT_EQ(l[0].mamba.d_inner(), 2048);
  EXPECT_TRUE(l[1].is_moe);
  EXPECT_EQ(l[1].mlp.ffn_hidden_size, 1024);
  EXPECT_EQ(l[2].kind, LayerKind::kAttention);
  EXPECT_EQ(l[3].kind, LayerKind::kFfn);
  EXPECT_FALSE(l[3].is_moe);
  EXPECT_EQ(l[3].mlp.ffn_hidden_size, 4096);
  EXPECT_EQ(l[0].mlp.activation, ActivationKind::kSquaredRelu);
  // A pattern of the wrong length, or Mamba layers without their sizes, is refused by name.
  EXPECT_FALSE(
      run("hybrid_layer_pattern ME*-ME (32 heads x head_dim 64, state 128, 8 groups)", 7).mapped);
  const MappedRun no_sizes = run("hybrid_layer_pattern ME*-ME", 6);
  EXPECT_FALSE(no_sizes.mapped);
  EXPECT_NE(no_sizes.reason.find("Mamba layers without their sizes"), std::string::npos)
      << no_sizes.reason;
}

// Units as written: Gb/s (bits) vs GB/s (bytes), per GPU vs per node.
TEST(MapperRules, BandwidthUnits) {
  using validate_detail::stated_node_gbps;
  std::string how;
  EXPECT_DOUBLE_EQ(stated_node_gbps("backend RDMA 400 Gb/s per GPU", 8, how), 3200.0);
  EXPECT_DOUBLE_EQ(stated_node_gbps("RDMA 50 GB/s per GPU", 8, how), 3200.0);
  EXPECT_DOUBLE_EQ(stated_node_gbps("RoCE 400 Gbps/node", 8, how), 400.0);
  EXPECT_DOUBLE_EQ(stated_node_gbps("8x400Gb/s InfiniBand per node", 8, how), 3200.0);
  EXPECT_DOUBLE_EQ(stated_node_gbps("8 x 50 GB/s per node", 8, how), 3200.0);
  EXPECT_DOUBLE_EQ(stated_node_gbps("8x80GB GPUs per node", 8, how), 0.0);  // memory, not a link
}

// MLA: the attention dimensions come from the mla block; hidden / heads is never assumed.
TEST(MapperRules, MlaFromTheMlaBlock) {
  const std::string mla =
      "    mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128,\n"
      "          qk_rope_head_dim: 64, v_head_dim: 128}\n";
  const MappedRun m =
      map_one("{tp: 1, pp: 1, micro_batch_size: 1, global_batch_size: 16, seq_len: 4096}", mla);
  ASSERT_TRUE(m.mapped) << m.reason;
  const AttentionSpec& a = m.job.model.layers[0].attention;
  EXPECT_EQ(a.kind, AttentionKind::kMla);
  EXPECT_EQ(a.head_dim, 192);  // 128 + 64, not 4096 / 32
  EXPECT_FALSE(has_assumption(m, "model.head_dim"));
}

// A block whose fields are all null is absent: standard attention, the run maps.
TEST(MapperRules, AllNullBlockIsAbsent) {
  const std::string mla =
      "    mla: {q_lora_rank: null, kv_lora_rank: null, qk_nope_head_dim: null,\n"
      "          qk_rope_head_dim: null, v_head_dim: null}\n";
  const MappedRun m =
      map_one("{tp: 1, pp: 1, micro_batch_size: 1, global_batch_size: 16, seq_len: 4096}", mla);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.model.layers[0].attention.kind, AttentionKind::kStandard);
}

// A wrongly typed field is dropped with a warning; the run still maps from the rest.
TEST(MapperRules, WrongTypeDropsTheFieldOnly) {
  const MappedRun m =
      map_one("{tp: two, pp: 1, micro_batch_size: 1, global_batch_size: 16, seq_len: 4096}");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.parallel.tp, 1);
  EXPECT_TRUE(has_assumption(m, "dropped: t: training.tp: expected an integer"));
}

// An unknown framework name is not a failure: no framework's conventions are assumed.
TEST(MapperRules, UnknownFrameworkIsAnAssumption) {
  const MappedRun m =
      map_one("{tp: 1, pp: 1, micro_batch_size: 1, global_batch_size: 16, seq_len: 4096}", "",
              "HomeGrownTrainer 0.1");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.framework, "unknown");
  EXPECT_TRUE(has_assumption(m, "framework = unknown"));
}

// DLRM entries map to the recommendation family and are projected in samples per second.
TEST(MapperRules, RecommendationRunsAreProjected) {
  const std::vector<RunEntry> runs = load_runs(kData + "/validation/recsys_runs.yaml");
  const MappedRun m = map_run(runs.at(0), kData);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.framework, "torchrec");
  EXPECT_EQ(m.job.model.family, ModelFamily::kRecommendation);
  EXPECT_EQ(m.job.model.recommendation.tables.size(), 26u);
  EXPECT_EQ(m.job.model.recommendation.top_mlp.layer_sizes.back(), 1);
  EXPECT_EQ(m.job.runtime.recsys.embedding_optimizer, RecsysOptimizer::kSgd);  // training.optimizer
  EXPECT_EQ(m.job.runtime.micro_batch_size, 256);  // training.batch_size_per_gpu
  EXPECT_EQ(m.job.runtime.global_batch_size, 2048);
  EXPECT_EQ(map_run(runs.at(1), kData).job.runtime.recsys.embedding_optimizer,
            RecsysOptimizer::kAdagrad);
  const ValidationReport r = validate(runs, make_default_project_fn(), kData);
  EXPECT_EQ(r.summary.not_modelled, 0);
  for (const RunResult& rr : r.runs) {
    EXPECT_EQ(rr.status, "ok") << rr.id << ": " << rr.reason;
    ASSERT_TRUE(rr.throughput_error_pct) << rr.id;
    EXPECT_LT(std::abs(*rr.throughput_error_pct), 20.0) << rr.id;
    EXPECT_EQ(rr.throughput_basis, "samples_per_sec_total (measured)");
  }
}

// Block recompute with its layer count in words (Primus' recompute_num_layers): that many layers
// per stage; without a count, every layer.
TEST(MapperRules, BlockRecomputeLayerCountFromText) {
  const std::string t =
      "{tp: 1, pp: 1, micro_batch_size: 1, global_batch_size: 64, seq_len: 4096, ";
  MappedRun m = map_one(t +
                        "recompute: 'full (method block, recompute_num_layers 5: first 5 of "
                        "48 layers recomputed)'}");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.runtime.recompute.method, RecomputeMethod::kBlock);
  EXPECT_EQ(m.job.runtime.recompute.num_layers, 5);
  m = map_one(t + "recompute: 'full, block method, first 3 layers'}");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.runtime.recompute.num_layers, 3);
  m = map_one(t + "recompute: 'full (block)'}");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_GE(m.job.runtime.recompute.num_layers, 32);  // every layer of the stage
}

}  // namespace
}  // namespace projector
