// Issue 19's reproducers, each through the CLI binary: every one exits 2 with a one-line error
// that names the file and line (or the flag / environment variable) and the key, or gives a
// correct bounded answer; none crashes, hangs or prints nonsense. Test names follow the issue's
// sections (Crash*, Hang*, Silent*, Message*).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace {

using projector::testing::CliResult;
using projector::testing::repo_root;
using projector::testing::TempDir;

const std::string kLlama = repo_root() + "/examples/llama3.1_8B-BF16-pretrain.yaml";
const std::string kMixtral = repo_root() + "/examples/mixtral_8x7B-BF16-pretrain.yaml";
const std::string kRuns = repo_root() + "/data/validation/calibration_runs.yaml";

using projector::testing::read_file;

// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string with(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The llama example with `lines` added to its overrides.
std::string llama_with(const std::string& lines) {
  return with(read_file(kLlama), "    overrides:\n", "    overrides:\n" + lines);
}

// The first entry of the calibration runs file, with `field: value` lines replaced.
std::string first_run() {
  const std::string all = read_file(kRuns);
  const std::size_t begin = all.find("- id:");
  return all.substr(begin, all.find("\n- id:", begin + 1) - begin) + "\n";
}

CliResult run(const std::string& args) {
  return projector::testing::run_cli(args);
}

// A shell command line, its stdout and stderr.
CliResult shell(const std::string& cmd) {
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe) != nullptr) r.out += buf;
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The CLI with `assignment` (NAME=value) in its environment.
CliResult run_env(const std::string& assignment, const std::string& args) {
  return shell("env -u PRIMUS_TP -u PRIMUS_PP -u PRIMUS_EP -u PRIMUS_GPU_ARCH '" + assignment +
               "' " + PROJECTOR_BINARY + " " + args + " 2>&1");
}

// Exit 2 and one line "projector: error: <where>: <key>: ..." with `where` (a file:line, a flag
// or an environment variable) and `key` in it.
void expect_clean_error(const CliResult& r, const std::string& where, const std::string& key) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("projector: error: " + where, 0), 0u) << r.out;
  EXPECT_NE(r.out.find(key), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
}

// Command lines that must each be refused as expect_clean_error says.
struct Refusal {
  std::string args, where, key;
};
void expect_refusals(const std::vector<Refusal>& refusals) {
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.args.substr(0, 200));
    expect_clean_error(run(r.args), r.where, r.key);
  }
}

