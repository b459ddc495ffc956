// The trace reader on small synthetic traces (built here, labelled synthetic) and on the limits
// and failure modes of real files.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <iterator>

#include "fixtures.h"
#include "projector/profile/profile.h"
#include "projector/util/error.h"
#include "support/temp_dir.h"

namespace projector::profile {
namespace {

// Synthetic: one step, two kernels launched from the main thread, one NCCL kernel with Kineto's
// collective arguments, a GEMM operator with shapes, and one allocator sample.
const char* kSynthetic = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
  "distributedInfo": {"rank": 3, "world_size": 8},
  "metadata": {"nested": {"traceEvents": [{"ph": "X", "cat": "kernel"}]}},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 10,
     "ts": 1000, "dur": 500},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 10, "ts": 1010, "dur": 5,
     "args": {"External id": 42, "Input Dims": [[8192, 4096], [4096, 1024]],
              "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 10,
     "ts": 1012, "dur": 3, "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_tst_128x256_64x4_1x2_h_bz_TNT", "pid": 0,
     "tid": "stream 7", "ts": 1100, "dur": 200.5,
     "args": {"correlation": 5, "External id": 42, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 10,
     "ts": 1020, "dur": 3, "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 9, "ts": 1150, "dur": 100,
     "args": {"correlation": 6, "device": 0, "stream": 9, "Collective name": "allreduce",
              "In msg nelems": 1048576, "dtype": "BFloat16", "Group size": 8}},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 10, "ts": 1013,
     "s": "t", "args": {"Total Allocated": 3000, "Total Reserved": 4096, "Device Type": 1}}
  ]
})json";

TEST(TraceReader, KeepsTheFieldsAProfileNeeds) {
  const TraceData t = parse_trace_text(kSynthetic, "synthetic.json");
  EXPECT_EQ(t.devices, std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  ASSERT_EQ(t.gpu.size(), 2u);  // the nested metadata "traceEvents" is not an event list
  EXPECT_EQ(t.name(t.gpu[0].name), "nvjet_tst_128x256_64x4_1x2_h_bz_TNT");
  EXPECT_DOUBLE_EQ(t.gpu[0].dur_us, 200.5);
  EXPECT_EQ(t.gpu[0].stream, 7);
  EXPECT_EQ(t.gpu[1].group_size, 8);
  EXPECT_DOUBLE_EQ(t.gpu[1].message_bytes, 1048576.0 * 2);  // bf16 elements
  EXPECT_EQ(t.launches.size(), 2u);
  ASSERT_EQ(t.cpu_steps.size(), 1u);
  EXPECT_EQ(t.name(t.cpu_steps[0].name), "ProfilerStep#7");
  ASSERT_EQ(t.shapes.size(), 1u);
  EXPECT_EQ(t.shapes[0].dims, (std::vector<std::vector<std::int64_t>>{{8192, 4096}, {4096, 1024}}));
  ASSERT_EQ(t.memory.size(), 1u);
  EXPECT_DOUBLE_EQ(t.memory[0].reserved_bytes, 4096.0);
}

TEST(TraceReader, AnalysesTheSyntheticStep) {
  const MeasuredProfile p = analyze_trace(parse_trace_text(kSynthetic, "synthetic.json"));
  // The all-reduce runs inside the GEMM (1150-1250 within 1100-1300.5): compute owns that time,
  // so the GEMM holds the whole 200.5 us wall and the collective none of it.
  const ClassTime& g = p.classes[static_cast<std::size_t>(KernelClass::kGemm)];
  const ClassTime& ar = p.classes[static_cast<std::size_t>(KernelClass::kAllReduce)];
  EXPECT_NEAR(g.wall_ms, 0.2005, 1e-9);
  EXPECT_NEAR(ar.kernel_ms, 0.1, 1e-9);
  EXPECT_NEAR(ar.wall_ms, 0.0, 1e-12);
  EXPECT_NEAR(p.step_ms, 0.2005, 1e-9);  // one step: first start to last end
  ASSERT_EQ(p.gemms.size(), 1u);
  EXPECT_EQ(p.gemms[0].m, 8192);
  EXPECT_EQ(p.gemms[0].n, 1024);
  EXPECT_EQ(p.gemms[0].k, 4096);
  EXPECT_TRUE(p.memory.present);
  EXPECT_EQ(p.device, "NVIDIA H100 80GB HBM3");
}

TEST(TraceReader, AcceptsATopLevelEventArray) {
  const TraceData t = parse_trace_text(
      R"([{"ph": "X", "cat": "kernel", "name": "gemm_kernel", "ts": 0, "dur": 5, "args": {}}])",
      "synthetic.json");
  ASSERT_EQ(t.gpu.size(), 1u);
}

TEST(TraceReader, RefusesWhatIsNotATrace) {
  try {
    parse_trace_text("{\n  \"traceEvents\": [\n  {\"ph\": \"X\",,}\n]}", "bad.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 3);  // the line of the syntax error
    EXPECT_NE(e.message().find("not valid JSON"), std::string::npos);
  }
  EXPECT_THROW(parse_trace_text(R"({"schemaVersion": 1})", "x.json"), InputError);
  EXPECT_THROW(parse_trace_text("modules:\n  pre_trainer: {}\n", "x.yaml"), InputError);
}

TEST(TraceReader, RefusesATraceWithoutGpuKernels) {
  const TraceData t = parse_trace_text(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 5}]})",
      "cpu_only.json");
  try {
    analyze_trace(t);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("no GPU kernels"), std::string::npos);
  }
}

