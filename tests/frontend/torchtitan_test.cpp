// The torchtitan back-end: job TOMLs (torchtitan v0.2.2's own) and Primus torchtitan
// experiments through the adapter, with torchtitan's semantics (docs/torchtitan.md). Expected
// values are derived by hand from torchtitan's source (flavor tables, FeedForward sizing, mesh
// and pipeline rules), not read back from the code under test.
#include <gtest/gtest.h>

#include <algorithm>

#include "projector/frontend/loader.h"
#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/perf/perf.h"
#include "projector/util/error.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kTitan = std::string(PROJECTOR_TEST_DATA_DIR) + "/torchtitan";
const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;

LoadRequest request(const std::string& path, std::vector<std::string> set = {}, int nodes = 0) {
  LoadRequest r;
  r.config_path = path;
  r.data_dir = kRepoData;
  r.env = fixed_environment({});
  r.set_overrides = std::move(set);
  if (nodes > 0) r.cli.nodes = nodes;
  return r;
}

JobSpec upstream(const std::string& file, std::vector<std::string> set = {}, int nodes = 0) {
  return load_job(request(kTitan + "/upstream/" + file, std::move(set), nodes));
}
JobSpec primus(const std::string& file, std::vector<std::string> set = {}, int nodes = 0) {
  return load_job(request(kTitan + "/primus/" + file, std::move(set), nodes));
}

const AppliedDefault* find_default(const JobSpec& j, const std::string& key) {
  for (const AppliedDefault& d : j.defaults) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

bool has_warning(const JobSpec& j, const std::string& text) {
  return std::any_of(j.warnings.begin(), j.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

// llama3_8b.toml: 8B flavor (dim 4096, 32 layers, 32 / 8 heads), FFN int(2*16384/3)=10922 x 1.3
// = 14198 -> 14336 (multiple of 1024); local batch 1, seq 8192, FSDP over every rank, per-op SAC.
TEST(TorchtitanToml, Llama3_8B) {
  const JobSpec j = upstream("llama3_8b.toml");
  ASSERT_EQ(j.model.num_layers(), 32);
  EXPECT_EQ(j.model.hidden_size, 4096);
  EXPECT_EQ(j.model.vocab_size, 128256);
  EXPECT_EQ(j.model.make_vocab_size_divisible_by, 1);
  EXPECT_EQ(j.model.layers[0].mlp.ffn_hidden_size, 14336);
  EXPECT_EQ(j.model.layers[0].attention.num_query_groups, 8);
  EXPECT_EQ(j.model.layers[0].attention.head_dim, 128);
  EXPECT_FALSE(j.model.tied_embeddings);
  EXPECT_EQ(j.dp(), 8);
  EXPECT_EQ(j.parallel.fsdp, FsdpKind::kFsdp2);
  EXPECT_TRUE(j.parallel.reshard_after_forward);  // no PP
  EXPECT_EQ(j.runtime.micro_batch_size, 1);
  EXPECT_EQ(j.runtime.global_batch_size, 8);  // local 1 x DP 8
  // run_train.sh exports expandable segments (TT5): the allocator model grows segments.
  EXPECT_EQ(j.runtime.allocator, DeviceAllocatorKind::kCachingExpandable);
  ASSERT_NE(find_default(j, "expandable_segments"), nullptr);
  EXPECT_EQ(j.runtime.seq_length, 8192);
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kOpPolicy);
  EXPECT_EQ(j.runtime.precision.fp8, Fp8Recipe::kNone);  // converters commented out
  EXPECT_EQ(j.runtime.attention_kernel, AttentionKernel::kFa2);
  EXPECT_FALSE(j.runtime.cross_entropy_fusion);  // compile.enable = false
  // 8.03 B parameters (Llama 3.1 8B).
  EXPECT_NEAR(static_cast<double>(model_params(j.model).total) / 1e9, 8.03, 0.01);
  const AppliedDefault* d = find_default(j, "training.dtype");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->source, "torchtitan");
  EXPECT_NE(d->reason.find("job_config.py"), std::string::npos) << d->reason;
}

// llama3_405b.toml: TP 8 with async TP under compile, legacy converter name "float8" with fp8
// all-gather, full AC; FFN int(2*65536/3)=43690 x 1.2 = 52428 -> 53248.
TEST(TorchtitanToml, Llama3_405B) {
  const JobSpec j = upstream("llama3_405b.toml", {}, 64);
  EXPECT_EQ(j.model.num_layers(), 126);
  EXPECT_EQ(j.model.layers[0].mlp.ffn_hidden_size, 53248);
  EXPECT_EQ(j.parallel.tp, 8);
  EXPECT_TRUE(j.parallel.sequence_parallel);
  EXPECT_TRUE(j.parallel.tp_comm_overlap);  // enable_async_tensor_parallel + compile
  EXPECT_TRUE(j.parallel.vocab_parallel_loss);
  EXPECT_EQ(j.runtime.precision.fp8, Fp8Recipe::kTensorwise);
  EXPECT_TRUE(j.runtime.precision.fp8_param);    // enable_fsdp_float8_all_gather
  EXPECT_FALSE(j.runtime.precision.fp8_output);  // filter_fqns = ["output"]
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kFull);
  EXPECT_TRUE(j.runtime.cross_entropy_fusion);  // the loss is compiled
}