// Exit 2 after some output (the report up to the failure): one error line among it.
void expect_error_line(const CliResult& r, const std::string& where, const std::string& key) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  const std::size_t at = r.out.find("projector: error: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_EQ(line.rfind("projector: error: " + where, 0), 0u) << line;
  EXPECT_NE(line.find(key), std::string::npos) << line;
  EXPECT_EQ(r.out.find("projector: error: ", at + 1), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
}

// "<file>:<line>:" of the line of `path` that contains `needle`.
std::string line_of(const std::string& path, const std::string& needle) {
  std::istringstream in(read_file(path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(needle) != std::string::npos) return path + ":" + std::to_string(n) + ":";
  }
  ADD_FAILURE() << needle << " not in " << path;
  return path;
}

// `config` written to a new file of `dir` is refused by `projector both` at the line of `key`.
void expect_refused_at(const TempDir& dir, const std::string& config, const std::string& key,
                       const std::string& message) {
  static int n = 0;
  const std::string path = dir.write("config" + std::to_string(++n) + ".yaml", config);
  expect_clean_error(run("both --config " + path), line_of(path, key + ":"), message);
}

const std::string kDigits(30000, '7');

// ------------------------------------------------------------------------------------ crashes

TEST(Crash, LongDigitStringInAConfigValue) {
  TempDir dir;
  const std::string cfg = dir.write("c.yaml", llama_with("      hidden_size: " + kDigits + "\n"));
  const CliResult r = run("both --config " + cfg);
  expect_clean_error(r, line_of(cfg, "hidden_size"), "hidden_size: integer 777");
  EXPECT_NE(r.out.find("out of range"), std::string::npos) << r.out;
  EXPECT_LT(r.out.size(), 400u) << "the value is clipped";
}

TEST(Crash, LongDigitStringInSetEnvironmentAndDefault) {
  TempDir dir;
  expect_clean_error(run("both --config " + kLlama + " --set micro_batch_size=" + kDigits),
                     "--set:", "micro_batch_size");
  // ${PRIMUS_TP:1} in the example: the environment value, then a default in the file.
  expect_clean_error(run_env("PRIMUS_TP=" + kDigits, "both --config " + kLlama),
                     line_of(kLlama, "tensor_model_parallel_size"), "tensor_model_parallel_size");
  const std::string cfg = dir.write(
      "d.yaml", with(read_file(kLlama), "${PRIMUS_PP:1}", "${PRIMUS_PP:" + kDigits + "}"));
  expect_clean_error(run("both --config " + cfg), line_of(cfg, "pipeline_model_parallel_size"),
                     "pipeline_model_parallel_size");
}

TEST(Crash, ValidateLongDigitStringsAndHugeFiguresStayPerEntry) {
  TempDir dir;
  std::string entry = first_run();
  const std::string bad_window = with(
      with(entry, "id: megatron-sc21-gpt-1.7b-a100x32", "id: bad-window"),
      "    position_embedding: learned_absolute\n",
      "    position_embedding: learned_absolute\n    attention: sliding window (99999999999)\n");
  const std::string bad_link =
      with(with(entry, "id: megatron-sc21-gpt-1.7b-a100x32", "id: bad-link"),
           "    interconnect: 'Selene DGX A100 nodes: NVLink/NVSwitch intra-node, InfiniBand "
           "inter-node'",
           "    interconnect: '8x" + std::string(400, '9') + " Gb/s per node'");
  const std::string long_text =
      with(with(entry, "id: megatron-sc21-gpt-1.7b-a100x32", "id: long-text"),
           "    interconnect: 'Selene DGX A100 nodes: NVLink/NVSwitch intra-node, InfiniBand "
           "inter-node'",
           "    interconnect: '" + kDigits + " Gb/s per node'");
  const std::string runs = dir.write("runs.yaml", bad_window + bad_link + long_text + entry);
  const CliResult r = run("validate " + runs);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("4 runs:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sliding window '99999999999' out of range"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("more than 1024"), std::string::npos) << "long text dropped: " << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  // The unchanged last entry is still compared.
  EXPECT_NE(r.out.find("megatron-sc21-gpt-1.7b-a100x32                             ok"),
            std::string::npos)
      << r.out;
}

TEST(Crash, WorldSizeProductsAreCheckedIn64Bits) {
  expect_refusals({
      {"both --config " + kLlama + " --nodes 2147483647", "command line:", "--nodes"},
      {"both --config " + kLlama + " --nodes 1000000 --gpus-per-node 1000000",
       "--nodes:", "more than the 16777216"},
      {"both --config " + kLlama + " --mbs 1073741824",
       "--mbs:", "micro_batch_size: must be a positive integer up to 16777216"},
      {"both --config " + kLlama + " --gpus-per-node 1073741824",
       "--gpus-per-node:", "gpus_per_node"},
      {"both --config " + kLlama + " --tp 16777216 --pp 16777216 --cp 16777216",
       "--tp:", "TP x PP x CP needs more than the 16777216 GPUs"},
  });
}

TEST(Crash, HugeModelDimensions) {
  TempDir dir;
  expect_refused_at(dir, llama_with("      kv_channels: 2147483647\n"), "kv_channels",
                    "kv_channels");
  expect_refused_at(dir, llama_with("      num_layers: 1073741824\n"), "num_layers",
                    "num_layers: must be between 1 and 16384");
  expect_refused_at(dir,
                    llama_with("      hidden_size: 16777216\n      ffn_hidden_size: 16777216\n"
                               "      num_attention_heads: 65536\n      kv_channels: 256\n"),
                    "hidden_size", "parameters, more than the 1e+15");
}

TEST(Crash, RunsFileHugeHiddenSizeIsRefusedPerEntry) {
  TempDir dir;
  const std::string runs = dir.write(
      "runs.yaml", with(first_run(), "    hidden_size: 2304", "    hidden_size: 999999999999"));
  const CliResult r = run("validate " + runs);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("model.hidden_size: 999999999999 is out of range"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("unmapped"), std::string::npos) << r.out;
}

TEST(Crash, SweepGridValuesAreBounded) {
  expect_refusals({
      {"sweep --config " + kLlama + " --nodes 1073741824 -j 1",
       "--nodes:", "more than the 16777216"},
      {"sweep --config " + kLlama + " --grid 'vpp=1073741824;pp=2' -j 1",
       "--grid:", "vpp: 1073741824 is more than 16384"},
      {"sweep --config " + kLlama + " --grid mbs=2147483647 -j 1",
       "--grid:", "mbs: 2147483647 is more than 16777216"},
      {"sweep --config " + kLlama + " --grid mbs=99999999999999999999 -j 1", "--grid:", "mbs"},
  });
}

// -------------------------------------------------------------------------------------- hangs

TEST(Hang, YamlAliasBombIsRefused) {
  TempDir dir;
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'l'; ++c) {
    const char prev = static_cast<char>(c - 1);
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  const std::string cfg = dir.write("bomb.yaml", bomb);
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run("both --config " + cfg);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  expect_clean_error(r, cfg + ":", "aliases are copied on use");
}

TEST(Hang, ExtendsChainIncludedTwicePerLevelLoadsOnce) {
  TempDir dir;
  constexpr int kDepth = 40;
  for (int i = 0; i < kDepth; ++i) {
    const std::string next = "e" + std::to_string(i + 1) + ".yaml";
    dir.write("e" + std::to_string(i) + ".yaml",
              i + 1 < kDepth
                  ? "extends: [" + next + ", " + next + "]\nk" + std::to_string(i) + ": 1\n"
                  : "kend: 1\n");
  }
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run("config --config " + dir.path() + "/e0.yaml");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // Loaded: it is a flat argument file without a model, refused naming the file.
  expect_clean_error(r, dir.path() + "/e0.yaml:", "num_layers: required");
}

TEST(Hang, ManyKeysMergeInLinearithmicTime) {
  TempDir dir;
  std::string keys;
  for (int i = 0; i < 160000; ++i) keys += "      key_" + std::to_string(i) + ": " + "1\n";
  const std::string cfg = dir.write("many.yaml", llama_with(keys));
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run("config --config " + cfg);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("159900 more unknown keys (ignored)"), std::string::npos);
}