TEST(TraceReader, EnforcesTheLimits) {
  TraceLimits tiny;
  tiny.max_kept_events = 2;
  EXPECT_THROW(parse_trace_text(kSynthetic, "synthetic.json", tiny), InputError);
  TraceLimits small_file;
  small_file.max_file_bytes = 1000;  // the MI250 fixture is about 6 KB compressed
  EXPECT_THROW(read_trace(testing::profile_data(testing::kHtaMi250), small_file), InputError);
  TraceLimits small_json;
  small_json.max_json_bytes = 10000;  // and about 66 KB of JSON
  EXPECT_THROW(read_trace(testing::profile_data(testing::kHtaMi250), small_json), InputError);
}

// A token is one string (escaped quotes and commas inside it included) or one bare number; many
// short tokens add up to nothing.
TEST(TraceReader, BoundsTheLongestTokenNotTheDocument) {
  TraceLimits limits;
  limits.max_token_bytes = 64;
  const std::string forty(40, 'x');
  const std::string fine = R"({"traceEvents": [{"ph": "X", "name": ")" + forty + R"(", "cat": ")" +
                           forty + R"(", "ts": 1, "dur": 2}]})";
  EXPECT_NO_THROW(parse_trace_text(fine, "fine.json", limits));
  // 40 + 4 + 40 = 84 bytes in one string: the escaped quote and the commas do not end it.
  const std::string quoted =
      "{\"traceEvents\": [\n{\"name\": \"" + forty + "\\\",, " + forty + "\"}]}";
  try {
    parse_trace_text(quoted, "quoted.json", limits);
    FAIL() << "a 84-byte string passed a 64-byte bound";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_NE(e.message().find("max_token_bytes"), std::string::npos) << e.message();
  }
  const std::string number = R"({"traceEvents": [{"ts": 1)" + std::string(70, '0') + "}]}";
  EXPECT_THROW(parse_trace_text(number, "number.json", limits), InputError);
  // One event's operator shapes are bounded alike (8 bytes per dimension: 9 dims > 64 bytes).
  const std::string dims =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": )"
      R"({"Input Dims": [[1, 2, 3, 4, 5], [6, 7, 8, 9]]}}]})";
  EXPECT_THROW(parse_trace_text(dims, "dims.json", limits), InputError);
}

TEST(TraceReader, ReadsPlainAndGzipAlikeAndRefusesTruncatedGzip) {
  testing::TempDir dir;
  const std::string src = testing::profile_data(testing::kHtaMi250);
  // Decompress the fixture to a plain file.
  gzFile in = gzopen(src.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  std::string json;
  char buf[4096];
  for (int n; (n = gzread(in, buf, sizeof buf)) > 0;) json.append(buf, static_cast<std::size_t>(n));
  gzclose(in);
  const std::string plain = dir.write("plain.json", json);
  const TraceData a = read_trace(src);
  const TraceData b = read_trace(plain);
  EXPECT_TRUE(a.gzip);
  EXPECT_FALSE(b.gzip);
  EXPECT_EQ(a.gpu.size(), b.gpu.size());
  EXPECT_EQ(a.json_bytes, json.size());
  // Cut the compressed file in half.
  std::ifstream f(src, std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string cut = dir.write("cut.json.gz", gz.substr(0, gz.size() / 2));
  try {
    read_trace(cut);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("truncated gzip"), std::string::npos) << e.message();
  }
}

TEST(FindRepeat, LongestCoverageThenShortestPeriod) {
  // Synthetic: prefix 9, then the block {1,2,3,4} four times, then 7.
  const std::vector<std::uint32_t> s = {9, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 7};
  const Repeat r = find_repeat(s, 2, s.size() / 2);
  EXPECT_EQ(r.start, 1u);
  EXPECT_EQ(r.period, 4u);  // not 8 (two blocks twice): same coverage, shorter period
  EXPECT_EQ(r.reps, 4u);
  EXPECT_EQ(find_repeat({1, 2, 3, 4, 5}, 1, 2).reps, 0u);
}

}  // namespace
}  // namespace projector::profile