// deepseek_v3_16b.toml: MLA without query compression, 1 dense layer then 26 MoE layers of 64
// experts (top 6, 2 shared of 1408 -> 2816), EP 8 on one node, float8 linears and grouped GEMMs.
TEST(TorchtitanToml, DeepSeekV3_16B) {
  const JobSpec j = upstream("deepseek_v3_16b.toml");
  ASSERT_EQ(j.model.num_layers(), 27);
  EXPECT_FALSE(j.model.layers[0].is_moe);
  EXPECT_EQ(j.model.layers[0].mlp.ffn_hidden_size, 10944);
  const LayerSpec& l = j.model.layers[1];
  ASSERT_TRUE(l.is_moe);
  EXPECT_EQ(l.attention.kind, AttentionKind::kMla);
  EXPECT_EQ(l.attention.q_lora_rank, 0);
  EXPECT_EQ(l.attention.kv_lora_rank, 512);
  EXPECT_EQ(l.moe.num_experts, 64);
  EXPECT_EQ(l.moe.topk, 6);
  EXPECT_EQ(l.moe.expert_ffn_hidden_size, 1408);
  EXPECT_EQ(l.moe.shared_expert_ffn_hidden_size, 2816);
  EXPECT_EQ(j.parallel.ep, 8);
  EXPECT_EQ(j.parallel.etp, 1);
  EXPECT_EQ(j.expert_dp(), 1);
  // The TOML configures float8 but lists no converter: nothing is quantized.
  EXPECT_EQ(j.runtime.precision.fp8, Fp8Recipe::kNone);
  EXPECT_TRUE(has_warning(j, "block_causal"));  // the 16B flavor uses FlexAttention documents
  const JobSpec q =
      upstream("deepseek_v3_16b.toml",
               {"model.converters=[quantize.linear.float8, quantize.grouped_mm.float8]"});
  EXPECT_TRUE(q.runtime.precision.fp8_dense);
  EXPECT_TRUE(q.runtime.precision.fp8_experts);  // quantize.grouped_mm.float8.fqns = experts
  EXPECT_FALSE(q.runtime.precision.fp8_output);  // filter_fqns = ["output", "router.gate"]
}

// Node-limited routing (MoEArgs num_expert_groups / num_limited_groups, None by default): the
// 16B flavor has none, the 671B flavor routes within 4 of 8 groups (deepseek_v3/__init__.py:
// 142-143), a config can set them under model.moe_args, and torchtitan's checks are kept.
TEST(TorchtitanMoe, GroupLimitedRouting) {
  const JobSpec plain = upstream("deepseek_v3_16b.toml");
  EXPECT_EQ(plain.model.layers[1].moe.router_num_groups, 0);
  EXPECT_EQ(plain.model.layers[1].moe.router_group_topk, 0);
  const JobSpec big = upstream("deepseek_v3_16b.toml", {"model.flavor=671B"});
  ASSERT_TRUE(big.model.layers[3].is_moe);
  EXPECT_EQ(big.model.layers[3].moe.router_num_groups, 8);
  EXPECT_EQ(big.model.layers[3].moe.router_group_topk, 4);
  // 64 experts in 8 groups of 8, top 6 from the best 3 groups.
  const std::string groups = "model.moe_args.num_expert_groups=8";
  const JobSpec set =
      upstream("deepseek_v3_16b.toml", {groups, "model.moe_args.num_limited_groups=3"});
  EXPECT_EQ(set.model.layers[1].moe.router_num_groups, 8);
  EXPECT_EQ(set.model.layers[1].moe.router_group_topk, 3);
  EXPECT_FALSE(set.model.layers[0].is_moe);
  EXPECT_EQ(set.model.layers[0].moe.router_num_groups, 0);
  // Round-robin debug routing ignores the groups (moe.py:336-341).
  const JobSpec rr =
      upstream("deepseek_v3_16b.toml", {groups, "model.moe_args.num_limited_groups=3",
                                        "model.moe_args._debug_force_load_balance=true"});
  EXPECT_EQ(rr.model.layers[1].moe.router_num_groups, 0);
  auto refused_key = [](std::vector<std::string> sets) {
    try {
      upstream("deepseek_v3_16b.toml", std::move(sets));
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused_key({groups}), "num_limited_groups");  // needs the picked groups
  EXPECT_EQ(
      refused_key({"model.moe_args.num_expert_groups=5", "model.moe_args.num_limited_groups=2"}),
      "num_expert_groups");  // 64 % 5
  EXPECT_EQ(
      refused_key({"model.moe_args.num_expert_groups=64", "model.moe_args.num_limited_groups=8"}),
      "num_expert_groups");  // groups of 1 expert (torchtitan needs >= 2 for its top-2)
  EXPECT_EQ(refused_key({groups, "model.moe_args.num_limited_groups=9"}), "num_limited_groups");
  // 32 groups of 2, top 2 groups: 4 experts for a top-6 routing.
  EXPECT_EQ(
      refused_key({"model.moe_args.num_expert_groups=32", "model.moe_args.num_limited_groups=2"}),
      "num_limited_groups");
}

// llama4_17bx16e.toml: every layer MoE (interleave step 1), expert width
// int(int(1.2 x int(2 x 20480 / 3)) / (top_k 1 + 1 shared)) rounded up to 2048 = 8192.
TEST(TorchtitanToml, Llama4_17Bx16E) {
  const JobSpec j = upstream("llama4_17bx16e.toml", {}, 2);
  ASSERT_EQ(j.model.num_layers(), 48);
  for (const LayerSpec& l : j.model.layers) {
    ASSERT_TRUE(l.is_moe);
    EXPECT_EQ(l.moe.num_experts, 16);
    EXPECT_EQ(l.moe.topk, 1);
    EXPECT_EQ(l.moe.expert_ffn_hidden_size, 8192);
    EXPECT_EQ(l.moe.shared_expert_ffn_hidden_size, 8192);
  }
  EXPECT_EQ(j.model.vocab_size, 202048);
}

// iRoPE (models/llama4/model/model.py:374-383): block i % every_n_layers_nope == 0 is global
// (NoPE), the others attend within fixed blocks of 8192 tokens under FlexAttention. At seq 16384
// with causal halving (heads x head_dim = 40 x 128 = 5120): a chunked block's query sees 8192 / 2
// keys on average, 4 x 4096 x 5120 = 83,886,080 FLOPs per token; a global one 16384 / 2, twice
// that. (A sliding window of 8192 would be 8192 - 8192^2 / (2 x 16384) = 6144 keys.) With SDPA
// the block mask is not applied: every block is causal, and a warning says so.
TEST(TorchtitanToml, Llama4IropeChunkedAttention) {
  const JobSpec j =
      upstream("llama4_17bx16e.toml",
               {"model.flavor=17bx16e_irope", "model.n_layers=8", "training.seq_len=16384"}, 2);
  ASSERT_EQ(j.model.num_layers(), 8);
  for (int i = 0; i < 8; ++i) {
    const AttentionSpec& a = j.model.layers[i].attention;
    EXPECT_EQ(a.chunk_window, i % 4 == 0 ? 0 : 8192) << i;
    EXPECT_EQ(a.sliding_window, 0) << i;
  }
  const FlopOptions causal{.causal_attention_half = true};
  EXPECT_DOUBLE_EQ(
      layer_forward_flops_per_token(j.model, j.model.layers[1], 16384, causal).attn_core_flops,
      83886080.0);
  EXPECT_DOUBLE_EQ(
      layer_forward_flops_per_token(j.model, j.model.layers[0], 16384, causal).attn_core_flops,
      167772160.0);
  const JobSpec sdpa = upstream("llama4_17bx16e.toml",
                                {"model.flavor=17bx16e_irope", "model.n_layers=8",
                                 "model.attn_type=sdpa", "training.seq_len=16384"},
                                2);
  for (const LayerSpec& l : sdpa.model.layers) EXPECT_EQ(l.attention.chunk_window, 0);
  EXPECT_TRUE(has_warning(sdpa, "only under FlexAttention"));
}

// qwen3_0.6b.toml: head_dim 128 with 16 heads (2048 wide queries on a 1024 model), q/k norms,
// tied embeddings.
TEST(TorchtitanToml, Qwen3_0_6B) {
  const JobSpec j = upstream("qwen3_0.6b.toml");
  ASSERT_EQ(j.model.num_layers(), 28);
  EXPECT_EQ(j.model.hidden_size, 1024);
  EXPECT_EQ(j.model.layers[0].attention.head_dim, 128);
  EXPECT_TRUE(j.model.layers[0].attention.qk_layernorm);
  EXPECT_EQ(j.model.layers[0].mlp.ffn_hidden_size, 3072);
  EXPECT_TRUE(j.model.tied_embeddings);
  const ModelParams p = model_params(j.model);
  EXPECT_EQ(p.output_layer, 0);
  // 0.6 B with the tied 151936 x 1024 embedding counted once.
  EXPECT_NEAR(static_cast<double>(p.total) / 1e9, 0.596, 0.005);
}

// Primus' module preset over torchtitan's defaults: AC none and compile on, each recorded with
// the Primus profile; the experiment's overrides win.
TEST(TorchtitanPrimus, Llama3_1_8B_BF16) {
  const JobSpec j = primus("llama3.1_8B-BF16-pretrain.yaml");
  EXPECT_EQ(j.runtime.micro_batch_size, 4);
  EXPECT_EQ(j.runtime.seq_length, 8192);
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kNone);  // overrides: none
  EXPECT_EQ(j.runtime.attention_kernel, AttentionKernel::kFused);  // Primus-Turbo attention
  const AppliedDefault* compile = find_default(j, "compile.enable");
  ASSERT_NE(compile, nullptr);
  EXPECT_EQ(compile->value, "true");
  EXPECT_EQ(compile->source, "primus-torchtitan");
  EXPECT_NE(compile->reason.find("modules/torchtitan/pre_trainer.yaml:"), std::string::npos)
      << compile->reason;
  EXPECT_TRUE(j.runtime.cross_entropy_fusion);
}

