// Hostile input to the back-ends that landed after issue 19's probe: the torchtitan TOML job
// reader and flavor arguments, the MaxText experiment path (base.yml + model yml), the TorchRec
// DLRM configs with dlrm_main.py command lines. Each input is refused with a located InputError
// (file and line of the key, exit 2 in the CLI), never a crash (SIGFPE, UBSan), an allocation of
// 2^30 layers, a quadratic merge or a silently truncated value.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "support/config_text.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

LoadRequest request(const std::string& path, const std::string& hardware = "") {
  return testing::bundled_request(path, hardware);
}

// The 1-based line of `path`'s text `text` that contains `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

// `text` written as `name` is refused at the line holding `needle`, naming `key`.
void expect_refused(testing::TempDir& dir, const std::string& name, const std::string& text,
                    const std::string& needle, const std::string& key,
                    const std::string& hardware = "") {
  SCOPED_TRACE(text.substr(0, 300));
  const std::string path = dir.write(name, text);
  try {
    const JobSpec job = load_job(request(path, hardware));
    FAIL() << "accepted: " << job.model.num_layers() << " layers";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path) << e.what();
    EXPECT_EQ(e.where().line, line_of(text, needle)) << e.what();
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

const std::string kTitan = R"([model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 2
seq_len = 4096

[parallelism]
data_parallel_shard_degree = -1
)";

std::string titan_with(const std::string& section, const std::string& line) {
  std::string t = kTitan;
  const std::size_t at = t.find(section + "\n");
  t.insert(at + section.size() + 1, line + "\n");
  return t;
}

// Flavor arguments overridden under [model]: a zero divisor (dim / n_heads, hidden % multiple_of:
// SIGFPE before), 2^30 layers (allocated one by one before the builder's bound), values past
// 2^30 (narrowed to int before) and a non-finite multiplier (cast to an integer before).
TEST(HostileTorchtitan, FlavorArgumentsAreBoundedAndLocated) {
  testing::TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"n_heads = 0", "n_heads"},
      {"multiple_of = 0", "multiple_of"},
      {"n_layers = 1073741824", "n_layers"},
      {"dim = 4294967304", "dim"},
      {"ffn_dim_multiplier = inf", "ffn_dim_multiplier"},
      {"ffn_dim_multiplier = 1e300", "ffn_dim_multiplier"},
  };
  for (const auto& [line, key] : cases) {
    expect_refused(dir, "job.toml", titan_with("[model]", line), line, key);
  }
}

// JobConfig integers: beyond int64 (a float in TOML), beyond 2^30, not finite.
TEST(HostileTorchtitan, JobConfigIntegersAreBounded) {
  testing::TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"tensor_parallel_degree = 4294967298", "parallelism.tensor_parallel_degree"},
      {"tensor_parallel_degree = 1e30", "parallelism.tensor_parallel_degree"},
      {"tensor_parallel_degree = nan", "parallelism.tensor_parallel_degree"},
  };
  for (const auto& [line, key] : cases) {
    expect_refused(dir, "job.toml", titan_with("[parallelism]", line), line, key);
  }
}

