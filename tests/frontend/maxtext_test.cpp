// The MaxText back-end adapter (frontend/maxtext/): flat MaxText YAMLs and Primus experiments,
// pyconfig.py's merge order (base.yml < the config file < the model config < command-line
// overrides, override_model_config), global_parameter_scale, the ici/dcn mesh with its -1 axis,
// fractional per_device_batch_size, remat policies as saved-tensor sets, dtypes without a master
// copy, quantization, the key schema, idempotent normalization, and the bundled transcription of
// MaxText's model configs re-checked against a checkout when PRIMUS_MAXTEXT_PATH names one.
#include "projector/frontend/maxtext.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "projector/frontend/adapter.h"
#include "projector/frontend/loader.h"
#include "projector/job/accounting.h"
#include "projector/job/builder.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/perf/perf.h"
#include "projector/report/job_report.h"
#include "support/adapter_input.h"
#include "support/config_text.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

namespace fs = std::filesystem;

const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;

LoadRequest request(const std::string& path, const std::string& hardware = "tpu_v5p") {
  return testing::bundled_request(path, hardware);
}

JobSpec load_text(testing::TempDir& dir, const std::string& text,
                  const std::string& hardware = "tpu_v5p") {
  return load_job(request(dir.write("mt.yml", text), hardware));
}

const MeshAxis* axis(const JobSpec& j, MeshRole role) {
  for (const MeshAxis& a : j.parallel.mesh) {
    if (a.role == role) return &a;
  }
  return nullptr;
}

// A flat MaxText YAML (no `modules:`) is recognised as MaxText; model_name reads the bundled
// transcription of configs/models/llama3-8b.yml over base.yml.
TEST(MaxTextAdapter, FlatYamlWithModelName) {
  testing::TempDir dir;
  const JobSpec j = load_text(dir,
                              "model_name: llama3-8b\n"
                              "per_device_batch_size: 2\n"
                              "max_target_length: 4096\n"
                              "compile_topology: v5p-64\n");
  EXPECT_EQ(j.model.hidden_size, 4096);
  EXPECT_EQ(j.model.num_layers(), 32);
  EXPECT_EQ(j.model.layers[0].attention.num_heads, 32);
  EXPECT_EQ(j.model.layers[0].attention.num_query_groups, 8);
  EXPECT_EQ(j.model.layers[0].mlp.ffn_hidden_size, 14336);
  EXPECT_EQ(j.model.vocab_size, 128256);
  EXPECT_EQ(j.cluster.world_size(), 32);  // v5p-64: 64 TensorCores, one device per chip
  EXPECT_EQ(j.runtime.global_batch_size, 64);
  EXPECT_EQ(j.runtime.seq_length, 4096);
  // base.yml: ici_fsdp_parallelism -1 takes the slice; weights fp32 without a master copy.
  ASSERT_NE(axis(j, MeshRole::kFsdp), nullptr);
  EXPECT_EQ(axis(j, MeshRole::kFsdp)->ici, 32);
  EXPECT_EQ(j.parallel.fsdp, FsdpKind::kFsdp2);
  EXPECT_EQ(j.runtime.precision.stored_weights_dtype(), Dtype::kFp32);
  EXPECT_FALSE(j.runtime.master_weights);
  EXPECT_TRUE(j.runtime.whole_step_compiled);
}

// pyconfig.py: a command-line value the model config also sets must agree with it unless
// override_model_config is true; then the command line wins.
// `hardware: tpu` names no generation: the accelerator comes from the maxtext profile's
// `accelerator` default (data/frameworks/maxtext.yaml) and is recorded with that profile; a
// profile without one refuses the config instead of guessing.
TEST(MaxTextAdapter, TpuGenerationFromProfile) {
  testing::TempDir dir;
  const std::string text =
      "model_name: llama3-8b\n"
      "per_device_batch_size: 2\n"
      "max_target_length: 4096\n"
      "ici_fsdp_parallelism: 8\n";
  const JobSpec j = load_text(dir, text, "");
  const FrameworkProfile profile =
      load_framework_profile((fs::path(kRepoData) / "frameworks" / "maxtext.yaml").string());
  ASSERT_TRUE(profile.accelerator.value.has_value());
  EXPECT_EQ(j.cluster.accelerator.name, *profile.accelerator.value);
  const auto it = std::find_if(j.defaults.begin(), j.defaults.end(), [](const AppliedDefault& a) {
    return a.key == "hardware" && a.value.rfind("tpu_", 0) == 0;
  });
  ASSERT_NE(it, j.defaults.end());
  EXPECT_NE(it->reason.find("maxtext"), std::string::npos) << it->reason;

  // A copy of the data directory whose maxtext profile has no accelerator default.
  const fs::path data = fs::path(dir.path()) / "data";
  fs::copy(kRepoData, data, fs::copy_options::recursive);
  const fs::path yaml = data / "frameworks" / "maxtext.yaml";
  std::ifstream in(yaml);
  std::string line, kept;
  bool skip = false;
  while (std::getline(in, line)) {
    if (line.rfind("  accelerator:", 0) == 0) {
      skip = true;
      continue;
    }
    if (skip && line.rfind("    ", 0) == 0) continue;
    skip = false;
    kept += line + "\n";
  }
  in.close();
  std::ofstream(yaml) << kept;
  LoadRequest r = request(dir.write("mt2.yml", text), "");
  r.data_dir = data.string();
  try {
    load_job(r);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hardware"), std::string::npos) << e.what();
  }
}