TEST(TorchtitanPrimus, Llama3_1_8B_FP8) {
  const JobSpec j = primus("llama3.1_8B-FP8-pretrain.yaml");
  EXPECT_EQ(j.runtime.micro_batch_size, 5);
  EXPECT_EQ(j.runtime.precision.fp8, Fp8Recipe::kTensorwise);
  EXPECT_TRUE(j.runtime.precision.fp8_param);
  EXPECT_FALSE(j.runtime.precision.fp8_output);
  EXPECT_FALSE(j.runtime.precision.fp8_experts);
}

// Architecture keys under `model:` override the flavor (Primus' 405B preset states n_layers).
TEST(TorchtitanPrimus, ArchitectureKeysOverrideTheFlavor) {
  EXPECT_EQ(primus("llama3.1_405B-BF16-pretrain.yaml", {}, 32).model.num_layers(), 126);
  const JobSpec j = primus("llama3.1_405B-BF16-pretrain.yaml", {"model.n_layers=4"});
  EXPECT_EQ(j.model.num_layers(), 4);
  const JobSpec w = primus("llama3.1_8B-BF16-pretrain.yaml", {"model.n_layerz=4"});
  EXPECT_TRUE(has_warning(w, "model.n_layerz is neither a JobConfig key"));
}

TEST(TorchtitanPrimus, OtherFamilies) {
  const JobSpec ds = primus("deepseek_v3_16b-BF16-pretrain.yaml");
  EXPECT_EQ(ds.model.layers[5].moe.num_experts, 64);
  const JobSpec l4 = primus("llama4_17Bx16E-BF16-pretrain.yaml", {}, 2);
  EXPECT_EQ(l4.model.layers[0].moe.num_experts, 16);
  const JobSpec q = primus("qwen3_0.6B-pretrain.yaml");
  EXPECT_TRUE(q.model.tied_embeddings);
  const JobSpec b70 = primus("llama3.1_70B-BF16-pretrain.yaml");
  EXPECT_EQ(b70.model.layers[0].mlp.ffn_hidden_size, 28672);  // 21845 x 1.3 -> 28672
}

// dp_replicate x dp_shard x cp x tp x pp = world; dp_shard -1 fills; HSDP shards within a replica.
TEST(TorchtitanMesh, ReplicateAndShard) {
  const JobSpec j = upstream("llama3_8b.toml", {"parallelism.data_parallel_replicate_degree=2"}, 2);
  EXPECT_EQ(j.dp(), 16);
  EXPECT_EQ(j.parallel.dp_replicate, 2);
  EXPECT_EQ(j.fsdp_shard_size(), 8);
  // A stated shard degree fixes the world: 4 GPUs are one partial node.
  const JobSpec s = upstream("llama3_8b.toml", {"parallelism.data_parallel_shard_degree=4"});
  EXPECT_EQ(s.cluster.world_size(), 4);
  EXPECT_EQ(s.dp(), 4);
  // ... and a world it does not fill breaks a rule naming the key.
  try {
    upstream("llama3_8b.toml", {"parallelism.data_parallel_shard_degree=4"}, 1);
    FAIL() << "4 x 1 x 1 x 1 ranks on one node of 8 must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.data_parallel_shard_degree");
  }
}