TEST(Hang, DevicesFifosAndDirectoriesAreNotInputs) {
  expect_clean_error(run("validate /dev/zero"), "/dev/zero:", "not a regular file");
  expect_clean_error(run("config --config /dev/zero"), "/dev/zero:", "not a regular file");
  expect_clean_error(run("both --config " + kLlama + " --hardware /dev/zero"),
                     "/dev/zero:", "not a regular file");
  expect_clean_error(run("both --config " + kLlama + " --hardware-config /dev/zero"),
                     "/dev/zero:", "not a regular file");
  expect_clean_error(run("validate /tmp"), "/tmp:", "is a directory");
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_clean_error(run("config --config " + fifo), fifo + ":", "not a regular file");
}

TEST(Hang, HugeBatchAndSequenceAreRefused) {
  expect_clean_error(run("both --config " + kLlama + " --gbs 1073741824"),
                     "--gbs:", "global_batch_size: must be a positive integer up to 16777216");
  expect_clean_error(run("both --config " + kLlama + " --seq 1073741824"),
                     "--seq:", "seq_length: must be a positive integer up to 16777216");
  // Within the batch bound but 2^20 microbatches per replica: refused, not simulated.
  expect_clean_error(run("both --config " + kLlama + " --mbs 1 --gbs 8388608"),
                     line_of(kLlama, "global_batch_size"), "microbatches");
}

TEST(Hang, LongSequenceIsProjectedInBoundedTime) {
  // 2^24 tokens: the attention cost model walks tiles linearly (it was quadratic).
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = run("performance --config " + kLlama + " --seq 16777216 --mbs 1 --gbs 8");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Iteration time"), std::string::npos) << r.out;
}

// A sweep that enumerates about 2.5 x 10^8 layouts, interrupted after a second: it stops, prints
// what it has and exits 130.
TEST(Hang, SweepStopsOnSigintDuringEnumerationAndExits130) {
  TempDir dir;
  std::string mbs = "mbs=1";
  for (int i = 2; i < 3000; ++i) mbs += "," + std::to_string(i);
  const std::string out = dir.path() + "/out.txt";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(out.c_str(), "w", stdout);
    std::freopen(out.c_str(), "a", stderr);
    const std::string cfg = repo_root() + "/examples/deepseek_v3-BF16-pretrain.yaml";
    execl(PROJECTOR_BINARY, PROJECTOR_BINARY, "sweep", "--config", cfg.c_str(), "--nodes",
          "2097152", "-j", "1", "--grid", mbs.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "the sweep ignored SIGINT";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status)) << read_file(out);
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_file(out);
  EXPECT_NE(read_file(out).find("Stopped by interrupt"), std::string::npos) << read_file(out);
}

// -------------------------------------------------------------------------- silent nonsense

TEST(Silent, NegativeAndNonFiniteModelValuesAreRefused) {
  TempDir dir;
  const std::string mix = read_file(kMixtral);
  const std::string moe = "    overrides:\n";
  expect_refused_at(
      dir,
      with(read_file(kLlama), "max_position_embeddings: 131072", "max_position_embeddings: -1"),
      "max_position_embeddings", "max_position_embeddings: must be between 0 and 16777216");
  expect_refused_at(dir, with(mix, moe, moe + "      moe_ffn_hidden_size: -1\n"),
                    "moe_ffn_hidden_size", "moe_ffn_hidden_size: must be between 1");
  expect_refused_at(dir, with(mix, moe, moe + "      moe_expert_capacity_factor: .inf\n"),
                    "moe_expert_capacity_factor", "must be a finite number");
  expect_refused_at(dir, llama_with("      attention_dropout: 1.5\n"), "attention_dropout",
                    "must be a probability in [0, 1]");
}

