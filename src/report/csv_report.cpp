// CSV renderings of the JSON documents: every cell read from the document the same command
// writes with --json (columns in docs/json-schema.md).
#include "projector/report/csv_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "projector/util/error.h"

namespace projector {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Json parse(const std::string& text, const char* what) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError({}, "--csv", fmt::format("the {} document is not JSON: {}", what, e.what()));
  }
}

// RFC 4180: quote a cell holding a comma, quote or line break; double the quotes.
std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A JSON value as a cell: numbers shortest round-trip, booleans 0/1, null or missing empty.
std::string cell(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (v.is_number_integer()) return fmt::format("{}", v.get<std::int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  if (v.is_string()) return quote(v.get<std::string>());
  if (v.is_array()) {  // e.g. virtual_stages: the values separated by spaces
    std::string joined;
    for (const Json& e : v) joined += (joined.empty() ? "" : " ") + cell(e);
    return quote(joined);
  }
  return quote(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string gib_cell(const Json& bytes) {
  return bytes.is_number() ? fmt::format("{:.6f}", bytes.get<double>() / kGiB) : "";
}

Json field(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : Json();
}

std::string join(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
  return out + "\n";
}

// Columns of one memory rank: the memory document's ranks[] entry in GiB.
struct MemoryColumns {
  std::vector<std::string> components;  // in the document's order

  explicit MemoryColumns(const Json& memory) {
    if (!memory["ranks"].empty()) {
      for (const auto& [name, value] : memory["ranks"][0]["point_bytes"].items()) {
        components.push_back(name);
      }
    }
  }

  std::vector<std::string> header(const std::string& prefix) const {
    std::vector<std::string> h = {prefix + "virtual_stages",
                                  prefix + "num_layers",
                                  prefix + "has_embedding",
                                  prefix + "has_output",
                                  prefix + "mtp_layers",
                                  prefix + "in_flight_microbatches",
                                  prefix + "activation_per_microbatch_gib"};
    for (const std::string& c : components) h.push_back(prefix + c + "_gib");
    h.push_back(prefix + "total_point_gib");
    for (const std::string& c : components) h.push_back(prefix + "upper_" + c + "_gib");
    h.push_back(prefix + "total_upper_gib");
    h.push_back(prefix + "capacity_gib");
    h.push_back(prefix + "is_peak");
    return h;
  }

  std::vector<std::string> row(const Json& memory, const Json& rank) const {
    double in_flight = field(rank["in_flight"], "w_only").get<double>();
    for (const Json& c : rank["in_flight"]["per_chunk"]) in_flight += c.get<double>();
    std::vector<std::string> r = {cell(rank["virtual_stages"]),
                                  cell(rank["num_layers"]),
                                  cell(rank["has_embedding"]),
                                  cell(rank["has_output"]),
                                  cell(rank["mtp_layers"]),
                                  fmt::format("{}", in_flight),
                                  gib_cell(rank["activation_per_microbatch_bytes"])};
    for (const std::string& c : components) r.push_back(gib_cell(rank["point_bytes"][c]));
    r.push_back(gib_cell(rank["total_point_bytes"]));
    for (const std::string& c : components) r.push_back(gib_cell(rank["upper_bytes"][c]));
    r.push_back(gib_cell(rank["total_upper_bytes"]));
    r.push_back(gib_cell(memory["capacity_bytes"]));
    r.push_back(rank["pp_rank"] == memory["peak"]["rank"] ? "1" : "0");
    return r;
  }
};

// Per-microbatch F, B and W times of one pipeline rank, summed over its chunks.
std::vector<std::string> chunk_sums(const Json& perf, const Json& pp_rank) {
  int chunks = 0;
  double f = 0.0, b = 0.0, w = 0.0;
  for (const Json& c : perf["chunks"]) {
    if (c["pp_rank"] != pp_rank) continue;
    ++chunks;
    f += c["f_ms"].get<double>();
    b += c["b_ms"].get<double>();
    w += c["w_ms"].get<double>();
  }
  return {fmt::format("{}", chunks), fmt::format("{}", f), fmt::format("{}", b),
          fmt::format("{}", w)};
}

}  // namespace

std::string memory_csv(const std::string& memory_json) {
  const Json memory = parse(memory_json, "memory");
  const MemoryColumns cols(memory);
  std::vector<std::string> header = {"pp_rank"};
  for (std::string& h : cols.header("")) header.push_back(std::move(h));
  std::string out = join(header);
  for (const Json& rank : memory["ranks"]) {
    std::vector<std::string> row = {cell(rank["pp_rank"])};
    for (std::string& c : cols.row(memory, rank)) row.push_back(std::move(c));
    out += join(row);
  }
  return out;
}

std::string performance_csv(const std::string& performance_json) {
  const Json perf = parse(performance_json, "performance");
  // `both` carries the full memory document; `performance` only a summary.
  const Json memory =
      perf.contains("memory") && perf["memory"].contains("ranks") ? perf["memory"] : Json();
  const MemoryColumns mem_cols(memory.is_null() ? Json{{"ranks", Json::array()}} : memory);
  std::vector<std::string> header = {"pp_rank",
                                     "chunks",
                                     "f_ms",
                                     "b_ms",
                                     "w_ms",
                                     "busy_ms",
                                     "ideal_compute_ms",
                                     "idle_ms",
                                     "bubble_fraction",
                                     "peak_inflight_microbatches",
                                     "optimizer_ms",
                                     "iteration_time_ms",
                                     "tokens_per_s_per_gpu",
                                     "mfu_pct"};
  if (!memory.is_null()) {
    for (std::string& h : mem_cols.header("memory_")) header.push_back(std::move(h));
  }
  std::string out = join(header);
  const Json& results = perf["results"];
  for (const Json& rank : perf["ranks"]) {
    std::vector<std::string> row = {cell(rank["pp_rank"])};
    for (std::string& c : chunk_sums(perf, rank["pp_rank"])) row.push_back(std::move(c));
    for (const char* key : {"busy_ms", "ideal_compute_ms", "idle_ms", "bubble_fraction",
                            "peak_inflight_microbatches", "optimizer_ms"}) {
      row.push_back(cell(field(rank, key)));
    }
    for (const char* key : {"iteration_time_ms", "tokens_per_s_per_gpu", "mfu_pct"}) {
      row.push_back(cell(field(results, key)));
    }
    if (!memory.is_null()) {
      for (const Json& m : memory["ranks"]) {
        if (m["pp_rank"] != rank["pp_rank"]) continue;
        for (std::string& c : mem_cols.row(memory, m)) row.push_back(std::move(c));
      }
    }
    out += join(row);
  }
  return out;
}

std::string validation_csv(const std::string& validate_json) {
  const Json doc = parse(validate_json, "validate");
  static constexpr const char* kMetrics[] = {"tokens_per_sec_per_gpu", "step_time_s",
                                             "tflops_per_gpu", "mfu_pct", "peak_memory_gib"};
  static constexpr const char* kPredicted[] = {"tokens_per_sec_per_gpu",
                                               "step_time_s",
                                               "model_tflops_per_gpu",
                                               "hardware_tflops_per_gpu",
                                               "mfu_pct",
                                               "peak_memory_gib",
                                               "out_of_memory"};
  static constexpr const char* kRegime[] = {
      "moe", "accelerator_family", "num_gpus", "pp", "cp", "ep", "fp8"};
  std::vector<std::string> header = {"id", "status", "throughput_basis", "throughput_error_pct",
                                     "memory_error_pct"};
  for (const char* p : kPredicted) header.push_back(std::string("predicted_") + p);
  for (const char* m : kMetrics) header.push_back(std::string("measured_") + m);
  for (const char* m : kMetrics) header.push_back(std::string("error_pct_") + m);
  for (const char* r : kRegime) header.push_back(r);
  header.push_back("reason");
  std::string out = join(header);
  for (const Json& run : doc["runs"]) {
    std::vector<std::string> row = {
        cell(run["id"]), cell(run["status"]), cell(field(run, "throughput_basis")),
        cell(field(run, "throughput_error_pct")), cell(field(run, "memory_error_pct"))};
    for (const char* p : kPredicted) row.push_back(cell(field(run["predicted"], p)));
    for (const char* m : kMetrics) row.push_back(cell(field(run["measured"], m)));
    for (const char* m : kMetrics) row.push_back(cell(field(run["error_pct"], m)));
    for (const char* r : kRegime) row.push_back(cell(field(run["regime"], r)));
    row.push_back(cell(field(run, "reason")));
    out += join(row);
  }
  return out;
}

}  // namespace projector
