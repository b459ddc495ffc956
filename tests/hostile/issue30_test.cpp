// Issue 30's reproducers through the CLI binary: each exits 2 with a one-line error naming the
// file and line (or the flag) and the key, or gives a correct answer; none crashes, hangs, loses
// data or turns nonsense into a projection.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include <cctype>
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

using projector::testing::read_file;

// The llama example with `lines` added to its overrides.
std::string llama_with(const std::string& lines) {
  std::string text = read_file(kLlama);
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

// Exit 2 with one error line (after whatever the report printed first).
void expect_error_line(const CliResult& r, const std::string& where, const std::string& key) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  const std::size_t at = r.out.find("projector: error: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_EQ(line.rfind("projector: error: " + where, 0), 0u) << line;
  EXPECT_NE(line.find(key), std::string::npos) << line;
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

// An 18 MB gzip file holding one 1 GiB JSON string once took 3.1 GB of RAM and died with
// bad_alloc (exit 3). The token bound refuses it after reading 16 MiB of the string; here a
// 64 MiB string (0.1 MB compressed) on line 2.
TEST(Issue30, AGzipTraceHoldingOneHugeStringIsRefusedWithoutReadingIt) {
  TempDir dir;
  const std::string path = dir.path() + "/huge.json.gz";
  gzFile out = gzopen(path.c_str(), "wb1");
  ASSERT_NE(out, nullptr);
  const std::string head = "{\"traceEvents\": [\n{\"ph\": \"X\", \"name\": \"";
  gzwrite(out, head.data(), static_cast<unsigned>(head.size()));
  const std::string block(1 << 20, 'a');
  for (int i = 0; i < 64; ++i) gzwrite(out, block.data(), static_cast<unsigned>(block.size()));
  gzwrite(out, "\"}]}", 4);
  gzclose(out);
  const CliResult r = run("profile --trace " + path + " --config " + kQwenConfig);
  expect_clean_error(r, path + ":2:", "max_token_bytes");
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

// ------------------------------------------------------------------------- 4: outputs, data loss

TEST(Issue30, OutputsThatAreInputsAreRefusedAndLeftIntact) {
  TempDir dir;
  const std::string cfg = dir.write("exp.yaml", read_file(kLlama));
  const std::string original = read_file(cfg);
  const std::string link = dir.path() + "/link.yaml";
  const std::string hard = dir.path() + "/hard.yaml";
  std::filesystem::create_symlink(cfg, link);
  std::filesystem::create_hard_link(cfg, hard);
  for (const std::string& out : {cfg, link, hard, dir.path() + "/./exp.yaml"}) {
    for (const char* flag : {"--json", "--html", "--csv", "--export-config"}) {
      SCOPED_TRACE(out + " " + flag);
      expect_error_line(run("memory --config " + cfg + " " + flag + " " + out), out + ":", flag);
      EXPECT_EQ(read_file(cfg), original);
    }
  }
  // The trace `profile` reads is an input too.
  const std::string trace = repo_root() + "/tests/profile/data/qwen1.5_0.5b_fwd_h100.json.gz";
  const std::string copy = dir.path() + "/trace.json.gz";
  std::filesystem::copy_file(trace, copy);
  expect_error_line(run("profile --trace " + copy + " --config " + kQwenConfig +
                        " --gpus-per-node 1 --json " + copy),
                    copy + ":", "--json");
  EXPECT_EQ(read_file(copy), read_file(trace));
}

// Every output goes through a temporary file renamed over the target: nothing else is left in
// the directory, and an existing file's permissions are kept.
TEST(Issue30, OutputsAreWrittenThroughATemporaryFile) {
  TempDir dir;
  const std::string out = dir.path() + "/m.json";
  { std::ofstream(out) << "old"; }
  ::chmod(out.c_str(), 0640);
  ASSERT_EQ(run("memory --config " + kLlama + " --json " + out).exit_code, 0);
  EXPECT_EQ(read_file(out).rfind("{", 0), 0u);
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), "m.json");
  }
  EXPECT_EQ(files, 1);
  // Through a symlink: the target is replaced, the link kept.
  const std::string target = dir.path() + "/target.json";
  const std::string link = dir.path() + "/link.json";
  std::ofstream(target) << "old";
  std::filesystem::create_symlink(target, link);
  ASSERT_EQ(run("memory --config " + kLlama + " --json " + link).exit_code, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(read_file(target).rfind("{", 0), 0u);
}

// ------------------------------------------------------------------------------ 5: FIFO outputs

TEST(Issue30, FifoAndDirectoryOutputsAreRefused) {
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const char* flag : {"--json", "--csv", "--html", "--export-config"}) {
    SCOPED_TRACE(flag);
    const CliResult r = run(std::string("memory --config ") + kLlama + " " + flag + " " + fifo);
    expect_error_line(r, fifo + ":", flag);
    EXPECT_NE(r.out.find("not a regular file"), std::string::npos) << r.out;
  }
  expect_error_line(run("performance --config " + kLlama + " --trace " + fifo), fifo + ":",
                    "--trace");
  expect_error_line(run("memory --config " + kLlama + " --json " + dir.path()), dir.path() + ":",
                    "--json");
}