TEST(MaxTextAdapter, OverrideModelConfig) {
  testing::TempDir dir;
  const std::string cfg = dir.write("mt.yml",
                                    "model_name: llama3-8b\nper_device_batch_size: 1\n"
                                    "compile_topology: v5p-8\n");
  LoadRequest r = request(cfg);
  r.set_overrides = {"base_num_decoder_layers=4"};
  try {
    load_job(r);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "base_num_decoder_layers");
    EXPECT_NE(std::string(e.what()).find("override_model_config"), std::string::npos);
  }
  r.set_overrides = {"base_num_decoder_layers=32"};  // the same value is allowed
  EXPECT_EQ(load_job(r).model.num_layers(), 32);
  r.set_overrides = {"base_num_decoder_layers=4", "override_model_config=true"};
  EXPECT_EQ(load_job(r).model.num_layers(), 4);
  // A value in the config file itself is beaten by the model config (it is the base config).
  const JobSpec j = load_text(dir,
                              "model_name: llama3-8b\nbase_num_decoder_layers: 4\n"
                              "per_device_batch_size: 1\ncompile_topology: v5p-8\n");
  EXPECT_EQ(j.model.num_layers(), 32);
}

// types.py get_individual_scales: 2^k doubles heads and MLP first, then embedding, then layers.
TEST(MaxTextAdapter, GlobalParameterScale) {
  testing::TempDir dir;
  const JobSpec s2 = load_text(dir,
                               "global_parameter_scale: 2\nper_device_batch_size: 1\n"
                               "compile_topology: v5p-8\n");
  EXPECT_EQ(s2.model.hidden_size, 2048);
  EXPECT_EQ(s2.model.layers[0].attention.num_heads, 32);
  EXPECT_EQ(s2.model.layers[0].mlp.ffn_hidden_size, 14336);
  EXPECT_EQ(s2.model.num_layers(), 16);
  const JobSpec s8 = load_text(dir,
                               "global_parameter_scale: 8\nper_device_batch_size: 1\n"
                               "compile_topology: v5p-8\n");
  EXPECT_EQ(s8.model.hidden_size, 4096);
  EXPECT_EQ(s8.model.num_layers(), 32);
  EXPECT_THROW(load_text(dir, "global_parameter_scale: 3\ncompile_topology: v5p-8\n"), InputError);
}

// Mesh: one -1 per group takes what the others leave; TP / EP / CP follow from the axes; the
// fractional per_device_batch_size counts every device.
TEST(MaxTextAdapter, MeshAndFractionalBatch) {
  testing::TempDir dir;
  const JobSpec j = load_text(dir,
                              "model_name: mixtral-8x7b\n"
                              "per_device_batch_size: 0.5\n"
                              "ici_fsdp_parallelism: -1\n"
                              "ici_tensor_parallelism: 4\n"
                              "ici_expert_parallelism: 2\n"
                              "dcn_data_parallelism: 2\n"
                              "compile_topology: v5p-128\n"
                              "compile_topology_num_slices: 2\n");
  EXPECT_EQ(j.cluster.world_size(), 128);
  EXPECT_EQ(j.cluster.slices, 2);
  EXPECT_EQ(j.parallel.tp, 4);
  EXPECT_EQ(j.parallel.ep, 2);
  ASSERT_NE(axis(j, MeshRole::kFsdp), nullptr);
  EXPECT_EQ(axis(j, MeshRole::kFsdp)->ici, 8);  // 64 / (4 x 2)
  EXPECT_EQ(axis(j, MeshRole::kData)->dcn, 2);
  EXPECT_EQ(j.parallel.dp_replicate, 2);       // weights replicated over the data axis
  EXPECT_EQ(j.runtime.global_batch_size, 64);  // 0.5 x 128 devices
  // Two -1 in one group is MaxText's error.
  EXPECT_THROW(load_text(dir,
                         "ici_fsdp_parallelism: -1\nici_tensor_parallelism: -1\n"
                         "compile_topology: v5p-8\n"),
               InputError);
}

// remat_policy names the saved-tensor set (decoders.py get_remat_policy); custom reads each
// per-tensor key (device / offload / remat).
TEST(MaxTextAdapter, RematPolicies) {
  using T = LayerTensor;
  const auto none = [](std::string_view) { return std::optional<std::string>{}; };
  const TensorPolicy full = *maxtext::remat_policy("full", none);
  EXPECT_TRUE(full.on_device(T::kLayerInput));
  EXPECT_FALSE(full.kept(T::kQuery));
  const TensorPolicy qkv = *maxtext::remat_policy("save_qkv_proj", none);
  for (T t : {T::kQuery, T::kKey, T::kValue}) EXPECT_TRUE(qkv.on_device(t));
  EXPECT_FALSE(qkv.kept(T::kAttentionOut));
  const TensorPolicy dot = *maxtext::remat_policy("save_dot_except_mlp", none);
  EXPECT_TRUE(dot.on_device(T::kAttentionOut));
  EXPECT_FALSE(dot.kept(T::kMlpUp));
  const TensorPolicy minimal = *maxtext::remat_policy("minimal", none);
  for (T t : {T::kQuery, T::kAttentionOut, T::kMlpGate, T::kMlpUp, T::kMlpOut}) {
    EXPECT_TRUE(minimal.on_device(t)) << to_string(t);
  }
  const TensorPolicy off = *maxtext::remat_policy("qkv_proj_offloaded", none);
  EXPECT_TRUE(off.on_host(T::kQuery));
  EXPECT_TRUE(off.any_on_host());
  const auto custom = [](std::string_view k) -> std::optional<std::string> {
    if (k == "out_proj") return "offload";
    if (k == "mlpwo") return "device";
    return std::nullopt;
  };
  const TensorPolicy c = *maxtext::remat_policy("custom", custom);
  EXPECT_TRUE(c.on_host(T::kAttentionOut));
  EXPECT_TRUE(c.on_device(T::kMlpOut));
  EXPECT_TRUE(c.on_device(T::kLayerInput));
  EXPECT_FALSE(maxtext::remat_policy("no_such_policy", none).has_value());

  testing::TempDir dir;
  const JobSpec j = load_text(dir,
                              "model_name: llama3-8b\nremat_policy: save_qkv_proj\n"
                              "per_device_batch_size: 1\ncompile_topology: v5p-8\n");
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kTensors);
  EXPECT_TRUE(j.runtime.recompute.tensors.on_device(T::kKey));
}

