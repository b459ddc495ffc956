// --csv on memory, performance, both and validate: the rows and cells follow from the JSON the
// same command writes, and the memory components add up to the rank's total.
#include "projector/report/csv_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "projector/util/error.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using testing::run_cli;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const std::string kDeepSeek = testing::repo_root() + "/examples/deepseek_v3-BF16-pretrain.yaml";
const std::string kLlama = testing::repo_root() + "/examples/llama3.1_8B-BF16-pretrain.yaml";

using projector::testing::read_file;

// RFC 4180 reader for the tests (quoted cells with doubled quotes, no embedded line breaks).
std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  double num(std::size_t row, const std::string& column) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == column) return std::stod(rows.at(row).at(i));
    }
    ADD_FAILURE() << "no column " << column;
    return 0.0;
  }
};

Csv parse_csv(const std::string& text) {
  Csv csv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (csv.header.empty()) {
      csv.header = split_row(line);
    } else {
      csv.rows.push_back(split_row(line));
      EXPECT_EQ(csv.rows.back().size(), csv.header.size()) << line;
    }
  }
  return csv;
}

// `projector COMMAND -c CONFIG --csv A --json B`: the CSV and the JSON document it came from.
struct CsvAndJson {
  Csv csv;
  nlohmann::json doc;
};

CsvAndJson run_both_outputs(const std::string& command, const std::string& config) {
  testing::TempDir tmp;
  const std::string csv_path = tmp.path() + "/out.csv";
  const std::string json_path = tmp.path() + "/out.json";
  const auto r = run_cli(command + " -c " + config + " --csv " + csv_path + " --json " + json_path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  if (r.exit_code != 0) return {};
  return {parse_csv(read_file(csv_path)), nlohmann::json::parse(read_file(json_path))};
}

// DeepSeek-V3 at PP16 VPP2: sixteen rank classes; each row's point components sum to its total,
// and the totals are the JSON's bytes in GiB.
TEST(MemoryCsv, OneRowPerRankClassMatchingTheJson) {
  const auto [csv, doc] = run_both_outputs("memory", kDeepSeek);
  ASSERT_EQ(csv.rows.size(), 16u);  // first: a failed run leaves both empty
  ASSERT_EQ(csv.rows.size(), doc["ranks"].size());
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const nlohmann::json& rank = doc["ranks"][i];
    EXPECT_EQ(csv.num(i, "pp_rank"), rank["pp_rank"].get<double>());
    EXPECT_NEAR(csv.num(i, "total_point_gib"), rank["total_point_bytes"].get<double>() / kGiB,
                1e-6);
    EXPECT_NEAR(csv.num(i, "total_upper_gib"), rank["total_upper_bytes"].get<double>() / kGiB,
                1e-6);
    double sum = 0.0;
    for (const auto& [name, bytes] : rank["point_bytes"].items()) sum += csv.num(i, name + "_gib");
    EXPECT_NEAR(sum, csv.num(i, "total_point_gib"), 1e-5 * 12);  // 12 cells rounded to 1e-6
    EXPECT_EQ(csv.num(i, "is_peak"), rank["pp_rank"] == doc["peak"]["rank"] ? 1.0 : 0.0);
  }
}

// Per rank: busy + idle is the simulated pipeline makespan; `both` adds that rank's memory.
TEST(PerformanceCsv, RanksAddUpToThePipelineAndBothAddsMemory) {
  const auto [csv, doc] = run_both_outputs("both", kDeepSeek);
  ASSERT_EQ(csv.rows.size(), 16u);
  const double pipeline_ms = doc["results"]["pipeline_time_ms"].get<double>();
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    EXPECT_NEAR(csv.num(i, "busy_ms") + csv.num(i, "idle_ms"), pipeline_ms, 1e-6 * pipeline_ms);
    EXPECT_EQ(csv.num(i, "chunks"), 2.0);  // VPP 2
    EXPECT_NEAR(csv.num(i, "memory_total_point_gib"),
                doc["memory"]["ranks"][i]["total_point_bytes"].get<double>() / kGiB, 1e-6);
  }
  // `performance` carries only a memory summary: no per-rank memory columns.
  const auto p = run_cli("performance -c " + kLlama + " --csv -");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const Csv perf = parse_csv(p.out);
  ASSERT_EQ(perf.rows.size(), 1u);
  for (const std::string& h : perf.header) EXPECT_EQ(h.rfind("memory_", 0), std::string::npos);
}

// One row per run; a reason with commas and quotes survives as one cell.
TEST(ValidationCsv, OneRowPerRunWithQuotedText) {
  const std::string doc = R"({"schema_version": 1, "runs": [
    {"id": "a", "status": "ok", "predicted": {"tokens_per_sec_per_gpu": 110.0,
     "peak_memory_gib": null, "out_of_memory": false}, "measured": {"tokens_per_sec_per_gpu": 100.0},
     "error_pct": {"tokens_per_sec_per_gpu": 10.0}, "throughput_error_pct": 10.0,
     "throughput_basis": "tokens_per_sec_per_gpu", "memory_error_pct": null, "assumptions": [],
     "regime": {"moe": false, "accelerator_family": "AMD", "num_gpus": 8, "pp": true,
                "cp": false, "ep": false, "fp8": false}},
    {"id": "b", "status": "unmapped", "reason": "no seq, \"gbs\", or TP", "predicted": {},
     "measured": {}, "error_pct": {}, "throughput_error_pct": null, "memory_error_pct": null,
     "assumptions": [], "regime": {"moe": true, "accelerator_family": "TPU", "num_gpus": 256,
     "pp": false, "cp": false, "ep": true, "fp8": false}}], "summary": {}})";
  const Csv csv = parse_csv(validation_csv(doc));
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.num(0, "throughput_error_pct"), 10.0);
  EXPECT_EQ(csv.num(0, "measured_tokens_per_sec_per_gpu"), 100.0);
  EXPECT_EQ(csv.num(0, "pp"), 1.0);
  EXPECT_EQ(csv.rows[1].back(), "no seq, \"gbs\", or TP");
  EXPECT_EQ(csv.rows[1][3], "");  // null throughput error: empty cell
}

// The CLI's validate --csv has a row for every entry of the runs file.
TEST(ValidationCsv, CliWritesEveryRun) {
  testing::TempDir tmp;
  const std::string runs = tmp.write("runs.yaml", R"(- id: one
  hardware: {accelerator: H100 SXM, num_gpus: 8}
  model: {name: llama3 8b}
- id: two
  hardware: {accelerator: MI300X, num_gpus: 8}
  model: {name: llama3 70b}
)");
  const auto r = run_cli("validate " + runs + " --csv " + tmp.path() + "/v.csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Csv csv = parse_csv(read_file(tmp.path() + "/v.csv"));
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.rows[0][0], "one");
  EXPECT_EQ(csv.rows[1][0], "two");
}

TEST(Csv, RejectsADocumentThatIsNotJson) {
  EXPECT_THROW(memory_csv("{not json"), InputError);
}

}  // namespace
}  // namespace projector