// ---------------------------------------------------------------- 6: hardware compare --config

TEST(Issue30, HardwareCompareWithAMalformedConfigExits2WithItsLocation) {
  TempDir dir;
  const std::string bad = dir.write("bad.yaml", "modules:\n  pre_trainer: [unclosed\n");
  const CliResult r = run("hardware compare mi300x h100 --config " + bad);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("projector: error: " + bad + ":"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not projected"), std::string::npos) << r.out;
  const std::string fp8 = dir.write("fp8.yaml", llama_with("      fp8: banana\n"));
  expect_clean_error(run("hardware compare mi300x h100 --json --config " + fp8),
                     line_of(fp8, "fp8:"), "fp8");
  expect_clean_error(run("hardware compare mi300x h100 --config " + dir.path() + "/missing.yaml"),
                     dir.path() + "/missing.yaml", "not found");
}

// ------------------------------------------------------------- 7: silently ignored or misnamed

// A second YAML document would be dropped by a one-document load: refused at its first line.
TEST(Issue30, ASecondYamlDocumentIsRefusedAtItsLine) {
  TempDir dir;
  const std::string path = dir.write("two.yaml", read_file(kLlama) + "---\nmodules: {}\n");
  const CliResult r = run("config --json --config " + path);
  expect_clean_error(r, path + ":", "2 YAML documents");
  EXPECT_NE(r.out.find(line_of(path, "modules: {}")), std::string::npos) << r.out;
}

// Megatron asserts 0 < rotary_percent <= 1.
TEST(Issue30, RotaryPercentOutsideItsRangeIsRefused) {
  TempDir dir;
  const std::string bad = dir.write("rot.yaml", llama_with("      rotary_percent: 5.0\n"));
  expect_clean_error(run("memory --config " + bad), line_of(bad, "rotary_percent:"),
                     "rotary_percent");
  const std::string ok = dir.write("rot_ok.yaml", llama_with("      rotary_percent: 0.5\n"));
  EXPECT_EQ(run("memory --config " + ok).exit_code, 0);
}

// A loop of symbolic links and a dangling link are named as such, not "file not found".
TEST(Issue30, SymlinkLoopsAndDanglingLinksAreNamed) {
  TempDir dir;
  const std::string a = dir.path() + "/a.yaml";
  const std::string b = dir.path() + "/b.yaml";
  ASSERT_EQ(::symlink(b.c_str(), a.c_str()), 0);
  ASSERT_EQ(::symlink(a.c_str(), b.c_str()), 0);
  expect_clean_error(run("config --json --config " + a), a, "loop of symbolic links");
  const std::string dangling = dir.path() + "/dangling.yaml";
  ASSERT_EQ(::symlink((dir.path() + "/nowhere.yaml").c_str(), dangling.c_str()), 0);
  expect_clean_error(run("config --json --config " + dangling), dangling,
                     "symbolic link to a missing file");
}

// ------------------------------------------------------------------- first hour: the accelerator

// A config in Primus' configs/<ACCELERATOR>/ folder runs on that accelerator when nothing else
// names one, recorded as an assumption; every report says where its accelerator came from.
TEST(Issue30, AcceleratorFromThePrimusConfigFolderAndItsOrigin) {
  TempDir dir;
  const std::string cfg =
      dir.write("examples/megatron/configs/MI355X/llama.yaml", read_file(kLlama));
  CliResult r = run("config --json --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"accelerator\": \"mi355x\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("assumed: the config sits in Primus' configs/MI355X/ folder"),
            std::string::npos)
      << r.out;
  r = run("memory --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("mi355x (288 GiB HBM) from assumed: the config sits in Primus'"),
            std::string::npos)
      << r.out;
  // A stated accelerator wins and is named as stated.
  r = run("performance --hardware h100 --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Accelerator  NVIDIA H100 SXM (80 GiB HBM) from --hardware"),
            std::string::npos)
      << r.out;
  // Outside such a folder: the documented default, named as an assumption.
  const std::string plain = dir.write("elsewhere/llama.yaml", read_file(kLlama));
  r = run("memory --config " + plain);
  EXPECT_NE(r.out.find("mi300x (192 GiB HBM) from assumed: no --hardware"), std::string::npos)
      << r.out;
}

// A clock below a tenth of the boost clock is a unit error, not a clock (it once printed a
// 300-digit iteration time).
TEST(Issue30, AbsurdClocksAreRefused) {
  expect_clean_error(run("performance --config " + kLlama + " --gpu-clock-mhz 1e-300"),
                     "--gpu-clock-mhz", "not a clock");
  expect_clean_error(run("performance --config " + kLlama + " --hardware h100 --gpu-clock-mhz 150"),
                     "--gpu-clock-mhz", "183 MHz, a tenth of the h100_sxm boost clock");
  const CliResult env =
      projector::testing::run_cli_env("PRIMUS_GPU_CLOCK_MHZ=0.001", "memory --config " + kLlama);
  expect_clean_error(env, "--gpu-clock-mhz", "not a clock");
  EXPECT_EQ(
      run("performance --config " + kLlama + " --hardware h100 --gpu-clock-mhz 1500").exit_code, 0);
}

