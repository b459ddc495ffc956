// Cross-module invariant: the front-end (a Megatron config) and the validation mapper (a published
// run) apply a framework's defaults identically, because both leave the unstated fields of their
// draft to the same profile and the same job builder.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/validate/validate.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

// A 4-layer GPT (GELU, LayerNorm, learned positions, tied embeddings) with TP 2 on 8 H100s,
// selective recompute without modules and fused attention (the adapter reads the attention kernel
// from attention_backend, a published run states it); nothing else stated.
constexpr const char* kArgs =
    "num_layers: 4\nhidden_size: 1024\nnum_attention_heads: 16\nvocab_size: 50257\n"
    "normalization: LayerNorm\nposition_embedding_type: learned_absolute\nswiglu: false\n"
    "seq_length: 2048\ntensor_model_parallel_size: 2\nmicro_batch_size: 1\n"
    "global_batch_size: 8\nrecompute_granularity: selective\nattention_backend: fused\n";

std::string run_entry(const std::string& framework) {
  return "- id: run\n  framework: " + framework +
         "\n  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 8, per_node: 8}\n"
         "  model: {family: gpt, num_layers: 4, hidden_size: 1024, num_attention_heads: 16,\n"
         "          vocab_size: 50257, activation: gelu, norm: layernorm,\n"
         "          position_embedding: learned absolute, tied_embeddings: true}\n"
         "  training: {tp: 2, pp: 1, micro_batch_size: 1, global_batch_size: 8, seq_len: 2048,\n"
         "             precision: bf16, recompute: selective, flash_attention: true}\n"
         "  measured: {tokens_per_sec_per_gpu: 1000}\n";
}

JobSpec from_frontend(const std::string& config) {
  LoadRequest r;
  r.config_path = config;
  r.data_dir = kData;
  r.env = fixed_environment({});
  r.hardware = "h100_sxm";
  return load_job(r);
}

// The profile-sourced defaults as (value, reason, profile), independent of each side's key names.
std::vector<std::tuple<std::string, std::string, std::string>> profile_defaults(const JobSpec& j) {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const AppliedDefault& d : j.defaults) {
    if (!d.source.empty()) out.emplace_back(d.value, d.reason, d.source);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_same_defaults(const JobSpec& a, const JobSpec& b, const std::string& profile) {
  const ParallelSpec& p = a.parallel;
  const ParallelSpec& q = b.parallel;
  EXPECT_EQ(p.distributed_optimizer, q.distributed_optimizer) << profile;
  EXPECT_EQ(p.sequence_parallel, q.sequence_parallel) << profile;
  EXPECT_EQ(p.overlap_grad_reduce, q.overlap_grad_reduce) << profile;
  EXPECT_EQ(p.overlap_param_gather, q.overlap_param_gather) << profile;
  EXPECT_EQ(p.tp_comm_overlap, q.tp_comm_overlap) << profile;
  EXPECT_EQ(p.fsdp, q.fsdp) << profile;
  EXPECT_EQ(a.runtime.flash_attention, b.runtime.flash_attention) << profile;
  EXPECT_EQ(a.runtime.attention_kernel, b.runtime.attention_kernel) << profile;
  EXPECT_EQ(a.runtime.main_grads_dtype, b.runtime.main_grads_dtype) << profile;
  EXPECT_EQ(a.runtime.loss_grad_in_place, b.runtime.loss_grad_in_place) << profile;
  EXPECT_EQ(a.runtime.recompute.modules, b.runtime.recompute.modules) << profile;
  EXPECT_DOUBLE_EQ(a.model.attention_dropout, b.model.attention_dropout) << profile;
  EXPECT_DOUBLE_EQ(a.model.hidden_dropout, b.model.hidden_dropout) << profile;
  EXPECT_EQ(a.model.make_vocab_size_divisible_by, b.model.make_vocab_size_divisible_by) << profile;
  const auto da = profile_defaults(a);
  EXPECT_FALSE(da.empty()) << profile;
  EXPECT_EQ(da, profile_defaults(b)) << profile;
  for (const auto& d : da) EXPECT_EQ(std::get<2>(d), profile);
}

// A flat Megatron argument file and a run published as "Megatron-LM": megatron-lm.yaml.
TEST(ProfileInvariant, MegatronLmFrontEndEqualsMapper) {
  testing::TempDir dir;
  const JobSpec a = from_frontend(dir.write("args.yaml", kArgs));
  const MappedRun m = map_run(parse_runs(run_entry("Megatron-LM"), "runs.yaml").at(0), kData);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.framework, "megatron-lm");
  expect_same_defaults(a, m.job, "megatron-lm");
  EXPECT_DOUBLE_EQ(a.model.attention_dropout, 0.1);  // arguments.py, for every model
  EXPECT_EQ(a.runtime.recompute.modules, RecomputeModules{RecomputeModule::kCoreAttn});
}

// A Primus experiment and a run published as "Primus": primus.yaml (over megatron-lm.yaml).
TEST(ProfileInvariant, PrimusFrontEndEqualsMapper) {
  testing::TempDir dir;
  std::string body = "modules:\n  pre_trainer:\n    framework: megatron\n    overrides:\n";
  for (std::size_t start = 0; start < std::char_traits<char>::length(kArgs);) {
    const std::string args = kArgs;
    const std::size_t end = args.find('\n', start);
    body += "      " + args.substr(start, end - start + 1);
    start = end + 1;
  }
  const JobSpec a = from_frontend(dir.write("exp.yaml", body));
  const MappedRun m =
      map_run(parse_runs(run_entry("Primus (Megatron-LM backend)"), "runs.yaml").at(0), kData);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.framework, "primus");
  expect_same_defaults(a, m.job, "primus");
  EXPECT_TRUE(a.parallel.distributed_optimizer);  // pre_trainer.yaml
  EXPECT_TRUE(a.parallel.sequence_parallel);      // language_model.yaml, TP 2
}

}  // namespace
}  // namespace projector
