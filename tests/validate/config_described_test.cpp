// Runs described by their framework config alone (`description: config`): measurements published
// as comments in a config (Primus' "max batch" notes) or in a guide that names the config.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/perf/perf.h"
#include "projector/validate/validate.h"
#include "support/flat_megatron_job.h"
#include "support/temp_dir.h"
#include "validate/run_config.h"

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

using testing::kFlatMegatronJob;
constexpr const char* kJob = kFlatMegatronJob;

std::string entry(const std::string& id, const std::string& body) {
  return "- id: " + id + "\n  framework: Megatron-LM\n" + body;
}

std::string first_error(const RunEntry& e) {
  return e.errors.empty() ? "" : e.errors.front();
}

TEST(ConfigDescribed, TheEntryIsCheckedAtItsLine) {
  const testing::TempDir dir;
  dir.write("job.yaml", kJob);
  const std::string runs = dir.write(
      "runs.yaml", entry("a", "  description: config\n  config: job.yaml\n  training: {tp: 2}\n") +
                       entry("b", "  description: prose\n  config: job.yaml\n") +
                       entry("c", "  description: config\n") +
                       entry("d",
                             "  description: config\n  config: job.yaml\n"
                             "  measured: {peak_memory_pct: 120}\n") +
                       entry("e", "  description: config\n  config: job.yaml\n"));
  const std::vector<RunEntry> e = load_runs(runs);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_NE(first_error(e[0]).find("training: a run described by its config"), std::string::npos)
      << first_error(e[0]);
  EXPECT_NE(first_error(e[0]).find("(line 5)"), std::string::npos) << first_error(e[0]);
  EXPECT_NE(first_error(e[1]).find("description: the only description"), std::string::npos);
  EXPECT_NE(first_error(e[2]).find("without a config"), std::string::npos) << first_error(e[2]);
  EXPECT_NE(first_error(e[3]).find("peak_memory_pct: more than 100 %"), std::string::npos)
      << first_error(e[3]);
  EXPECT_TRUE(e[4].ok()) << first_error(e[4]);
  EXPECT_TRUE(e[4].described_by_config);
}

