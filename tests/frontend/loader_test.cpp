// Experiment resolution and the Args -> JobSpec builder, on Primus-format configs.
#include "projector/frontend/loader.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_TEST_DATA_DIR;
const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;

LoadRequest request(const std::string& path,
                    std::vector<std::pair<std::string, std::string>> env = {}) {
  LoadRequest r;
  r.config_path = path;
  r.data_dir = kRepoData;
  r.env = fixed_environment(std::move(env));
  return r;
}

bool has_default(const JobSpec& job, const std::string& key) {
  return std::any_of(job.defaults.begin(), job.defaults.end(),
                     [&](const AppliedDefault& d) { return d.key == key; });
}

bool has_warning(const JobSpec& job, const std::string& needle) {
  return std::any_of(job.warnings.begin(), job.warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

// Expects an InputError whose key is `key` (and, when given, whose line is `line`).
template <typename F>
void expect_input_error(F&& f, const std::string& key, int line = -1,
                        const std::string& needle = "") {
  try {
    f();
    FAIL() << "expected InputError for " << key;
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), key) << e.what();
    if (line >= 0) {
      EXPECT_EQ(e.where().line, line) << e.what();
    }
    if (!needle.empty()) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
}

// ------------------------------------------------------------- Primus example experiments

// spec 3.4: llama3_8B-BF16 example, MBS 2, GBS 16, seq 8192, TP/PP/EP 1 on one 8-GPU node.
TEST(PrimusExamples, Llama3_8B) {
  const JobSpec job = load_job(request(kData + "/primus_llama3_8B-BF16-pretrain.yaml"));
  EXPECT_EQ(job.model.name, "llama3_8B");
  EXPECT_EQ(job.model.num_layers(), 32);
  EXPECT_EQ(job.model.hidden_size, 4096);
  EXPECT_EQ(job.model.vocab_size, 128256);  // not Primus' 100352 (spec 12.2 #4)
  EXPECT_EQ(job.model.layers[0].attention.num_query_groups, 8);
  EXPECT_EQ(job.model.layers[0].attention.head_dim, 128);
  EXPECT_EQ(job.model.norm, NormKind::kRmsNorm);
  EXPECT_FALSE(job.model.tied_embeddings);
  EXPECT_EQ(job.runtime.micro_batch_size, 2);
  EXPECT_EQ(job.runtime.global_batch_size, 16);
  EXPECT_EQ(job.runtime.seq_length, 8192);
  EXPECT_EQ(job.cluster.world_size(), 8);
  EXPECT_EQ(job.dp(), 8);
  EXPECT_EQ(job.num_microbatches(), 1);  // 16 / (2 x 8)
  // pre_trainer.yaml is not available: its projection-relevant values are applied and recorded.
  EXPECT_TRUE(job.parallel.distributed_optimizer);
  EXPECT_TRUE(job.runtime.flash_attention);
  EXPECT_TRUE(has_default(job, "use_distributed_optimizer"));
  EXPECT_TRUE(has_default(job, "modules.pre_trainer.config"));
  EXPECT_TRUE(has_default(job, "hardware"));
  EXPECT_TRUE(has_default(job, "nodes"));
  EXPECT_TRUE(job.parallel.overlap_grad_reduce);
  // cross_entropy_loss_fusion with the preset's native impl: Megatron's compiled loss (MG29).
  EXPECT_FALSE(job.runtime.cross_entropy_fusion);
  EXPECT_TRUE(job.runtime.cross_entropy_compiled);
  EXPECT_FALSE(has_warning(job, "unknown key"));
  EXPECT_EQ(job.cluster.accelerator.name, "mi300x");
  ASSERT_EQ(job.parallel.stages.size(), 1u);
  EXPECT_TRUE(job.parallel.stages[0].has_embedding);
  EXPECT_TRUE(job.parallel.stages[0].has_output);
}

// spec 3.4: Mixtral 8x22B, PP 4, EP 8 -> at least 4 nodes (ETP x EP x PP = 32 GPUs).
TEST(PrimusExamples, Mixtral8x22B) {
  const JobSpec job = load_job(request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml"));
  EXPECT_EQ(job.model.num_layers(), 56);
  EXPECT_EQ(job.model.vocab_size, 32768);
  EXPECT_TRUE(std::all_of(job.model.layers.begin(), job.model.layers.end(),
                          [](const LayerSpec& l) { return l.is_moe && l.moe.num_experts == 8; }));
  EXPECT_EQ(job.cluster.nodes, 4);
  EXPECT_EQ(job.dp(), 8);          // 32 / (TP 1 x PP 4)
  EXPECT_EQ(job.expert_dp(), 1);   // 32 / (ETP 1 x EP 8 x PP 4)
  EXPECT_EQ(job.parallel.etp, 1);  // = TP by default
  ASSERT_EQ(job.parallel.stages.size(), 4u);
  for (const VirtualStage& s : job.parallel.stages) EXPECT_EQ(s.num_layers, 14);
  EXPECT_EQ(job.runtime.recompute.granularity, RecomputeGranularity::kFull);
  EXPECT_EQ(job.runtime.recompute.method, RecomputeMethod::kBlock);
  EXPECT_EQ(job.runtime.recompute.num_layers, 0);
}

// spec 3.4: DeepSeek-V2-Lite with ${PRIMUS_*} defaults; the example turns MLA off.
TEST(PrimusExamples, DeepSeekV2LiteEnvDefaults) {
  const JobSpec job = load_job(request(kData + "/primus_deepseek_v2_lite-BF16-pretrain.yaml"));
  EXPECT_EQ(job.model.name, "deepseek_v2_lite");
  EXPECT_EQ(job.parallel.ep, 8);
  EXPECT_EQ(job.runtime.seq_length, 4096);
  EXPECT_EQ(job.model.layers[0].attention.kind, AttentionKind::kStandard);
  EXPECT_EQ(job.model.layers[0].attention.num_query_groups, 16);  // G = A without GQA
  EXPECT_EQ(job.model.layers[0].attention.head_dim, 128);         // kv_channels
  EXPECT_FALSE(job.model.layers[0].is_moe);                       // "([0]*1+[1]*26)"
  EXPECT_TRUE(job.model.layers[1].is_moe);
  EXPECT_EQ(job.model.layers[1].moe.shared_expert_ffn_hidden_size, 2816);
  EXPECT_TRUE(job.runtime.deepep);
  EXPECT_TRUE(job.runtime.moe_dedup_dispatch);  // DeepEP sends a token once per destination
  EXPECT_EQ(job.runtime.sync_free_moe_stage, 1);
  EXPECT_EQ(job.num_microbatches(), 8);  // 768 / (12 x 8)
}

// --grad-reduce-in-bf16 makes the gradient buffer bf16: 2 bytes per parameter instead of 4, so
// the projected gradient memory of every rank halves.
TEST(PrimusExamples, GradReduceInBf16) {
  LoadRequest r = request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml");
  const JobSpec fp32 = load_job(r);
  EXPECT_EQ(fp32.runtime.main_grads_dtype, Dtype::kFp32);
  r.set_overrides = {"grad_reduce_in_bf16=true"};
  const JobSpec bf16 = load_job(r);
  EXPECT_EQ(bf16.runtime.main_grads_dtype, Dtype::kBf16);
  const auto grads = [](const JobSpec& j) {
    return project_memory(j).ranks[0].point[static_cast<int>(MemoryComponent::kGradients)];
  };
  ASSERT_GT(grads(fp32), 0.0);
  EXPECT_DOUBLE_EQ(grads(bf16), grads(fp32) / 2.0);
}

// Megatron's flex dispatcher deduplicates without Primus-Turbo's DeepEP overlap.
TEST(PrimusExamples, FlexDispatcher) {
  LoadRequest r = request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml");
  const JobSpec plain = load_job(r);
  EXPECT_FALSE(plain.runtime.moe_dedup_dispatch);
  r.set_overrides = {"moe_token_dispatcher_type=flex"};
  const JobSpec flex = load_job(r);
  EXPECT_TRUE(flex.runtime.moe_dedup_dispatch);
  // Megatron's flex dispatcher runs the DeepEP backend unless moe_flex_dispatcher_backend says
  // otherwise (MG2 transformer_config.py:898).
  EXPECT_EQ(flex.runtime.moe_dispatcher, MoeDispatcher::kFlex);
  EXPECT_EQ(flex.runtime.moe_dispatch_kernel, MoeDispatchKernel::kDeepEp);
  r.set_overrides = {"moe_token_dispatcher_type=flex", "moe_flex_dispatcher_backend=hybridep"};
  EXPECT_EQ(load_job(r).runtime.moe_dispatch_kernel, MoeDispatchKernel::kHybridEp);
}

TEST(PrimusExamples, DeepSeekV2LiteEnvSet) {
  const JobSpec job =
      load_job(request(kData + "/primus_deepseek_v2_lite-BF16-pretrain.yaml",
                       {{"PRIMUS_SEQ_LENGTH", "2048"}, {"PRIMUS_EP", "4"}, {"NNODES", "2"}}));
  EXPECT_EQ(job.runtime.seq_length, 2048);
  EXPECT_EQ(job.parallel.ep, 4);
  EXPECT_EQ(job.cluster.nodes, 2);
  EXPECT_EQ(job.dp(), 16);
}

// spec 3.4: DeepSeek-V3, PP 16 with a 32-stage layout -> VPP 2 derived (Primus crashes here,
// spec 12.2 #31); 61 layers; 16 nodes for ETP 1 x EP 8 x PP 16.
TEST(PrimusExamples, DeepSeekV3Layout) {
  const JobSpec job = load_job(request(kData + "/primus_deepseek_v3-BF16-pretrain.yaml"));
  const ParallelSpec& p = job.parallel;
  EXPECT_EQ(p.pp, 16);
  EXPECT_EQ(p.vpp, 2);
  EXPECT_TRUE(has_default(job, "num_virtual_stages_per_pipeline_rank"));
  ASSERT_EQ(p.stages.size(), 32u);
  EXPECT_TRUE(p.stages[0].has_embedding);
  EXPECT_EQ(p.stages[0].num_layers, 1);
  EXPECT_EQ(p.stages[2].first_layer, 2);
  EXPECT_EQ(p.stages[2].num_layers, 2);
  EXPECT_EQ(p.stages[31].num_layers, 1);
  EXPECT_TRUE(p.stages[31].has_output);
  EXPECT_EQ(p.stages[31].mtp_layers, 1);      // MTP goes with the loss when the layout omits 'm'
  EXPECT_EQ(p.stage(15, 1).first_layer, 60);  // virtual stage 31 = rank 15, chunk 1
  EXPECT_EQ(job.cluster.nodes, 16);
  EXPECT_EQ(job.dp(), 8);
  EXPECT_EQ(job.runtime.recompute.layer_ids.size(), 26u);
  EXPECT_TRUE(job.runtime.precision_aware_optimizer);
  EXPECT_EQ(job.runtime.exp_avg_dtype, Dtype::kBf16);
  EXPECT_EQ(job.model.layers[0].attention.kind, AttentionKind::kMla);
  EXPECT_EQ(job.model.layers[0].attention.q_lora_rank, 1536);
  EXPECT_FALSE(job.model.layers[2].is_moe);
  EXPECT_TRUE(job.model.layers[3].is_moe);
  EXPECT_EQ(job.model.mtp_num_layers, 1);
}

// ------------------------------------------------------------- Primus checkout resolution

// Qwen2.5-14B is not bundled: it resolves through a Primus checkout, whose preset chain
// (qwen2.5_14B -> qwen2.5_base (bases:) -> llama_base -> language_model) and module preset
// (pre_trainer -> trainer_base) both apply. Model card: 14.7B parameters.
TEST(PrimusCheckout, PresetChainsResolve) {
  LoadRequest r = request(kData + "/qwen2.5_14B-checkout.yaml");
  r.primus_path = kData + "/primus_checkout";
  const JobSpec job = load_job(r);
  EXPECT_EQ(job.model.name, "qwen2.5_14B");
  EXPECT_EQ(job.model.num_layers(), 48);
  EXPECT_EQ(job.model.norm, NormKind::kRmsNorm);  // llama_base overrides language_model
  EXPECT_TRUE(job.model.layers[0].attention.add_qkv_bias);
  EXPECT_FALSE(job.model.layers[0].attention.add_bias_linear);
  EXPECT_EQ(job.model.vocab_size, 152064);  // from the tokenizer table, recorded
  EXPECT_TRUE(has_default(job, "vocab_size"));
  EXPECT_NEAR(model_params(job.model).total / 1e9, 14.77, 0.02);
  EXPECT_EQ(job.runtime.global_batch_size, 16);  // pre_trainer.yaml over trainer_base.yaml
  EXPECT_EQ(job.runtime.seq_length, 1024);
  EXPECT_EQ(job.runtime.micro_batch_size, 2);  // trainer_base.yaml
  EXPECT_TRUE(job.parallel.distributed_optimizer);
  EXPECT_EQ(job.parallel.tp, 2);
  EXPECT_FALSE(has_default(job, "modules.pre_trainer.config"));
}

TEST(PrimusCheckout, PrimusPathFromEnvironment) {
  const JobSpec job = load_job(
      request(kData + "/qwen2.5_14B-checkout.yaml", {{"PRIMUS_PATH", kData + "/primus_checkout"}}));
  EXPECT_EQ(job.model.hidden_size, 5120);
}

TEST(PrimusCheckout, ModulePresetWinsOverModelPresetForItsKeys) {
  testing::TempDir dir;
  dir.write("primus/primus/configs/modules/megatron/mod.yaml", "hidden_dropout: 0.2\n");
  dir.write("primus/primus/configs/models/megatron/tiny.yaml",
            "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nvocab_size: 1000\n"
            "hidden_dropout: 0.0\nattention_dropout: 0.0\n");
  const std::string cfg =
      dir.write("exp.yaml",
                "modules:\n  pre_trainer:\n    framework: megatron\n    config: mod.yaml\n"
                "    model: tiny.yaml\n    overrides:\n      attention_dropout: 0.3\n");
  LoadRequest r = request(cfg);
  r.primus_path = dir.path() + "/primus";
  const JobSpec job = load_job(r);
  EXPECT_DOUBLE_EQ(job.model.hidden_dropout, 0.2);     // module preset over model preset
  EXPECT_DOUBLE_EQ(job.model.attention_dropout, 0.3);  // overrides over both
}

// A module preset that is neither bundled nor in the checkout: with a checkout Primus would fail
// to open it (an error at the key); without one it may exist there, so the projection goes on
// without its defaults and warns (found by the mutation fuzzer: `config: nan`).
TEST(PrimusCheckout, UnknownModulePreset) {
  testing::TempDir dir;
  dir.write("primus/primus/configs/models/megatron/tiny.yaml",
            "num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\nvocab_size: 1000\n");
  const std::string cfg =
      dir.write("exp.yaml",
                "modules:\n  pre_trainer:\n    framework: megatron\n    config: nan\n"
                "    model: tiny.yaml\n");
  LoadRequest with_checkout = request(cfg);
  with_checkout.primus_path = dir.path() + "/primus";
  try {
    load_job(with_checkout);
    FAIL() << "a module preset missing from the checkout must be refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "modules.pre_trainer.config");
    EXPECT_EQ(e.where().line, 4);
  }
  const std::string inline_cfg =
      dir.write("exp2.yaml",
                "modules:\n  pre_trainer:\n    framework: megatron\n    config: nan\n"
                "    overrides:\n      num_layers: 2\n      hidden_size: 64\n"
                "      num_attention_heads: 4\n      vocab_size: 1000\n");
  const JobSpec job = load_job(request(inline_cfg));
  EXPECT_TRUE(has_default(job, "modules.pre_trainer.config"));
  EXPECT_TRUE(std::any_of(job.warnings.begin(), job.warnings.end(), [](const std::string& w) {
    return w.find("module preset 'nan.yaml' is not bundled") != std::string::npos;
  }));
}

// ------------------------------------------------------------- merge order

TEST(MergeOrder, FileThenEnvThenSetThenFlags) {
  testing::TempDir dir;
  const std::string cfg =
      dir.write("exp.yaml",
                "modules:\n  pre_trainer:\n    model: llama3.1_8B.yaml\n    overrides:\n"
                "      tensor_model_parallel_size: 1\n      micro_batch_size: 1\n"
                "      global_batch_size: 64\n      seq_length: 4096\n");
  LoadRequest r = request(cfg);
  EXPECT_EQ(load_job(r).parallel.tp, 1);
  r.env = fixed_environment({{"PRIMUS_TP", "2"}});
  JobSpec job = load_job(r);
  EXPECT_EQ(job.parallel.tp, 2);
  EXPECT_TRUE(has_warning(job, "PRIMUS_TP=2 overrides tensor_model_parallel_size"));
  r.set_overrides = {"tensor_model_parallel_size=4"};
  EXPECT_EQ(load_job(r).parallel.tp, 4);
  r.cli.tp = 8;
  job = load_job(r);
  EXPECT_EQ(job.parallel.tp, 8);
  EXPECT_EQ(job.dp(), 1);
}

// Primus defect 12.2 #19: its projection took `enable_zero_bubble: true` (set by the module
// preset) as the schedule although the runtime also needs `patch_zero_bubble`. Here the key alone
// keeps 1F1B; with the patch, or with --enable-zero-bubble, the schedule is ZB-H1 (VPP 1).
TEST(Schedule, ZeroBubbleNeedsThePatch) {
  testing::TempDir dir;
  const std::string body =
      "modules:\n  pre_trainer:\n    model: llama3.1_8B.yaml\n    overrides:\n"
      "      pipeline_model_parallel_size: 2\n      micro_batch_size: 1\n"
      "      global_batch_size: 64\n      seq_length: 4096\n      enable_zero_bubble: true\n";
  LoadRequest r = request(dir.write("zb.yaml", body));
  // `auto` is resolved once, by the job builder with the schedule module's rule, and recorded.
  const JobSpec plain = load_job(r);
  EXPECT_EQ(plain.runtime.schedule, ScheduleKind::k1F1B);
  EXPECT_TRUE(has_default(plain, "pipeline_schedule_algorithm"));
  r.cli.enable_zero_bubble = true;
  EXPECT_EQ(load_job(r).runtime.schedule, ScheduleKind::kZeroBubble);
  LoadRequest patched = request(dir.write("zb2.yaml", body + "      patch_zero_bubble: true\n"));
  EXPECT_EQ(load_job(patched).runtime.schedule, ScheduleKind::kZeroBubble);
}

// Primus' own pipeline scheduler (primus_pipeline.yaml): with patch_primus_pipeline, pp_algorithm
// picks the schedule (v-half / v-min: the V-shape schedules at half / the least activation
// memory); without the patch it is not Primus' schedule and Megatron's default stands.
TEST(Schedule, PrimusPipelineAlgorithmNeedsThePatch) {
  testing::TempDir dir;
  const std::string body =
      "modules:\n  pre_trainer:\n    model: llama3.1_8B.yaml\n    overrides:\n"
      "      pipeline_model_parallel_size: 2\n      micro_batch_size: 1\n"
      "      global_batch_size: 64\n      seq_length: 4096\n";
  auto schedule = [&](const std::string& extra) {
    return load_job(request(dir.write("pp.yaml", body + extra))).runtime.schedule;
  };
  EXPECT_EQ(schedule("      pp_algorithm: v-half\n"), ScheduleKind::k1F1B);
  const std::string patch = "      patch_primus_pipeline: true\n";
  EXPECT_EQ(schedule(patch + "      pp_algorithm: zbv-formatted\n"), ScheduleKind::kZbvFormatted);
  EXPECT_EQ(schedule(patch + "      pp_algorithm: v-half\n"), ScheduleKind::kZbvGreedyHalf);
  EXPECT_EQ(schedule(patch + "      pp_algorithm: v-min\n"), ScheduleKind::kZbvGreedyMin);
  EXPECT_EQ(schedule(patch + "      pp_algorithm: zero-bubble-heuristic\n"),
            ScheduleKind::kZeroBubble);
  expect_input_error([&] { schedule(patch + "      pp_algorithm: v-shape\n"); }, "pp_algorithm", 10,
                     "unknown Primus pipeline algorithm");
}

// Megatron's attention_backend: flash = the flash-attn package (FlashAttention-2 class),
// unfused = no fused kernel; anything else is an error naming the key.
TEST(Schedule, AttentionBackendSelectsTheKernel) {
  testing::TempDir dir;
  const std::string base =
      "modules:\n  pre_trainer:\n    model: llama3.1_8B.yaml\n    overrides:\n"
      "      micro_batch_size: 1\n      global_batch_size: 64\n      seq_length: 4096\n"
      "      use_flash_attn: true\n";
  EXPECT_EQ(load_job(request(dir.write("a.yaml", base))).runtime.attention_kernel,
            AttentionKernel::kFused);
  const JobSpec flash =
      load_job(request(dir.write("b.yaml", base + "      attention_backend: flash\n")));
  EXPECT_EQ(flash.runtime.attention_kernel, AttentionKernel::kFa2);
  const JobSpec unfused =
      load_job(request(dir.write("c.yaml", base + "      attention_backend: unfused\n")));
  EXPECT_FALSE(unfused.runtime.flash_attention);
  EXPECT_THROW(load_job(request(dir.write("d.yaml", base + "      attention_backend: magic\n"))),
               InputError);
}

TEST(MergeOrder, SetParsesTypedValuesAndDashedKeys) {
  testing::TempDir dir;
  const std::string cfg =
      dir.write("exp.yaml",
                "modules:\n  pre_trainer:\n    model: mixtral_8x7B_v0.1.yaml\n    overrides:\n"
                "      micro_batch_size: 1\n      global_batch_size: 64\n      seq_length: 4096\n");
  LoadRequest r = request(cfg);
  r.set_overrides = {"moe-layer-freq=[1, 0]*16", "--sequence_parallel=yes", "seq_length=2048",
                     "recompute_granularity=selective"};
  const JobSpec job = load_job(r);
  EXPECT_TRUE(job.model.layers[0].is_moe);
  EXPECT_FALSE(job.model.layers[1].is_moe);
  EXPECT_EQ(job.runtime.seq_length, 2048);
  EXPECT_EQ(job.runtime.recompute.granularity, RecomputeGranularity::kSelective);
  EXPECT_EQ(job.runtime.recompute.modules, RecomputeModules{RecomputeModule::kCoreAttn});
}

TEST(MergeOrder, PrimusFlags) {
  LoadRequest r = request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml");
  // The example recomputes fully, which a split-backward schedule cannot do (Primus asserts it,
  // spec 5.2): the rule names the schedule key.
  r.cli.vpp = 2;
  r.cli.micro_batch_size = 1;
  r.cli.global_batch_size = 256;
  r.cli.nodes = 8;
  r.cli.pipeline_schedule = "zbv-greedy-half";
  expect_input_error([&] { load_job(r); }, "pipeline_schedule_algorithm", 0, "full recompute");
  r.set_overrides = {"recompute_granularity=null"};
  r.cli.vpp = 2;
  r.cli.micro_batch_size = 1;
  r.cli.global_batch_size = 256;
  r.cli.sync_free_stage = 2;
  r.cli.enable_zero_bubble = true;
  r.cli.nodes = 8;
  r.cli.pipeline_schedule = "zbv-greedy-half";
  const JobSpec job = load_job(r);
  EXPECT_EQ(job.parallel.vpp, 2);
  EXPECT_EQ(job.parallel.stages.size(), 8u);  // 56 / 8 = 7 layers per virtual stage
  EXPECT_EQ(job.parallel.stages[7].num_layers, 7);
  EXPECT_EQ(job.runtime.micro_batch_size, 1);
  EXPECT_TRUE(job.runtime.deepep);  // sync-free stage 2 turns Turbo DeepEP on
  EXPECT_EQ(job.runtime.moe_dispatch_kernel, MoeDispatchKernel::kTurboDeepEp);
  EXPECT_EQ(job.runtime.moe_comm_compute_units, 32);  // turbo_deepep_num_cu's default
  EXPECT_TRUE(job.runtime.moe_permute_fusion);        // every sync-free stage fuses the permute
  EXPECT_EQ(job.runtime.schedule, ScheduleKind::kZbvGreedyHalf);
  EXPECT_EQ(job.cluster.nodes, 8);
  EXPECT_EQ(job.dp(), 16);
  EXPECT_EQ(job.num_microbatches(), 16);  // 256 / (1 x 16)
}

// --enable-deepep picks the flex dispatcher after the file and --set are read, so a --set
// overlap_moe_expert_parallel_comm on a config with Megatron's allgather default is checked
// against the dispatcher the job ends with (the builder's rule), not the file's.
TEST(MergeOrder, EpOverlapIsCheckedAfterEnableDeepep) {
  LoadRequest r = request(kRepoData + "/../examples/deepseek_v3-BF16-pretrain.yaml");
  // (The example recomputes every layer, which the overlap cannot run with: off here.)
  r.set_overrides = {"overlap_moe_expert_parallel_comm=true", "recompute_granularity=null"};
  expect_input_error([&] { load_job(r); }, "overlap_moe_expert_parallel_comm", 0,
                     "alltoall or flex dispatcher");
  r.cli.enable_deepep = true;
  const JobSpec job = load_job(r);
  EXPECT_EQ(job.runtime.moe_dispatcher, MoeDispatcher::kFlex);
  EXPECT_TRUE(combined_forward_backward(job));
}

// ------------------------------------------------------------- cluster and hardware

TEST(Cluster, HardwareAndNodeSources) {
  LoadRequest r = request(kRepoData + "/../examples/llama3.1_8B-BF16-pretrain.yaml",
                          {{"PRIMUS_GPU_ARCH", "gfx950"}, {"NNODES", "2"}, {"GPUS_PER_NODE", "4"}});
  JobSpec job = load_job(r);
  EXPECT_EQ(job.cluster.accelerator.name, "mi355x");
  EXPECT_EQ(job.cluster.nodes, 2);
  EXPECT_EQ(job.cluster.gpus_per_node, 4);
  EXPECT_EQ(job.dp(), 8);
  r.hardware = "mi300x";  // --hardware / --gpu-arch beats PRIMUS_GPU_ARCH
  r.cli.nodes = 4;
  r.cli.gpus_per_node = 8;
  job = load_job(r);
  EXPECT_EQ(job.cluster.accelerator.name, "mi300x");
  EXPECT_EQ(job.cluster.world_size(), 32);
}

TEST(Cluster, NnodesBelowMinimumIsRaisedWithAWarning) {
  const JobSpec job =
      load_job(request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml", {{"NNODES", "1"}}));
  EXPECT_EQ(job.cluster.nodes, 4);
  EXPECT_TRUE(has_warning(job, "NNODES=1"));
}

// ------------------------------------------------------------- inline model, defaults

// examples/inline-gpt-1.3B.yaml by hand: per layer 4h^2 + 4h (attention + biases) + 8h^2 + 5h
// (MLP + biases) + 4h (two LayerNorms) with h = 2048 -> 50,358,272; x 24 = 1,208,598,528;
// embeddings 50304 (50257 padded to 128) x 2048 + 2048 x 2048 positions = 107,216,896; final
// LayerNorm 4096; tied output layer. Total 1,315,819,520.
TEST(InlineModel, GptNoPreset) {
  const JobSpec job = load_job(request(kRepoData + "/../examples/inline-gpt-1.3B.yaml"));
  EXPECT_EQ(job.model.name, "(inline)");
  EXPECT_EQ(model_params(job.model).total, 1315819520LL);
  EXPECT_EQ(padded_vocab_size(job.model, job.parallel.tp), 50432);  // multiple of 128 x TP 2
  EXPECT_EQ(job.parallel.tp, 2);
  EXPECT_TRUE(job.parallel.sequence_parallel);
  EXPECT_EQ(job.dp(), 4);
}

// A flat Megatron argument file: Megatron-LM's defaults (data/frameworks/megatron-lm.yaml).
TEST(InlineModel, MegatronDefaultsAreRecorded) {
  testing::TempDir dir;
  const std::string cfg = dir.write("exp.yaml",
                                    "num_layers: 4\nhidden_size: 768\nnum_attention_heads: 12\n"
                                    "tokenizer_type: GPT2BPETokenizer\nseq_length: 1024\n");
  const JobSpec job = load_job(request(cfg));
  EXPECT_EQ(job.model.vocab_size, 50257);
  EXPECT_EQ(job.model.layers[0].mlp.ffn_hidden_size, 4 * 768);
  EXPECT_EQ(job.model.layers[0].attention.head_dim, 64);
  EXPECT_EQ(job.model.norm, NormKind::kLayerNorm);
  EXPECT_TRUE(job.model.tied_embeddings);
  EXPECT_EQ(job.runtime.global_batch_size, 8);  // micro_batch_size 1 x DP 8
  for (const char* key : {"ffn_hidden_size", "kv_channels", "normalization", "vocab_size",
                          "micro_batch_size", "global_batch_size", "add_bias_linear",
                          "position_embedding_type", "use_distributed_optimizer"}) {
    EXPECT_TRUE(has_default(job, key)) << key;
  }
}

TEST(InlineModel, SwigluFfnDefaultAndUnknownTokenizer) {
  testing::TempDir dir;
  const std::string ok = dir.write(
      "a.yaml",
      "modules:\n  pre_trainer:\n    overrides:\n      num_layers: 2\n      hidden_size: 4096\n"
      "      num_attention_heads: 32\n      swiglu: true\n      vocab_size: 32000\n");
  // Megatron: int(4 * 4096 * 2 / 3 / 64) * 64 = 10880.
  EXPECT_EQ(load_job(request(ok)).model.layers[0].mlp.ffn_hidden_size, 10880);
  const std::string bad = dir.write(
      "b.yaml",
      "modules:\n  pre_trainer:\n    overrides:\n      num_layers: 2\n      hidden_size: 64\n"
      "      num_attention_heads: 4\n      tokenizer_type: MyTokenizer\n");
  expect_input_error([&] { load_job(request(bad)); }, "vocab_size", -1, "MyTokenizer");
}

TEST(InlineModel, SlidingWindowAlternation) {
  testing::TempDir dir;
  const std::string cfg = dir.write("a.yaml",
                                    "modules:\n  pre_trainer:\n    model: gpt_oss_20B.yaml\n"
                                    "    overrides: {micro_batch_size: 1, seq_length: 4096}\n");
  const JobSpec job = load_job(request(cfg));
  EXPECT_EQ(job.model.layers[0].attention.sliding_window, 128);
  EXPECT_EQ(job.model.layers[1].attention.sliding_window, 0);
  EXPECT_EQ(job.model.layers[22].attention.sliding_window, 128);
  EXPECT_EQ(job.model.layers[23].attention.sliding_window, 0);
}

// Megatron's window_attn_skip_freq (utils.py:531-545 is_layer_window_attention): an int N makes
// every N-th layer (1-based) full; a list (or list expression) marks each layer 1 = sliding window,
// 0 = full. With [1, 0, 0, 1] at seq 4096 (heads x head_dim = 8 x 128), layers 0 and 3 see 128
// keys: the forward attention core drops by 2 x 4 x (4096 - 128) x 1024 = 32,505,856 FLOPs per
// token against full attention everywhere.
TEST(InlineModel, WindowAttnSkipFreqPatterns) {
  testing::TempDir dir;
  const auto job_with = [&dir](const std::string& extra) {
    return load_job(request(dir.write(
        "w.yaml",
        "modules:\n  pre_trainer:\n    overrides:\n      num_layers: 4\n      hidden_size: 1024\n"
        "      num_attention_heads: 8\n      vocab_size: 32000\n      seq_length: 4096\n"
        "      micro_batch_size: 1\n" +
            extra)));
  };
  const auto windows = [](const JobSpec& j) {
    std::vector<int> w;
    for (const LayerSpec& l : j.model.layers) w.push_back(l.attention.sliding_window);
    return w;
  };
  const JobSpec list =
      job_with("      window_size: [128, 0]\n      window_attn_skip_freq: [1, 0, 0, 1]\n");
  EXPECT_EQ(windows(list), (std::vector<int>{128, 0, 0, 128}));
  const JobSpec expr =
      job_with("      window_size: [128, 0]\n      window_attn_skip_freq: \"([1]*3+[0])\"\n");
  EXPECT_EQ(windows(expr), (std::vector<int>{128, 128, 128, 0}));
  const JobSpec every2 = job_with("      window_size: [128, 0]\n      window_attn_skip_freq: 2\n");
  EXPECT_EQ(windows(every2), (std::vector<int>{128, 0, 128, 0}));
  const JobSpec full = job_with("");
  const double d = forward_flops_per_token(full.model, 4096, 32000).decoder_flops -
                   forward_flops_per_token(list.model, 4096, 32000).decoder_flops;
  EXPECT_DOUBLE_EQ(d, 32505856.0);
  expect_input_error(
      [&] { job_with("      window_size: [128, 0]\n      window_attn_skip_freq: [1, 0]\n"); },
      "window_attn_skip_freq", -1, "lists 2 layers");
}

// Primus-Turbo attention (primus_turbo.py:741-950) windows sink_sliding_window tokens on the even
// layers (every layer without sink_window_even_layers_only) when use_sink_attention is on and CP is
// 1; Megatron's window_size is not run under it (warned).
TEST(InlineModel, PrimusTurboSinkWindow) {
  testing::TempDir dir;
  const auto job_with = [&dir](const std::string& extra) {
    return load_job(request(dir.write(
        "t.yaml",
        "modules:\n  pre_trainer:\n    overrides:\n      num_layers: 4\n      hidden_size: 1024\n"
        "      num_attention_heads: 8\n      vocab_size: 32000\n      seq_length: 4096\n"
        "      micro_batch_size: 1\n      enable_primus_turbo: true\n"
        "      use_turbo_attention: true\n      use_sink_attention: true\n"
        "      sink_sliding_window: 128\n" +
            extra)));
  };
  const auto windows = [](const JobSpec& j) {
    std::vector<int> w;
    for (const LayerSpec& l : j.model.layers) w.push_back(l.attention.sliding_window);
    return w;
  };
  EXPECT_EQ(windows(job_with("")), (std::vector<int>{128, 0, 128, 0}));
  EXPECT_EQ(windows(job_with("      sink_window_even_layers_only: false\n")),
            (std::vector<int>{128, 128, 128, 128}));
  EXPECT_EQ(windows(job_with("      context_parallel_size: 2\n")), (std::vector<int>{0, 0, 0, 0}));
  const JobSpec both = job_with("      window_size: [64, 0]\n");
  EXPECT_EQ(windows(both), (std::vector<int>{128, 0, 128, 0}));
  EXPECT_TRUE(has_warning(both, "does not run Megatron's sliding window"));
}

TEST(Pipeline, FirstLastAndLayersPerVirtualStage) {
  testing::TempDir dir;
  const std::string a = dir.write(
      "a.yaml",
      "modules:\n  pre_trainer:\n    model: deepseek_v3.yaml\n    overrides:\n"
      "      micro_batch_size: 1\n      global_batch_size: 64\n"
      "      pipeline_model_parallel_size: 4\n      expert_model_parallel_size: 8\n"
      "      decoder_first_pipeline_num_layers: 13\n      decoder_last_pipeline_num_layers: 14\n");
  JobSpec job = load_job(request(a));
  ASSERT_EQ(job.parallel.stages.size(), 4u);
  // 61 - 13 - 14 = 34 over the two middle stages: 17 and 17.
  EXPECT_EQ(job.parallel.stages[0].num_layers, 13);
  EXPECT_EQ(job.parallel.stages[1].num_layers, 17);
  EXPECT_EQ(job.parallel.stages[2].first_layer, 30);
  EXPECT_EQ(job.parallel.stages[3].num_layers, 14);
  const std::string b = dir.write(
      "b.yaml",
      "modules:\n  pre_trainer:\n    model: llama3.1_8B.yaml\n    overrides:\n"
      "      micro_batch_size: 1\n      global_batch_size: 64\n"
      "      pipeline_model_parallel_size: 4\n      num_layers_per_virtual_pipeline_stage: 2\n");
  job = load_job(request(b));
  EXPECT_EQ(job.parallel.vpp, 4);  // 32 / (2 x 4)
  EXPECT_EQ(job.parallel.stages.size(), 16u);
}

// ------------------------------------------------------------- validation errors

TEST(Validation, HeadsAndKvHeadsNotDivisibleByTp) {
  LoadRequest r = request(kData + "/heads_not_divisible_by_tp.yaml");
  // The rules run in one order (job/rules.h): the model's head counts before the node size.
  // 32 heads / 16 fine, 8 KV heads / 16 not.
  expect_input_error([&] { load_job(r); }, "tensor_model_parallel_size", 9, "KV heads");
  r.allow_tp_beyond_node = true;
  expect_input_error([&] { load_job(r); }, "tensor_model_parallel_size", 9, "KV heads");
  // TP 8 (heads divide) on 4-GPU nodes needs the opt-in.
  LoadRequest small = r;
  small.allow_tp_beyond_node = false;
  small.cli.tp = 8;
  small.cli.gpus_per_node = 4;
  expect_input_error([&] { load_job(small); }, "tensor_model_parallel_size", 0, "allow-tp-beyond");
  small.allow_tp_beyond_node = true;
  EXPECT_EQ(load_job(small).parallel.tp, 8);
  r.cli.tp = 3;
  expect_input_error([&] { load_job(r); }, "tensor_model_parallel_size", 0, "32 attention heads");
}

TEST(Validation, LayersNotDivisibleByPipeline) {
  LoadRequest r = request(kData + "/primus_llama3_8B-BF16-pretrain.yaml");
  r.cli.pp = 3;
  expect_input_error([&] { load_job(r); }, "num_layers", -1, "PP x VPP");
}

TEST(Validation, LayoutStageCountAndLayerTotal) {
  LoadRequest r = request(kData + "/primus_deepseek_v3-BF16-pretrain.yaml");
  r.cli.vpp = 1;
  expect_input_error([&] { load_job(r); }, "pipeline_model_parallel_layout", 13,
                     "32 stages but PP x VPP = 16 x 1");
  r.cli.vpp.reset();
  r.set_overrides = {"pipeline_model_parallel_layout=Et*3|(tt|)*28m|L|"};
  expect_input_error([&] { load_job(r); }, "pipeline_model_parallel_layout", -1,
                     "59 decoder layers");
}

TEST(Validation, ExpertsNotDivisibleByEp) {
  LoadRequest r = request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml");
  r.cli.ep = 3;
  expect_input_error([&] { load_job(r); }, "expert_model_parallel_size", 0, "8 experts");
}

TEST(Validation, WorldSizeDivisibility) {
  LoadRequest r = request(kData + "/primus_llama3_8B-BF16-pretrain.yaml");
  r.cli.cp = 3;
  r.cli.nodes = 1;  // (the default would be the 3 nodes that make the world divisible)
  expect_input_error([&] { load_job(r); }, "tensor_model_parallel_size", -1, "TP x PP x CP");
  LoadRequest m = request(kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml");
  m.cli.pp = 2;
  m.cli.nodes = 1;  // dense group 2 divides 8, but ETP x EP x PP = 16 does not
  expect_input_error([&] { load_job(m); }, "expert_model_parallel_size", -1, "ETP x EP x PP");
}

TEST(Validation, GlobalBatchNotDivisible) {
  LoadRequest r = request(kData + "/primus_llama3_8B-BF16-pretrain.yaml");
  r.cli.global_batch_size = 24;  // MBS 2 x DP 8 = 16
  expect_input_error([&] { load_job(r); }, "global_batch_size", 0, "micro_batch_size x DP");
}

TEST(Validation, FilesAndPresets) {
  expect_input_error([&] { load_job(request(kData + "/no_such_file.yaml")); }, "");
  expect_input_error([&] { load_job(request(kData + "/unknown_model.yaml")); }, "model", 4,
                     "did you mean 'llama3.1_8B'");
  expect_input_error([&] { load_job(request(kData + "/malformed.yaml")); }, "", -1,
                     "malformed YAML");
  // A "did you mean" only for a plausible misspelling (at most a third of the name differs).
  EXPECT_EQ(nearest_misspelling("llama3.1_8b", {"llama3.1_8B", "mixtral_8x7B"}), "llama3.1_8B");
  EXPECT_EQ(nearest_misspelling("zzzzzzzzzzzz", {"llama3.1_8B", "mixtral_8x7B"}), "");
  EXPECT_EQ(nearest_misspelling("gpt", {"gpt2", "llama3.1_8B"}), "gpt2");
  expect_input_error([&] { load_job(request(kData + "/duplicate_key.yaml")); },
                     "modules.pre_trainer.overrides.micro_batch_size", 8, "duplicate");
}

TEST(Validation, TypeErrorsNameTheLine) {
  testing::TempDir dir;
  const std::string cfg =
      dir.write("a.yaml",
                "modules:\n  pre_trainer:\n    model: llama3_8B.yaml\n    overrides:\n"
                "      micro_batch_size: 1\n      pipeline_model_parallel_size: two\n");
  expect_input_error([&] { load_job(request(cfg)); }, "pipeline_model_parallel_size", 6,
                     "expected an integer");
  const std::string fw = dir.write(
      "b.yaml",
      "modules:\n  pre_trainer:\n    framework: no_such_backend\n    model: llama3_8B.yaml\n");
  expect_input_error([&] { load_job(request(fw)); }, "modules.pre_trainer.framework", 3);
}

TEST(Warnings, UnknownKeySuggestsNearest) {
  testing::TempDir dir;
  const std::string cfg =
      dir.write("a.yaml",
                "modules:\n  pre_trainer:\n    model: llama3_8B.yaml\n    overrides:\n"
                "      micro_batch_size: 1\n      global_batch_sise: 64\n      log_interval: 1\n"
                "      totally_unrelated_thing: 3\n");
  const JobSpec job = load_job(request(cfg));
  EXPECT_TRUE(has_warning(job,
                          "unknown key 'global_batch_sise' (ignored); did you mean "
                          "'global_batch_size'?"));
  EXPECT_TRUE(has_warning(job, "a.yaml:6:"));
  EXPECT_TRUE(has_warning(job, "unknown key 'totally_unrelated_thing' (ignored)"));
  EXPECT_FALSE(has_warning(job, "log_interval"));  // known but irrelevant: silent
}

TEST(Keys, EditDistanceAndTokenizers) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  const KeySchema keys = builtin_adapters().find("megatron")->key_schema(kRepoData);
  EXPECT_EQ(keys.nearest("num_layer"), "num_layers");
  auto vocab = [](const char* type, const char* model) {
    const auto v = tokenizer_vocab_size(type, model, kRepoData);
    return v ? v->vocab_size : -1;
  };
  EXPECT_EQ(vocab("HuggingFaceTokenizer", "meta-llama/Llama-3.1-8B"), 128256);
  EXPECT_EQ(vocab("DeepSeekV3Tokenizer", ""), 129280);
  EXPECT_EQ(vocab("HuggingFaceTokenizer", "Qwen/Qwen2.5-3B"), 151936);
  EXPECT_EQ(vocab("Nope", "nope"), -1);
  // The tokenizers Primus' shipped presets name (issue 12 item 11): the more specific name wins.
  EXPECT_EQ(vocab("Llama4Tokenizer", "meta-llama/Llama-4-Scout-17B-16E"), 202048);
  EXPECT_EQ(vocab("HuggingFaceTokenizer", "Qwen/Qwen3.5-35B-A3B"), 248320);
  EXPECT_EQ(vocab("HuggingFaceTokenizer", "Qwen/Qwen3-8B"), 151936);
  EXPECT_EQ(vocab("KimiK2Tokenizer", "moonshotai/Kimi-K2-Instruct"), 163840);
  EXPECT_EQ(vocab("HuggingFaceTokenizer", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"), 151936);
  EXPECT_EQ(vocab("HuggingFaceTokenizer", "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"), 152064);
  EXPECT_EQ(vocab("Lfm2Tokenizer", ""), 65536);
  EXPECT_FALSE(tokenizer_vocab_size("KimiK2Tokenizer", "", kRepoData)->source.empty());
}

// Files in Primus' config folders that describe no job get a message that says what they are: a
// Transformer Engine precision config (its `configs` / `matchers`, named by
// te_precision_config_file of an experiment) and a template whose model is a placeholder.
TEST(PrimusExamples, FilesThatAreNotJobsSaySo) {
  testing::TempDir dir;
  const std::string te = dir.write(
      "te-precision.yaml",
      "configs:\n  bf16:\n    transformer_engine_config_type: TEQuantizationParams\n"
      "matchers:\n  qkv:\n    config: bf16\n    type: glob\n    pattern: '*.linear_qkv'\n");
  try {
    load_job(request(te));
    ADD_FAILURE() << "a precision config was loaded as a job";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, te);
    EXPECT_NE(std::string(e.what()).find("not a training experiment"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("te_precision_config_file"), std::string::npos);
  }
  const std::string tpl =
      dir.write("template.yaml",
                "work_group: x\nuser_name: y\nexp_name: z\nworkspace: ./output\nmodules:\n"
                "  pre_trainer:\n    framework: megatron\n    config: pre_trainer.yaml\n"
                "    model: <YOUR_MODEL_YAML>\n");
  try {
    load_job(request(tpl));
    ADD_FAILURE() << "a template was loaded as a job";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "model");
    EXPECT_NE(std::string(e.what()).find("template placeholder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// The device allocator (RuntimeSpec::allocator; docs/memory.md "Allocator"): PyTorch's default is
// fixed segments (recorded as a default); the environment Primus reads (P10) and --alloc-conf
// turn expandable segments on or off, the flag beating the environment; a setting that states
// nothing about them is refused.
TEST(AllocatorSetting, DefaultEnvironmentAndFlag) {
  const std::string cfg = kData + "/primus_llama3_8B-BF16-pretrain.yaml";
  const JobSpec plain = load_job(request(cfg));
  EXPECT_EQ(plain.runtime.allocator, DeviceAllocatorKind::kCaching);
  EXPECT_TRUE(has_default(plain, "expandable_segments"));
  const JobSpec env = load_job(request(cfg, {{"PYTORCH_HIP_ALLOC_CONF",
                                              "garbage_collection_threshold:0.8,"
                                              "expandable_segments:True"}}));
  EXPECT_EQ(env.runtime.allocator, DeviceAllocatorKind::kCachingExpandable);
  EXPECT_FALSE(has_default(env, "expandable_segments"));
  LoadRequest flag = request(cfg, {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}});
  flag.cli.alloc_conf = "expandable_segments:False";
  EXPECT_EQ(load_job(flag).runtime.allocator, DeviceAllocatorKind::kCaching);
  flag.cli.alloc_conf = "max_split_size_mb:512";
  expect_input_error([&] { load_job(flag); }, "alloc_conf", -1, "expandable_segments");
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// Primus' SFT `lora:` block: off (the preset's default) says nothing; on, the projection of a
// full fine-tune is flagged, naming the line (PR1 modules/megatron/sft_trainer.yaml).
TEST(PrimusLora, EnabledIsFlaggedNotSilentlyProjected) {
  testing::TempDir dir;
  const std::string body =
      "modules:\n  pre_trainer:\n    framework: megatron\n    overrides:\n"
      "      num_layers: 2\n      hidden_size: 64\n      num_attention_heads: 4\n"
      "      vocab_size: 1000\n      lora:\n        enabled: ";
  const JobSpec off = load_job(request(dir.write("off.yaml", body + "false\n        dim: 16\n")));
  EXPECT_FALSE(has_warning(off, "lora"));
  const JobSpec on = load_job(request(dir.write("on.yaml", body + "true\n        dim: 16\n")));
  EXPECT_TRUE(has_warning(on, "on.yaml:10: lora.enabled = true is not modelled"));
}

}  // namespace
}  // namespace projector