// A layout flag the user typed is named, not the model preset it contradicts.
TEST(Issue30, LayoutFlagErrorsNameTheFlag) {
  expect_clean_error(run("memory --config " + kLlama + " --pp 64"),
                     "--pp:", "cannot fill PP x VPP = 64 x 1");
  expect_clean_error(run("memory --config " + kLlama + " --vpp 1000"), "--vpp:", "need PP > 1");
}

// A sweep over more GPUs than a step has tokens says the batch cannot use the cluster.
TEST(Issue30, SweepOnAClusterTheBatchCannotUseIsRefused) {
  expect_clean_error(run("sweep --config " + kLlama + " --nodes 1048576"), "--nodes",
                     "less than one token per GPU");
}

// --set cannot change the experiment's structure (it is read before --set applies).
TEST(Issue30, SetCannotChangeTheFramework) {
  expect_clean_error(
      run("config --json --config " + kLlama + " --set modules.pre_trainer.framework=maxtext"),
      "--set", "edit the config file");
}

// Physical bounds on catalogue numbers (they once printed 50-300-digit times): a peak of 1e-300
// TFLOP/s and a latency of 1e300 us are refused at their line.
TEST(Issue30, CatalogueNumbersOutsidePhysicalBoundsAreRefused) {
  TempDir dir;
  std::string acc = read_file(repo_root() + "/data/hardware/accelerators/h100_sxm.yaml");
  acc.replace(acc.find("  bf16: 989.4"), 13, "  bf16: 1e-300");
  const std::string acc_path = dir.write("acc.yaml", acc);
  expect_clean_error(run("memory --config " + kLlama + " --hardware " + acc_path),
                     line_of(acc_path, "bf16: 1e-300"), "peak_tflops.bf16");
  std::string net = read_file(repo_root() + "/data/hardware/networks/h100_ib400.yaml");
  net.replace(net.find("  node_lat: 0.45"), 16, "  node_lat: 1e300");
  const std::string net_path = dir.write("net.yaml", net);
  expect_clean_error(
      run("performance --config " + kLlama + " --hardware h100 --hardware-config " + net_path),
      line_of(net_path, "node_lat: 1e300"), "not a physical value");
}

// Hangs: an extends chain of thousands of files and a scan of thousands of sizes are bounded.
TEST(Issue30, LongExtendsChainsAndNodeScansAreBounded) {
  TempDir dir;
  std::string base = read_file(kLlama);
  dir.write("c0.yaml", base);
  for (int i = 1; i <= 100; ++i) {
    dir.write("c" + std::to_string(i) + ".yaml",
              "extends: [c" + std::to_string(i - 1) + ".yaml]\nk" + std::to_string(i) + ": 1\n");
  }
  const std::string top = dir.path() + "/c100.yaml";
  const CliResult r = run("config --json --config " + top);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("limited to 64 levels"), std::string::npos) << r.out;
  std::string nodes = "1";
  for (int i = 2; i <= 65; ++i) nodes += "," + std::to_string(i);
  expect_clean_error(run("performance --config " + kLlama + " --scan-nodes " + nodes),
                     "--scan-nodes", "more than 64 node counts");
}

// ---------------------------------------------------------------------------- readability

// `sweep --top 3`: both tables print at most 3 rows, every number ends under the end of its
// header, and the exposed-time cell starts under its header.
TEST(Issue30, SweepTablesAreAlignedAndBoundedByTop) {
  const CliResult r =
      run("sweep --config " + kLlama + " --nodes 2 --grid 'tp=1,2;pp=1,2;cp=1' --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream in(r.out);
  std::string header;
  int tables = 0, rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("tok/s/GPU") != std::string::npos && line.find("layout") != std::string::npos) {
      header = line;
      ++tables;
      continue;
    }
    if (header.empty() || line.empty() || line.rfind("  ", 0) != 0 || line.find("...") == 2 ||
        !std::isdigit(static_cast<unsigned char>(line[line.find_first_not_of(' ')]))) {
      if (line.empty()) header.clear();
      continue;
    }
    ++rows;
    const std::size_t tok_end = header.find("tok/s/GPU") + 9;
    EXPECT_NE(line[tok_end - 1], ' ') << header << "\n" << line;
    EXPECT_EQ(line[tok_end], ' ') << header << "\n" << line;
    const std::size_t exposed = header.find("exposed ms");
    EXPECT_NE(line[exposed], ' ') << header << "\n" << line;
    EXPECT_EQ(line[exposed - 1], ' ') << header << "\n" << line;
  }
  EXPECT_EQ(tables, 2) << r.out;
  EXPECT_GE(rows, 2) << r.out;
  EXPECT_LE(rows, 6) << r.out;
}

}  // namespace
