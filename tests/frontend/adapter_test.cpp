// The back-end adapter registry and the Megatron adapter: selection by `framework:`, a clean error
// for an unknown framework, registration of a new back-end, idempotent normalization, overrides on
// the neutral draft, and the key schema.
#include "projector/frontend/adapter.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/builder.h"
#include "projector/job/spec.h"
#include "projector/report/job_report.h"
#include "support/adapter_input.h"
#include "support/model_builders.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_TEST_DATA_DIR;
const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;

LoadRequest request(const std::string& path) {
  LoadRequest r;
  r.config_path = path;
  r.data_dir = kRepoData;
  r.env = fixed_environment({});
  return r;
}

TEST(Registry, BuiltinsAndAliases) {
  const AdapterRegistry& r = builtin_adapters();
  const std::vector<std::string> names = r.names();
  EXPECT_NE(std::find(names.begin(), names.end(), "megatron"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "torchtitan"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "torchrec_dlrm"), names.end());
  EXPECT_EQ(names.size(), 4u);
  for (const char* alias : {"maxtext", "MaxText", "jax"}) {
    ASSERT_NE(r.find(alias), nullptr) << alias;
    EXPECT_EQ(r.find(alias)->name(), "maxtext");
  }
  for (const char* alias : {"megatron", "Megatron", "megatron-lm", "mcore", "megatron-core"}) {
    ASSERT_NE(r.find(alias), nullptr) << alias;
    EXPECT_EQ(r.find(alias)->name(), "megatron");
  }
  ASSERT_NE(r.find("torchtitan"), nullptr);
  EXPECT_EQ(r.find("torchtitan")->name(), "torchtitan");
  EXPECT_EQ(r.find("no_such_backend"), nullptr);
  AdapterRegistry copy = r;
  EXPECT_THROW(register_backend_adapter(copy, std::shared_ptr<const BackendAdapter>(
                                                  r.find("megatron"), [](const auto*) {})),
               InputError);
}

// Only torchtitan sweeps its own FSDP2 layout space (dp_shard x dp_replicate, its schedules and
// AC modes); `projector sweep` asks the adapter instead of comparing framework names.
TEST(Registry, SweepLayoutSpaceIsTheAdapters) {
  const AdapterRegistry& r = builtin_adapters();
  EXPECT_TRUE(r.find("titan")->sweeps_fsdp2_layouts());
  for (const char* name : {"megatron", "maxtext", "torchrec_dlrm"}) {
    ASSERT_NE(r.find(name), nullptr) << name;
    EXPECT_FALSE(r.find(name)->sweeps_fsdp2_layouts()) << name;
  }
}

// An unknown framework is a one-line error at its line, listing the registered back-ends.
TEST(Registry, UnknownFrameworkListsTheRegisteredOnes) {
  testing::TempDir dir;
  const std::string cfg = dir.write(
      "a.yaml",
      "modules:\n  pre_trainer:\n    framework: no_such_backend\n    model: llama3_8B.yaml\n");
  try {
    load_job(request(cfg));
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "modules.pre_trainer.framework");
    EXPECT_EQ(e.where().line, 3);
    EXPECT_NE(std::string(e.what()).find("registered: megatron"), std::string::npos) << e.what();
  }
}

// A new back-end is one adapter: this toy reads `layers`, `width` and `gpus` and hands the job
// builder a draft; the rest (profile, derivation, rules, hardware) is shared.
class ToyAdapter final : public BackendAdapter {
 public:
  std::string_view name() const override { return "toy"; }
  std::vector<std::string> aliases() const override { return {"toy-lm"}; }
  std::string_view profile(bool) const override { return "megatron-lm"; }
  std::string_view preset_dir() const override { return "toy"; }
  KeySchema key_schema(const std::string&) const override {
    return KeySchema({"layers", "width", "heads", "seq"});
  }
  JobDraft normalize(AdapterInput& in) const override {
    JobDraft d;
    d.source = in.source;
    d.profile = in.profile;
    const ConfigValue* layers = in.args.find("layers");
    testing::DenseShape s{
        static_cast<int>(layers != nullptr ? layers->i : 2), 512, 2048, 8, 8, 32000};
    d.model = testing::make_dense(s);
    d.model.name = "toy";
    d.seq_length = static_cast<int>(in.args.find("seq")->i);
    d.set_origin(DraftField::kTp, "toy.tp");
    return d;
  }
};

TEST(Registry, ANewBackEndIsOneAdapter) {
  AdapterRegistry registry = builtin_adapters();
  register_backend_adapter(registry, std::make_shared<ToyAdapter>());
  EXPECT_EQ(registry.find("toy-lm")->name(), "toy");
  testing::TempDir dir;
  const std::string cfg = dir.write(
      "toy.yaml", "modules:\n  pre_trainer:\n    framework: toy\n    layers: 4\n    seq: 1024\n");
  LoadRequest r = request(cfg);
  r.adapters = &registry;
  r.cli.tp = 3;  // 8 heads % 3: the rule names the toy's own key
  try {
    load_job(r);
    FAIL() << "expected a rule";
  } catch (const JobRuleError& e) {
    EXPECT_EQ(e.key(), "toy.tp");
    EXPECT_EQ(e.rule(), LayoutRule::kTpHeads);
  }
  r.cli.tp = 2;
  const JobSpec job = load_job(r);
  EXPECT_EQ(job.model.name, "toy");
  EXPECT_EQ(job.model.num_layers(), 4);
  EXPECT_EQ(job.dp(), 4);  // 8 GPUs of the default accelerator / TP 2
  EXPECT_EQ(job.runtime.seq_length, 1024);
}

