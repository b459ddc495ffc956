// Framework profiles (data/frameworks/*.yaml): every bundled profile loads, every value it sets
// has a source, `extends:` inherits, free text names the right framework, and a malformed file is
// an error naming its file, line and key.
#include "projector/job/profile.h"

#include <gtest/gtest.h>

#include <set>

#include "projector/hardware/catalog.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

// The frameworks issue 11 names, plus the fallback for runs that name none.
TEST(Profiles, EveryFrameworkHasOne) {
  const ProfileCatalog c = load_framework_profiles(kData);
  const std::vector<std::string> list = c.names();
  const std::set<std::string> names(list.begin(), list.end());
  for (const char* n : {"megatron-lm", "megatron-core", "primus", "nemo", "megatron-deepspeed",
                        "deepspeed", "torchtitan", "maxtext", "torchrec", "unknown"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

// Every value a profile sets carries its source; the LLM profiles set every behaviour default.
TEST(Profiles, EveryValueHasASource) {
  const ProfileCatalog catalog = load_framework_profiles(kData);
  for (const FrameworkProfile& p : catalog.all()) {
    EXPECT_FALSE(p.backend.empty()) << p.name;
    auto check = [&](const auto& d, const char* what) {
      if (d.value) {
        EXPECT_FALSE(d.source.empty()) << p.name << " " << what;
      }
    };
    check(p.distributed_optimizer, "distributed_optimizer");
    check(p.sequence_parallel, "sequence_parallel");
    check(p.overlap_grad_reduce, "overlap_grad_reduce");
    check(p.flash_attention, "flash_attention");
    check(p.fp8_recipe, "fp8_recipe");
    check(p.grad_reduce_dtype, "grad_reduce_dtype");
    check(p.dropout, "dropout");
    check(p.selective_recompute, "selective_recompute");
    check(p.flop_counting, "flop_counting");
    check(p.norm, "norm");
    check(p.position_embedding, "position_embedding");
    check(p.tied_embeddings, "tied_embeddings");
    for (const std::string& n : p.notes) EXPECT_FALSE(n.empty()) << p.name;
    // The recommendation frameworks (TorchRec, HugeCTR read as TorchRec): the LLM behaviour
    // defaults do not apply (job/builder.h: recommendation()).
    if (p.backend == "torchrec_dlrm") continue;
    EXPECT_TRUE(p.distributed_optimizer.value && p.sequence_parallel.value &&
                p.overlap_grad_reduce.value && p.overlap_param_gather.value &&
                p.tp_comm_overlap.value && p.flash_attention.value && p.attention_kernel.value &&
                p.fp8_recipe.value && p.grad_reduce_dtype.value && p.fsdp.value &&
                p.vocab_padding.value && p.dropout.value && p.selective_recompute.value &&
                p.loss_grad_in_place.value && p.microbatch_rule.value && p.flop_counting.value &&
                p.expert_tensor_parallel.value)
        << p.name << " leaves a behaviour default unset";
  }
}

// Megatron-LM's argument defaults (arguments.py) and what the others change.
TEST(Profiles, KnownValues) {
  const ProfileCatalog c = load_framework_profiles(kData);
  const FrameworkProfile& m = *c.find("megatron-lm");
  EXPECT_FALSE(*m.distributed_optimizer.value);
  EXPECT_DOUBLE_EQ(*m.dropout.value, 0.1);
  EXPECT_EQ(*m.vocab_padding.value, 128);
  EXPECT_EQ(*m.selective_recompute.value, RecomputeModules{RecomputeModule::kCoreAttn});
  // ETP = TP with no fall-back (arguments.py:587-588); nemo / primus inherit it.
  EXPECT_EQ(*m.expert_tensor_parallel.value, (std::vector<EtpChoice>{{true, 1}}));
  EXPECT_EQ(*c.find("nemo")->expert_tensor_parallel.value, (std::vector<EtpChoice>{{true, 1}}));
  const FrameworkProfile& primus = *c.find("primus");
  EXPECT_TRUE(*primus.distributed_optimizer.value);
  EXPECT_EQ(*primus.sequence_parallel.value, WhenRule::kWithTp);
  EXPECT_EQ(*primus.vocab_padding.value, 128);  // inherited from megatron-lm.yaml
  EXPECT_EQ(primus.vocab_padding.source, m.vocab_padding.source);
  const FrameworkProfile& tt = *c.find("torchtitan");
  EXPECT_EQ(*tt.fsdp.value, FsdpKind::kFsdp2);
  EXPECT_EQ(*tt.attention_kernel.value, AttentionKernel::kFa2);
  EXPECT_FALSE(*tt.loss_grad_in_place.value);
  EXPECT_EQ(*c.find("nemo")->grad_reduce_dtype.value, Dtype::kBf16);
  EXPECT_EQ(*c.find("megatron-deepspeed")->flop_counting.value, FlopCounting::kHardware);
}

// The framework named first wins; at one position the longer keyword.
TEST(Profiles, MatchFreeText) {
  const ProfileCatalog c = load_framework_profiles(kData);
  const std::pair<const char*, const char*> cases[] = {
      {"NeMo 24.07 (Megatron-Core)", "nemo"},
      {"Megatron-Core (config follows NeMo performance recipes)", "megatron-core"},
      {"Megatron-DeepSpeed (BigScience fork) + DeepSpeed", "megatron-deepspeed"},
      {"Megatron-LM (2022)", "megatron-lm"},
      {"Megatron-Bridge / Megatron-Core (NeMo 26.04)", "nemo"},
      {"Primus (Megatron-LM backend)", "primus"},
      {"torchtitan 9dec370", "torchtitan"},
      {"MaxText (JAX/XLA)", "maxtext"},
      {"TorchRec (torchrec_dlrm/dlrm_main.py)", "torchrec"}};
  for (const auto& [text, name] : cases) {
    const FrameworkProfile* p = c.match(text);
    ASSERT_NE(p, nullptr) << text;
    EXPECT_EQ(p->name, name) << text;
  }
  EXPECT_EQ(c.match("JAX on a toaster"), nullptr);
}

TEST(Profiles, MalformedFilesNameFileLineAndKey) {
  testing::TempDir dir;
  auto error_of = [&](const std::string& body) -> InputError {
    const std::string path = dir.write("frameworks/x.yaml", body);
    try {
      load_framework_profile(path);
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << "expected an error for " << body;
    return InputError({}, "", "");
  };
  InputError e = error_of("backend: megatron\ndefaults:\n  dropout: {value: 0.1}\n");
  EXPECT_EQ(e.key(), "defaults.dropout.source");
  EXPECT_EQ(e.where().line, 3);
  e = error_of("backend: megatron\ndefaults:\n  dropuot: {value: 0.1, source: s}\n");
  EXPECT_EQ(e.key(), "defaults.dropuot");
  e = error_of("backend: megatron\nextends: nowhere\n");
  EXPECT_EQ(e.key(), "extends");
  e = error_of("defaults: {}\n");
  EXPECT_EQ(e.key(), "backend");
  e = error_of("backend: megatron\ndefaults:\n  fsdp: {value: zero9, source: s}\n");
  EXPECT_EQ(e.key(), "defaults.fsdp.value");
  e = error_of("backend: megatron\nhost_census:\n  source: s\n  ops:\n    moe.x: {ops: -1}\n");
  EXPECT_EQ(e.key(), "host_census.ops.moe.x.ops");
  EXPECT_EQ(e.where().line, 5);
  e = error_of(
      "backend: megatron\nhost_census:\n  source: s\n  transfers:\n    flex_dispatch: [8]\n");
  EXPECT_EQ(e.key(), "host_census.transfers.flex_dispatch");
  e = error_of("backend: megatron\nhost_census:\n  ops: {}\n");
  EXPECT_EQ(e.key(), "host_census.source");
}

// Megatron-Core's MoE host census is profile data (docs/host.md): read as written, inherited by the
// profiles that extend megatron-lm (Primus runs Megatron-Core), and absent from torchtitan's.
TEST(Profiles, HostCensusIsTheFrameworksData) {
  const ProfileCatalog c = load_framework_profiles(kData);
  const FrameworkProfile* mlm = c.find("megatron-lm");
  ASSERT_NE(mlm, nullptr);
  ASSERT_TRUE(mlm->host_census);
  const HostCensus& census = *mlm->host_census;
  EXPECT_FALSE(census.source.empty());
  const auto fc1 = std::find_if(census.moe_ops.begin(), census.moe_ops.end(),
                                [](const HostCensusOp& o) { return o.name == "moe.experts.fc1"; });
  ASSERT_NE(fc1, census.moe_ops.end());
  // TE GroupedLinear forward: 20 eager calls, one module entry, one cuBLAS call per local expert.
  EXPECT_EQ(fc1->ops, 20.0);
  EXPECT_EQ(fc1->modules, 1.0);
  EXPECT_TRUE(fc1->launch_per_expert);
  EXPECT_FALSE(fc1->hook_per_expert);
  EXPECT_EQ(census.alltoall_dispatch.forward, 25.0);
  EXPECT_EQ(census.flex_combine.backward, 6.0);
  ASSERT_NE(c.find("primus"), nullptr);
  ASSERT_TRUE(c.find("primus")->host_census);
  EXPECT_EQ(c.find("primus")->host_census->moe_ops.size(), census.moe_ops.size());
  EXPECT_EQ(c.find("primus")->host_census->source, census.source);
  ASSERT_NE(c.find("torchtitan"), nullptr);
  EXPECT_FALSE(c.find("torchtitan")->host_census);
}

// A job reads only the profile it names (process start-up): the profile equals the catalogue's,
// an unrelated broken profile does not stop it, and an unknown or path-like name is refused.
TEST(Profiles, NamedLoadReadsOnlyItsChain) {
  const ProfileCatalog c = load_framework_profiles(kData);
  for (const FrameworkProfile& p : c.all()) {
    const FrameworkProfile named = load_named_framework_profile(kData, p.name);
    EXPECT_EQ(named.file, p.file);
    EXPECT_EQ(named.backend, p.backend) << p.name;
    EXPECT_EQ(named.host_op_us.value, p.host_op_us.value) << p.name;
  }
  testing::TempDir dir;
  dir.write("frameworks/base.yaml", "backend: megatron\n");
  dir.write("frameworks/child.yaml", "backend: megatron\nextends: base\n");
  dir.write("frameworks/broken.yaml", "backend: [unclosed\n");
  EXPECT_THROW(load_framework_profiles(dir.path()), InputError);
  EXPECT_EQ(load_named_framework_profile(dir.path(), "child").name, "child");
  EXPECT_EQ(load_named_framework_profile(dir.path(), "CHILD").name, "child");
  for (const char* bad : {"nowhere", "../frameworks/child", "", "child.yaml"}) {
    try {
      load_named_framework_profile(dir.path(), bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "framework") << bad;
    }
  }
}

}  // namespace
}  // namespace projector