// The TOML reader: a directory or FIFO named *.toml is not read (no hang), nesting is bounded,
// a table of many keys converts in linear time.
TEST(HostileTorchtitan, TomlFilesAreCheckedAndBounded) {
  testing::TempDir dir;
  const std::string sub = dir.path() + "/dir.toml";
  std::filesystem::create_directory(sub);
  EXPECT_THROW(load_job(request(sub)), InputError);

  std::string deep = kTitan + "[job]\nx = ";
  for (int i = 0; i < 300; ++i) deep += "[";
  for (int i = 0; i < 300; ++i) deep += "]";
  try {
    load_job(request(dir.write("deep.toml", deep + "\n")));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_FALSE(e.where().file.empty()) << e.what();
  }

  // Dotted keys 10^5 deep (a table header, a key, an inline table's key): toml++ overflowed the
  // stack on each (SIGSEGV); refused at their line before parsing.
  std::string chain = "a";
  for (int i = 0; i < 100000; ++i) chain += ".a";
  for (const std::string& line : {"[" + chain + "]", chain + " = 1", "x = {" + chain + " = 1}"}) {
    const std::string text = kTitan + "[job]\n" + line + "\n";
    expect_refused(dir, "dotted.toml", text, line, "dotted key nested deeper than 200");
  }

  std::string many = kTitan + "[junk]\n";
  for (int i = 0; i < 200000; ++i) many += "k" + std::to_string(i) + " = 1\n";
  const auto start = std::chrono::steady_clock::now();
  const JobSpec job = load_job(request(dir.write("many.toml", many)));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  EXPECT_EQ(job.model.num_layers(), 32);
  // Unknown keys: 100 listed, then one summary line.
  int listed = 0;
  bool summary = false;
  for (const std::string& w : job.warnings) {
    listed += w.find("unknown key 'junk.k") != std::string::npos ? 1 : 0;
    summary = summary || w.find("more unknown keys (ignored)") != std::string::npos;
  }
  EXPECT_EQ(listed, 100);
  EXPECT_TRUE(summary);
}

const std::string kMaxText =
    "model_name: llama3-8b\nper_device_batch_size: 1\ncompile_topology: v5p-8\n"
    "override_model_config: true\n";

// MaxText sizes (as --set: the model yml overrides the config file's own keys): 2^30 layers
// (allocated one by one before), a scale that pushes a base size past the bounds (narrowed to int
// before), values beyond int64, a non-finite or huge per-device batch (rounded to an integer
// before).
TEST(HostileMaxText, SizesAreBoundedAndLocated) {
  testing::TempDir dir;
  const std::string path = dir.write("mt.yml", kMaxText);
  const std::pair<std::string, std::string> cases[] = {
      {"base_num_decoder_layers=1073741824", "base_num_decoder_layers"},
      {"global_parameter_scale=1073741824", "base_num_decoder_layers"},
      {"base_emb_dim=99999999999999999999", "base_emb_dim"},
      {"ici_fsdp_parallelism=4294967297", "ici_fsdp_parallelism"},
      {"per_device_batch_size=.inf", "per_device_batch_size"},
      {"per_device_batch_size=1e300", "per_device_batch_size"},
  };
  for (const auto& [set, key] : cases) {
    SCOPED_TRACE(set);
    LoadRequest r = request(path, "tpu_v5p");
    r.set_overrides = {set};
    try {
      load_job(r);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      // The --set that stated it, or the model yml line the scale multiplied.
      EXPECT_TRUE(e.where().file == "--set" || e.where().line > 0) << e.what();
      EXPECT_EQ(e.key(), key) << e.what();
    }
  }
}

const std::string kDlrm =
    "framework: torchrec_dlrm\nembedding_dim: 16\ndense_arch_layer_sizes: 32,16\n"
    "over_arch_layer_sizes: 64,1\nnum_embeddings_per_feature: 100,200\nbatch_size: 64\n";

// TorchRec integers: list items beyond 2^30 or int64 (strtoll saturated them before), a scalar
// beyond 2^30 (narrowed to int before), a command line with thousands of flags (a quadratic
// merge before).
TEST(HostileTorchrec, IntegersAndCommandLinesAreBounded) {
  testing::TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"num_embeddings_per_feature: 100,99999999999999999999", "num_embeddings_per_feature"},
      {"dense_arch_layer_sizes: 4294967304,16", "dense_arch_layer_sizes"},
      {"embedding_dim: 4294967304", "embedding_dim"},
  };
  for (const auto& [line, key] : cases) {
    std::string text = kDlrm;
    const std::string name = line.substr(0, line.find(':'));
    const std::size_t at = text.find(name + ":");
    text.replace(at, text.find('\n', at) - at, line);
    expect_refused(dir, "dlrm.yaml", text, line, key);
  }
  std::string flags = "command_line: '";
  for (int i = 0; i < 5000; ++i) flags += "--f" + std::to_string(i) + " 1 ";
  expect_refused(dir, "dlrm.yaml", kDlrm + flags + "'\n", "command_line", "command_line");
}

