// The job builder (job/builder.h): every rule of the one rule set, every derivation (DP, expert DP,
// VPP, stages, schedule), and the framework defaults it records. Expected values are worked out by
// hand next to each check.
#include "projector/job/builder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/family.h"
#include "support/job_builders.h"
#include "support/model_builders.h"

namespace projector {
namespace {

using testing::JobShape;
using testing::make_cluster;
using testing::make_draft;

const AppliedDefault* find_default(const JobSpec& job, const std::string& key) {
  const auto it = std::find_if(job.defaults.begin(), job.defaults.end(),
                               [&](const AppliedDefault& d) { return d.key == key; });
  return it == job.defaults.end() ? nullptr : &*it;
}

LayoutRule broken_rule(const JobDraft& d, const ClusterRequest& c) {
  try {
    finalize_job(d, c);
  } catch (const JobRuleError& e) {
    return e.rule();
  }
  return LayoutRule::kLegal;
}

// Llama 3.1 8B (32 heads, 8 KV heads, 32 layers) on 2 nodes of 8 H100s.
JobShape two_nodes() {
  return {.tp = 2, .pp = 2, .nodes = 2, .gpn = 8, .mbs = 1, .gbs = 64};
}

// DP = 16 / (TP 2 x PP 2 x CP 1) = 4; 32 layers over PP 2 = 16 each; 64 / (1 x 4) = 16
// microbatches.
TEST(Builder, DerivesDataParallelAndStages) {
  const JobSpec j = testing::make_job(testing::llama31_8b(), two_nodes());
  EXPECT_EQ(j.cluster.world_size(), 16);
  EXPECT_EQ(j.dp(), 4);
  EXPECT_EQ(j.expert_dp(), 4);  // 16 / (ETP 2 x EP 1 x PP 2)
  ASSERT_EQ(j.parallel.stages.size(), 2u);
  EXPECT_EQ(j.parallel.stages[1].first_layer, 16);
  EXPECT_TRUE(j.parallel.stages[0].has_embedding);
  EXPECT_TRUE(j.parallel.stages[1].has_output);
  EXPECT_EQ(j.num_microbatches(), 16);
  EXPECT_NO_THROW(check_job_invariants(j));
}

// `auto` is resolved once, by the schedule module's rule: VPP 1 -> 1F1B, VPP > 1 -> interleaved;
// a preferred zero bubble is taken only when it is legal (not with full recompute).
TEST(Builder, ResolvesAutoScheduleWithTheSelectionRule) {
  JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
  JobSpec j = finalize_job(d, make_cluster(two_nodes()));
  EXPECT_EQ(j.runtime.schedule, ScheduleKind::k1F1B);
  ASSERT_NE(find_default(j, "schedule"), nullptr);
  d.vpp = 2;
  EXPECT_EQ(finalize_job(d, make_cluster(two_nodes())).runtime.schedule,
            ScheduleKind::kInterleaved);
  d.vpp = 1;
  d.prefer_zero_bubble = true;
  EXPECT_EQ(finalize_job(d, make_cluster(two_nodes())).runtime.schedule, ScheduleKind::kZeroBubble);
  d.runtime.recompute.granularity = RecomputeGranularity::kFull;
  d.runtime.recompute.num_layers = 1;
  EXPECT_EQ(finalize_job(d, make_cluster(two_nodes())).runtime.schedule, ScheduleKind::k1F1B);
  d.schedule = ScheduleKind::kZeroBubble;  // stated: the rule refuses it
  EXPECT_EQ(broken_rule(d, make_cluster(two_nodes())), LayoutRule::kSplitBackwardRecompute);
}

// A named schedule without a VPP: V-shape schedules take 2, interleaved the smallest VPP that
// splits the layers (32 over PP 2: VPP 2), both recorded.
TEST(Builder, NamedScheduleWithoutVpp) {
  JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
  d.vpp.reset();
  d.schedule = ScheduleKind::kInterleaved;
  JobSpec j = finalize_job(d, make_cluster(two_nodes()));
  EXPECT_EQ(j.parallel.vpp, 2);
  EXPECT_EQ(j.parallel.stages.size(), 4u);
  ASSERT_NE(find_default(j, "vpp"), nullptr);
  d.schedule = ScheduleKind::kZbvGreedyHalf;
  EXPECT_EQ(finalize_job(d, make_cluster(two_nodes())).parallel.vpp, 2);
  // 30 layers over PP 2: VPP 2 gives 4 stages (30 % 4 != 0), VPP 3 gives 6 (30 % 6 == 0).
  ModelSpec m30 = testing::llama31_8b();
  m30.layers.resize(30);
  JobDraft d30 = make_draft(m30, two_nodes());
  d30.vpp.reset();
  d30.layer_split.allow_uneven = false;
  d30.schedule = ScheduleKind::kInterleaved;
  EXPECT_EQ(finalize_job(d30, make_cluster(two_nodes())).parallel.vpp, 3);
}

// Each rule is reported against the adapter's key and location of the field it names.
TEST(Builder, RulesNameTheAdaptersKey) {
  JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
  d.set_origin(DraftField::kTp, "tensor_model_parallel_size", {"exp.yaml", 12, 7});
  d.tp = 3;  // 32 heads % 3
  try {
    finalize_job(d, make_cluster(two_nodes()));
    FAIL() << "expected a rule";
  } catch (const JobRuleError& e) {
    EXPECT_EQ(e.rule(), LayoutRule::kTpHeads);
    EXPECT_EQ(e.field(), DraftField::kTp);
    EXPECT_EQ(e.key(), "tensor_model_parallel_size");
    EXPECT_EQ(e.where().file, "exp.yaml");
    EXPECT_EQ(e.where().line, 12);
  }
  d.tp = 2;
  d.global_batch_size = 6;  // MBS 1 x DP 4 = 4 does not divide 6
  EXPECT_EQ(broken_rule(d, make_cluster(two_nodes())), LayoutRule::kGbs);
  d.global_batch_size = 64;
  d.cp = 3;
  d.seq_length = 4095;
  ClusterRequest six = make_cluster(two_nodes());
  six.gpus_per_node = 6;  // 12 GPUs: TP 2 x PP 2 x CP 3 divides, 4095 % (2 x 3) != 0
  EXPECT_EQ(broken_rule(d, six), LayoutRule::kSeqCp);
  d.cp = 1;
  d.seq_length = 4096;
  d.ep = 2;  // no experts
  EXPECT_EQ(broken_rule(d, make_cluster(two_nodes())), LayoutRule::kNotMoe);
  d.ep = 1;
  d.vpp = 2;
  d.pp = 1;
  EXPECT_EQ(broken_rule(d, make_cluster(two_nodes())), LayoutRule::kScheduleNeedsPp);
}

// Stated layouts and first / last stage counts.
TEST(Builder, StatedLayoutsAndStageCounts) {
  JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
  d.vpp.reset();
  d.layer_split.kind = LayerSplit::Kind::kStated;
  // 4 stages over PP 2: VPP 2 derived; 8 + 8 + 8 + 8 = 32 layers.
  d.layer_split.stages = {{8, true, false, 0}, {8}, {8}, {8, false, true, 0}};
  JobSpec j = finalize_job(d, make_cluster(two_nodes()));
  EXPECT_EQ(j.parallel.vpp, 2);
  EXPECT_EQ(j.parallel.stages[3].first_layer, 24);
  d.layer_split.stages[3].decoder_layers = 7;  // 31 layers placed
  EXPECT_EQ(broken_rule(d, make_cluster(two_nodes())), LayoutRule::kLayerSplit);
  JobDraft f = make_draft(testing::llama31_8b(), {.pp = 4, .nodes = 1, .gbs = 64});
  f.layer_split.kind = LayerSplit::Kind::kFirstLast;
  f.layer_split.first_stage_layers = 5;
  f.layer_split.last_stage_layers = 3;  // 32 - 8 = 24 over 2 middle stages: 12 each
  j = finalize_job(f, make_cluster({.pp = 4}));
  EXPECT_EQ(j.parallel.stages[0].num_layers, 5);
  EXPECT_EQ(j.parallel.stages[1].num_layers, 12);
  EXPECT_EQ(j.parallel.stages[3].num_layers, 3);
  // Balanced without permission to be uneven: 32 layers over PP 3.
  JobDraft b = make_draft(testing::llama31_8b(), {.pp = 3, .nodes = 3, .gpn = 1, .gbs = 3});
  b.layer_split.allow_uneven = false;
  EXPECT_EQ(broken_rule(b, make_cluster({.pp = 3, .nodes = 3, .gpn = 1})), LayoutRule::kLayers);
  b.layer_split.allow_uneven = true;  // 11 + 11 + 10, recorded
  j = finalize_job(b, make_cluster({.pp = 3, .nodes = 3, .gpn = 1}));
  EXPECT_EQ(j.parallel.stages[2].num_layers, 10);
  ASSERT_NE(find_default(j, "layer_split"), nullptr);
}

// World sizes are computed in 64 bits and bounded: 3e8 nodes x 8 GPUs is refused, not wrapped.
TEST(Builder, WorldSizeIsBoundedIn64Bits) {
  JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
  ClusterRequest c = make_cluster(two_nodes());
  c.nodes = 300000000;
  EXPECT_EQ(broken_rule(d, c), LayoutRule::kWorldSize);
  c.nodes = 2;
  d.tp = static_cast<int>(kMaxCount) + 1;
  EXPECT_EQ(broken_rule(d, c), LayoutRule::kSizes);
  EXPECT_EQ(data_parallel_sizes(std::int64_t{1} << 40, 8, 16, 1, 8, 1).dp, std::int64_t{1} << 33);
}

// Minimum nodes when none are stated: lcm(TP x PP x CP, ETP x EP x PP) GPUs. Mixtral with PP 4,
// EP 8, ETP 1: lcm(4, 32) = 32 GPUs = 4 nodes of 8.
TEST(Builder, MinimumNodes) {
  JobDraft d = make_draft(testing::mixtral_8x7b(), {.pp = 4, .ep = 8, .gbs = 32});
  d.etp = 1;
  ClusterRequest c = make_cluster({});
  c.nodes.reset();
  const JobSpec j = finalize_job(d, c);
  EXPECT_EQ(j.cluster.nodes, 4);
  EXPECT_EQ(j.expert_dp(), 1);  // 32 / (1 x 8 x 4)
  ASSERT_NE(find_default(j, "nodes"), nullptr);
}

// ETP when unstated is Megatron's: TP (arguments.py:587-588, MG19), with no fall-back. TP 2 x
// EP 8 x PP 1 = 16 GPUs does not divide a world of 8 and is refused, as Megatron refuses it; a
// stated ETP 1 is honoured (expert DP 8 / (1 x 8) = 1); EP 4 fits (ETP 2 x 4 = 8), recorded with
// the megatron-lm profile. A profile listing [tp, 1] (`unknown`) still takes its second choice.
TEST(Builder, EtpDefaultsToTpAsMegatronDoes) {
  JobDraft d = make_draft(testing::mixtral_8x7b(), {.tp = 2, .ep = 8, .gbs = 32});
  d.etp.reset();
  EXPECT_THROW(finalize_job(d, make_cluster({})), JobRuleError);
  d.etp = 1;
  const JobSpec stated = finalize_job(d, make_cluster({}));
  EXPECT_EQ(stated.parallel.etp, 1);
  EXPECT_EQ(stated.expert_dp(), 1);
  JobDraft fits = make_draft(testing::mixtral_8x7b(), {.tp = 2, .ep = 4, .gbs = 32});
  fits.etp.reset();
  const JobSpec j = finalize_job(fits, make_cluster({}));
  EXPECT_EQ(j.parallel.etp, 2);
  const AppliedDefault* a = find_default(j, "etp");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->source, "megatron-lm");
  JobDraft other = make_draft(testing::mixtral_8x7b(), {.tp = 2, .ep = 8, .gbs = 32});
  other.etp.reset();
  other.profile = load_framework_profile(default_data_dir() + "/frameworks/unknown.yaml");
  const JobSpec fallback = finalize_job(other, make_cluster({}));
  EXPECT_EQ(fallback.parallel.etp, 1);
  ASSERT_NE(find_default(fallback, "etp"), nullptr);
  EXPECT_NE(find_default(fallback, "etp")->reason.find("other documented choice"),
            std::string::npos);
}

// Unstated behaviour comes from the profile and is recorded with it.
TEST(Builder, ProfileDefaultsAreRecordedWithTheirProfile) {
  JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
  d.distributed_optimizer.reset();
  d.sequence_parallel.reset();
  d.attention_dropout.reset();
  d.profile = load_framework_profile(default_data_dir() + "/frameworks/primus.yaml");
  const JobSpec j = finalize_job(d, make_cluster(two_nodes()));
  EXPECT_TRUE(j.parallel.distributed_optimizer);     // primus.yaml
  EXPECT_TRUE(j.parallel.sequence_parallel);         // with_tp, TP 2
  EXPECT_DOUBLE_EQ(j.model.attention_dropout, 0.1);  // inherited from megatron-lm.yaml
  for (const char* key : {"distributed_optimizer", "sequence_parallel", "attention_dropout"}) {
    const AppliedDefault* a = find_default(j, key);
    ASSERT_NE(a, nullptr) << key;
    EXPECT_EQ(a->source, "primus") << key;
    EXPECT_FALSE(a->reason.empty()) << key;
  }
}

// DP and expert DP are not stored: a job moved to another world re-derives them, so no writer can
// leave them stale. 4 nodes x 8 = 32 GPUs: DP 32 / (TP 2 x PP 2) = 8, expert DP 32 / (ETP 2 x EP 1
// x PP 2) = 8; 64 / (1 x 8) = 8 microbatches.
TEST(Builder, DataParallelFollowsTheWorld) {
  JobSpec j = testing::make_job(testing::llama31_8b(), two_nodes());
  ASSERT_EQ(j.dp(), 4);
  j.cluster.nodes = 4;
  EXPECT_EQ(j.dp(), 8);
  EXPECT_EQ(j.expert_dp(), 8);
  EXPECT_EQ(j.num_microbatches(), 8);
  EXPECT_EQ(j.fsdp_shard_size(), 8);
  j.runtime.accumulation_rounds = 2;
  EXPECT_EQ(j.microbatches_per_flush(), 4);
  j.cluster.gpus_per_node = 3;  // 4 x 3 = 12 GPUs: DP 12 / 4 = 3
  EXPECT_EQ(j.dp(), 3);
  j.cluster.nodes = 1;  // 3 GPUs: not a multiple of TP x PP = 4, no whole DP
  EXPECT_EQ(j.dp(), 0);
  EXPECT_THROW(check_job_invariants(j), InputError);
}

// The projections refuse a malformed job instead of repairing it.
TEST(Invariants, MalformedJobsAreRefused) {
  const JobSpec good = testing::make_job(testing::llama31_8b(), two_nodes());
  auto refused = [](JobSpec j) {
    EXPECT_THROW(project_memory(j), InputError);
    EXPECT_THROW(check_job_invariants(j), InputError);
  };
  JobSpec j = good;
  j.parallel.stages.pop_back();  // stages != PP x VPP
  refused(j);
  j = good;
  j.cluster.gpus_per_node = 7;  // 14 GPUs: TP 2 x PP 2 does not divide the world (DP 0)
  refused(j);
  j = good;
  j.parallel.vpp = 2;  // 1F1B with two chunks (and the stages no longer match)
  refused(j);
  j = good;
  j.runtime.recompute.granularity = RecomputeGranularity::kSelective;  // no modules
  refused(j);
  j = good;
  j.runtime.global_batch_size = 6;
  refused(j);
}

// Both families have providers in every stage; a recommendation job whose embedding plan does
// not cover its tables (not made by the job builder) is refused, not repaired.
TEST(Families, RecommendationIsModelledAndNeedsItsPlan) {
  for (ProjectionStage s :
       {ProjectionStage::kAccounting, ProjectionStage::kMemory, ProjectionStage::kWorkload}) {
    EXPECT_TRUE(family_modelled(ModelFamily::kRecommendation, s));
    EXPECT_TRUE(family_modelled(ModelFamily::kDecoderLm, s));
  }
  JobSpec j = testing::make_job(testing::llama31_8b(), two_nodes());
  j.model.family = ModelFamily::kRecommendation;
  j.model.recommendation.tables.push_back({"t0", 1000, 64, 1, EmbeddingPooling::kSum});
  EXPECT_THROW(project_memory(j), InputError);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// The overlapped reduction's gradient bucket comes from the framework's profile and is recorded:
// Megatron-Core's max(40M, 1M x DP) parameters, DeepSpeed's 5e8-element reduce bucket, none for
// MaxText (XLA schedules the reduction: one bucket per chunk); a stated size is not replaced.
TEST(Builder, GradientBucketFromTheProfile) {
  auto build = [](const std::string& profile, std::int64_t stated) {
    JobDraft d = testing::make_draft(testing::llama31_8b(), {.gbs = 64});
    d.profile = load_framework_profile(default_data_dir() + "/frameworks/" + profile + ".yaml");
    d.overlap_grad_reduce = true;
    d.parallel.ddp_bucket_size_bytes = stated;
    return finalize_job(d, testing::make_cluster({.gbs = 64}));
  };
  const JobSpec mg = build("megatron-lm", 0);
  EXPECT_EQ(mg.parallel.ddp_bucket_min_params, 40000000);
  EXPECT_EQ(mg.parallel.ddp_bucket_params_per_dp, 1000000);
  const AppliedDefault* rec = find_default(mg, "ddp_bucket_size");
  ASSERT_NE(rec, nullptr);
  EXPECT_NE(rec->reason.find("distributed_data_parallel.py"), std::string::npos) << rec->reason;
  const JobSpec ds = build("deepspeed", 0);
  EXPECT_EQ(ds.parallel.ddp_bucket_min_params, 500000000);
  EXPECT_EQ(ds.parallel.ddp_bucket_params_per_dp, 0);
  const JobSpec mx = build("maxtext", 0);
  EXPECT_EQ(mx.parallel.ddp_bucket_min_params, 0);
  EXPECT_EQ(find_default(mx, "ddp_bucket_size"), nullptr);
  EXPECT_EQ(find_default(build("megatron-lm", 1 << 26), "ddp_bucket_size"), nullptr);
}

// The host's issue time is modelled where a profile measured it (Megatron-LM: 8 us per eager op,
// docs/host.md) and flagged where it did not: torchtitan and AutoModel set no host costs, so the
// job says "not modelled" instead of a silent zero; a compiled step (XLA) issues one program and
// gets no flag.
TEST(Builder, HostIssueCostsModelledOrFlagged) {
  const auto built = [](const std::string& profile, bool compiled) {
    JobDraft d = make_draft(testing::llama31_8b(), {.gbs = 64});
    d.profile = load_framework_profile(default_data_dir() + "/frameworks/" + profile + ".yaml");
    d.runtime.whole_step_compiled = compiled;
    return finalize_job(d, make_cluster({.gbs = 64}));
  };
  const JobSpec megatron = built("megatron-lm", false);
  EXPECT_DOUBLE_EQ(megatron.runtime.host_dispatch.op_s, 8.0e-6);
  ASSERT_NE(find_default(megatron, "host_dispatch"), nullptr);
  for (const char* eager : {"torchtitan", "nemo-automodel"}) {
    const JobSpec j = built(eager, false);
    EXPECT_FALSE(j.runtime.host_dispatch.modelled()) << eager;
    const AppliedDefault* a = find_default(j, "host_dispatch");
    ASSERT_NE(a, nullptr) << eager;
    EXPECT_EQ(a->value, "not modelled");
    EXPECT_EQ(a->source, eager);
  }
  EXPECT_EQ(find_default(built("maxtext", true), "host_dispatch"), nullptr);
}

// FP8 weights (fp8_param_gather) follow the recipe where the input does not say: NeMo / Megatron-
// Bridge keep delayed- and tensorwise-scaled weights in FP8 and MXFP8 ones in bf16
// (mixed_precision.py, NM3), Megatron-LM none (store_true); a stated value wins. With FP8 weights
// the first pipeline rank's weights shrink by one byte per GEMM parameter: 16 Llama 3.1 8B layers
// of 218,103,808 (q, k, v, o, w1, w3, w2), halved by TP 2: 1,744,830,464 bytes.
TEST(Builder, Fp8WeightsFollowTheRecipeInTheProfile) {
  const auto built = [](const std::string& profile, Fp8Recipe recipe, std::optional<bool> stated) {
    JobDraft d = make_draft(testing::llama31_8b(), two_nodes());
    d.profile = load_framework_profile(default_data_dir() + "/frameworks/" + profile + ".yaml");
    d.fp8 = true;
    d.fp8_recipe = recipe;
    d.fp8_param = stated;
    return finalize_job(d, make_cluster(two_nodes()));
  };
  const JobSpec nemo = built("nemo", Fp8Recipe::kDelayed, std::nullopt);
  EXPECT_TRUE(nemo.runtime.precision.fp8_param);
  const AppliedDefault* a = find_default(nemo, "fp8_param_gather");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->value, "true");
  EXPECT_NE(a->reason.find("NM3"), std::string::npos) << a->reason;
  EXPECT_TRUE(built("nemo", Fp8Recipe::kTensorwise, std::nullopt).runtime.precision.fp8_param);
  EXPECT_FALSE(built("nemo", Fp8Recipe::kMxfp8, std::nullopt).runtime.precision.fp8_param);
  EXPECT_FALSE(built("nemo", Fp8Recipe::kDelayed, false).runtime.precision.fp8_param);
  EXPECT_EQ(find_default(built("nemo", Fp8Recipe::kDelayed, false), "fp8_param_gather"), nullptr);
  const JobSpec mg = built("megatron-lm", Fp8Recipe::kDelayed, std::nullopt);
  EXPECT_FALSE(mg.runtime.precision.fp8_param);
  EXPECT_TRUE(built("megatron-lm", Fp8Recipe::kDelayed, true).runtime.precision.fp8_param);
  // Cross-module: the memory model's weights on the first pipeline rank (16 layers, TP 2).
  const auto weights = static_cast<std::size_t>(MemoryComponent::kWeights);
  const double w_fp8 = project_memory(nemo).ranks[0].point[weights];
  const double w_bf16 = project_memory(mg).ranks[0].point[weights];
  EXPECT_NEAR(w_bf16 - w_fp8, 16.0 * 218103808.0 / 2.0, 1e6);
}

}  // namespace
}  // namespace projector