// The config is the run: the prediction is the CLI's for the config and args; a TFLOP/s in a count
// the tool cannot redo is not compared, the step time the file derived from it is; a memory
// percentage is that share of the catalogue's HBM; the run counts in the statistics.
TEST(ConfigDescribed, TheConfigIsProjectedAndComparedAsTheRun) {
  const testing::TempDir dir;
  const std::string job = dir.write("job.yaml", kJob);
  const std::string runs = dir.write("runs.yaml", entry("r", R"(  description: config
  source: {title: 'a config comment'}
  config: job.yaml
  args: {hardware: h100_sxm, nodes: 1, gpus-per-node: 8}
  measured:
    tflops_per_gpu: 400
    flop_counting: 'every layer counted as dense; not re-expressible from the job'
    peak_memory_pct: 50
    memory_metric: 'Primus usage_ratio'
  derived: {step_time_s: 2.0}
)"));
  const std::vector<RunEntry> entries = load_runs(runs);
  ASSERT_TRUE(entries[0].ok()) << first_error(entries[0]);
  LoadRequest req;
  req.config_path = job;
  req.data_dir = default_data_dir();
  req.hardware = "h100_sxm";
  req.cli.nodes = 1;
  req.cli.gpus_per_node = 8;
  const JobSpec direct_job = load_job(req);
  const PerfReport direct = project_performance(direct_job);

  const ValidationReport report = validate(entries, make_default_project_fn());
  const RunResult& r = report.runs[0];
  ASSERT_EQ(r.status, "ok") << r.reason;
  EXPECT_FALSE(r.config_path);  // no second reading
  EXPECT_NEAR(r.predicted.tokens_per_sec_per_gpu, direct.tokens_per_s_per_gpu,
              1e-9 * direct.tokens_per_s_per_gpu);
  for (const auto& m : r.metrics) EXPECT_NE(m.metric, "tflops_per_gpu");
  ASSERT_TRUE(r.throughput_error_pct);
  EXPECT_NE(r.throughput_basis.find("step_time_s (derived"), std::string::npos)
      << r.throughput_basis;
  EXPECT_NEAR(*r.throughput_error_pct, 100.0 * (2.0 / r.predicted.step_time_s - 1.0), 1e-6);
  const double hbm_gib = direct_job.cluster.accelerator.hbm_bytes / kGiB;
  bool memory = false;
  for (const auto& m : r.metrics) {
    if (m.metric != "peak_memory_gib") continue;
    memory = true;
    EXPECT_NEAR(m.measured, 0.5 * hbm_gib, 1e-9);
  }
  EXPECT_TRUE(memory);
  EXPECT_TRUE(r.excluded.empty());
  EXPECT_EQ(report.summary.throughput.count, 1);
}

// Megatron's transformer_flops (MG training.py at Primus' pinned d3528a2) for a model whose
// sublayers it counts as dense attention + MLP layers: FLOPs per token, forward and backward.
double dense_count_per_token(const YAML::Node& preset, int seq, double padded_vocab) {
  const double h = preset["hidden_size"].as<double>();
  const double heads = preset["num_attention_heads"].as<double>();
  const double layers = preset["num_layers"].as<double>();
  const double ffn = preset["ffn_hidden_size"] ? preset["ffn_hidden_size"].as<double>() : 4 * h;
  const bool swiglu = preset["swiglu"] && preset["swiglu"].as<bool>();
  const double q = h;  // kv_channels (h / heads) x heads; no GQA in these presets
  EXPECT_FALSE(preset["group_query_attention"] && preset["group_query_attention"].as<bool>());
  EXPECT_FALSE(preset["kv_channels"]) << "kv_channels = h / heads assumed";
  (void)heads;
  const double attention = 6.0 * (h * 3.0 * q + q * seq + q * h);
  const double mlp = 6.0 * h * ffn * (swiglu ? 3.0 : 2.0);
  return layers * (attention + mlp) + 6.0 * h * padded_vocab;
}

// The shipped file: every derived throughput is the logged TFLOP/s over Megatron's dense count of
// the config's model (the vocabulary padded as the loaded job pads it), and the step time follows
// from it; where a run also logged its tokens/s (the guides), the count reproduces the TFLOP/s.
TEST(ShippedPrimusConfigRuns, DerivedThroughputIsMegatronsDenseCount) {
  const std::string file = default_data_dir() + "/validation/primus_config_runs.yaml";
  const std::vector<RunEntry> runs = load_runs(file);
  ASSERT_GE(runs.size(), 7u);
  int checked = 0;
  for (const RunEntry& e : runs) {
    ASSERT_TRUE(e.ok()) << first_error(e);
    ASSERT_TRUE(e.described_by_config && e.config) << e.id;
    if (!e.exclude_from_statistics.empty()) continue;  // Primus' own MLA-hybrid count
    const JobSpec job = load_job(validate_detail::load_request_of(*e.config, default_data_dir()));
    const YAML::Node experiment = YAML::LoadFile(e.config->path);
    const std::string preset = experiment["modules"]["pre_trainer"]["model"].as<std::string>();
    const YAML::Node model =
        YAML::LoadFile((std::filesystem::path(e.config->path).parent_path() / preset).string());
    const int seq = job.runtime.seq_length;
    const double vocab = static_cast<double>(padded_vocab_size(job.model, job.parallel.tp));
    const double per_token = dense_count_per_token(model, seq, vocab);
    ASSERT_TRUE(e.measured.tflops_per_gpu) << e.id;
    const double tokens = *e.measured.tflops_per_gpu * 1e12 / per_token;
    if (e.derived.tokens_per_sec_per_gpu) {
      EXPECT_NEAR(*e.derived.tokens_per_sec_per_gpu, tokens, 1e-4 * tokens) << e.id;
      ASSERT_TRUE(e.derived.step_time_s);
      const double step = static_cast<double>(job.tokens_per_iteration()) / (tokens * 8.0);
      EXPECT_NEAR(*e.derived.step_time_s, step, 1e-3 * step) << e.id;
    } else {
      ASSERT_TRUE(e.measured.tokens_per_sec_per_gpu) << e.id;
      EXPECT_NEAR(*e.measured.tokens_per_sec_per_gpu * per_token / 1e12, *e.measured.tflops_per_gpu,
                  0.002 * *e.measured.tflops_per_gpu)
          << e.id;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace projector