// EP is carved out of dp_shard x cp x tp; ETP must be 1 or TP.
TEST(TorchtitanMesh, ExpertParallel) {
  const JobSpec j = upstream(
      "deepseek_v3_16b.toml",
      {"parallelism.tensor_parallel_degree=2", "parallelism.expert_tensor_parallel_degree=2"}, 2);
  EXPECT_EQ(j.dp(), 8);
  EXPECT_EQ(j.parallel.ep, 8);
  EXPECT_EQ(j.parallel.etp, 2);
  EXPECT_EQ(j.expert_dp(), 1);  // 16 / (8 x 2)
  try {
    upstream("deepseek_v3_16b.toml", {"parallelism.tensor_parallel_degree=2",
                                      "parallelism.expert_tensor_parallel_degree=4"});
    FAIL() << "ETP 4 with TP 2 must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.expert_tensor_parallel_degree");
  }
}

// PP 4 with Interleaved1F1B: 2 stages per rank; embedding and norm + output each weigh a layer:
// 34 effective layers over 8 stages = 4 rem 2: stage 0 takes 5 - 1 = 4 layers, stage 1 five,
// stages 2-6 four, stage 7 4 - 1 = 3.
TEST(TorchtitanPipeline, InterleavedSplit) {
  const JobSpec j = upstream(
      "llama3_8b.toml",
      {"parallelism.pipeline_parallel_degree=4",
       "parallelism.pipeline_parallel_schedule=Interleaved1F1B", "training.local_batch_size=8"},
      2);
  EXPECT_EQ(j.parallel.pp, 4);
  EXPECT_EQ(j.parallel.vpp, 2);
  EXPECT_EQ(j.runtime.schedule, ScheduleKind::kInterleaved);
  EXPECT_FALSE(j.parallel.reshard_after_forward);  // default with PP
  const std::vector<int> want = {4, 5, 4, 4, 4, 4, 4, 3};
  ASSERT_EQ(j.parallel.stages.size(), want.size());
  for (std::size_t z = 0; z < want.size(); ++z) {
    EXPECT_EQ(j.parallel.stages[z].num_layers, want[z]) << z;
  }
  EXPECT_TRUE(j.parallel.stages.front().has_embedding);
  EXPECT_TRUE(j.parallel.stages.back().has_output);
  EXPECT_EQ(j.runtime.micro_batch_size, 1);  // pipeline_parallel_microbatch_size
  EXPECT_EQ(j.num_microbatches(), 8);        // local 8 / microbatch 1
}

// Gradient accumulation runs the schedule once per round: local batch 2 with a global batch of 16
// on DP 2 is 4 rounds of 2 microbatches, fewer than PP 4, which the interleaved schedule cannot
// take. The builder refuses it naming the schedule key (a fuzzer finding: the schedule itself
// used to throw without a location).
TEST(TorchtitanPipeline, InterleavedRulesApplyPerAccumulationRound) {
  try {
    upstream("llama3_8b.toml",
             {"parallelism.pipeline_parallel_degree=4",
              "parallelism.pipeline_parallel_schedule=Interleaved1F1B",
              "training.local_batch_size=2", "training.global_batch_size=16"},
             1);
    FAIL() << "2 microbatches per flush with PP 4 interleaved must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.pipeline_parallel_schedule");
    EXPECT_FALSE(e.where().file.empty());
    EXPECT_NE(std::string(e.what()).find("4 accumulation rounds"), std::string::npos) << e.what();
  }
}

TEST(TorchtitanPipeline, VShapeAndSingleStage) {
  const JobSpec v = upstream("llama3_8b.toml",
                             {"parallelism.pipeline_parallel_degree=4",
                              "parallelism.pipeline_parallel_schedule=ZBVZeroBubble",
                              "activation_checkpoint.mode=none", "training.local_batch_size=8"},
                             2);
  EXPECT_EQ(v.runtime.schedule, ScheduleKind::kZbvFormatted);
  EXPECT_EQ(v.parallel.vpp, 2);
  const JobSpec s = upstream(
      "llama3_8b.toml", {"parallelism.pipeline_parallel_degree=2", "training.local_batch_size=4"});
  EXPECT_EQ(s.parallel.vpp, 1);
  // 34 effective layers over 2 stages: 17 - 1 = 16 each.
  EXPECT_EQ(s.parallel.stages[0].num_layers, 16);
  EXPECT_EQ(s.parallel.stages[1].num_layers, 16);
  try {
    upstream("llama3_8b.toml",
             {"parallelism.pipeline_parallel_degree=2",
              "parallelism.pipeline_parallel_layers_per_stage=8", "training.local_batch_size=4"});
    FAIL() << "1F1B with 2 stages per rank must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.pipeline_parallel_layers_per_stage");
  }
}

// PRIMUS_PP re-lays the pipeline out with torchtitan's weighted split (the draft keeps the rule,
// not a fixed stage list).
TEST(TorchtitanPipeline, EnvironmentOverrideKeepsTheSplitRule) {
  LoadRequest r = request(kTitan + "/upstream/llama3_8b.toml", {"training.local_batch_size=4"});
  r.env = fixed_environment({{"PRIMUS_PP", "2"}});
  const JobSpec j = load_job(r);
  ASSERT_EQ(j.parallel.pp, 2);
  EXPECT_EQ(j.parallel.stages[0].num_layers, 16);
  EXPECT_EQ(j.parallel.stages[1].num_layers, 16);
  // With PP the local batch of 4 splits into pipeline microbatches of 1 (default size).
  EXPECT_EQ(j.runtime.micro_batch_size, 1);
  EXPECT_EQ(j.num_microbatches(), 4);
}