// Dtypes: weight_dtype bfloat16 stores bf16 weights; opt_type sgd keeps no moments; quantization
// names an fp8 recipe.
TEST(MaxTextAdapter, DtypesAndQuantization) {
  testing::TempDir dir;
  const JobSpec j = load_text(dir,
                              "model_name: llama3-8b\nweight_dtype: bfloat16\n"
                              "quantization: fp8\nper_device_batch_size: 1\n"
                              "compile_topology: v5p-8\n");
  EXPECT_EQ(j.runtime.precision.stored_weights_dtype(), Dtype::kBf16);
  EXPECT_NE(j.runtime.precision.fp8, Fp8Recipe::kNone);
  EXPECT_EQ(maxtext::parse_quantization("int8")->int8, true);
  EXPECT_EQ(maxtext::parse_quantization("te_mxfp8")->recipe, Fp8Recipe::kMxfp8);
  EXPECT_FALSE(maxtext::parse_quantization("int3").has_value());
  EXPECT_EQ(maxtext::parse_compile_topology("v6e-256")->devices, 256);
  EXPECT_EQ(maxtext::parse_compile_topology("v4-128")->devices, 64);
  EXPECT_EQ(maxtext::parse_compile_topology("tpu7x-128")->accelerator, "tpu7x");
}

// A misspelt key warns with the nearest schema key; every key the adapter reads is in the schema.
TEST(MaxTextAdapter, KeySchemaAndTypos) {
  testing::TempDir dir;
  const JobSpec j = load_text(dir,
                              "model_name: llama3-8b\nper_device_batch_sise: 1\n"
                              "compile_topology: v5p-8\n");
  const bool warned = std::any_of(j.warnings.begin(), j.warnings.end(), [](const std::string& w) {
    return w.find("per_device_batch_sise") != std::string::npos &&
           w.find("per_device_batch_size") != std::string::npos;
  });
  EXPECT_TRUE(warned);
  const KeySchema keys = builtin_adapters().find("maxtext")->key_schema(kRepoData);
  for (const char* key : {"per_device_batch_size",
                          "gradient_accumulation_steps",
                          "weight_dtype",
                          "mu_dtype",
                          "grad_dtype",
                          "opt_type",
                          "quantization",
                          "remat_policy",
                          "capacity_factor",
                          "sparse_matmul",
                          "megablox",
                          "first_num_dense_layers",
                          "interleave_moe_layer_step",
                          "shared_experts",
                          "q_lora_rank",
                          "kv_lora_rank",
                          "mtp_num_layers",
                          "sliding_window_size",
                          "chunk_attn_window_size",
                          "scan_layers",
                          "custom_mesh",
                          "override_model_config",
                          "ici_fsdp_parallelism",
                          "dcn_data_parallelism",
                          "compile_topology"}) {
    EXPECT_TRUE(keys.known(key)) << key;
  }
}

// Normalizing twice gives the same job.
TEST(MaxTextAdapter, NormalizationIsIdempotent) {
  testing::TempDir dir;
  const std::string path = dir.write("mt.yml",
                                     "model_name: deepseek3-671b\nper_device_batch_size: 1\n"
                                     "ici_expert_parallelism: 8\nremat_policy: custom\n"
                                     "out_proj: offload\ncompile_topology: v5p-256\n");
  const BackendAdapter& a = *builtin_adapters().find("maxtext");
  LoadRequest req = request(path);
  ResolvedConfig rc = resolve_config(req);
  AdapterInput in = testing::adapter_input(rc, a, kRepoData);
  const JobDraft first = a.normalize(in);
  const JobDraft second = a.normalize(in);
  ClusterRequest c;
  c.data_dir = kRepoData;
  c.hardware = "tpu_v5p";
  EXPECT_EQ(job_json(finalize_job(first, c)), job_json(finalize_job(second, c)));
}