// Mutation fuzz (case 1516, GPUS_PER_NODE=1:30:00, i.e. 5400): the embedding plan grows with the
// ranks (262,144 ranks took a minute and 3.5 GiB); past 8192 a recommendation job is refused.
TEST(HostileTorchrec, RanksAreBounded) {
  testing::TempDir dir;
  const std::string path = dir.write("dlrm.yaml", kDlrm);
  LoadRequest r = request(path);
  r.env = fixed_environment({{"GPUS_PER_NODE", "65536"}});
  const auto start = std::chrono::steady_clock::now();
  try {
    load_job(r);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_FALSE(e.where().file.empty()) << e.what();
    EXPECT_NE(std::string(e.what()).find("8192"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  r.env = fixed_environment({{"GPUS_PER_NODE", "8192"}});
  EXPECT_EQ(load_job(r).cluster.world_size(), 8192);
}

// Seeds of the new fuzz targets (fuzz/corpus/) load and project to finite figures: the fuzzers'
// contract holds on their starting points.
TEST(HostileBackends, FuzzSeedsProjectFinite) {
  const std::string data = PROJECTOR_TEST_DATA_DIR;
  for (const char* seed :
       {"/torchtitan/upstream/qwen3_0.6b.toml", "/torchtitan/upstream/llama3_8b.toml",
        "/torchrec/readme_dot_sgd_lbs256.yaml", "/torchrec/mlperf_dlrm_dcnv2.yaml"}) {
    SCOPED_TRACE(seed);
    const JobSpec job = load_job(request(data + seed));
    const MemoryReport mem = project_memory(job, MemoryOptions{});
    EXPECT_TRUE(std::isfinite(mem.peak_point_bytes) && mem.peak_point_bytes > 0);
    PerfOptions po;
    po.keep_op_table = false;
    EXPECT_GT(project_performance(job, po).iteration_s, 0.0);
  }
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// --strict applies to every back-end through the one unknown-key check: the misspelt key is an
// error at its own line (MaxText: line 3 of the flat YAML; torchtitan: the line appended to an
// upstream TOML), and without --strict the same key is one warning naming the nearest key.
TEST(StrictKeys, MaxTextAndTorchtitanRefuseUnknownKeys) {
  testing::TempDir dir;
  const std::string mt = dir.write("mt.yml",
                                   "model_name: llama3-8b\n"
                                   "per_device_batch_size: 2\n"
                                   "per_device_batch_sise: 2\n"
                                   "compile_topology: v5p-64\n");
  LoadRequest r = request(mt, "tpu_v5p");
  const JobSpec lenient = load_job(r);
  const auto n =
      std::count_if(lenient.warnings.begin(), lenient.warnings.end(), [](const std::string& w) {
        return w.find("unknown MaxText key 'per_device_batch_sise'") != std::string::npos &&
               w.find("did you mean 'per_device_batch_size'") != std::string::npos;
      });
  EXPECT_EQ(n, 1);
  r.strict_keys = true;
  try {
    load_job(r);
    FAIL() << "strict mode accepted an unknown MaxText key";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "per_device_batch_sise");
    EXPECT_EQ(e.where().line, 3);
  }

  std::ifstream in(std::string(PROJECTOR_TEST_DATA_DIR) + "/torchtitan/upstream/llama3_8b.toml");
  std::string toml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = toml.find("[training]\n");
  ASSERT_NE(at, std::string::npos);
  const int line = static_cast<int>(std::count(toml.begin(), toml.begin() + at, '\n')) + 2;
  toml.insert(at + 11, "local_batch_sise = 2\n");
  LoadRequest t = request(dir.write("job.toml", toml), "h100_sxm");
  t.strict_keys = true;
  try {
    load_job(t);
    FAIL() << "strict mode accepted an unknown torchtitan key";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "training.local_batch_sise");
    EXPECT_EQ(e.where().line, line);
  }
}

}  // namespace
}  // namespace projector