// A global batch of twice local x DP is two accumulation rounds, each its own pipeline flush.
TEST(TorchtitanBatch, GradientAccumulationRounds) {
  const JobSpec j = upstream("llama3_8b.toml",
                             {"parallelism.pipeline_parallel_degree=2",
                              "training.local_batch_size=4", "training.global_batch_size=64"},
                             2);
  EXPECT_EQ(j.dp(), 8);
  EXPECT_EQ(j.runtime.accumulation_rounds, 2);  // 64 / (4 x 8)
  EXPECT_EQ(j.num_microbatches(), 8);           // 2 rounds x 4 microbatches
  try {
    upstream("llama3_8b.toml", {"training.local_batch_size=4", "training.global_batch_size=36"});
    FAIL() << "36 is not a multiple of 4 x 8";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "training.global_batch_size");
  }
}

TEST(TorchtitanCheckpointing, Modes) {
  const JobSpec every2 =
      upstream("llama3_8b.toml", {"activation_checkpoint.selective_ac_option=2"});
  EXPECT_EQ(every2.runtime.recompute.layer_ids.size(), 16u);
  EXPECT_EQ(every2.runtime.recompute.layer_ids.front(), 1);  // blocks 2, 4, ... (1-based)
  const JobSpec budget = upstream(
      "llama3_8b.toml", {"activation_checkpoint.mode=memory_budget", "compile.enable=true"});
  EXPECT_EQ(budget.runtime.recompute.granularity, RecomputeGranularity::kOpPolicy);
  EXPECT_DOUBLE_EQ(budget.runtime.recompute.memory_budget, 0.5);
  try {
    upstream("llama3_8b.toml", {"activation_checkpoint.mode=memory_budget"});
    FAIL() << "memory_budget without compile must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "activation_checkpoint.mode");
  }
}

TEST(TorchtitanPrecision, RecipesAndCoverage) {
  const JobSpec rowwise =
      upstream("llama3_8b.toml", {"model.converters=[quantize.linear.float8]",
                                  "quantize.linear.float8.recipe_name=rowwise_with_gw_hp",
                                  "quantize.linear.float8.filter_fqns=[]"});
  EXPECT_EQ(rowwise.runtime.precision.fp8, Fp8Recipe::kRowwiseHpWgrad);
  EXPECT_TRUE(rowwise.runtime.precision.fp8_output);  // no filter: the output is converted too
  const JobSpec mx = upstream("llama4_17bx16e.toml",
                              {"model.converters=[quantize.linear.mx, quantize.grouped_mm.mx]",
                               "quantize.grouped_mm.mx.fqns=[experts]"},
                              2);
  EXPECT_EQ(mx.runtime.precision.fp8, Fp8Recipe::kMxfp8);
  EXPECT_FALSE(mx.runtime.precision.fp8_output);  // mx filter_fqns defaults to output
  EXPECT_TRUE(mx.runtime.precision.fp8_experts);
  const JobSpec pure = upstream("llama3_8b.toml", {"training.dtype=bfloat16"});
  EXPECT_FALSE(pure.runtime.master_weights);
  EXPECT_EQ(pure.runtime.main_grads_dtype, Dtype::kBf16);
  const JobSpec nolp = upstream("llama3_8b.toml", {"parallelism.tensor_parallel_degree=2",
                                                   "parallelism.disable_loss_parallel=true"});
  EXPECT_FALSE(nolp.parallel.vocab_parallel_loss);
}

// Bad input: one error naming file, line and key.
TEST(TorchtitanErrors, NamesTheKey) {
  testing::TempDir dir;
  const std::string bad = dir.write("bad.toml", "[model]\nname = \"llama3\"\nflavor = \"9B\"\n");
  try {
    load_job(request(bad));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "model.flavor");
    EXPECT_EQ(e.where().line, 3);
    EXPECT_NE(std::string(e.what()).find("8B"), std::string::npos) << e.what();
  }
  const std::string syntax = dir.write("syntax.toml", "[model]\nname = \"llama3\nflavor = 1\n");
  try {
    load_job(request(syntax));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, syntax);
    EXPECT_EQ(e.where().line, 2);
  }
  const std::string typo = dir.write("typo.toml",
                                     "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\n"
                                     "tensor_paralel_degree = 2\n");
  const JobSpec j = load_job(request(typo));
  EXPECT_TRUE(has_warning(j, "did you mean 'parallelism.tensor_parallel_degree'")) << j.warnings[0];
}

// Resolution order: an installed torchtitan's flavor table beats the transcription.
TEST(TorchtitanFlavorSource, CheckoutBeatsTranscription) {
  testing::TempDir dir;
  dir.write("tt/torchtitan/models/moe/moe.py",
            "@dataclass\nclass MoEArgs:\n    num_experts: int = 8\n    top_k: int = 1\n");
  dir.write("tt/torchtitan/models/llama3/model/args.py",
            "@dataclass\nclass TransformerModelArgs(BaseModelArgs):\n    dim: int = 4096\n"
            "    n_layers: int = 32\n    n_heads: int = 32\n    n_kv_heads: int | None = None\n"
            "    vocab_size: int = 128256\n    multiple_of: int = 256\n"
            "    ffn_dim_multiplier: float | None = None\n");
  dir.write("tt/torchtitan/models/llama3/__init__.py",
            "llama3_args = {\n    \"8B\": TransformerModelArgs(dim=4096, n_layers=30, n_heads=32,"
            " n_kv_heads=8, ffn_dim_multiplier=1.3, multiple_of=1024),\n}\n"
            "def get_train_spec():\n    return TrainSpec(model_args=llama3_args)\n");
  LoadRequest r = request(kTitan + "/upstream/llama3_8b.toml");
  r.backend_path = dir.path() + "/tt";
  const JobSpec j = load_job(r);
  EXPECT_EQ(j.model.num_layers(), 30);
  const AppliedDefault* d = find_default(j, "model.flavor");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("checkout"), std::string::npos) << d->reason;
  // BACKEND_PATH in the environment does the same.
  LoadRequest e = request(kTitan + "/upstream/llama3_8b.toml");
  e.env = fixed_environment({{"BACKEND_PATH", dir.path() + "/tt"}});
  EXPECT_EQ(load_job(e).model.num_layers(), 30);
}