// MoE keys: capacity_factor -1 is dropless; a positive one drops tokens; deepseek3's first dense
// layers, shared expert and MLA ranks; llama4's interleaved MoE layers and chunked attention.
TEST(MaxTextAdapter, MoeAndAttentionArchitecture) {
  const ModelSpec ds = maxtext::model_from_config("deepseek3-671b", kRepoData);
  EXPECT_EQ(ds.num_layers(), 61);
  EXPECT_FALSE(ds.layers[0].is_moe);
  EXPECT_FALSE(ds.layers[2].is_moe);
  EXPECT_TRUE(ds.layers[3].is_moe);
  EXPECT_EQ(ds.layers[3].moe.num_experts, 256);
  EXPECT_EQ(ds.layers[3].moe.topk, 8);
  EXPECT_GT(ds.layers[3].moe.shared_expert_ffn_hidden_size, 0);
  EXPECT_EQ(ds.layers[3].attention.kind, AttentionKind::kMla);
  EXPECT_EQ(ds.layers[3].attention.q_lora_rank, 1536);
  EXPECT_EQ(ds.layers[3].attention.kv_lora_rank, 512);
  const ModelSpec scout = maxtext::model_from_config("llama4-17b-16e", kRepoData);
  EXPECT_EQ(scout.num_layers(), 48);
  int chunked = 0;
  for (const LayerSpec& l : scout.layers) chunked += l.attention.chunk_window > 0 ? 1 : 0;
  EXPECT_EQ(chunked, 36);  // every fourth layer keeps global attention (no RoPE)
  const ModelSpec mav = maxtext::model_from_config("llama4-17b-128e", kRepoData);
  EXPECT_TRUE(mav.layers[1].is_moe);
  EXPECT_FALSE(mav.layers[0].is_moe);  // interleave_moe_layer_step 2

  testing::TempDir dir;
  const JobSpec dropless = load_text(dir,
                                     "model_name: mixtral-8x7b\nper_device_batch_size: 1\n"
                                     "capacity_factor: -1\ncompile_topology: v5p-16\n");
  EXPECT_LE(dropless.model.layers[0].moe.capacity_factor, 0.0);
  const JobSpec dropped = load_text(dir,
                                    "model_name: mixtral-8x7b\nper_device_batch_size: 1\n"
                                    "capacity_factor: 1.25\nsparse_matmul: false\n"
                                    "compile_topology: v5p-16\n");
  EXPECT_DOUBLE_EQ(dropped.model.layers[0].moe.capacity_factor, 1.25);
  EXPECT_EQ(dropped.runtime.moe_dispatch, MoeDispatchKind::kDenseCapacity);
  // sparse_matmul (the default) never drops: a capacity factor beside it routes every token.
  const JobSpec sparse = load_text(dir,
                                   "model_name: mixtral-8x7b\nper_device_batch_size: 1\n"
                                   "capacity_factor: 1.25\ncompile_topology: v5p-16\n");
  EXPECT_LE(sparse.model.layers[0].moe.capacity_factor, 0.0);
  EXPECT_NE(sparse.runtime.moe_dispatch, MoeDispatchKind::kDenseCapacity);
}

// MaxText's 2023 head count: before 975c3e83 (2023-12-22) base_num_heads set the query and the
// key / value heads alike (the v4 22B config of 76bd53b0f: 24 heads of 256); it is read so, not
// warned as unknown; a stated base_num_kv_heads keeps its own count; both names at once are
// refused.
TEST(MaxTextAdapter, HeadCountOf2023) {
  testing::TempDir dir;
  const std::string body =
      "base_emb_dim: 6144\nbase_mlp_dim: 24576\nbase_num_decoder_layers: 4\nhead_dim: 256\n"
      "per_device_batch_size: 1\ncompile_topology: v5p-16\n";
  const JobSpec mha = load_text(dir, "base_num_heads: 24\n" + body);
  EXPECT_EQ(mha.model.layers[0].attention.num_heads, 24);
  EXPECT_EQ(mha.model.layers[0].attention.num_query_groups, 24);
  for (const std::string& w : mha.warnings) EXPECT_EQ(w.find("base_num_heads"), std::string::npos);
  const JobSpec gqa = load_text(dir, "base_num_heads: 24\nbase_num_kv_heads: 8\n" + body);
  EXPECT_EQ(gqa.model.layers[0].attention.num_heads, 24);
  EXPECT_EQ(gqa.model.layers[0].attention.num_query_groups, 8);
  try {
    load_text(dir, "base_num_heads: 24\nbase_num_query_heads: 24\n" + body);
    ADD_FAILURE() << "both head-count names accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "base_num_heads");
  }
}