TEST(Silent, ValuesBeyond32BitsAreNeverTruncated) {
  TempDir dir;
  expect_refused_at(dir,
                    with(read_file(kMixtral), "    overrides:\n",
                         "    overrides:\n      num_experts: 4294967304\n"),
                    "num_experts", "num_experts: integer 4294967304 is out of range");
  expect_clean_error(run("config --config " + kLlama +
                         " --set recompute_granularity=full --set "
                         "'recompute_layer_ids=[4294967296]'"),
                     "--set:", "recompute_layer_ids: integer 4294967296 is out of range");
  expect_clean_error(run("config --config " + kLlama + " --set seq_length=99999999999999999999:0"),
                     "--set:", "seq_length: integer 99999999999999999999:0 is out of range");
  const std::string runs =
      dir.write("runs.yaml", with(first_run(), "    count: 32", "    count: 4294967328"));
  const CliResult r = run("validate " + runs);
  EXPECT_NE(r.out.find("hardware.count: 4294967328 is out of range"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unmapped"), std::string::npos) << "never read as 32 GPUs: " << r.out;
}

TEST(Silent, ExpertParallelismOnADenseModelIsRefused) {
  expect_clean_error(run("config --config " + kLlama + " --ep 8"),
                     "--ep:", "expert parallelism 8 on a model without experts");
  expect_clean_error(run_env("PRIMUS_EP=16", "config --config " + kLlama),
                     "environment PRIMUS_EP:", "without experts");
}

TEST(Silent, NanMeasurementsAreNotComparisons) {
  TempDir dir;
  // Every measured and derived figure NaN or infinite: nothing to compare, not "ok".
  std::string e = first_run();
  e = with(e, "    tflops_per_gpu: 137", "    tflops_per_gpu: nan");
  e = with(e, "    step_time_s: 3.53", "    step_time_s: .nan");
  e = with(e, "    tokens_per_sec_per_gpu: 9287.9", "    tokens_per_sec_per_gpu: inf");
  const CliResult r = run("validate " + dir.write("runs.yaml", e));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("no_measurement"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 runs: 0 compared"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measured.tflops_per_gpu: must be a finite number, got 'nan'"),
            std::string::npos)
      << r.out;
}

TEST(Silent, FailedWritesExit2) {
  expect_error_line(run("both --config " + kLlama + " --json /dev/full"), "/dev/full:", "--json");
  expect_error_line(run("both --config " + kLlama + " --csv /dev/full"), "/dev/full:", "--csv");
  expect_error_line(run("performance --config " + kLlama + " --trace /dev/full"),
                    "/dev/full:", "--trace");
  expect_error_line(run("sweep --config " + kLlama + " --grid 'tp=1;pp=1;cp=1' --csv /dev/full"),
                    "/dev/full:", "--csv");
  // The report itself to a full disk: small (flushed at exit) and large (fails while printing).
  for (const char* command : {"both", "workload"}) {
    const CliResult r = shell(std::string(PROJECTOR_BINARY) + " " + command + " --config " +
                              kLlama + " 2>&1 >/dev/full");
    expect_clean_error(r, "<stdout>:", "cannot write the output");
  }
  // Nowhere to report: still exit 2, never an abort.
  EXPECT_EQ(
      shell(std::string(PROJECTOR_BINARY) + " both --config " + kLlama + " >/dev/full 2>/dev/full")
          .exit_code,
      2);
}

TEST(Silent, SweepMemoryLimitNanIsRefused) {
  expect_clean_error(run("sweep --config " + kLlama + " --memory-limit nan"),
                     "--memory-limit:", "not a fraction of HBM");
  expect_clean_error(run("validate " + kRuns + " --max-mape nan"), "--max-mape:", "percent");
}

// ------------------------------------------------------------------------------------ messages

TEST(Message, KeysAbsentFromTheFileNameTheExperimentFile) {
  TempDir dir;
  const std::string cfg = dir.write("nolayers.yaml",
                                    "modules:\n  pre_trainer:\n    framework: megatron\n    "
                                    "overrides:\n      hidden_size: 4096\n");
  expect_clean_error(run("both --config " + cfg), cfg + ":", "num_layers: required");
  expect_clean_error(run("both --config " + kLlama + " --gpu-arch nosuchgpu"),
                     "--hardware:", "unknown accelerator 'nosuchgpu'");
  expect_clean_error(run_env("PRIMUS_GPU_ARCH=zz", "both --config " + kLlama),
                     "environment PRIMUS_GPU_ARCH:", "unknown accelerator 'zz'");
  expect_clean_error(run("both --config " + kLlama + " --hardware-config zz"),
                     "--hardware-config:", "unknown network 'zz'");
  expect_clean_error(run("both --config " + kLlama + " --tp abc"), "command line:", "--tp");
}

}  // namespace
