// The user's path of `validate`: a published run's own framework config, projected through its
// adapter exactly as `projector performance -c CONFIG` would, beside the free-text reading.
#include "validate/run_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/perf/perf.h"
#include "projector/util/error.h"
#include "projector/validate/validate.h"
#include "support/cli_runner.h"
#include "support/flat_megatron_job.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using testing::kFlatMegatronJob;
constexpr const char* kJob = kFlatMegatronJob;

// A run that states little besides its measurement and its config.
std::string run_entry(const std::string& id, const std::string& config_lines) {
  return "- id: " + id +
         "\n  framework: Megatron-LM\n  hardware: {accelerator: NVIDIA H100 SXM, count: 8, "
         "per_node: 8}\n  measured: {tokens_per_sec_per_gpu: 100000}\n" +
         config_lines;
}

// The config is loaded and projected as the CLI does: the prediction equals a direct load of the
// same request, and equals what `projector performance` prints for the same flags; the error is
// predicted / measured - 1.
TEST(ConfigPath, ProjectsTheConfigAsTheCliWould) {
  const testing::TempDir dir;
  const std::string job = dir.write("configs/job.yaml", kJob);
  const std::string runs = dir.write(
      "runs.yaml", run_entry("r1",
                             "  config: configs/job.yaml\n  args: {hardware: h100_sxm, nodes: 1, "
                             "gpus-per-node: 8}\n"));
  const std::vector<RunEntry> entries = load_runs(runs);
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_TRUE(entries[0].ok()) << entries[0].errors.front();
  ASSERT_TRUE(entries[0].config);
  EXPECT_EQ(std::filesystem::path(entries[0].config->path), std::filesystem::path(job));

  LoadRequest req;
  req.config_path = job;
  req.data_dir = default_data_dir();
  req.hardware = "h100_sxm";
  req.cli.nodes = 1;
  req.cli.gpus_per_node = 8;
  const double direct = project_performance(load_job(req)).tokens_per_s_per_gpu;
  ASSERT_GT(direct, 0.0);

  const ValidationReport report = validate(entries, make_default_project_fn());
  ASSERT_TRUE(report.runs[0].config_path);
  const RunResult::ConfigPath& c = *report.runs[0].config_path;
  EXPECT_EQ(c.status, "ok") << c.reason;
  EXPECT_NEAR(c.predicted.tokens_per_sec_per_gpu, direct, 1e-9 * direct);
  ASSERT_TRUE(c.throughput_error_pct);
  EXPECT_NEAR(*c.throughput_error_pct, 100.0 * (direct / 100000.0 - 1.0), 1e-6);

  const std::string json = dir.path() + "/perf.json";
  const testing::CliResult cli = testing::run_cli("performance -c " + job +
                                                  " --hardware h100_sxm --nodes 1 "
                                                  "--gpus-per-node 8 --json " +
                                                  json);
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  EXPECT_NEAR(j["results"]["tokens_per_s_per_gpu"].get<double>(), direct, 1e-6 * direct);

  const ConfigPathSummary& s = report.summary.config_path;
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(s.compared, 1);
  EXPECT_EQ(s.throughput.count, 1);
}

// A bad option is an error of the entry at its line, with the nearest option named; args without
// a config, and a config that does not exist, are errors too.
TEST(ConfigPath, ArgsAreCheckedAtTheirLine) {
  const testing::TempDir dir;
  dir.write("job.yaml", kJob);
  const std::string runs = dir.write(
      "runs.yaml", run_entry("r1", "  config: job.yaml\n  args:\n    gpus_per_node: 8\n") +
                       run_entry("r2", "  args: {nodes: 2}\n") +
                       run_entry("r3", "  config: missing.yaml\n"));
  const std::vector<RunEntry> entries = load_runs(runs);
  ASSERT_EQ(entries.size(), 3u);
  ASSERT_FALSE(entries[0].ok());
  EXPECT_NE(entries[0].errors[0].find("args.gpus_per_node"), std::string::npos);
  EXPECT_NE(entries[0].errors[0].find("did you mean 'gpus-per-node'"), std::string::npos);
  EXPECT_NE(entries[0].errors[0].find("(line 7)"), std::string::npos) << entries[0].errors[0];
  ASSERT_FALSE(entries[1].ok());
  EXPECT_NE(entries[1].errors[0].find("args without a config"), std::string::npos);
  ASSERT_FALSE(entries[2].ok());
  EXPECT_NE(entries[2].errors[0].find("no such file"), std::string::npos);
}