// Local / global attention by decoder block. gemma2.py Gemma2DecoderLayer holds a local and a
// global attention, each with its own MLP: base_num_decoder_layers 2 is four transformer layers,
// the even ones with the 4096-token window. Per token at seq 8192 (heads x head_dim = 8 x 128 =
// 1024): a local core is 4 x 4096 x 1024 = 16,777,216 FLOPs, a global one 4 x 8192 x 1024 =
// 33,554,432; QKV 2 x 1024 x (8 + 2 x 4) x 128 = 4,194,304, out 2 x 1024 x 1024 = 2,097,152, the
// gated MLP 3 x 2 x 1024 x 4096 = 25,165,824 per layer. gemma3 (and gemma4) cycle five local
// layers and one global (gemma3.py:37-49): 12 layers have 10 windowed.
TEST(MaxTextAdapter, LocalGlobalAttentionPatterns) {
  testing::TempDir dir;
  const std::string arch =
      "base_emb_dim: 1024\nbase_num_query_heads: 8\nbase_num_kv_heads: 4\nhead_dim: 128\n"
      "base_mlp_dim: 4096\nmlp_activations: [gelu, linear]\nvocab_size: 32000\n"
      "sliding_window_size: 4096\nper_device_batch_size: 1\nmax_target_length: 8192\n"
      "compile_topology: v5p-8\n";
  const JobSpec g2 = load_text(dir, arch + "decoder_block: gemma2\nbase_num_decoder_layers: 2\n");
  ASSERT_EQ(g2.model.num_layers(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(g2.model.layers[i].attention.sliding_window, i % 2 == 0 ? 4096 : 0) << i;
  }
  const LayerFlops local = layer_forward_flops_per_token(g2.model, g2.model.layers[0], 8192);
  const LayerFlops global = layer_forward_flops_per_token(g2.model, g2.model.layers[1], 8192);
  EXPECT_DOUBLE_EQ(local.attn_core_flops, 16777216.0);
  EXPECT_DOUBLE_EQ(global.attn_core_flops, 33554432.0);
  EXPECT_DOUBLE_EQ(forward_flops_per_token(g2.model, 8192, 32000).decoder_flops,
                   4 * (4194304.0 + 2097152.0 + 25165824.0) + 2 * 16777216.0 + 2 * 33554432.0);
  const JobSpec g3 = load_text(dir, arch + "decoder_block: gemma3\nbase_num_decoder_layers: 12\n");
  ASSERT_EQ(g3.model.num_layers(), 12);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(g3.model.layers[i].attention.sliding_window, i % 6 == 5 ? 0 : 4096) << i;
  }
}