// parallelism.pipeline_parallel_expert_parallel_overlap (True): with DualPipeV, PP > 1 and EP > 1
// the paired forward / backward of two microbatches hide each other's EP all-to-all; off, the
// pair runs back to back. DeepSeek-V3 16B, PP 2 x EP 8 on 2 nodes, 8 microbatches.
// debug.moe_force_load_balance (job_config.py:995) reaches the router as
// _debug_force_load_balance: round-robin routing, so the job's routing is `forced`, the group
// limit is off and the performance projection has no skewed-routing bracket.
TEST(TorchtitanMoe, ForcedLoadBalance) {
  const JobSpec learned = upstream("deepseek_v3_16b.toml", {"model.flavor=671B"});
  EXPECT_EQ(learned.runtime.moe_routing, MoeRouting::kBalanced);
  ASSERT_NE(find_default(learned, "debug.moe_force_load_balance"), nullptr);
  const JobSpec forced =
      upstream("deepseek_v3_16b.toml", {"model.flavor=671B", "debug.moe_force_load_balance=true"});
  EXPECT_EQ(forced.runtime.moe_routing, MoeRouting::kForced);
  EXPECT_EQ(forced.model.layers[3].moe.router_num_groups, 0);
  EXPECT_EQ(forced.model.layers[3].moe.router_group_topk, 0);
}

TEST(TorchtitanMoe, PipelineExpertParallelOverlap) {
  const std::vector<std::string> base = {
      "parallelism.pipeline_parallel_degree=2", "parallelism.pipeline_parallel_schedule=DualPipeV",
      "activation_checkpoint.mode=none", "training.local_batch_size=8"};
  auto load = [&](std::vector<std::string> extra) {
    std::vector<std::string> set = base;
    set.insert(set.end(), extra.begin(), extra.end());
    LoadRequest r = request(kTitan + "/upstream/deepseek_v3_16b.toml", set, 2);
    r.hardware = "h100_sxm";
    return load_job(r);
  };
  const JobSpec on = load({});
  ASSERT_EQ(on.runtime.schedule, ScheduleKind::kDualPipeV);
  ASSERT_EQ(on.parallel.ep, 8);
  EXPECT_TRUE(on.runtime.moe_overlap.has(MoeOverlap::kOtherMicrobatch));
  EXPECT_TRUE(on.runtime.schedule_overlapped_pairs);
  ASSERT_NE(find_default(on, "parallelism.pipeline_parallel_expert_parallel_overlap"), nullptr);
  const JobSpec off = load({"parallelism.pipeline_parallel_expert_parallel_overlap=false"});
  EXPECT_FALSE(off.runtime.moe_overlap.has(MoeOverlap::kOtherMicrobatch));
  EXPECT_FALSE(off.runtime.schedule_overlapped_pairs);

  const PerfReport p_on = project_performance(on);
  const PerfReport p_off = project_performance(off);
  double total = 0.0, hidden_on = 0.0, hidden_off = 0.0;
  for (const EpCommSplit& e : p_on.ep_comm) {
    total += e.total_s;
    hidden_on += e.hidden_paired_microbatch_s;
  }
  for (const EpCommSplit& e : p_off.ep_comm) hidden_off += e.hidden_paired_microbatch_s;
  EXPECT_GT(total, 0.0);
  EXPECT_GT(hidden_on, 0.0);
  EXPECT_LE(hidden_on, total);
  EXPECT_EQ(hidden_off, 0.0);
  EXPECT_FALSE(p_on.ep_pair_mechanism.empty());
  EXPECT_TRUE(p_off.ep_pair_mechanism.empty());
  EXPECT_LT(p_on.iteration_s, p_off.iteration_s);

  // torchtitan refuses the overlap with activation checkpointing (dual_pipe_v.py:45-49).
  try {
    load({"activation_checkpoint.mode=full"});
    FAIL() << "DualPipeV + EP overlap with activation checkpointing must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.pipeline_parallel_expert_parallel_overlap");
  }
  // Another schedule: the flag, stated, has no effect and says so; nothing is modelled.
  const JobSpec inter = load({"parallelism.pipeline_parallel_schedule=Interleaved1F1B",
                              "parallelism.pipeline_parallel_expert_parallel_overlap=true"});
  EXPECT_FALSE(inter.runtime.moe_overlap.has(MoeOverlap::kOtherMicrobatch));
  EXPECT_TRUE(has_warning(inter, "has no effect"));
  // No EP: DualPipeV's pairs run back to back (no callback registered).
  const JobSpec no_ep = load({"parallelism.expert_parallel_degree=1"});
  EXPECT_FALSE(no_ep.runtime.moe_overlap.has(MoeOverlap::kOtherMicrobatch));
  EXPECT_FALSE(no_ep.runtime.schedule_overlapped_pairs);
}

TEST(TorchtitanCli, MemoryPerformanceAndJson) {
  using testing::run_cli;
  const std::string toml = kTitan + "/upstream/llama3_8b.toml";
  testing::CliResult r = run_cli("both -c " + toml + " --hardware h100_sxm");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("6N+attention"), std::string::npos) << r.out;
  r = run_cli("config -c " + kTitan + "/primus/llama3.1_8B-BF16-pretrain.yaml --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"primus-torchtitan\""), std::string::npos);
  EXPECT_NE(r.out.find("\"torchtitan\""), std::string::npos);
  r = run_cli("memory -c " + toml + " --set model.flavor=9B");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("model.flavor"), std::string::npos) << r.out;
}

