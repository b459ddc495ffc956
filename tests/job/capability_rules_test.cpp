// What a model cannot run is a rule of the job builder (job/rules.h), not an adapter check: a
// layout stated in the config, by a command-line flag (--tp / --cp / --pp), by the Primus
// environment (PRIMUS_CP) or by the sweep is refused alike, naming whoever stated it. Before these
// rules lived in the Megatron and torchtitan adapters, which ran before the overrides, so
// `--cp 2` on a GDN model projected a layout the framework cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/sweep/sweep.h"
#include "support/config_text.h"

namespace projector {
namespace {

const std::string kExamples =
    std::string(PROJECTOR_TEST_DATA_DIR) + "/primus/examples/megatron/configs/";

LoadRequest primus_request(const std::string& rel) {
  LoadRequest r = testing::bundled_request(kExamples + rel, "mi300x");
  r.primus_path = std::string(PROJECTOR_TEST_DATA_DIR) + "/primus";
  return r;
}

// The refusal of `rel` once `edit` changed the request; empty when it loads.
std::string refusal(const std::string& rel, const std::function<void(LoadRequest&)>& edit) {
  LoadRequest r = primus_request(rel);
  edit(r);
  try {
    load_job(r);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct Case {
  const char* rel;
  const char* layer_words;  // what the refusal names
};

const Case kNoCp[] = {
    {"MI300X/zebra_llama_1B_gdn-pretrain.yaml", "GDN / KDA"},
    {"MI355X/kimi_k3-BF16-curve.yaml", "GDN / KDA"},
    {"MI355X/lfm2_8B_A1B-BF16-pretrain.yaml", "short-conv"},
    {"MI300X/diffusion/flux_535m_pretrain.yaml", "Flux"},
};

TEST(CapabilityRules, ContextParallelRefusedWhoeverStatesIt) {
  for (const Case& c : kNoCp) {
    ASSERT_EQ(refusal(c.rel, [](LoadRequest&) {}), "") << c.rel;
    const std::string cli = refusal(c.rel, [](LoadRequest& r) { r.cli.cp = 2; });
    EXPECT_TRUE(has(cli, "--cp")) << c.rel << ": " << cli;
    EXPECT_TRUE(has(cli, c.layer_words)) << c.rel << ": " << cli;
    const std::string env = refusal(c.rel, [](LoadRequest& r) {
      r.env = fixed_environment({{"PRIMUS_CP", "2"}});
    });
    EXPECT_TRUE(has(env, "PRIMUS_CP")) << c.rel << ": " << env;
    const std::string set =
        refusal(c.rel, [](LoadRequest& r) { r.set_overrides = {"context_parallel_size=2"}; });
    EXPECT_TRUE(has(set, "context_parallel_size")) << c.rel << ": " << set;
  }
}

TEST(CapabilityRules, TensorAndPipelineLimitsFromTheCommandLine) {
  // KDA and LFM2's short conv run at TP 1 only; Flux on TP 1 and one stage.
  for (const char* rel : {"MI355X/kimi_k3-BF16-curve.yaml", "MI355X/lfm2_8B_A1B-BF16-pretrain.yaml",
                          "MI300X/diffusion/flux_535m_pretrain.yaml"}) {
    const std::string tp = refusal(rel, [](LoadRequest& r) { r.cli.tp = 2; });
    EXPECT_TRUE(has(tp, "--tp") && (has(tp, "TP 1") || has(tp, "not modelled")))
        << rel << ": " << tp;
  }
  const std::string pp =
      refusal("MI300X/diffusion/flux_535m_pretrain.yaml", [](LoadRequest& r) { r.cli.pp = 2; });
  EXPECT_TRUE(has(pp, "--pp") && has(pp, "one pipeline stage")) << pp;
}

// The sweep reads the same rules: a CP axis over a GDN model enumerates no CP > 1 layout.
TEST(CapabilityRules, TheSweepObeysThem) {
  const JobSpec job = load_job(primus_request("MI300X/zebra_llama_1B_gdn-pretrain.yaml"));
  sweep::Candidate c{
      .tp = 1, .pp = 1, .vpp = 1, .cp = 2, .ep = 1, .etp = 1, .mbs = 1, .recompute = {}};
  c.mbs = job.runtime.micro_batch_size;
  EXPECT_EQ(sweep::check_legality(job, c, {}), LayoutRule::kCpUnsupported);
  c.cp = 1;
  EXPECT_EQ(sweep::check_legality(job, c, {}), LayoutRule::kLegal);
}

// The memory remedies obey the builder: a Megatron job whose layers do not divide by 2 x PP gets
// no "twice the stages" remedy (Megatron would refuse that split), while the same job with
// layers that divide gets it.
TEST(CapabilityRules, RemediesNeverSuggestARefusedSplit) {
  auto remedies = [](int layers) {
    LoadRequest r = primus_request("MI300X/llama3.1_70B-BF16-pretrain.yaml");
    // No FSDP: the weights and optimizer states dominate, so twice the stages halves the peak.
    r.set_overrides = {"num_layers=" + std::to_string(layers), "use_torch_fsdp2=false",
                       "pipeline_model_parallel_size=4"};
    r.cli.nodes = 2;  // 16 GPUs: PP 4 x DP 4
    const JobSpec job = load_job(r);
    EXPECT_EQ(job.dp() % 2, 0);
    EXPECT_FALSE(job.parallel.uneven_layers_allowed);
    std::string out;
    for (const MemoryRemedy& m : project_memory(job).remedies) out += m.change + "\n";
    return out;
  };
  const std::string divides = remedies(80);  // 80 % 8 == 0
  const std::string refused = remedies(84);  // 84 % 4 == 0, 84 % 8 != 0
  EXPECT_TRUE(has(divides, "pipeline parallel 8")) << divides;
  EXPECT_FALSE(has(refused, "pipeline parallel 8")) << refused;
  EXPECT_FALSE(refused.empty());  // other remedies still apply
}

// One function assembles the facts of a built job; the purpose decides the split policy.
TEST(CapabilityRules, FactsOfABuiltJob) {
  LoadRequest r = primus_request("MI300X/llama3.1_70B-BF16-pretrain.yaml");
  r.set_overrides = {"decoder_first_pipeline_num_layers=20", "pipeline_model_parallel_size=4"};
  const JobSpec job = load_job(r);  // 20 + 3 x 20, stated
  EXPECT_TRUE(job.parallel.stages_stated);
  const RuleFacts stated = rule_facts(job, RulePurpose::kStated);
  const RuleFacts restaged = rule_facts(job, RulePurpose::kRestage);
  const RuleFacts search = rule_facts(job, RulePurpose::kSearch, 64);
  EXPECT_TRUE(stated.stated_stages);
  EXPECT_FALSE(restaged.stated_stages);
  EXPECT_FALSE(restaged.search);
  EXPECT_TRUE(search.search);
  EXPECT_EQ(search.world, 64);
  EXPECT_EQ(stated.world, job.cluster.world_size());
  EXPECT_EQ(check_layout(stated, layout_choice(job)), LayoutRule::kLegal);
  // Re-laid out balanced, 80 layers do not divide over 4 x 3 virtual stages; as built (stated
  // stages) the split is the layout's own business (kLayerSplit, checked by the builder).
  LayoutChoice three = layout_choice(job);
  three.vpp = 3;
  EXPECT_EQ(check_layout(restaged, three), LayoutRule::kLayers);
  EXPECT_NE(check_layout(stated, three), LayoutRule::kLayers);
}

// Megatron's combined 1F1B (overlap_moe_expert_parallel_comm) asserts EP > 1 and, with PP > 1,
// virtual stages: a rule of the set, so a re-layout (the sweep, a remedy) of such a job is held to
// it as the stated job is (before, the builder checked it on the stated job only).
TEST(CapabilityRules, EpOverlapNeedsExpertParallelismAndVirtualStages) {
  LoadRequest r = testing::bundled_request(
      std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../examples/deepseek_v3-BF16-pretrain.yaml",
      "mi300x");
  r.set_overrides = {"overlap_moe_expert_parallel_comm=true", "recompute_granularity=null"};
  r.cli.enable_deepep = true;  // the flex dispatcher (the allgather one is refused first)
  const JobSpec job = load_job(r);
  ASSERT_TRUE(combined_forward_backward(job));
  // (Its 61 layers sit on a stated layout, so the stated facts skip the balanced-split rule.)
  const RuleFacts facts = rule_facts(job, RulePurpose::kStated);
  EXPECT_TRUE(facts.moe_overlap);
  EXPECT_FALSE(facts.allgather_dispatcher);
  EXPECT_EQ(check_layout(facts, layout_choice(job)), LayoutRule::kLegal);
  LayoutChoice no_ep = layout_choice(job);
  no_ep.ep = 1;
  EXPECT_EQ(check_layout(facts, no_ep), LayoutRule::kMoeOverlapLayout);
  LayoutChoice one_chunk = layout_choice(job);
  ASSERT_GT(one_chunk.pp, 1);
  one_chunk.vpp = 1;
  one_chunk.schedule = ScheduleKind::k1F1B;
  EXPECT_EQ(check_layout(facts, one_chunk), LayoutRule::kMoeOverlapLayout);
  RuleFacts allgather = facts;
  allgather.allgather_dispatcher = true;
  EXPECT_EQ(check_layout(allgather, layout_choice(job)), LayoutRule::kMoeOverlapDispatcher);
  // Stated on the command line, the refusal names the overlap flag and says why.
  r.cli.ep = 1;
  try {
    load_job(r);
    FAIL() << "EP 1 with the EP overlap was accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "overlap_moe_expert_parallel_comm")) << e.what();
    EXPECT_TRUE(has(e.what(), "EP > 1")) << e.what();
  }
}

// A model with GDN / KDA or Mamba-2 layers says when their chunked kernels have no kernel
// measurement on the job's part behind them; on an AMD part it also gives the held-out Primus
// runs' verdict (an upper bound). Mamba-2's SSD scan has a rate fitted on mamba_ssm's rows on the
// H200 (lent to the H100), so a Mamba hybrid on an H100 is not flagged; GDN still is. A
// transformer says neither.
TEST(CapabilityRules, UnmeasuredRecurrentKernelsAreFlagged) {
  auto flagged = [](const JobSpec& job, const char* words) {
    return std::any_of(job.warnings.begin(), job.warnings.end(),
                       [&](const std::string& w) { return has(w, words); });
  };
  for (const char* rel :
       {"MI300X/zebra_llama_1B_gdn-pretrain.yaml", "MI300X/zebra_llama_1B-pretrain.yaml"}) {
    const JobSpec amd = load_job(primus_request(rel));
    EXPECT_TRUE(flagged(amd, "no kernel measurement on mi300x")) << rel;
    EXPECT_TRUE(flagged(amd, "upper bound")) << rel;
    LoadRequest r = primus_request(rel);
    r.hardware = "h100_sxm";
    const JobSpec nvidia = load_job(r);
    const bool gdn = std::string(rel).find("gdn") != std::string::npos;
    ASSERT_GT(nvidia.cluster.accelerator.calibration.ssd_scan_fraction.value, 0.0);
    EXPECT_EQ(flagged(nvidia, "no kernel measurement"), gdn) << rel;
    EXPECT_FALSE(flagged(nvidia, "upper bound")) << rel;
  }
  const JobSpec llama = load_job(primus_request("MI300X/llama3.1_8B-BF16-pretrain.yaml"));
  EXPECT_FALSE(flagged(llama, "no kernel measurement"));
}

}  // namespace
}  // namespace projector