// A value the loader refuses (here a node count that is not a number, then a config key that is
// not an integer) fails the config path with file, line and key; the free-text result is the one
// the run gets without a config.
TEST(ConfigPath, AFailedLoadLeavesTheFreeTextResult) {
  const testing::TempDir dir;
  dir.write("job.yaml", kJob);
  dir.write("bad.yaml", std::string(kJob) + "num_query_groups: many\n");
  const std::string runs = dir.write(
      "runs.yaml", run_entry("r1", "  config: job.yaml\n  args: {nodes: eight}\n") +
                       run_entry("r2", "  config: bad.yaml\n  args: {hardware: h100_sxm}\n"));
  std::vector<RunEntry> entries = load_runs(runs);
  ASSERT_TRUE(entries[0].ok() && entries[1].ok());
  const ValidationReport with = validate(entries, make_default_project_fn());
  ASSERT_TRUE(with.runs[0].config_path && with.runs[1].config_path);
  EXPECT_EQ(with.runs[0].config_path->status, "load_failed");
  EXPECT_NE(with.runs[0].config_path->reason.find("runs.yaml:6"), std::string::npos)
      << with.runs[0].config_path->reason;
  EXPECT_NE(with.runs[0].config_path->reason.find("args.nodes"), std::string::npos);
  EXPECT_EQ(with.runs[1].config_path->status, "load_failed");
  EXPECT_NE(with.runs[1].config_path->reason.find("bad.yaml:11"), std::string::npos)
      << with.runs[1].config_path->reason;
  EXPECT_EQ(with.summary.config_path.failed, 2);

  for (RunEntry& e : entries) e.config.reset();
  const ValidationReport without = validate(entries, make_default_project_fn());
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(with.runs[i].status, without.runs[i].status);
    EXPECT_EQ(with.runs[i].throughput_error_pct, without.runs[i].throughput_error_pct);
  }
}

// The index attaches by runs file name and id; an item for a run the file lacks, a run named
// twice, and a missing config are errors at the item's line.
TEST(ConfigPath, IndexAttachesByRunsFileAndId) {
  const testing::TempDir dir;
  dir.write("configs/job.yaml", kJob);
  const std::string runs = dir.write("runs.yaml", run_entry("r1", "") + run_entry("r2", ""));
  const std::string index = dir.write("configs/index.yaml",
                                      "- runs_file: runs.yaml\n"
                                      "  run: r2\n"
                                      "  config: job.yaml\n"
                                      "  args: {hardware: h100_sxm, set: [seq_length=1024]}\n"
                                      "- runs_file: other.yaml\n"
                                      "  run: nowhere\n"
                                      "  config: absent.yaml\n");
  EXPECT_EQ(default_configs_index(runs), index);
  std::vector<RunEntry> entries = load_runs(runs);
  attach_run_configs(entries, runs, index);
  EXPECT_FALSE(entries[0].config);
  ASSERT_TRUE(entries[1].config);
  ASSERT_EQ(entries[1].config->args.size(), 2u);
  EXPECT_EQ(entries[1].config->args[1].key, "set");
  EXPECT_EQ(entries[1].config->args[1].values, std::vector<std::string>{"seq_length=1024"});
  const LoadRequest req = validate_detail::load_request_of(*entries[1].config, "data");
  EXPECT_EQ(req.hardware, "h100_sxm");
  EXPECT_EQ(req.set_overrides, std::vector<std::string>{"seq_length=1024"});
  EXPECT_EQ(req.data_dir, "data");

  auto fails_at = [&](const std::string& text, int line, const std::string& what) {
    const std::string bad = dir.write("bad_index.yaml", text);
    std::vector<RunEntry> fresh = load_runs(runs);
    try {
      attach_run_configs(fresh, runs, bad);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& ex) {
      EXPECT_EQ(ex.where().line, line) << ex.what();
      EXPECT_NE(std::string(ex.what()).find(what), std::string::npos) << ex.what();
    }
  };
  fails_at("- {runs_file: runs.yaml, run: r9, config: configs/job.yaml}\n", 1, "no run 'r9'");
  fails_at(
      "- {runs_file: runs.yaml, run: r1, config: configs/job.yaml}\n"
      "- {runs_file: runs.yaml, run: r1, config: configs/job.yaml}\n",
      2, "already names a config");
  fails_at("- {runs_file: runs.yaml, run: r1, config: nope.yaml}\n", 1, "no such file");
  fails_at("- {runs_file: runs.yaml, run: r1}\n", 1, "config: missing");
}