// Normalizing twice gives the same namespace and the same job (the seeds' rule for adapters).
TEST(MegatronAdapter, NormalizationIsIdempotent) {
  const BackendAdapter& a = *builtin_adapters().find("megatron");
  for (const std::string& path : {kData + "/primus_deepseek_v3-BF16-pretrain.yaml",
                                  kData + "/primus_mixtral_8x22B-BF16-pretrain.yaml",
                                  kRepoData + "/../examples/inline-gpt-1.3B.yaml"}) {
    LoadRequest req = request(path);
    ResolvedConfig rc = resolve_config(req);
    rc.args.set("use_custom_fsdp", ConfigValue::make_bool(false));  // an alias the adapter folds
    AdapterInput in = testing::adapter_input(rc, a, kRepoData);
    const JobDraft first = a.normalize(in);
    const std::string normalized = in.args.to_text();
    EXPECT_EQ(in.args.find("use_custom_fsdp"), nullptr) << path;
    ASSERT_NE(in.args.find("use_megatron_fsdp"), nullptr) << path;
    const JobDraft second = a.normalize(in);
    EXPECT_EQ(in.args.to_text(), normalized) << path;
    ClusterRequest c;
    c.data_dir = kRepoData;
    EXPECT_EQ(job_json(finalize_job(first, c)), job_json(finalize_job(second, c))) << path;
  }
}

// CLI flags and PRIMUS_* overrides act on the neutral draft: the file's key stays the name errors
// use, the flag is where the value came from, and --set (a back-end key) beats the environment.
TEST(MegatronAdapter, OverridesApplyToTheDraft) {
  LoadRequest r = request(kData + "/primus_llama3_8B-BF16-pretrain.yaml");
  const ResolvedConfig rc = resolve_config(r);
  EXPECT_EQ(rc.framework, "megatron");
  EXPECT_TRUE(rc.primus_experiment);
  r.cli.pp = 2;
  r.env = fixed_environment({{"PRIMUS_TP", "2"}});
  JobDraft d = build_job_draft(rc, r);
  EXPECT_EQ(d.pp, 2);
  EXPECT_EQ(d.origin(DraftField::kPp).where.file, "--pp");
  EXPECT_EQ(d.key(DraftField::kPp), "pipeline_model_parallel_size");
  EXPECT_EQ(d.tp, 2);
  EXPECT_EQ(d.origin(DraftField::kTp).where.file, "environment PRIMUS_TP");
  r.set_overrides = {"tensor_model_parallel_size=4"};
  d = build_job_draft(resolve_config(r), r);
  EXPECT_EQ(d.tp, 4);  // --set beats PRIMUS_TP
  EXPECT_EQ(d.profile.name, "primus");
}

// Every key the Megatron adapter reads is in its schema, so none of them warns as a typo.
TEST(MegatronAdapter, KeySchemaCoversWhatTheAdapterReads) {
  const KeySchema keys = builtin_adapters().find("megatron")->key_schema(kRepoData);
  for (const char* key : {"tensor_model_parallel_size",
                          "pipeline_model_parallel_size",
                          "num_virtual_stages_per_pipeline_rank",
                          "num_layers_per_virtual_pipeline_stage",
                          "pipeline_model_parallel_layout",
                          "decoder_first_pipeline_num_layers",
                          "use_distributed_optimizer",
                          "use_torch_fsdp2",
                          "use_megatron_fsdp",
                          "data_parallel_sharding_strategy",
                          "overlap_grad_reduce",
                          "tp_comm_overlap",
                          "cp_comm_type",
                          "ddp_bucket_size",
                          "micro_batch_size",
                          "global_batch_size",
                          "seq_length",
                          "fp8",
                          "fp8_recipe",
                          "fp8_param_gather",
                          "recompute_granularity",
                          "recompute_method",
                          "recompute_num_layers",
                          "recompute_modules",
                          "recompute_layer_ids",
                          "use_flash_attn",
                          "attention_backend",
                          "cross_entropy_loss_fusion",
                          "turbo_sync_free_moe_stage",
                          "use_turbo_deepep",
                          "moe_token_dispatcher_type",
                          "moe_enable_deepep",
                          "pipeline_schedule_algorithm",
                          "enable_zero_bubble",
                          "patch_zero_bubble",
                          "optimizer",
                          "use_precision_aware_optimizer",
                          "main_grads_dtype",
                          "exp_avg_dtype",
                          "exp_avg_sq_dtype",
                          "grad_reduce_in_bf16",
                          "make_vocab_size_divisible_by",
                          "padded_vocab_size",
                          "attention_dropout",
                          "hidden_dropout",
                          "allow_tp_beyond_node"}) {
    EXPECT_TRUE(keys.known(key)) << key;
  }
  EXPECT_EQ(keys.nearest("pipeline_model_paralel_size"), "pipeline_model_parallel_size");
  EXPECT_EQ(keys.nearest("completely_different"), "");
}

}  // namespace
}  // namespace projector