// FSDP's reshard after forward and the accumulation rounds are torchtitan's rules, kept on the job
// and decided again by a re-layout (the sweep, a remedy), not by the sweep's own policy (issue 29
// §2): reshard by default only without PP (parallelize.py:319-328); without PP every local batch
// is its own accumulation round (train.py), with PP the per-replica batch is one flush. The
// llama3_8b.toml job: 8 GPUs, PP 1, local batch 1, so 8 microbatches of 1 sequence per replica.
TEST(TorchtitanRules, ReshardAndAccumulationFollowTheLayout) {
  JobSpec j = upstream("llama3_8b.toml", {"training.global_batch_size=64"});
  ASSERT_EQ(j.parallel.pp, 1);
  EXPECT_TRUE(j.parallel.reshard_after_forward);
  EXPECT_EQ(j.runtime.accumulation_rounds, 8);  // 64 / (1 x DP 8)
  LayoutChoice two = layout_choice(j);
  two.pp = 2;
  two.schedule = ScheduleKind::k1F1B;
  relayout(j, two);
  EXPECT_FALSE(j.parallel.reshard_after_forward);
  EXPECT_EQ(j.runtime.accumulation_rounds, 1);  // one flush of 16 microbatches (DP 4)
  LayoutChoice one = layout_choice(j);
  one.pp = 1;
  relayout(j, one);
  EXPECT_TRUE(j.parallel.reshard_after_forward);
  EXPECT_EQ(j.runtime.accumulation_rounds, j.num_microbatches());
  EXPECT_EQ(j.runtime.accumulation_rounds, 8);
  // A stated policy holds for every layout.
  JobSpec always = upstream("llama3_8b.toml", {"training.global_batch_size=64",
                                               "parallelism.fsdp_reshard_after_forward=always"});
  relayout(always, two);
  EXPECT_TRUE(always.parallel.reshard_after_forward);
  // Decided on the final PP: --pp 2 on a PP 1 file keeps the weights from forward to backward.
  LoadRequest r = request(kTitan + "/upstream/llama3_8b.toml", {"training.global_batch_size=64"});
  r.cli.pp = 2;
  EXPECT_FALSE(load_job(r).parallel.reshard_after_forward);
}

// torchtitan versions (data/frameworks/torchtitan/versions.yaml): before #1238 (2025-06-05) the
// per-rank batch was training.batch_size, with no global batch; before #1073 (2025-04-07) PP split
// it into parallelism.pipeline_parallel_microbatches, by default the total number of stages.
std::string old_toml(testing::TempDir& dir, const std::string& header, const std::string& pp_keys) {
  return dir.write("old.toml", header +
                                   "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                                   "[training]\nbatch_size = 8\nseq_len = 8192\n"
                                   "[parallelism]\npipeline_parallel_degree = 2\n" +
                                   pp_keys);
}

JobSpec load_as(const std::string& path, const std::string& version) {
  LoadRequest r = request(path);
  r.framework_version = version;
  return load_job(r);
}

// Keys that moved (versions.yaml renames): torchtitan main of 2024-12-26 stated the parallel
// degrees under [training] / [experimental] (#980, 2025-03-18), Float8 as float8.
// enable_float8_linear (#823, 2025-02-15) and compile as training.compile (#1608), and compiled
// the model only (the loss from #1033, 2025-04-02). Read as that version: CP 2, DP shard 4,
// Float8 on, compile on, loss eager. Read as v0.2.2 the same keys are not read, each with a
// warning naming its change.
TEST(TorchtitanVersions, KeysThatMovedAreReadWhereTheirVersionHadThem) {
  testing::TempDir dir;
  const std::string path = dir.write(
      "moved.toml",
      "# torchtitan main 2024-12-26 (9dec370)\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
      "[training]\nbatch_size = 1\nseq_len = 8192\ndata_parallel_shard_degree = 4\n"
      "tensor_parallel_degree = 1\ncompile = true\n"
      "[experimental]\ncontext_parallel_degree = 2\n[float8]\nenable_float8_linear = true\n");
  const JobSpec old = load_job(request(path));
  EXPECT_EQ(old.parallel.cp, 2);
  EXPECT_NE(old.runtime.precision.fp8, Fp8Recipe::kNone);
  EXPECT_TRUE(old.runtime.fused_elementwise);  // compiled
  const AppliedDefault* comp = find_default(old, "compile.components");
  ASSERT_NE(comp, nullptr);
  EXPECT_EQ(comp->value, "[model]");
  EXPECT_NE(comp->reason.find("#1033"), std::string::npos) << comp->reason;
  const AppliedDefault* cp = find_default(old, "parallelism.context_parallel_degree");
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(cp->value, "experimental.context_parallel_degree = 2");

  const JobSpec now = load_as(path, "v0.2.2");
  EXPECT_EQ(now.parallel.cp, 1);
  EXPECT_EQ(now.runtime.precision.fp8, Fp8Recipe::kNone);
  EXPECT_FALSE(now.runtime.fused_elementwise);
  int not_read = 0;
  for (const std::string& w : now.warnings) {
    if (w.find("not read: torchtitan v0.2.2") != std::string::npos) ++not_read;
  }
  EXPECT_EQ(not_read, 5);
  // The old and the new key of one setting on the old version: refused, naming the old key.
  const std::string both =
      dir.write("both.toml",
                "# torchtitan main 2024-12-26\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                "[training]\nbatch_size = 1\ntensor_parallel_degree = 2\n[parallelism]\n"
                "tensor_parallel_degree = 2\n");
  try {
    load_job(request(both));
    ADD_FAILURE() << "both spellings accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "training.tensor_parallel_degree");
  }
}

// model.norm_type until #1115 (2025-04-17): rmsnorm is the flavor's norm (read, no warning),
// fused_rmsnorm a Triton kernel the projection does not price (flagged), layernorm another model
// (refused by its key); on v0.2.2 the key is gone (not read, with a warning naming the change).
TEST(TorchtitanVersions, NormTypeUntilItWasRemoved) {
  testing::TempDir dir;
  auto file = [&](const std::string& type) {
    return dir.write("norm.toml",
                     "# torchtitan main 2024-12-26\n[model]\nname = \"llama3\"\n"
                     "flavor = \"8B\"\nnorm_type = \"" +
                         type + "\"\n[training]\nbatch_size = 1\n");
  };
  auto mentions = [](const JobSpec& j, const std::string& text) {
    int n = 0;
    for (const std::string& w : j.warnings) n += w.find(text) != std::string::npos ? 1 : 0;
    return n;
  };
  const JobSpec plain = load_job(request(file("rmsnorm")));
  EXPECT_EQ(mentions(plain, "norm_type"), 0);
  const AppliedDefault* read = find_default(plain, "model.norm_type");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->value, "rmsnorm");
  EXPECT_EQ(mentions(load_job(request(file("fused_rmsnorm"))), "FusedRMSNorm) is not modelled"), 1);
  try {
    load_job(request(file("layernorm")));
    ADD_FAILURE() << "layernorm accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "model.norm_type");
  }
  EXPECT_EQ(mentions(load_as(file("rmsnorm"), "v0.2.2"), "model.norm_type: not read"), 1);
}

