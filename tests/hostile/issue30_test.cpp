// Issue 30's reproducers through the CLI binary: each exits 2 with a one-line error naming the
// file and line (or the flag) and the key, or gives a correct answer; none crashes, hangs, loses
// data or turns nonsense into a projection.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace {

using projector::testing::CliResult;
using projector::testing::repo_root;
using projector::testing::TempDir;

const std::string kLlama = repo_root() + "/examples/llama3.1_8B-BF16-pretrain.yaml";
const std::string kQwenConfig = repo_root() + "/tests/profile/data/qwen1.5_0.5B-bf16-forward.yaml";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The llama example with `lines` added to its overrides.
std::string llama_with(const std::string& lines) {
  std::string text = read(kLlama);
  const std::string at = "    overrides:\n";
  const std::size_t i = text.find(at);
  EXPECT_NE(i, std::string::npos);
  return text.insert(i + at.size(), lines);
}

CliResult run(const std::string& args) {
  return projector::testing::run_cli(args);
}

// Exit 2 and one line "projector: error: <where>..." with `key` in it.
void expect_clean_error(const CliResult& r, const std::string& where, const std::string& key) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("projector: error: " + where, 0), 0u) << r.out;
  EXPECT_NE(r.out.find(key), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
}

// "<file>:<line>:" of the line of `path` that contains `needle`.
std::string line_of(const std::string& path, const std::string& needle) {
  std::istringstream in(read(path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(needle) != std::string::npos) return path + ":" + std::to_string(n) + ":";
  }
  ADD_FAILURE() << needle << " not in " << path;
  return path;
}

// --------------------------------------------------------------------------------- 1: crashes

// A 100 ns kernel at an epoch-scale timestamp (its ts + dur rounds back to ts in double) and
// kernels past 9.3e18 us once crashed the wall-time attribution (erase of end()).
TEST(Issue30, ProfileOfEpochScaleAndHugeTimestampsDoesNotCrash) {
  TempDir dir;
  const std::string kernel =
      R"({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_)"
      R"(bf16f32", "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}, )";
  for (const char* ts_dur :
       {R"("ts": 1700000000000000, "dur": 0.1)", R"("ts": 9300000000000000000, "dur": 1000)"}) {
    SCOPED_TRACE(ts_dur);
    const std::string trace = dir.write(
        "t.json", std::string("{\"traceEvents\": [\n") + kernel + R"("ts": 0, "dur": 5},)" + "\n" +
                      kernel + ts_dur + "},\n" + kernel + ts_dur + "}\n]}\n");
    const CliResult r =
        run("profile --trace " + trace + " --config " + kQwenConfig + " --gpus-per-node 1");
    // Analysed (it used to die there); then refused as no step of the 24-layer Qwen job.
    expect_clean_error(r, trace + ": traceEvents:", "no transformer layer");
  }
}

// ------------------------------------------------------------------------ 2: non-UTF-8 input

TEST(Issue30, NonUtf8ConfigKeysAndValuesAreRefusedAtTheirLine) {
  TempDir dir;
  const std::string key = dir.write("key.yaml", llama_with("      ba\xFFr: 1\n"));
  for (const char* cmd : {"memory --json -", "config --json", "both --json -"}) {
    SCOPED_TRACE(cmd);
    expect_clean_error(run(std::string(cmd) + " --config " + key), line_of(key, "ba\xFFr:"),
                       "ba\\xFFr: the key is not valid UTF-8");
  }
  const std::string value = dir.write("value.yaml", llama_with("      note: caf\xE9\n"));
  expect_clean_error(run("config --json --config " + value), line_of(value, "note:"),
                     "not valid UTF-8");
  expect_clean_error(run("config --json --config " + kLlama + " --set 'x=\xFF'"), "--set",
                     "not valid UTF-8");
}

// ------------------------------------------------------------------- 3: nonsense FP8 formats

TEST(Issue30, Fp8FormatsMegatronDoesNotHaveAreRefused) {
  TempDir dir;
  for (const char* bad : {"banana", "e5m2", "true"}) {
    SCOPED_TRACE(bad);
    const std::string path = dir.write(std::string("fp8_") + bad + ".yaml",
                                       llama_with(std::string("      fp8: ") + bad + "\n"));
    expect_clean_error(run("memory --config " + path), line_of(path, "fp8:"), "fp8");
  }
  const std::string ok = dir.write("fp8_ok.yaml", llama_with("      fp8: hybrid\n"));
  EXPECT_EQ(run("memory --config " + ok).exit_code, 0);
}

}  // namespace
