#include "projector/validate/validate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "projector/hardware/catalog.h"
#include "projector/job/accounting.h"
#include "projector/model/accounting.h"
#include "projector/util/error.h"
#include "projector/workload/workload.h"
#include "support/model_builders.h"

namespace projector {
namespace {

const std::string kDataDir = PROJECTOR_DEFAULT_DATA_DIR;
const std::string kRunsFile = kDataDir + "/validation/calibration_runs.yaml";

const std::vector<RunEntry>& all_runs() {
  static const std::vector<RunEntry> runs = load_runs(kRunsFile);
  return runs;
}

const RunEntry& find_run(const std::string& id) {
  for (const RunEntry& e : all_runs()) {
    if (e.id == id) return e;
  }
  throw std::runtime_error("no run " + id);
}

// An entry of calibration_runs_4.yaml.
const RunEntry& find_run4(const std::string& id) {
  static const std::vector<RunEntry> runs =
      load_runs(kDataDir + "/validation/calibration_runs_4.yaml");
  for (const RunEntry& e : runs) {
    if (e.id == id) return e;
  }
  throw std::runtime_error("no run " + id);
}

bool has_assumption(const MappedRun& m, const std::string& prefix) {
  return std::any_of(m.assumptions.begin(), m.assumptions.end(),
                     [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
}

// ----------------------------------------------------------------------------------- loading

// The bundled file has 64 entries (README.md), all well-formed, with unique ids.
TEST(LoadRuns, BundledFile) {
  const auto& runs = all_runs();
  ASSERT_EQ(runs.size(), 64u);
  for (const RunEntry& e : runs) EXPECT_TRUE(e.ok()) << e.id << ": " << e.errors.front();
  EXPECT_EQ(runs.front().id, "megatron-sc21-gpt-1.7b-a100x32");
  EXPECT_EQ(runs.front().line, 3);  // the file starts with two comment lines
  const RunEntry& e = runs.front();
  EXPECT_EQ(e.hardware.count, 32);
  EXPECT_EQ(e.model.hidden_size, 2304);
  EXPECT_EQ(e.training.micro_batch_size, 16);
  EXPECT_DOUBLE_EQ(*e.measured.tflops_per_gpu, 137.0);
  EXPECT_DOUBLE_EQ(*e.derived.step_time_s, 3.53);
  EXPECT_FALSE(e.training.fsdp.size());  // fsdp: null
  // MaxText reports TFLOP/s per chip; it is read as the per-GPU figure.
  EXPECT_DOUBLE_EQ(*find_run("maxtext-v4-22b-1x-v4-128").measured.tflops_per_gpu, 156.0);
}

TEST(LoadRuns, MalformedEntriesAreReportedPerEntry) {
  const std::string text = R"(
- id: good-1
  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 8}
  model: {num_layers: 2, hidden_size: 64, num_attention_heads: 4, extra_key: 1}
  unknown_section: {a: 1}
- id: bad-tp
  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 8}
  training: {tp: eight, pp: 1}
- id: bad-hardware
  hardware: [1, 2]
- confidence: high
- id: bad-number
  measured: {tokens_per_sec_per_gpu: fast}
- id: good-1
- id: good-2
  training: {sequence_parallel: maybe}
)";
  const std::vector<RunEntry> runs = parse_runs(text, "runs.yaml");
  ASSERT_EQ(runs.size(), 7u);
  EXPECT_TRUE(runs[0].ok());
  EXPECT_EQ(runs[0].model.num_layers, 2);
  // A value of the wrong type drops that field with a warning; the rest of the entry loads.
  EXPECT_TRUE(runs[1].ok());
  ASSERT_EQ(runs[1].warnings.size(), 1u);
  EXPECT_EQ(runs[1].warnings[0],
            "bad-tp: training.tp: expected an integer, got 'eight'; ignored (line 8)");
  EXPECT_FALSE(runs[1].training.tp);
  EXPECT_EQ(runs[1].training.pp, 1);
  EXPECT_TRUE(runs[2].ok());
  ASSERT_EQ(runs[2].warnings.size(), 1u);
  EXPECT_EQ(runs[2].warnings[0], "bad-hardware: hardware: expected a mapping; ignored (line 10)");
  // Structural problems make the entry invalid.
  ASSERT_EQ(runs[3].errors.size(), 1u);
  EXPECT_EQ(runs[3].id, "#4");
  EXPECT_EQ(runs[3].errors[0], "#4: id: missing (line 11)");
  EXPECT_NE(runs[4].warnings.at(0).find("bad-number: measured.tokens_per_sec_per_gpu"),
            std::string::npos);
  EXPECT_EQ(runs[5].errors.at(0), "good-1: id: duplicate id (line 14)");
  EXPECT_NE(runs[6].warnings.at(0).find("good-2: training.sequence_parallel"), std::string::npos);