TEST(TorchtitanVersions, OldBatchAndMicrobatchKeys) {
  testing::TempDir dir;
  // Header version 2025-03-10: local batch 8 (batch_size); 1F1B has one stage per rank, so the
  // default is PP 2 x 1 = 2 microbatches of 8 / 2 = 4; 8 GPUs / PP 2 = DP 4, GBS 8 x 4 = 32.
  const std::string path = old_toml(dir, "# trained with torchtitan main 2025-03-10\n",
                                    "pipeline_parallel_schedule = \"1F1B\"\n");
  const JobSpec j = load_job(request(path));
  EXPECT_EQ(j.runtime.micro_batch_size, 4);
  EXPECT_EQ(j.num_microbatches(), 2);
  EXPECT_EQ(j.runtime.global_batch_size, 32);
  const AppliedDefault* v = find_default(j, "framework_version");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->value, "torchtitan 2025-03-10");
  EXPECT_NE(v->reason.find("old.toml:1"), std::string::npos) << v->reason;
  // Interleaved1F1B: 2 stages per rank, 4 microbatches of 2.
  const JobSpec inter = load_job(request(old_toml(
      dir, "# torchtitan 2025-03-10\n", "pipeline_parallel_schedule = \"Interleaved1F1B\"\n")));
  EXPECT_EQ(inter.runtime.micro_batch_size, 2);
  EXPECT_EQ(inter.num_microbatches(), 4);
  // PP from the command line on a file without it: the default count follows the final layout
  // (PP 2 x 1 stage = 2 microbatches of 4), as that torchtitan would split it.
  const std::string no_pp =
      dir.write("no_pp.toml",
                "# torchtitan 2025-03-10\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                "[training]\nbatch_size = 8\nseq_len = 8192\n");
  LoadRequest with_pp = request(no_pp);
  with_pp.cli.pp = 2;
  EXPECT_EQ(load_job(with_pp).runtime.micro_batch_size, 4);
  EXPECT_EQ(load_job(request(no_pp)).runtime.micro_batch_size, 8);  // no PP: one microbatch
  // A stated count: 8 / 8 = 1; one that does not divide the batch is refused by its key.
  EXPECT_EQ(load_as(old_toml(dir, "", "pipeline_parallel_microbatches = 8\n"), "2025-03-10")
                .runtime.micro_batch_size,
            1);
  try {
    load_as(old_toml(dir, "", "pipeline_parallel_microbatches = 3\n"), "2025-03-10");
    ADD_FAILURE() << "8 local samples split into 3 microbatches";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "parallelism.pipeline_parallel_microbatches");
  }
}

// The same file read as v0.2.2 (the flag beats the header): the old keys are ignored with a
// warning naming the change, so the local batch is v0.2.2's default 8 and microbatches are of
// pipeline_parallel_microbatch_size 1: 8 of them. v0.1.0 (2025-06-17) comes after both changes:
// the same as v0.2.2 here.
TEST(TorchtitanVersions, NewerVersionsIgnoreTheOldKeysAndSaySo) {
  testing::TempDir dir;
  const std::string path =
      old_toml(dir, "# torchtitan 2025-03-10\n", "pipeline_parallel_microbatches = 8\n");
  for (const char* version : {"v0.2.2", "0.1.0"}) {
    const JobSpec j = load_as(path, version);
    EXPECT_EQ(j.runtime.micro_batch_size, 1) << version;
    EXPECT_EQ(j.num_microbatches(), 8) << version;
    EXPECT_TRUE(has_warning(j, "training.batch_size: not a key of torchtitan")) << version;
    EXPECT_TRUE(has_warning(j, "parallelism.pipeline_parallel_microbatches: not a key")) << version;
    EXPECT_EQ(find_default(j, "framework_version")->reason, "--framework-version");
  }
  // A key that came later is refused on an older version; an unknown version is refused.
  const std::string newer = dir.write("new.toml",
                                      "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                                      "[training]\nlocal_batch_size = 4\n");
  try {
    load_as(newer, "2025-05-01");
    ADD_FAILURE() << "local_batch_size read on a version before it existed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "training.local_batch_size");
  }
  try {
    load_as(newer, "v9.9.9");
    ADD_FAILURE() << "an unknown version was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "--framework-version");
  }
  // Nothing stated: the version the transcribed job_config.yaml is of.
  const JobSpec plain = load_job(request(newer));
  const AppliedDefault* v = find_default(plain, "framework_version");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->value, "torchtitan v0.2.2");
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// torchtitan splits a model's sequence over CP only with SDPA attention (llama3 with any): the
// Llama-4 iRoPE flavor's FlexAttention is refused whether the TOML or --cp states the CP (the
// capability is a job rule, job/rules.h kCpUnsupported, not an adapter check before overrides).
TEST(TorchtitanToml, ContextParallelNeedsSdpaWhoeverStatesIt) {
  const std::vector<std::string> flex = {"model.flavor=17bx16e_irope", "model.n_layers=8",
                                         "training.seq_len=16384"};
  auto refusal = [&](std::vector<std::string> set, int cli_cp) -> std::string {
    LoadRequest r = request(kTitan + "/upstream/llama4_17bx16e.toml", std::move(set), 2);
    if (cli_cp > 0) r.cli.cp = cli_cp;
    try {
      load_job(r);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(refusal(flex, 0), "");
  std::vector<std::string> stated = flex;
  stated.push_back("parallelism.context_parallel_degree=2");
  const std::string toml = refusal(stated, 0);
  EXPECT_NE(toml.find("parallelism.context_parallel_degree"), std::string::npos) << toml;
  EXPECT_NE(toml.find("only with SDPA"), std::string::npos) << toml;
  const std::string cli = refusal(flex, 2);
  EXPECT_NE(cli.find("--cp"), std::string::npos) << cli;
  EXPECT_NE(cli.find("only with SDPA"), std::string::npos) << cli;
  std::vector<std::string> sdpa = flex;
  sdpa.push_back("model.attn_type=sdpa");
  EXPECT_EQ(refusal(sdpa, 2), "");
}

}  // namespace
}  // namespace projector