// Both paths on the same runs, derived by hand: A (free text -10 %, config +20 %), B (free text
// +5 %, its config failed), C (config -30 %, no free-text figure), D excluded (config +90 %).
TEST(ConfigPath, SummaryPutsBothPathsOnTheSameRuns) {
  auto run = [](std::optional<double> free, std::optional<double> config, const char* status) {
    RunResult r;
    r.id = "x";
    r.status = "ok";
    r.throughput_error_pct = free;
    r.config_path = RunResult::ConfigPath{};
    r.config_path->status = status;
    r.config_path->throughput_error_pct = config;
    return r;
  };
  std::vector<RunResult> runs = {run(-10.0, 20.0, "ok"), run(5.0, std::nullopt, "load_failed"),
                                 run(std::nullopt, -30.0, "ok"), run(1.0, 90.0, "ok")};
  runs[3].excluded = "debug run";
  const ConfigPathSummary s = summarize(runs).config_path;
  EXPECT_EQ(s.runs, 3);
  EXPECT_EQ(s.compared, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.throughput.count, 2);
  EXPECT_DOUBLE_EQ(s.throughput.mape_pct, 25.0);
  EXPECT_DOUBLE_EQ(s.throughput.mean_signed_pct, -5.0);
  EXPECT_EQ(s.same_runs_throughput.count, 1);
  EXPECT_DOUBLE_EQ(s.same_runs_throughput.mape_pct, 20.0);
  EXPECT_EQ(s.free_text_throughput.count, 1);
  EXPECT_DOUBLE_EQ(s.free_text_throughput.mape_pct, 10.0);
}

// The shipped index: every item names a run of its runs file and a config that exists and loads
// through its adapter with its args, and every config file under data/validation/configs is
// indexed.
TEST(ShippedConfigs, EveryIndexedConfigLoads) {
  const std::string root = default_data_dir() + "/validation";
  std::set<std::string> indexed;
  for (const char* file :
       {"calibration_runs.yaml", "calibration_runs_4.yaml", "calibration_runs_moe_tpu.yaml",
        "recsys_runs.yaml", "primus_config_runs.yaml"}) {
    const std::string runs_file = root + "/" + file;
    std::vector<RunEntry> runs = load_runs(runs_file);
    const std::string index = default_configs_index(runs_file);
    ASSERT_FALSE(index.empty());
    attach_run_configs(runs, runs_file, index);
    for (const RunEntry& e : runs) {
      if (!e.config) continue;
      indexed.insert(std::filesystem::path(e.config->path).lexically_normal().string());
      try {
        (void)load_job(validate_detail::load_request_of(*e.config, default_data_dir()));
      } catch (const InputError& ex) {
        ADD_FAILURE() << e.id << ": " << ex.what();
      }
    }
  }
  std::set<std::string> files;
  for (const auto& p : std::filesystem::recursive_directory_iterator(root + "/configs")) {
    // A config's merged model preset (configs/<file>/models/) is read through its config.
    if (p.is_regular_file() && p.path().filename() != "index.yaml" &&
        p.path().parent_path().filename() != "models") {
      files.insert(p.path().lexically_normal().string());
    }
  }
  EXPECT_EQ(indexed, files);
  EXPECT_GE(indexed.size(), 20u);
}

}  // namespace
}  // namespace projector