  // validate() keeps going: invalid entries are reported, not dropped; the dropped fields are
  // listed with the run's assumptions.
  const ValidationReport r = validate(
      runs, [](const JobSpec&) { return Prediction{}; }, kDataDir);
  ASSERT_EQ(r.runs.size(), 7u);
  EXPECT_EQ(r.runs[3].status, "invalid");
  EXPECT_EQ(r.runs[3].reason, runs[3].errors[0]);
  EXPECT_EQ(r.runs[1].status, "unmapped");  // no model: unmapped, not invalid
  EXPECT_TRUE(std::any_of(r.runs[1].assumptions.begin(), r.runs[1].assumptions.end(),
                          [](const std::string& a) { return a.starts_with("dropped: bad-tp"); }));
  EXPECT_EQ(r.summary.invalid, 2);  // the missing and the duplicate id
}

TEST(LoadRuns, WholeFileErrorsThrow) {
  EXPECT_THROW(parse_runs("- id: [unclosed", "x.yaml"), InputError);
  EXPECT_THROW(parse_runs("id: not-a-list", "x.yaml"), InputError);
  EXPECT_THROW(load_runs("/nonexistent/runs.yaml"), InputError);
}

// ----------------------------------------------------------------------------------- mapping

// SC'21 GPT 1.7B row, field by field against the yaml entry.
TEST(MapRun, Sc21Gpt) {
  const MappedRun m = map_run(find_run("megatron-sc21-gpt-1.7b-a100x32"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  const JobSpec& j = m.job;
  EXPECT_EQ(m.framework, "megatron-lm");
  EXPECT_EQ(j.cluster.accelerator.vendor, "NVIDIA");
  EXPECT_NE(m.accelerator_name.find("a100"), std::string::npos);
  EXPECT_EQ(m.accelerator_family, "NVIDIA");
  EXPECT_EQ(j.cluster.nodes, 4);
  EXPECT_EQ(j.cluster.gpus_per_node, 8);
  EXPECT_EQ(j.model.num_layers(), 24);
  EXPECT_EQ(j.model.hidden_size, 2304);
  EXPECT_EQ(j.model.vocab_size, 51200);
  EXPECT_EQ(j.model.norm, NormKind::kLayerNorm);
  EXPECT_EQ(j.model.position_embedding, PositionEmbeddingKind::kLearnedAbsolute);
  EXPECT_TRUE(j.model.tied_embeddings);
  const LayerSpec& l = j.model.layers[0];
  EXPECT_EQ(l.attention.num_heads, 24);
  EXPECT_EQ(l.attention.num_query_groups, 24);
  EXPECT_EQ(l.attention.head_dim, 96);
  EXPECT_EQ(l.mlp.ffn_hidden_size, 9216);
  EXPECT_FALSE(l.mlp.gated);
  EXPECT_EQ(l.mlp.activation, ActivationKind::kGelu);
  EXPECT_EQ(j.parallel.tp, 1);
  EXPECT_EQ(j.parallel.pp, 1);
  EXPECT_EQ(j.dp(), 32);
  EXPECT_FALSE(j.parallel.distributed_optimizer);
  EXPECT_EQ(j.runtime.global_batch_size, 512);
  EXPECT_EQ(j.runtime.micro_batch_size, 16);
  EXPECT_EQ(j.runtime.seq_length, 2048);
  EXPECT_EQ(j.num_microbatches(), 1);  // yaml: num_microbatches_per_dp_rank 1
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kFull);
  EXPECT_EQ(j.runtime.precision.params_dtype, Dtype::kFp16);
  EXPECT_EQ(j.runtime.precision.fp8, Fp8Recipe::kNone);
  EXPECT_FALSE(j.runtime.flash_attention);
  EXPECT_TRUE(m.flop_convention.hardware);
  EXPECT_FALSE(m.flop_convention.options.causal_attention_half);
  ASSERT_EQ(j.parallel.stages.size(), 1u);
  EXPECT_EQ(j.parallel.stages[0].num_layers, 24);
  // The SC'21 hardware FLOPs of this job reproduce the yaml's derived step time (3.53 s at the
  // published 137 TFLOP/s on 32 GPUs).
  EXPECT_NEAR(model_flops(j).hardware_flops / (137e12 * 32), 3.53, 0.01);
}

// GPT-3 175B README example: raw vocabulary 50257 padded by 128 x TP 8 to 51200; PP 16 of 6 layers.
TEST(MapRun, Gpt3PipelineStages) {
  const MappedRun m = map_run(find_run("megatron-gpt3-175b-a100x1024"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(padded_vocab_size(m.job.model, m.job.parallel.tp), 51200);
  ASSERT_EQ(m.job.parallel.stages.size(), 16u);
  for (int z = 0; z < 16; ++z) {
    EXPECT_EQ(m.job.parallel.stages[z].first_layer, 6 * z);
    EXPECT_EQ(m.job.parallel.stages[z].num_layers, 6);
  }
  EXPECT_TRUE(m.job.parallel.stages.front().has_embedding);
  EXPECT_TRUE(m.job.parallel.stages.back().has_output);
  EXPECT_EQ(m.job.runtime.schedule, ScheduleKind::k1F1B);
  EXPECT_EQ(m.job.num_microbatches(), 1536 / 8);
}

// NeMo 24.07 Llama 3 70B FP8 row.
TEST(MapRun, NemoLlama3) {
  const MappedRun m = map_run(find_run("nemo-24.07-llama3-70b-fp8-h100x64"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  const JobSpec& j = m.job;
  EXPECT_EQ(m.framework, "nemo");
  EXPECT_EQ(j.cluster.accelerator.vendor, "NVIDIA");
  EXPECT_EQ(j.model.num_layers(), 80);
  EXPECT_EQ(j.model.vocab_size, 128256);
  EXPECT_EQ(j.model.norm, NormKind::kRmsNorm);
  EXPECT_EQ(j.model.position_embedding, PositionEmbeddingKind::kRope);
  EXPECT_FALSE(j.model.tied_embeddings);
  const LayerSpec& l = j.model.layers[0];
  EXPECT_EQ(l.attention.num_query_groups, 8);
  EXPECT_EQ(l.mlp.ffn_hidden_size, 28672);
  EXPECT_TRUE(l.mlp.gated);
  EXPECT_EQ(l.mlp.activation, ActivationKind::kSilu);
  EXPECT_EQ(j.parallel.tp, 4);
  EXPECT_EQ(j.parallel.pp, 4);
  EXPECT_EQ(j.parallel.vpp, 5);
  EXPECT_EQ(j.parallel.cp, 2);
  EXPECT_EQ(j.dp(), 2);
  EXPECT_TRUE(j.parallel.sequence_parallel);
  EXPECT_TRUE(j.parallel.distributed_optimizer);
  ASSERT_EQ(j.parallel.stages.size(), 20u);  // 80 layers / (4 x 5) = 4 per virtual stage
  EXPECT_EQ(j.parallel.stages[19].first_layer, 76);
  EXPECT_EQ(j.runtime.schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ(j.runtime.precision.fp8, Fp8Recipe::kDelayed);
  EXPECT_EQ(j.runtime.precision.params_dtype, Dtype::kBf16);
  EXPECT_EQ(j.num_microbatches(), 64);  // yaml grad_accum 64
  EXPECT_TRUE(m.fp8);
  EXPECT_FALSE(m.flop_convention.hardware);
  // Not stated in the row: recompute, flash attention, overlap; listed as assumptions.
  EXPECT_TRUE(has_assumption(m, "training.recompute = none"));
  EXPECT_TRUE(has_assumption(m, "training.flash_attention = true"));
  EXPECT_TRUE(has_assumption(m, "training.pipeline_schedule = "));
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kNone);
  // NVIDIA's performance recipes reduce gradients in bf16; plain Megatron keeps fp32.
  EXPECT_EQ(j.runtime.main_grads_dtype, Dtype::kBf16);
  EXPECT_TRUE(has_assumption(m, "training.grad_reduce_dtype = bf16"));
  const MappedRun w = map_run(find_run("megatron-core-h100-weakscale-gpt-1.7b-x48"), kDataDir);
  EXPECT_EQ(w.job.runtime.main_grads_dtype, Dtype::kFp32);
}

// Megatron trains GPT models with dropout 0.1 by default; Llama-family recipes and BLOOM use 0.
TEST(MapRun, DropoutDefault) {
  const MappedRun g = map_run(find_run("megatron-sc21-gpt-1.7b-a100x32"), kDataDir);
  EXPECT_DOUBLE_EQ(g.job.model.attention_dropout, 0.1);
  EXPECT_DOUBLE_EQ(g.job.model.hidden_dropout, 0.1);
  // Megatron-LM's default, from its profile (data/frameworks/megatron-lm.yaml).
  EXPECT_TRUE(has_assumption(g, "model.attention_dropout = 0.1 (megatron-lm: "));
  EXPECT_TRUE(has_assumption(g, "model.hidden_dropout = 0.1 (megatron-lm: "));
  // Without flash attention the dropout is an op of its own: 2 x 2 B + a 1-byte mask per score.
  const LayerWork lw = build_layer_work(g.job, 0);
  const auto it = std::find_if(lw.ops.begin(), lw.ops.end(),
                               [](const Op& op) { return op.name == "attn.dropout"; });
  ASSERT_NE(it, lw.ops.end());
  const JobSpec& j = g.job;
  const double scores = static_cast<double>(j.runtime.micro_batch_size) *
                        (j.model.layers[0].attention.num_heads / j.parallel.tp) *
                        j.runtime.seq_length * j.runtime.seq_length;
  EXPECT_DOUBLE_EQ(it->bytes, scores * 5.0);
  for (const char* id : {"nemo-24.07-llama3-70b-fp8-h100x64", "bloom-176b-a100x384"}) {
    EXPECT_DOUBLE_EQ(map_run(find_run(id), kDataDir).job.model.attention_dropout, 0.0) << id;
  }
}

// Megatron-Bridge Qwen3-30B-A3B (MoE) and Megatron-Core Mixtral 8x7B.
TEST(MapRun, MoeEntries) {
  const MappedRun q = map_run(find_run("bridge-26.04.01-qwen3-30b-a3b-fp8-h100x16"), kDataDir);
  ASSERT_TRUE(q.mapped) << q.reason;
  EXPECT_TRUE(q.moe);
  EXPECT_EQ(q.job.model.num_layers(), 48);
  for (const LayerSpec& l : q.job.model.layers) {
    EXPECT_TRUE(l.is_moe);
    EXPECT_EQ(l.moe.num_experts, 128);
    EXPECT_EQ(l.moe.topk, 8);
    EXPECT_EQ(l.moe.expert_ffn_hidden_size, 768);
    EXPECT_EQ(l.moe.shared_expert_ffn_hidden_size, 0);
    EXPECT_TRUE(l.attention.qk_layernorm);
    EXPECT_EQ(l.attention.num_query_groups, 4);
    EXPECT_EQ(l.attention.head_dim, 128);
  }
  EXPECT_EQ(q.job.parallel.ep, 16);
  EXPECT_EQ(q.job.parallel.etp, 1);
  EXPECT_EQ(q.job.dp(), 16);
  EXPECT_EQ(q.job.expert_dp(), 1);  // 16 / (etp 1 x ep 16 x pp 1)
  EXPECT_EQ(q.job.num_microbatches(), 64);
  // Qwen3-30B-A3B: 30.5B total, 3.3B active (Qwen3 model card); our count without the padded
  // vocabulary's difference.
  const ModelParams p = model_params(q.job.model);
  EXPECT_NEAR(p.total / 1e9, 30.5, 0.2);
  EXPECT_NEAR(p.active / 1e9, 3.3, 0.1);

  const MappedRun x = map_run(find_run("megatron-core-mixtral-8x7b-bf16-h100x64"), kDataDir);
  ASSERT_TRUE(x.mapped) << x.reason;
  EXPECT_EQ(x.job.parallel.pp, 4);
  EXPECT_EQ(x.job.parallel.vpp, 8);
  EXPECT_EQ(x.job.parallel.ep, 8);
  EXPECT_EQ(x.job.expert_dp(), 2);               // 64 / (1 x 8 x 4)
  ASSERT_EQ(x.job.parallel.stages.size(), 32u);  // one layer per virtual stage
  const ModelParams px = model_params(x.job.model);
  EXPECT_NEAR(px.total / 1e9, 46.7, 0.05);  // Mistral AI: 46.7B total, 12.9B active
  EXPECT_NEAR(px.active / 1e9, 12.9, 0.05);
}

// A DeepSeek-V3 entry in the file's schema (not in the bundled set) maps to the same model as the
// hand-built spec of arXiv:2412.19437.
TEST(MapRun, DeepSeekV3Schema) {
  const std::string text = R"(
- id: dsv3-example
  hardware: {accelerator: NVIDIA H800, count: 2048, per_node: 8}
  framework: Megatron-Core
  model:
    num_layers: 61
    hidden_size: 7168
    ffn_hidden_size: 18432
    num_attention_heads: 128
    num_kv_heads: 128
    head_dim: null
    vocab_size: 129280
    seq_len: 4096
    activation: swiglu
    norm: rmsnorm
    position_embedding: rope
    tied_embeddings: false
    type: moe
    mtp_layers: 1
    moe: {num_experts: 256, topk: 8, moe_ffn_hidden_size: 2048, shared_experts: 1,
          shared_expert_ffn_hidden_size: 2048, dense_layers: 3, moe_layer_freq: all layers,
          router: sigmoid with expert bias (aux-loss-free)}
    mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64,
          v_head_dim: 128}
  training: {global_batch_size: 15360, micro_batch_size: 1, seq_len: 4096, tp: 1, pp: 16,
             vpp: 1, cp: 1, ep: 64, dp: 128, pipeline_schedule: DualPipe, precision: FP8 blockwise,
             recompute: none}
  measured: {}
)";
  const std::vector<RunEntry> runs = parse_runs(text, "dsv3.yaml");
  ASSERT_TRUE(runs.at(0).ok()) << runs[0].errors.front();
  const MappedRun m = map_run(runs[0], kDataDir);
  const ModelSpec ref = testing::deepseek_v3();
  const ModelSpec& got = m.job.model;
  ASSERT_EQ(got.num_layers(), 61);
  for (int i = 0; i < 61; ++i) {
    const LayerSpec& a = got.layers[i];
    const LayerSpec& b = ref.layers[i];
    EXPECT_EQ(a.is_moe, b.is_moe) << i;
    EXPECT_EQ(a.attention.kind, AttentionKind::kMla);
    EXPECT_EQ(a.attention.q_lora_rank, 1536);
    EXPECT_EQ(a.attention.kv_lora_rank, 512);
    EXPECT_EQ(a.attention.qk_head_dim, 128);
    EXPECT_EQ(a.attention.qk_pos_emb_head_dim, 64);
    EXPECT_EQ(a.attention.v_head_dim, 128);
  }
  EXPECT_EQ(got.layers[3].moe.shared_expert_ffn_hidden_size, 2048);
  EXPECT_TRUE(got.layers[3].moe.router_bias);
  EXPECT_EQ(got.layers[0].mlp.ffn_hidden_size, 18432);
  EXPECT_EQ(got.mtp_num_layers, 1);
  EXPECT_EQ(model_params(got).total, model_params(ref).total);
  EXPECT_EQ(m.job.runtime.schedule, ScheduleKind::kDualPipeV);
  EXPECT_EQ(m.job.runtime.precision.fp8, Fp8Recipe::kBlockwise);
  EXPECT_EQ(m.job.expert_dp(), 2);  // 2048 / (1 x 64 x 16)
  EXPECT_TRUE(m.job.parallel.stages.back().mtp_layers == 1);
  EXPECT_TRUE(m.mapped) << m.reason;  // needs an H800 in the catalogue
}

// MaxText on TPU v4: per_device_batch_size is the micro batch, FSDP over the fsdp mesh axis.
TEST(MapRun, MaxTextTpu) {
  const MappedRun m = map_run(find_run("maxtext-v4-22b-1x-v4-128"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  const JobSpec& j = m.job;
  EXPECT_EQ(m.framework, "maxtext");
  EXPECT_EQ(m.accelerator_family, "TPU");
  EXPECT_EQ(j.cluster.world_size(), 64);
  EXPECT_TRUE(has_assumption(m, "hardware.per_node = "));  // per_node absent for TPU entries
  EXPECT_EQ(j.runtime.micro_batch_size, 16);
  EXPECT_EQ(j.runtime.global_batch_size, 1024);
  EXPECT_EQ(j.num_microbatches(), 1);
  EXPECT_EQ(j.dp(), 64);
  EXPECT_EQ(j.parallel.fsdp, FsdpKind::kFsdp2);  // the fsdp mesh axis, gathered per layer
  EXPECT_TRUE(j.parallel.fsdp_per_layer);
  const LayerSpec& l = j.model.layers[0];
  EXPECT_EQ(l.mlp.activation, ActivationKind::kRelu);
  EXPECT_FALSE(l.mlp.gated);
  EXPECT_EQ(l.attention.head_dim, 256);
  EXPECT_EQ(l.attention.num_heads, 24);
  EXPECT_TRUE(j.model.tied_embeddings);
  // remat_policy full: the saved-tensor policy that keeps only the layer input.
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kTensors);
  EXPECT_TRUE(j.runtime.recompute.tensors.on_device(LayerTensor::kLayerInput));
  EXPECT_FALSE(j.runtime.recompute.tensors.kept(LayerTensor::kQuery));
  EXPECT_TRUE(j.runtime.flash_attention);
  EXPECT_FALSE(m.flop_convention.hardware);
  EXPECT_FALSE(m.flop_convention.options.causal_attention_half);  // "full (non-causal)"
  // MaxText 22B: ~21.9B parameters (yaml approx_params_B).
  EXPECT_NEAR(model_params(j.model).total / 1e9, 21.9, 0.3);
}

// Null fields of the Megatron-Core weak-scaling table get Megatron defaults, each listed.
// How a source counted attention in its TFLOP/s, read from measured.flop_counting: Megatron-LM's
// num_floating_point_operations has counted the causal half since 8873b55d6a (2025-03-06), and
// "incl. causal attention" says the same; the SC'21 paper formula, "full (non-causal)" and an
// unstated convention (the profile's of the era) count the whole s x s product.
TEST(MapRun, AttentionFlopConventionByPhrasing) {
  const std::vector<std::pair<std::string, bool>> table = {
      {"Megatron-LM model FLOPs incl. causal attention (no recompute), BF16", true},
      {"Megatron-LM model FLOPs (no recompute); MXFP8 GEMMs counted like BF16", true},
      {"Megatron-LM num_floating_point_operations (model FLOPs, no recompute), BF16", true},
      {"Primus/Megatron TFLOP/s (model FLOPs, no recompute)", true},
      {"MaxText TFLOP/s/device (model FLOPs incl. causal attention, excludes remat)", true},
      {"Megatron paper formula incl. recompute (hardware FLOPs, 4 passes)", false},
      {"MaxText calc: 6*N-style matmul FLOPs + full (non-causal) attention FLOPs", false},
      {"model TFLOP/s (NeMo/Megatron model-FLOPs formula)", false},
      {"", false}};
  for (const auto& [text, half] : table) {
    RunEntry e = find_run("megatron-core-h100-weakscale-gpt-1.7b-x48");
    e.measured.flop_counting = text;
    const MappedRun m = map_run(e, kDataDir);
    EXPECT_EQ(m.flop_convention.options.causal_attention_half, half) << text;
    // The Megatron-LM reading without the word "causal" says where it comes from.
    const bool noted = has_assumption(m, "measured.flop_counting: Megatron-LM's");
    EXPECT_EQ(noted, half && text.find("causal") == std::string::npos) << text;
  }
}

TEST(MapRun, AssumptionsForNullFields) {
  const MappedRun m = map_run(find_run("megatron-core-h100-weakscale-gpt-1.7b-x48"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_TRUE(has_assumption(m, "training.micro_batch_size = 1"));
  EXPECT_TRUE(has_assumption(m, "training.recompute = none"));
  EXPECT_TRUE(has_assumption(m, "model.activation = gelu"));
  EXPECT_TRUE(has_assumption(m, "model.norm = layernorm"));
  EXPECT_TRUE(has_assumption(m, "model.position_embedding = learned_absolute"));
  EXPECT_TRUE(has_assumption(m, "model.tied_embeddings = true"));
  EXPECT_TRUE(has_assumption(m, "measured.flop_counting = model"));
  EXPECT_EQ(m.job.runtime.micro_batch_size, 1);
  EXPECT_EQ(m.job.num_microbatches(), 4);  // 192 / (1 x 48)
  // Stated: --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap.
  EXPECT_TRUE(m.job.parallel.overlap_grad_reduce);
  EXPECT_TRUE(m.job.parallel.tp_comm_overlap);
  // The same assumptions are recorded on the job.
  EXPECT_EQ(m.job.defaults.size(),
            static_cast<std::size_t>(std::count_if(
                m.assumptions.begin(), m.assumptions.end(),
                [](const std::string& a) { return a.find(" = ") != std::string::npos; })));
  // GBS null with pipeline parallelism: the microbatch count decides the bubble, so the run is
  // not guessed but reported unmapped with the reason.
  const MappedRun k = map_run(find_run("korthikanti-gpt-530b-a100x2240-dp8"), kDataDir);
  EXPECT_FALSE(k.mapped);
  EXPECT_NE(k.reason.find("global_batch_size not stated"), std::string::npos);
}

// The loss fusion a run's text states (MG29): "TE CE loss fusion" is Transformer Engine's one
// kernel (the Megatron-MoE-ModelZoo runs); unstated, Megatron's eager loss.
TEST(MapRun, StatedCrossEntropyFusion) {
  const std::vector<RunEntry> runs4 =
      load_runs(std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/validation/calibration_runs_4.yaml");
  const auto zoo = std::find_if(runs4.begin(), runs4.end(), [](const RunEntry& e) {
    return e.id == "mcore-modelzoo-qwen3-235b-bf16-h100x256-tp2-pp8-vp4-ep32-deepep";
  });
  ASSERT_NE(zoo, runs4.end());
  const MappedRun te = map_run(*zoo, kDataDir);
  ASSERT_TRUE(te.mapped) << te.reason;
  EXPECT_TRUE(te.job.runtime.cross_entropy_fusion);
  EXPECT_FALSE(te.job.runtime.cross_entropy_compiled);
  const MappedRun eager = map_run(find_run("megatron-core-h100-weakscale-gpt-1.7b-x48"), kDataDir);
  ASSERT_TRUE(eager.mapped) << eager.reason;
  EXPECT_FALSE(eager.job.runtime.cross_entropy_fusion || eager.job.runtime.cross_entropy_compiled);
}

// Runs without a sequence length cannot be projected: unmapped with the reason, never dropped.
TEST(MapRun, UnmappedWithReason) {
  const MappedRun m = map_run(find_run("amd-primus-pipeline-llama2-7b-pp8-1f1b-mi300x8"), kDataDir);
  EXPECT_FALSE(m.mapped);
  EXPECT_EQ(m.reason, "seq_len not stated (no framework default)");
  const std::string text = R"(
- id: weird-gpu
  hardware: {accelerator: Cerebras WSE-3, count: 8}
  model: {num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 100, seq_len: 128}
  training: {tp: 1, pp: 1, cp: 1, ep: 1, global_batch_size: 8, micro_batch_size: 1}
- id: bad-dp
  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 16, per_node: 8}
  model: {num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 100, seq_len: 128}
  training: {tp: 2, pp: 1, cp: 1, dp: 16, global_batch_size: 8, micro_batch_size: 1}
)";
  const auto runs = parse_runs(text, "t.yaml");
  const MappedRun w = map_run(runs[0], kDataDir);
  EXPECT_FALSE(w.mapped);
  EXPECT_EQ(w.reason, "hardware.accelerator 'Cerebras WSE-3' not in the catalogue");
  const MappedRun d = map_run(runs[1], kDataDir);
  EXPECT_FALSE(d.mapped);
  EXPECT_EQ(d.reason, "training.dp 16 disagrees with GPUs / (tp x pp x cp) = 8");
}

// A stated scale-out bandwidth replaces the catalogue fabric's: per-GPU bandwidth = per-node Gb/s
// / 8 / GPUs per node; the pod and cluster bandwidths scale together.
TEST(MapRun, InterconnectText) {
  const NetworkSpec ib200 = load_network("a100_ib200", kDataDir);
  const double catalogue_per_gpu = ib200.pod_bw_gb_per_s;  // one HDR NIC per GPU
  // (id, GPUs, interconnect text) on 8-GPU nodes, a two-layer model.
  const std::tuple<const char*, int, const char*> cases[] = {
      {"times", 16, "InfiniBand 4x200 Gb/s per node"},
      {"per-gpu", 16, "RDMA 100 Gb/s per GPU"},
      {"links", 16, "2x HDR links per node"},
      {"same-as-catalogue", 16, "8x200 Gb/s per node"},
      {"one-node", 8, "1x100 Gb/s per node"},
      {"memory-not-a-link", 16, "8x80GB GPUs per node, InfiniBand"},
  };
  std::string text;
  for (const auto& [id, gpus, interconnect] : cases) {
    text += fmt::format(
        "- id: {}\n"
        "  hardware: {{accelerator: NVIDIA A100 SXM4 80GB, count: {}, per_node: 8,\n"
        "             interconnect: \"{}\"}}\n"
        "  model: {{num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 100,\n"
        "           seq_len: 128}}\n"
        "  training: {{tp: 1, pp: 1, cp: 1, global_batch_size: {}, micro_batch_size: 1}}\n",
        id, gpus, interconnect, gpus);
  }
  const auto runs = parse_runs(text, "t.yaml");
  const double expected[] = {800.0 / 8 / 8,     100.0 / 8,         2 * 200.0 / 8 / 8,
                             catalogue_per_gpu, catalogue_per_gpu, catalogue_per_gpu};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const MappedRun m = map_run(runs[i], kDataDir);
    ASSERT_TRUE(m.mapped) << m.reason;
    EXPECT_DOUBLE_EQ(m.job.cluster.network.pod_bw_gb_per_s, expected[i]) << runs[i].id;
    EXPECT_DOUBLE_EQ(
        m.job.cluster.network.cluster_bw_gb_per_s / m.job.cluster.network.pod_bw_gb_per_s,
        ib200.cluster_bw_gb_per_s / ib200.pod_bw_gb_per_s)
        << runs[i].id;
    EXPECT_EQ(has_assumption(m, "hardware.interconnect:"), i < 3) << runs[i].id;
  }
  // vTrain's simulator config states 800 with the unit given as Gb/s per node.
  const MappedRun v =
      map_run(find_run("vtrain-gt-gpt-18.4b-tp16-dp16-pp1-mbs2-a100x256"), kDataDir);
  EXPECT_DOUBLE_EQ(v.job.cluster.network.pod_bw_gb_per_s, 12.5);
}

// A measured run fit in memory: when recomputation is not stated and the job without it needs
// far more than the capacity, the lightest recomputation that fits is assumed.
TEST(MapRun, RecomputeInferredFromFit) {
  // Llama 3.1 70B, FSDP over 64 MI325X, 4 x 8192 tokens per GPU: > 600 GiB without recompute.
  const MappedRun m = map_run(find_run("amd-primus-llama3.1-70b-fp8-fsdp-mi325x-8node"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.runtime.recompute.granularity, RecomputeGranularity::kFull);
  EXPECT_TRUE(has_assumption(m, "training.recompute = full (uniform, 1 layer)"));
  EXPECT_FALSE(has_assumption(m, "training.recompute = none"));
  EXPECT_EQ(std::count_if(m.job.defaults.begin(), m.job.defaults.end(),
                          [](const AppliedDefault& d) { return d.key == "training.recompute"; }),
            1);
  // The same job with one sample per GPU fits without: nothing is inferred.
  const MappedRun b = map_run(find_run("amd-primus-llama3.1-70b-bf16-fsdp-mi325x-8node"), kDataDir);
  EXPECT_EQ(b.job.runtime.recompute.granularity, RecomputeGranularity::kNone);
  EXPECT_TRUE(has_assumption(b, "training.recompute = none"));
}

// The dispatcher: unstated -> all-to-all (an assumption); flex / DeepEP / HybridEP -> deduplicated.
TEST(MapRun, MoeDispatcher) {
  const MappedRun q = map_run(find_run("bridge-26.04.01-qwen3-30b-a3b-fp8-h100x16"), kDataDir);
  ASSERT_TRUE(q.mapped) << q.reason;
  EXPECT_TRUE(q.job.runtime.moe_dedup_dispatch);
  EXPECT_FALSE(q.job.runtime.deepep);  // no Primus-Turbo overlap: the recipe sets none
  const MappedRun g = map_run(find_run("bridge-26.04.01-gpt-oss-120b-bf16-h100x64"), kDataDir);
  EXPECT_FALSE(g.job.runtime.moe_dedup_dispatch);
  EXPECT_TRUE(has_assumption(g, "training.moe_dispatcher = alltoall"));
  // The recipe's selective modules are read from the text.
  EXPECT_EQ(g.job.runtime.recompute.granularity, RecomputeGranularity::kSelective);
  EXPECT_EQ(g.job.runtime.recompute.modules,
            (RecomputeModules{RecomputeModule::kMoeAct, RecomputeModule::kLayernorm}));
  const MappedRun x = map_run(find_run("megatron-core-mixtral-8x7b-bf16-h100x64"), kDataDir);
  EXPECT_FALSE(x.job.runtime.moe_dedup_dispatch);  // stated: alltoall
  EXPECT_FALSE(has_assumption(x, "training.moe_dispatcher"));
  // training.moe_token_balance: the Bridge tables' footnote says forced balanced routing.
  EXPECT_EQ(q.job.runtime.moe_routing, MoeRouting::kForced);
  EXPECT_EQ(g.job.runtime.moe_routing, MoeRouting::kForced);
  EXPECT_TRUE(has_assumption(g, "training.moe_token_balance: "));
  EXPECT_EQ(x.job.runtime.moe_routing, MoeRouting::kBalanced);  // not stated
}

// AutoModel's benchmark entries state its fake balanced gate in their assumptions (the recipe's
// fake_balanced_gate) and notes: balanced routing, each token on consecutive experts (AM1). A
// Megatron ModelZoo entry that forces balance by random scores keeps uniform placement.
TEST(MapRun, FakeBalancedGatePlacesTokensOnConsecutiveExperts) {
  const RunEntry& e = find_run4("automodel-deepseek-v3-bf16-h100x256-pp4-vp8-ep64-fsdp64");
  EXPECT_NE(e.stated_text.find("fake_balanced_gate"), std::string::npos);
  const MappedRun a = map_run(e, kDataDir);
  ASSERT_TRUE(a.mapped) << a.reason;
  EXPECT_EQ(a.job.runtime.moe_placement, MoePlacement::kConsecutive);
  EXPECT_EQ(a.job.runtime.moe_routing, MoeRouting::kForced);
  EXPECT_TRUE(has_assumption(a, "routing: the entry states AutoModel's fake balanced gate"));
  const MappedRun z = map_run(
      find_run4("mcore-modelzoo-qwen3-235b-bf16-h100x256-tp2-pp8-vp4-ep32-deepep"), kDataDir);
  ASSERT_TRUE(z.mapped) << z.reason;
  EXPECT_EQ(z.job.runtime.moe_placement, MoePlacement::kUniform);
}

// Megatron-LM's examples/llama table "follows NeMo's performance scripts" (MG4): where the entry
// states no overlap or FP8 weights, NeMo's recipes decide (the 70B at TP 4: userbuffers overlap,
// the DDP overlaps, FP8 weights with the delayed recipe), and the run stays a Megatron-Core one.
// A Megatron-Core entry that says nothing of NeMo keeps Megatron's store_true defaults.
TEST(MapRun, EntriesFollowingNemoRecipesTakeTheirSettings) {
  const MappedRun e = map_run(find_run("megatron-lm-examples-llama3-70b-fp8-h100x64"), kDataDir);
  ASSERT_TRUE(e.mapped) << e.reason;
  EXPECT_EQ(e.framework, "megatron-core");
  EXPECT_TRUE(e.job.parallel.tp_comm_overlap);
  EXPECT_TRUE(e.job.parallel.overlap_grad_reduce);
  EXPECT_TRUE(e.job.parallel.overlap_param_gather);
  EXPECT_TRUE(e.job.runtime.precision.fp8_param);
  EXPECT_TRUE(has_assumption(e,
                             "training.tp_comm_overlap = true (megatron-core: with_sequence_"
                             "parallel (the entry's configuration follows NeMo recipes"));
  const MappedRun w = map_run(
      find_run4("mcore-modelzoo-qwen3-235b-bf16-h100x256-tp2-pp8-vp4-ep32-deepep"), kDataDir);
  ASSERT_TRUE(w.mapped) << w.reason;
  EXPECT_FALSE(has_assumption(w, "follows NeMo recipes"));
}

// The framework named first in the free text decides the defaults.
TEST(MapRun, FrameworkDetection) {
  const std::pair<const char*, const char*> cases[] = {
      {"megatron-lm-examples-llama3-8b-fp8-h100x8", "megatron-core"},  // "Megatron-Core (... NeMo)"
      {"nemo-24.07-llama2-70b-fp8-h100x64", "nemo"},          // "NeMo 24.07 (Megatron-Core)"
      {"bridge-26.04.01-qwen3-30b-a3b-fp8-h100x16", "nemo"},  // "Megatron-Bridge / ..."
      {"bloom-176b-a100x384", "megatron-deepspeed"},
      {"vtrain-gt-gpt-3.6b-tp1-dp64-pp1-mbs8-a100x64", "megatron-deepspeed"},
      {"amd-primus-llama3.1-8b-fp8-mi325x-8node", "primus"},
      {"torchtitan-llama3.1-8b-fsdp-bf16-h100x8", "torchtitan"},
  };
  for (const auto& [id, fw] : cases) EXPECT_EQ(map_run(find_run(id), kDataDir).framework, fw) << id;
}

// Every bundled run is either mapped or unmapped with a reason.
TEST(MapRun, BundledCoverage) {
  int mapped = 0;
  std::vector<std::string> unmapped;
  for (const RunEntry& e : all_runs()) {
    const MappedRun m = map_run(e, kDataDir);
    if (m.mapped) {
      ++mapped;
      EXPECT_GT(m.job.num_microbatches(), 0) << e.id;
      EXPECT_EQ(m.job.cluster.world_size(), m.num_gpus) << e.id;
    } else {
      EXPECT_FALSE(m.reason.empty()) << e.id;
      unmapped.push_back(e.id + ": " + m.reason);
    }
  }
  EXPECT_EQ(mapped, 56);
  // Six Primus-pipeline rows state no sequence length; two runs with pipeline parallelism state no
  // global batch (Korthikanti 530B DP8, Primus Mixtral 8x22B).
  ASSERT_EQ(unmapped.size(), 8u);
  int no_seq = 0, no_gbs = 0;
  for (const std::string& u : unmapped) {
    no_seq += u.find("seq_len not stated") != std::string::npos;
    no_gbs += u.find("global_batch_size not stated") != std::string::npos;
  }
  EXPECT_EQ(no_seq, 6);
  EXPECT_EQ(no_gbs, 2);
}

// -------------------------------------------------------------------------------- statistics

// |errors| sorted = 0, 5, 10, 20, 40: MAPE 75/5 = 15; median 10; P90 at rank 0.9 x 4 = 3.6 ->
// 20 + 0.6 x (40 - 20) = 32; signed mean 35/5 = 7.
TEST(Stats, ByHand) {
  const ErrorStats s = error_stats({10, -20, 5, 0, 40});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.mape_pct, 15.0);
  EXPECT_DOUBLE_EQ(s.median_abs_pct, 10.0);
  EXPECT_DOUBLE_EQ(s.p90_abs_pct, 32.0);
  EXPECT_DOUBLE_EQ(s.mean_signed_pct, 7.0);
  const ErrorStats one = error_stats({-3});
  EXPECT_DOUBLE_EQ(one.median_abs_pct, 3.0);
  EXPECT_DOUBLE_EQ(one.p90_abs_pct, 3.0);
  EXPECT_EQ(error_stats({}).count, 0);
}

// Four small runs and a fake projection that predicts 1000 tokens/s/GPU and 2.5 s per step:
//   a (H100, dense, 8 GPUs):       measured 800 tok/s          -> +25%
//   b (MI300X, MoE, 16 GPUs, EP):  measured 1250 tok/s          -> -20%
//   c (A100, dense, 2048 GPUs, PP): measured step 2.0 s          -> throughput 2.0/2.5 - 1 = -20%
//   d (TPU v4, dense, 64 chips):    projection throws InputError -> projection_failed
// MAPE = (25 + 20 + 20) / 3 = 21.667; median 20; P90 at rank 1.8 -> 20 + 0.8 x 5 = 24.
// Two small runs shared by the validation tests below (measurements appended per test): a NeMo
// H100 run and a Megatron A100 run measured by step time.
constexpr const char* kRunA = R"(
- id: a
  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 8, per_node: 8}
  framework: NeMo
  model: {num_layers: 4, hidden_size: 256, ffn_hidden_size: 1024, num_attention_heads: 4,
          vocab_size: 1000, seq_len: 512, activation: swiglu, norm: rmsnorm,
          position_embedding: rope}
  training: {global_batch_size: 16, micro_batch_size: 1, tp: 1, pp: 1, cp: 1, ep: 1,
             precision: bf16, recompute: none}
)";
constexpr const char* kRunC = R"(
- id: c
  hardware: {accelerator: NVIDIA A100 SXM4 80GB, count: 2048, per_node: 8}
  framework: Megatron-LM
  model: {num_layers: 8, hidden_size: 256, num_attention_heads: 4, vocab_size: 1000,
          seq_len: 512}
  training: {global_batch_size: 1024, micro_batch_size: 1, tp: 2, pp: 4, cp: 1, ep: 1}
  measured: {step_time_s: 2.0}
)";

// A published peak is compared like with like (docs/memory.md "Validation"): the run that says it
// measured max_memory_allocated against the allocated peak (44 vs 40 GiB: +10 %), the one that
// measured max reserved against the reserved one (50 vs 40 GiB: +25 %), Primus' "max mem" (the
// whole device, 40 "GB" that are GiB) against the device total (52 vs 40 GiB: +30 %).
TEST(Validate, MemoryComparedLikeWithLike) {
  EXPECT_EQ(read_memory_metric("torch.cuda.max_memory_allocated()").kind,
            MeasuredMemory::kAllocated);
  EXPECT_EQ(read_memory_metric("max reserved bytes (not allocated)").kind,
            MeasuredMemory::kReserved);
  EXPECT_EQ(read_memory_metric("").kind, MeasuredMemory::kReserved);
  EXPECT_EQ(read_memory_metric("nvidia-smi memory.used").kind, MeasuredMemory::kDevice);
  // The shipped Primus entry's phrasing: the whole device, "GB" that are GiB (PR15).
  const MemoryMetricReading primus = read_memory_metric(
      "Primus \"max mem\" (GB, 78 % of 288 GB => decimal GB), as logged by the pretrain run");
  EXPECT_EQ(primus.kind, MeasuredMemory::kDevice);
  EXPECT_TRUE(primus.gb_are_gib);
  const std::string text = std::string(kRunA) +
                           "  measured: {tokens_per_sec_per_gpu: 800, peak_memory_gib: 40,\n"
                           "             memory_metric: torch.cuda.max_memory_allocated}\n" +
                           std::string(kRunA) +
                           "  measured: {tokens_per_sec_per_gpu: 800, peak_memory_gib: 40,\n"
                           "             memory_metric: torchtitan max_reserved_gib}\n" +
                           std::string(kRunA) +
                           "  measured: {tokens_per_sec_per_gpu: 800, peak_memory_gb: 40,\n"
                           "             memory_metric: Primus max mem}\n";
  std::string renamed = text;
  const std::size_t third = renamed.rfind("- id: a");
  renamed.replace(third, 7, "- id: a3");
  renamed.replace(renamed.rfind("- id: a", third - 1), 7, "- id: a2");
  const ProjectFn fake = [](const JobSpec&) {
    Prediction p;
    p.tokens_per_sec_per_gpu = 800;
    p.peak_memory_gib = 50.0;
    p.peak_allocated_gib = 44.0;
    p.peak_device_gib = 52.0;
    return p;
  };
  const ValidationReport r = validate(parse_runs(renamed, "fake.yaml"), fake, kDataDir);
  ASSERT_EQ(r.runs.size(), 3u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(r.runs[i].memory_error_pct) << i;
  EXPECT_NEAR(*r.runs[0].memory_error_pct, 10.0, 1e-9);
  EXPECT_NEAR(*r.runs[1].memory_error_pct, 25.0, 1e-9);
  EXPECT_NEAR(*r.runs[2].memory_error_pct, 30.0, 1e-9);
}

TEST(Validate, FakeProjection) {
  const std::string text = std::string(kRunA) +
                           "  measured: {tokens_per_sec_per_gpu: 800, peak_memory_gib: 40}\n" + R"(
- id: b
  hardware: {accelerator: AMD Instinct MI300X, count: 16, per_node: 8}
  framework: Primus
  model: {num_layers: 4, hidden_size: 256, num_attention_heads: 4, vocab_size: 1000,
          seq_len: 512, activation: swiglu, type: moe,
          moe: {num_experts: 8, topk: 2, moe_ffn_hidden_size: 512}}
  training: {global_batch_size: 32, micro_batch_size: 1, tp: 1, pp: 1, cp: 1, ep: 8,
             precision: FP8, recompute: full}
  measured: {tokens_per_sec_per_gpu: 1250}
)" + std::string(kRunC) + R"(- id: d
  hardware: {accelerator: Google TPU v4, count: 64}
  framework: MaxText
  model: {num_layers: 4, hidden_size: 256, num_attention_heads: 4, vocab_size: 1000,
          seq_len: 512}
  training: {global_batch_size: 64, per_device_batch_size: 1, tp: 1, pp: 1, cp: 1, ep: 1}
  measured: {mfu_pct: 50}
)";
  const auto runs = parse_runs(text, "fake.yaml");
  const ProjectFn fake = [](const JobSpec& job) {
    if (job.cluster.accelerator.vendor == "Google") {
      throw InputError(SourceLocation{}, "fake", "no TPU model");
    }
    Prediction p;
    p.tokens_per_sec_per_gpu = 1000;
    p.step_time_s = 2.5;
    p.peak_memory_gib = 50.0;
    p.out_of_memory = job.cluster.accelerator.vendor == "AMD";  // run "b"
    return p;
  };
  const ValidationReport r = validate(runs, fake, kDataDir);
  ASSERT_EQ(r.runs.size(), 4u);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(r.runs[i].status, "ok") << r.runs[i].reason;
  EXPECT_DOUBLE_EQ(*r.runs[0].throughput_error_pct, 25.0);
  EXPECT_DOUBLE_EQ(*r.runs[1].throughput_error_pct, -20.0);
  EXPECT_DOUBLE_EQ(*r.runs[2].throughput_error_pct, -20.0);
  EXPECT_EQ(r.runs[2].throughput_basis, "step_time_s (measured)");
  EXPECT_EQ(r.runs[3].status, "projection_failed");
  EXPECT_DOUBLE_EQ(*r.runs[0].memory_error_pct, 25.0);  // 50 vs 40 GiB
  const ValidationSummary& s = r.summary;
  EXPECT_EQ(s.runs, 4);
  EXPECT_EQ(s.compared, 3);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.projected_oom, std::vector<std::string>{"b"});  // every compared run fit
  EXPECT_EQ(s.throughput.count, 3);
  EXPECT_NEAR(s.throughput.mape_pct, 65.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.throughput.median_abs_pct, 20.0);
  EXPECT_DOUBLE_EQ(s.throughput.p90_abs_pct, 24.0);
  EXPECT_NEAR(s.throughput.mean_signed_pct, -15.0 / 3.0, 1e-12);
  EXPECT_EQ(s.memory.count, 1);

  std::map<std::string, ErrorStats> g;
  for (const RegimeStats& x : s.by_regime) g[x.group + ":" + x.value] = x.throughput;
  EXPECT_EQ(g.at("model:dense").count, 2);
  EXPECT_DOUBLE_EQ(g.at("model:dense").mape_pct, 22.5);
  EXPECT_EQ(g.at("model:moe").count, 1);
  EXPECT_EQ(g.at("accelerator:AMD").count, 1);
  EXPECT_EQ(g.at("accelerator:NVIDIA").count, 2);
  EXPECT_EQ(g.count("accelerator:TPU"), 0u);  // its projection failed
  EXPECT_EQ(g.at("scale:<=64").count, 2);
  EXPECT_EQ(g.at("scale:>1024").count, 1);
  EXPECT_EQ(g.at("pp:with").count, 1);
  EXPECT_EQ(g.at("ep:with").count, 1);
  EXPECT_DOUBLE_EQ(g.at("ep:with").mape_pct, 20.0);
  EXPECT_EQ(g.at("fp8:with").count, 1);
  EXPECT_EQ(g.at("cp:without").count, 3);

  // JSON shape.
  const nlohmann::json j = nlohmann::json::parse(report_to_json(r));
  EXPECT_EQ(j.at("schema_version"), kValidationSchemaVersion);
  EXPECT_EQ(j.at("runs").size(), 4u);
  EXPECT_EQ(j["runs"][0]["id"], "a");
  EXPECT_EQ(j["runs"][0]["predicted"]["tokens_per_sec_per_gpu"], 1000.0);
  EXPECT_EQ(j["runs"][0]["measured"]["tokens_per_sec_per_gpu"], 800.0);
  EXPECT_DOUBLE_EQ(j["runs"][0]["error_pct"]["tokens_per_sec_per_gpu"].get<double>(), 25.0);
  EXPECT_DOUBLE_EQ(j["runs"][0]["error_pct"]["peak_memory_gib"].get<double>(), 25.0);
  EXPECT_TRUE(j["runs"][0]["assumptions"].is_array());
  EXPECT_EQ(j["runs"][3]["status"], "projection_failed");
  EXPECT_NEAR(j["summary"]["throughput"]["mape_pct"].get<double>(), 65.0 / 3.0, 1e-9);
}

// The routing bracket: a skewed-routing prediction is reported beside the balanced one on the
// same basis (a step-time basis rescaled by the throughput ratio) and never enters the
// statistics. Run "a" measures 800 tok/s: balanced 1000 (+25 %), skewed 700 (-12.5 %), so the
// measurement lies inside the bracket; run "c" measures a 2.0 s step: balanced 2.5 s (-20 %),
// skewed at 0.5x the throughput -> -60 %, outside.
TEST(Validate, RoutingBracketBesideTheStatistics) {
  const std::string text =
      std::string(kRunA) + "  measured: {tokens_per_sec_per_gpu: 800}\n" + kRunC;
  const auto runs = parse_runs(text, "bracket.yaml");
  const ProjectFn fake = [](const JobSpec& job) {
    Prediction p;
    p.tokens_per_sec_per_gpu = 1000;
    p.step_time_s = 2.5;
    const bool a = job.parallel.tp == 1;
    p.skewed_tokens_per_sec_per_gpu = a ? 700.0 : 500.0;
    p.skew_load_factor = 2.0;
    return p;
  };
  const ValidationReport r = validate(runs, fake, kDataDir);
  ASSERT_EQ(r.runs.size(), 2u);
  ASSERT_TRUE(r.runs[0].skewed_throughput_error_pct.has_value());
  EXPECT_NEAR(*r.runs[0].skewed_throughput_error_pct, -12.5, 1e-9);
  EXPECT_NEAR(*r.runs[1].skewed_throughput_error_pct, -60.0, 1e-9);
  EXPECT_EQ(r.summary.skew_bracketed, 2);
  EXPECT_EQ(r.summary.within_skew_bracket, std::vector<std::string>{"a"});
  EXPECT_NEAR(r.summary.throughput.mape_pct, 22.5, 1e-9);  // balanced errors only: (25 + 20) / 2
  const nlohmann::json j = nlohmann::json::parse(report_to_json(r));
  EXPECT_DOUBLE_EQ(
      j["runs"][0]["predicted"]["routing_skew"]["tokens_per_sec_per_gpu"].get<double>(), 700.0);
  EXPECT_EQ(j["summary"]["routing_skew"]["bracketed"], 2);
}

// TFLOP/s-only rows are compared in the source's convention: the SC'21 1.7B row counts hardware
// FLOPs, F = sc21_megatron_flops(...) per iteration. A projection 10% faster than the published
// 137 TFLOP/s must show +10% on tflops_per_gpu and on throughput.
TEST(Validate, SourceFlopConvention) {
  const RunEntry& e = find_run("megatron-sc21-gpt-1.7b-a100x32");
  const double flops_per_token = sc21_megatron_flops(512, 2048, 24, 2304, 51200) / (512.0 * 2048);
  const double tokens = 137e12 / flops_per_token * 1.1;
  const ValidationReport r = validate(
      {e},
      [tokens](const JobSpec&) {
        Prediction p;
        p.tokens_per_sec_per_gpu = tokens;
        return p;
      },
      kDataDir);
  ASSERT_EQ(r.runs[0].status, "ok") << r.runs[0].reason;
  EXPECT_NEAR(*r.runs[0].throughput_error_pct, 10.0, 1e-9);
  EXPECT_EQ(r.runs[0].throughput_basis, "tflops_per_gpu (source convention)");
  bool seen = false;
  for (const MetricComparison& c : r.runs[0].metrics) {
    if (c.metric == "tflops_per_gpu") {
      seen = true;
      EXPECT_NEAR(c.error_pct, 10.0, 1e-9);
    }
  }
  EXPECT_TRUE(seen);
}

// exclude_from_statistics (data/validation/README.md): the run is mapped, projected and compared
// like any other, carries its reason in the text and JSON output, and enters no statistic. Run
// "a" (+25 %) is excluded, so the statistics are those of run "c" alone: a 2.5 s projected step
// against a measured 2.0 s is -20 % throughput.
TEST(Validate, ExcludedRunIsComparedButKeptOutOfTheStatistics) {
  const std::string text = std::string(kRunA) +
                           "  measured: {tokens_per_sec_per_gpu: 800, peak_memory_gib: 40}\n"
                           "  exclude_from_statistics: 'debug run from random init'\n" +
                           kRunC;
  const auto runs = parse_runs(text, "excluded.yaml");
  ASSERT_EQ(runs[0].exclude_from_statistics, "debug run from random init");
  EXPECT_TRUE(runs[1].exclude_from_statistics.empty());
  const ProjectFn fake = [](const JobSpec&) {
    Prediction p;
    p.tokens_per_sec_per_gpu = 1000;
    p.step_time_s = 2.5;
    p.peak_memory_gib = 50.0;
    p.out_of_memory = true;
    return p;
  };
  const ValidationReport r = validate(runs, fake, kDataDir);
  ASSERT_EQ(r.runs[0].status, "ok") << r.runs[0].reason;
  EXPECT_DOUBLE_EQ(*r.runs[0].throughput_error_pct, 25.0);  // still compared and shown
  EXPECT_EQ(r.runs[0].excluded, "debug run from random init");
  const ValidationSummary& s = r.summary;
  EXPECT_EQ(s.excluded, 1);
  EXPECT_EQ(s.compared, 1);
  EXPECT_EQ(s.throughput.count, 1);
  EXPECT_DOUBLE_EQ(s.throughput.mape_pct, 20.0);
  EXPECT_EQ(s.memory.count, 0);                               // run a's memory is not counted
  EXPECT_EQ(s.projected_oom, std::vector<std::string>{"c"});  // nor its OOM verdict
  for (const RegimeStats& g : s.by_regime) EXPECT_EQ(g.throughput.count, 1) << g.group;
  const nlohmann::json j = nlohmann::json::parse(report_to_json(r));
  EXPECT_EQ(j["runs"][0]["excluded_from_statistics"], "debug run from random init");
  EXPECT_FALSE(j["runs"][1].contains("excluded_from_statistics"));
  EXPECT_EQ(j["summary"]["excluded"], 1);
}

// Contradictions (issue 30) are said and kept out of the statistics: a measured peak of 5,000 GiB
// on an 80 GB H100, training.seq_len 1024 against model.seq_len 512, a negative step time. Run c
// (-20 %, as above) is the only one counted.
TEST(Validate, ContradictoryRunsAreSaidAndKeptOut) {
  std::string seq = std::string(kRunA);
  seq.replace(seq.find("- id: a"), 7, "- id: seq");
  seq.replace(seq.find("global_batch_size: 16"), 21, "global_batch_size: 16, seq_len: 1024");
  std::string neg = std::string(kRunA);
  neg.replace(neg.find("- id: a"), 7, "- id: neg");
  const std::string text = std::string(kRunA) +
                           "  measured: {tokens_per_sec_per_gpu: 800, peak_memory_gib: 5000}\n" +
                           seq + "  measured: {tokens_per_sec_per_gpu: 800}\n" + neg +
                           "  measured: {tokens_per_sec_per_gpu: 800, step_time_s: -3}\n" + kRunC;
  const auto runs = parse_runs(text, "contradictions.yaml");
  const ProjectFn fake = [](const JobSpec&) {
    Prediction p;
    p.tokens_per_sec_per_gpu = 1000;
    p.step_time_s = 2.5;
    p.peak_memory_gib = 50.0;
    return p;
  };
  const ValidationReport r = validate(runs, fake, kDataDir);
  ASSERT_EQ(r.runs.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(r.runs[i].status, "ok") << r.runs[i].reason;
    EXPECT_EQ(r.runs[i].excluded.rfind("contradictory measurement: ", 0), 0u) << r.runs[i].excluded;
  }
  EXPECT_NE(r.runs[0].excluded.find("5000.0 GiB is more than the 80.0 GiB of HBM"),
            std::string::npos)
      << r.runs[0].excluded;
  EXPECT_NE(r.runs[1].excluded.find("training.seq_len 1024 and model.seq_len 512 disagree"),
            std::string::npos)
      << r.runs[1].excluded;
  EXPECT_NE(r.runs[2].excluded.find("measured.step_time_s is negative (-3)"), std::string::npos)
      << r.runs[2].excluded;
  EXPECT_TRUE(r.runs[3].excluded.empty());
  EXPECT_EQ(r.summary.excluded, 3);
  EXPECT_EQ(r.summary.throughput.count, 1);
  EXPECT_DOUBLE_EQ(r.summary.throughput.mape_pct, 20.0);
  EXPECT_EQ(r.summary.memory.count, 0);
}

}  // namespace
}  // namespace projector