// Fractional per_device_batch_size (types.py:3458-3466): the step batch is int(devices x pdbs).
// 0.125 on 64 v5p chips with ici_context_parallelism 8 and fsdp -1 (= 8): 8 sequences, one per
// batch-sharded rank, each split over 8 context ranks. 0.2578125 x 64 = 16.5 trains on 16 (2
// per rank); 0.09375 x 64 = 6 sequences do not split over 8 ranks; 0.0078125 x 64 = 0.5 is less
// than one sequence; 0.26 x 8192 = 2129.92 is not a whole number of tokens per device, which
// MaxText refuses (types.py:3999-4002, with the default single vocab tile).
TEST(MaxTextAdapter, FractionalPerDeviceBatchWithContextParallelism) {
  testing::TempDir dir;
  const std::string base =
      "model_name: llama3-8b\nmax_target_length: 8192\nici_context_parallelism: 8\n"
      "ici_fsdp_parallelism: -1\ncompile_topology: v5p-128\n";
  const JobSpec j = load_text(dir, base + "per_device_batch_size: 0.125\n");
  EXPECT_EQ(j.cluster.world_size(), 64);
  EXPECT_EQ(j.parallel.cp, 8);
  EXPECT_EQ(j.dp(), 8);
  EXPECT_EQ(j.runtime.global_batch_size, 8);
  EXPECT_EQ(j.runtime.micro_batch_size, 1);
  EXPECT_EQ(j.tokens_per_iteration(), 8 * 8192);
  const JobSpec t = load_text(dir, base + "per_device_batch_size: 0.2578125\n");
  EXPECT_EQ(t.runtime.global_batch_size, 16);
  EXPECT_EQ(t.runtime.micro_batch_size, 2);
  const bool noted = std::any_of(t.defaults.begin(), t.defaults.end(), [](const auto& d) {
    return d.key == "global_batch_size" && d.reason.find("truncated") != std::string::npos;
  });
  EXPECT_TRUE(noted);
  EXPECT_THROW(load_text(dir, base + "per_device_batch_size: 0.09375\n"), InputError);
  EXPECT_THROW(load_text(dir, base + "per_device_batch_size: 0.0078125\n"), InputError);
  try {
    load_text(dir, base + "per_device_batch_size: 0.26\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "per_device_batch_size");
  }
}

// num_vocab_tiling (vocabulary_tiling.py): the forward keeps no logits and the backward
// recomputes them. llama3-8b on 4 v5p chips, pdbs 1, seq 4096: a microbatch of 4096 tokens keeps
// 4096 x 128256 bf16 logits = 1,050,673,152 bytes untiled; tiled, the backward replays the logits
// GEMM, 2 x 4096 x 128256 = 1,050,673,152 FLOPs per token over 4 x 4096 tokens =
// 17,214,228,922,368 more hardware FLOPs. The tiles must divide pdbs x max_target_length.
TEST(MaxTextAdapter, VocabTiling) {
  testing::TempDir dir;
  const std::string base =
      "model_name: llama3-8b\nper_device_batch_size: 1\nmax_target_length: 4096\n"
      "compile_topology: v5p-8\n";
  const JobSpec whole = load_text(dir, base);
  const JobSpec tiled = load_text(dir, base + "num_vocab_tiling: 4\n");
  EXPECT_EQ(whole.runtime.vocab_tiles, 1);
  EXPECT_EQ(tiled.runtime.vocab_tiles, 4);
  const double saved_whole = project_memory(whole).ranks[0].activation_per_microbatch_bytes;
  const double saved_tiled = project_memory(tiled).ranks[0].activation_per_microbatch_bytes;
  EXPECT_DOUBLE_EQ(saved_whole - saved_tiled, 1050673152.0);
  EXPECT_DOUBLE_EQ(model_flops(tiled).recompute_flops - model_flops(whole).recompute_flops,
                   17214228922368.0);
  EXPECT_DOUBLE_EQ(model_flops(tiled).model_flops, model_flops(whole).model_flops);
  try {
    load_text(dir, base + "num_vocab_tiling: 3\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "num_vocab_tiling");
  }
}

// Group-limited routing (n_routing_groups / topk_routing_group, -1 = off, base.yml:296-298):
// MaxText routes DeepSeek-V3 / V4 models within the best topk_routing_group groups (layers/moe.py
// deepseek_routing), with pyconfig's checks; other models and random routing ignore the keys.
// use_random_routing (base.yml:228) picks experts at random: balanced whatever the data, so the
// job's routing is `forced`.
TEST(MaxTextAdapter, RandomRoutingIsForcedBalance) {
  testing::TempDir dir;
  const std::string ds =
      "model_name: deepseek3-671b\nper_device_batch_size: 1\ncompile_topology: v5p-256\n";
  EXPECT_EQ(load_text(dir, ds).runtime.moe_routing, MoeRouting::kBalanced);
  EXPECT_EQ(load_text(dir, ds + "use_random_routing: true\n").runtime.moe_routing,
            MoeRouting::kForced);
}

TEST(MaxTextAdapter, GroupLimitedRouting) {
  testing::TempDir dir;
  const std::string ds =
      "model_name: deepseek3-671b\nper_device_batch_size: 1\n"
      "compile_topology: v5p-256\n";
  const JobSpec plain = load_text(dir, ds);
  EXPECT_EQ(plain.model.layers[3].moe.router_num_groups, 0);
  // DeepSeek-V3's routing (the deepseek3-671b config's comment: 8 groups, top 4).
  const JobSpec grouped = load_text(dir, ds + "n_routing_groups: 8\ntopk_routing_group: 4\n");
  EXPECT_EQ(grouped.model.layers[3].moe.router_num_groups, 8);
  EXPECT_EQ(grouped.model.layers[3].moe.router_group_topk, 4);
  EXPECT_FALSE(grouped.model.layers[0].is_moe);
  EXPECT_EQ(grouped.model.layers[0].moe.router_num_groups, 0);
  auto refused_key = [&](const std::string& extra) {
    try {
      load_text(dir, ds + extra);
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused_key("n_routing_groups: 8\n"), "topk_routing_group");
  EXPECT_EQ(refused_key("n_routing_groups: 8\ntopk_routing_group: 8\n"), "topk_routing_group");
  EXPECT_EQ(refused_key("n_routing_groups: 6\ntopk_routing_group: 2\n"), "n_routing_groups");
  EXPECT_EQ(refused_key("n_routing_groups: 0\ntopk_routing_group: 2\n"), "n_routing_groups");
  // 128 groups of 2 experts, 3 picked: 6 experts for a top-8 routing.
  EXPECT_EQ(refused_key("n_routing_groups: 128\ntopk_routing_group: 3\n"), "topk_routing_group");
  const JobSpec random =
      load_text(dir, ds + "n_routing_groups: 8\ntopk_routing_group: 4\nuse_random_routing: true\n");
  EXPECT_EQ(random.model.layers[3].moe.router_num_groups, 0);
  const JobSpec mixtral = load_text(dir,
                                    "model_name: mixtral-8x7b\nper_device_batch_size: 1\n"
                                    "n_routing_groups: 4\ntopk_routing_group: 2\n"
                                    "compile_topology: v5p-16\n");
  EXPECT_EQ(mixtral.model.layers[0].moe.router_num_groups, 0);
  EXPECT_TRUE(std::any_of(mixtral.warnings.begin(), mixtral.warnings.end(),
                          [](const std::string& w) { return w.find("n_routing_groups") == 0; }));
}

// shard_exp_on_fsdp (fsdp_shard_on_exp before its rename) is read in either spelling; MaxText
// refuses it beside expert or tensor parallelism; FSDP shards that do not divide the experts are
// flagged (GSPMD pads the expert dimension: 8 experts over 16 shards -> 16 slots, 1 per device).
TEST(MaxTextAdapter, ExpertsShardedOnFsdp) {
  testing::TempDir dir;
  const std::string mixtral = "model_name: mixtral-8x7b\nper_device_batch_size: 1\n";
  auto warned = [](const JobSpec& j, const std::string& what) {
    return std::any_of(j.warnings.begin(), j.warnings.end(),
                       [&](const std::string& w) { return w.find(what) != std::string::npos; });
  };
  // v5p-16: 8 chips, one FSDP shard per expert.
  const JobSpec legacy =
      load_text(dir, mixtral + "compile_topology: v5p-16\nfsdp_shard_on_exp: true\n");
  EXPECT_FALSE(warned(legacy, "fsdp_shard_on_exp"));
  const JobSpec padded =
      load_text(dir, mixtral + "compile_topology: v5p-32\nshard_exp_on_fsdp: true\n");
  EXPECT_TRUE(warned(padded,
                     "shard_exp_on_fsdp: the 16 FSDP shards do not divide the 8 experts: GSPMD "
                     "pads the expert dimension to 16 slots, 1 per device"));
  EXPECT_FALSE(warned(load_text(dir, mixtral + "compile_topology: v5p-32\n"), "FSDP shards"));
  auto refused_key = [&](const std::string& extra) {
    try {
      load_text(dir, mixtral + "compile_topology: v5p-16\n" + extra);
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused_key("shard_exp_on_fsdp: true\nici_expert_parallelism: 2\n"),
            "shard_exp_on_fsdp");
  EXPECT_EQ(refused_key("fsdp_shard_on_exp: true\nici_tensor_parallelism: 2\n"),
            "fsdp_shard_on_exp");
  EXPECT_EQ(refused_key("shard_exp_on_fsdp: true\nfsdp_shard_on_exp: false\n"),
            "fsdp_shard_on_exp");
  EXPECT_EQ(refused_key("shard_exp_on_fsdp: false\nici_expert_parallelism: 2\n"), "accepted");
}

// compile_xla_flags: MaxText's CF_FOR_ALL_REDUCE set (MX11) makes the tensor-parallel all-reduce
// asynchronous beside the neighbouring matmul; an incomplete set leaves it synchronous.
TEST(MaxTextAdapter, CompileXlaFlagsOverlapTheTensorAllReduce) {
  testing::TempDir dir;
  const std::string job =
      "model_name: llama2-7b\nper_device_batch_size: 2\ncompile_topology: v5p-16\n"
      "ici_fsdp_parallelism: 2\nici_tensor_parallelism: 4\n";
  const std::string cf_all_reduce =
      "compile_xla_flags: '--xla_tpu_enable_async_collective_fusion=true "
      "--xla_tpu_enable_async_collective_fusion_fuse_all_reduce=true "
      "--xla_tpu_enable_async_collective_fusion_multiple_steps=true "
      "--xla_tpu_overlap_compute_collective_tc=true --xla_enable_async_all_reduce=true'\n";
  const JobSpec plain = load_text(dir, job);
  const JobSpec async = load_text(dir, job + cf_all_reduce);
  EXPECT_FALSE(plain.parallel.tp_comm_overlap);
  EXPECT_TRUE(async.parallel.tp_comm_overlap);
  // Without xla_enable_async_all_reduce (libtpu's default: off) the fusion has nothing to run.
  EXPECT_FALSE(load_text(dir, job + "compile_xla_flags: "
                                    "'--xla_tpu_enable_async_collective_fusion_fuse_all_reduce'\n")
                   .parallel.tp_comm_overlap);
  // The all-gather half (the library's default) changes nothing here; it is named as unmodelled.
  const JobSpec gather =
      load_text(dir, job + "compile_xla_flags: '--xla_enable_async_all_gather=true'\n");
  EXPECT_FALSE(gather.parallel.tp_comm_overlap);
  EXPECT_TRUE(std::any_of(gather.warnings.begin(), gather.warnings.end(), [](const auto& w) {
    return w.find("1 flag(s) without a modelled effect") != std::string::npos &&
           w.find("xla_enable_async_all_gather") != std::string::npos;
  }));
  // Overlapped, each all-reduce hides behind its neighbouring matmul but slows it by the
  // interference fraction of what it hides: exposed TP time drops, not below that fraction.
  const PerfReport p0 = project_performance(plain);
  const PerfReport p1 = project_performance(async);
  const double f = async.cluster.accelerator.calibration.comm_compute_interference.value;
  EXPECT_GT(p0.exposed.tp_s, 0.0);
  EXPECT_LT(p1.exposed.tp_s, p0.exposed.tp_s);
  EXPECT_GE(p1.exposed.tp_s, f * p0.exposed.tp_s - 1e-9);
  EXPECT_EQ(p0.exposed.dp_s, p1.exposed.dp_s);
  // On a GPU job the libtpu set has no effect (and is said to have none).
  const std::string gpu_job =
      "model_name: llama2-7b\nper_device_batch_size: 2\nhardware: gpu\n"
      "ici_fsdp_parallelism: 2\nici_tensor_parallelism: 4\n";
  const JobSpec gpu = load_text(dir, gpu_job + cf_all_reduce);
  EXPECT_FALSE(gpu.parallel.tp_comm_overlap);
  EXPECT_TRUE(std::any_of(gpu.warnings.begin(), gpu.warnings.end(), [](const auto& w) {
    return w.find("a GPU job (hardware) keeps") != std::string::npos;
  }));
  auto refused_key = [&](const std::string& flags) {
    try {
      load_text(dir, job + "compile_xla_flags: '" + flags + "'\n");
    } catch (const InputError& e) {
      return e.key();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused_key("--xla_enable_async_all_reduce=maybe"), "compile_xla_flags");
  EXPECT_EQ(refused_key("TPU_MEGACORE=MEGACORE_DENSE"), "compile_xla_flags");
}

// Every Primus MaxText experiment in a Primus checkout loads (skipped without one).
TEST(MaxTextAdapter, PrimusMaxTextCorpus) {
  const char* primus = std::getenv("PRIMUS_PATH");
  const std::string root = primus != nullptr ? primus : "/work/shared/primus";
  const fs::path dir = fs::path(root) / "examples/maxtext/configs";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) GTEST_SKIP() << "no Primus checkout at " << root;
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.path().extension() != ".yaml" && e.path().extension() != ".yml") continue;
    LoadRequest r = request(e.path().string(), "");
    r.primus_path = root;
    EXPECT_NO_THROW(load_job(r)) << e.path();
    ++n;
  }
  EXPECT_GT(n, 0);
}

// The bundled transcription agrees with a MaxText checkout's model configs (PRIMUS_MAXTEXT_PATH;
// skipped without one).
TEST(MaxTextAdapter, TranscriptionMatchesCheckout) {
  const char* path = std::getenv("PRIMUS_MAXTEXT_PATH");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "PRIMUS_MAXTEXT_PATH not set";
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator(kRepoData + "/frameworks/maxtext/models", ec)) {
    if (e.path().extension() != ".yml") continue;
    const std::string name = e.path().stem().string();
    const ModelSpec bundled = maxtext::model_from_config(name, kRepoData);
    const ModelSpec checkout = maxtext::model_from_config(name, kRepoData, path);
    EXPECT_EQ(bundled.hidden_size, checkout.hidden_size) << name;
    EXPECT_EQ(bundled.vocab_size, checkout.vocab_size) << name;
    ASSERT_EQ(bundled.num_layers(), checkout.num_layers()) << name;
    for (int i = 0; i < bundled.num_layers(); ++i) {
      const LayerSpec& a = bundled.layers[static_cast<std::size_t>(i)];
      const LayerSpec& b = checkout.layers[static_cast<std::size_t>(i)];
      EXPECT_EQ(a.is_moe, b.is_moe) << name << " layer " << i;
      EXPECT_EQ(a.attention.num_heads, b.attention.num_heads) << name;
      EXPECT_EQ(a.attention.num_query_groups, b.attention.num_query_groups) << name;
      EXPECT_EQ(a.mlp.ffn_hidden_size, b.mlp.ffn_hidden_size) << name;
      EXPECT_EQ(a.moe.num_experts, b.moe.num_experts) << name;
      EXPECT_EQ(a.moe.expert_ffn_hidden_size, b.moe.expert_ffn_hidden_size) << name;
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// Multi-query attention at TP > 1 in MaxText: the kv_heads axis is sharded over the tensor axis
// and GSPMD pads it, so each of 4 ranks holds the one KV head (replicated) instead of the config
// being refused as Megatron would. Per rank that is exactly what a 4-KV-head model holds at TP 4
// (one head each): the dense parameters and the saved activations of a rank agree, while the
// whole models differ by 3 KV heads of K and V per layer.
TEST(MaxTextAdapter, MultiQueryAttentionPadsOverTensorParallelism) {
  testing::TempDir dir;
  const std::string cfg = dir.write("mqa.yml",
                                    "model_name: llama3-8b\nper_device_batch_size: 1\n"
                                    "ici_tensor_parallelism: 4\nici_fsdp_parallelism: 1\n"
                                    "compile_topology: v5p-8\n");
  auto load = [&](int kv) {
    LoadRequest r = request(cfg);
    r.set_overrides = {fmt::format("base_num_kv_heads={}", kv), "override_model_config=true"};
    return load_job(r);
  };
  const JobSpec mqa = load(1);
  const JobSpec gqa = load(4);
  ASSERT_EQ(mqa.parallel.tp, 4);
  EXPECT_TRUE(mqa.parallel.kv_heads_padded);
  EXPECT_EQ(mqa.model.layers[0].attention.num_query_groups, 1);
  EXPECT_EQ(mqa.parallel.kv_heads_per_rank(1), 1);
  // Recorded once, with the profile's source (the 4-KV-head model needs no padding).
  const auto padded = [](const JobSpec& j) {
    return std::count_if(j.defaults.begin(), j.defaults.end(),
                         [](const AppliedDefault& d) { return d.key == "kv_heads_padded"; });
  };
  EXPECT_EQ(padded(mqa), 1);
  EXPECT_EQ(padded(gqa), 0);
  const StageParams a = stage_params(mqa.model, mqa.parallel, mqa.parallel.stages[0], true);
  const StageParams b = stage_params(gqa.model, gqa.parallel, gqa.parallel.stages[0], true);
  EXPECT_DOUBLE_EQ(a.dense_params, b.dense_params);
  const double h = 4096, hd = 128, layers = 32;
  EXPECT_EQ(model_params(gqa.model).total - model_params(mqa.model).total,
            static_cast<std::int64_t>(layers * 2 * h * hd * 3));
  EXPECT_DOUBLE_EQ(layer_activation(mqa, mqa.model.layers[0]).total_bytes,
                   layer_activation(gqa, gqa.model.layers[0]).total_bytes);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// The policies a layout search tries are the MaxText adapter's to name: the full and minimal
// remats are among them; none (the sweep's own no-remat option), custom (needs per-tensor keys)
// and minimal_flash are not; every one is a policy the adapter reads.
TEST(MaxTextAdapter, RematPoliciesForASearch) {
  std::vector<std::string_view> search;
  for (const NamedTensorPolicy& p : maxtext::named_remat_policies()) {
    // Each entry is the policy the adapter reads under that name.
    EXPECT_EQ(maxtext::remat_policy(p.name, nullptr), std::optional<TensorPolicy>(p.policy))
        << p.name;
    if (p.searched) search.push_back(p.name);
  }
  auto in = [&](std::string_view n) {
    return std::find(search.begin(), search.end(), n) != search.end();
  };
  EXPECT_TRUE(in("full"));
  EXPECT_TRUE(in("minimal"));
  EXPECT_FALSE(in("none"));
  EXPECT_FALSE(in("custom"));
  EXPECT_FALSE(in("minimal_flash"));
  EXPECT_GE(search.size(), 5u);
}

}  // namespace
}  // namespace projector
