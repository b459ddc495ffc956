// The report module renders projections; these tests check that what it prints and writes is what
// the inputs say: fields echo the job, derived figures follow from the projection (sums,
// per-rank counts, unit conversions), and the documents carry their schema versions.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/report/job_report.h"
#include "projector/report/memory_report.h"
#include "projector/report/perf_report.h"
#include "support/job_builders.h"

namespace projector {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Llama 3.1 8B, TP 2, PP 4 (1F1B), DP 1, on one node of 8 H100 (shipped catalogue); 16
// microbatches of 1 x 4096 tokens.
JobSpec pp4_job() {
  JobSpec j = testing::make_job(testing::llama31_8b(),
                                {.tp = 2, .pp = 4, .gbs = 16, .seq = 4096, .sp = true});
  j.model.name = "llama3.1_8B";
  j.defaults.push_back({"use_flash_attn", "true", "test default"});
  j.warnings.push_back("a test warning");
  return j;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// ------------------------------------------------------------------------------------- memory

TEST(MemoryReportJson, EchoesTheJobAndAddsUp) {
  const JobSpec job = pp4_job();
  const MemoryReport rep = project_memory(job);
  const json j = json::parse(memory_json(job, rep));
  EXPECT_EQ(j["schema_version"], MemoryReport::kSchemaVersion);
  EXPECT_EQ(j["kind"], "memory");
  EXPECT_EQ(j["units"], "bytes");
  EXPECT_EQ(j["model"], "llama3.1_8B");
  EXPECT_EQ(j["parallel"]["tp"], 2);
  EXPECT_EQ(j["parallel"]["pp"], 4);
  EXPECT_EQ(j["schedule"], "1f1b");
  EXPECT_EQ(j["num_microbatches"], 16);                  // 16 / (1 x DP 1)
  EXPECT_DOUBLE_EQ(j["tokens_per_microbatch"], 4096.0);  // mbs 1 x seq 4096 / CP 1
  ASSERT_EQ(j["ranks"].size(), 4u);
  double peak = 0.0;
  for (int r = 0; r < 4; ++r) {
    const json& rj = j["ranks"][static_cast<std::size_t>(r)];
    EXPECT_EQ(rj["pp_rank"], r);
    EXPECT_EQ(rj["num_layers"], 8);  // 32 layers over 4 stages
    EXPECT_EQ(rj["has_embedding"], r == 0);
    EXPECT_EQ(rj["has_output"], r == 3);
    // 1F1B: rank r holds pp - r microbatches.
    EXPECT_EQ(rj["in_flight"]["per_chunk"][0], 4 - r);
    EXPECT_EQ(rj["in_flight"]["w_only"], 0);
    // Components add up to the total, and the activations are in-flight x per-microbatch bytes.
    double sum = 0.0;
    for (const auto& [name, bytes] : rj["point_bytes"].items()) sum += bytes.get<double>();
    EXPECT_NEAR(sum, rj["total_point_bytes"].get<double>(), 1e-6 * sum);
    EXPECT_NEAR(rj["point_bytes"]["activations"].get<double>(),
                (4 - r) * rj["activation_per_chunk_bytes"][0].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(rj["activation_per_chunk_bytes"][0].get<double>(),
                     rj["activation_per_microbatch_bytes"].get<double>());
    // The allocator total leaves out the runtime context and the communicator buffers.
    EXPECT_NEAR(rj["allocator_point_bytes"].get<double>(),
                sum - rj["point_bytes"]["runtime_context"].get<double>() -
                    rj["point_bytes"]["comm_buffers"].get<double>(),
                1e-6 * sum);
    peak = std::max(peak, rj["total_point_bytes"].get<double>());
  }
  EXPECT_DOUBLE_EQ(j["peak"]["point_bytes"].get<double>(), peak);
  EXPECT_DOUBLE_EQ(j["capacity_bytes"].get<double>(), 80.0 * kGiB);  // h100_sxm.yaml: 80 GiB
  EXPECT_EQ(j["verdict"], peak < 80.0 * kGiB ? "FITS" : "OOM");
  EXPECT_EQ(j["largest_components"].size(), 3u);
  EXPECT_EQ(j["sources"].size(), static_cast<std::size_t>(kNumMemoryComponents));
  // The job builder's defaults (the resolved schedule, ...) and then the one the test added.
  ASSERT_GE(j["defaults"].size(), 1u);
  EXPECT_EQ(j["defaults"].back()["key"], "use_flash_attn");
  EXPECT_EQ(j["warnings"][0], "a test warning");
}

TEST(MemoryReportText, TableColumnsPeakAndVerdict) {
  const JobSpec job = pp4_job();
  const MemoryReport rep = project_memory(job);
  const std::string t = memory_summary_text(job, rep);
  EXPECT_NE(t.find("Memory projection: llama3.1_8B (<test>)"), std::string::npos);
  EXPECT_NE(t.find("TP 2 PP 4 VPP 1 CP 1 EP 1 ETP 2 DP 1 | mbs 1 seq 4096 | 16 microbatches, "
                   "schedule 1f1b"),
            std::string::npos);
  // One column per rank, labelled with what it holds.
  for (const char* label : {"pp0 emb", "pp1", "pp2", "pp3 out"}) {
    EXPECT_NE(t.find(label), std::string::npos) << label;
  }
  // The in-flight row: 4, 3, 2, 1 microbatches.
  const std::size_t row = t.find("in-flight mb");
  ASSERT_NE(row, std::string::npos);
  const std::string line = t.substr(row, t.find('\n', row) - row);
  EXPECT_EQ(line, fmt::format("{:<18} {:>12} {:>12} {:>12} {:>12}", "in-flight mb", 4, 3, 2, 1));
  // One row per component, and the peak in GiB with two decimals.
  for (int c = 0; c < kNumMemoryComponents; ++c) {
    EXPECT_EQ(count(t, "\n" + std::string(to_string(static_cast<MemoryComponent>(c))) + " "), 1u);
  }
  const RankMemory& peak = rep.ranks[static_cast<std::size_t>(rep.peak_rank)];
  EXPECT_NE(t.find(fmt::format("Peak: pipeline rank {}", peak.pp_rank)), std::string::npos);
  EXPECT_NE(t.find(fmt::format("point {:.2f} GiB", rep.peak_point_bytes / kGiB)),
            std::string::npos);
  EXPECT_NE(t.find(fmt::format("HBM capacity: 80.00 GiB -> {}", to_string(rep.verdict))),
            std::string::npos);
  // A default that does not decide memory is counted, listed with all_defaults (--verbose).
  EXPECT_EQ(t.find("default use_flash_attn = true (test default)"), std::string::npos);
  EXPECT_NE(t.find("other default(s) applied (--verbose"), std::string::npos);
  EXPECT_NE(
      memory_summary_text(job, rep, true).find("default use_flash_attn = true (test default)"),
      std::string::npos);
  EXPECT_NE(t.find("warning: a test warning"), std::string::npos);
}

// Llama 3.1 70B on one GPU cannot fit 80 GiB (its bf16 weights alone are ~131 GiB): the text
// names the verdict, the largest components (unsharded Adam: the two fp32 moments, 8 B/param,
// outweigh the fp32 gradients and master copy, 4 each, and the bf16 weights, 2) and every remedy
// the projection re-ran.
TEST(MemoryReportText, OutOfMemoryListsRemedies) {
  JobSpec job = testing::make_job(testing::llama31_70b(), {.gpn = 1, .gbs = 1});
  const MemoryReport rep = project_memory(job);
  ASSERT_EQ(rep.verdict, MemoryVerdict::kOom);
  ASSERT_FALSE(rep.remedies.empty());
  const std::string t = memory_summary_text(job, rep);
  EXPECT_NE(t.find("-> OOM"), std::string::npos);
  EXPECT_NE(t.find("Largest components: optimizer_states"), std::string::npos);
  for (const MemoryRemedy& m : rep.remedies) {
    EXPECT_NE(t.find(m.change), std::string::npos) << m.change;
  }
  const json j = json::parse(memory_json(job, rep));
  EXPECT_EQ(j["remedies"].size(), rep.remedies.size());
  EXPECT_EQ(j["largest_components"][0], "optimizer_states");
}

// -------------------------------------------------------------------------------- performance

TEST(PerfReportJson, ResultsFollowFromTheProjection) {
  const JobSpec job = pp4_job();
  const PerfReport rep = project_performance(job);
  const json j = json::parse(perf_json(job, rep));
  EXPECT_EQ(j["schema_version"], kPerfJsonSchemaVersion);
  EXPECT_EQ(j["kind"], "performance");
  EXPECT_EQ(j["job"]["world_size"], 8);  // 1 node x 8 GPUs
  EXPECT_EQ(j["job"]["accelerator"], "h100_sxm");
  EXPECT_EQ(j["job"]["runtime"]["num_microbatches"], 16);
  EXPECT_EQ(j["job"]["schedule"]["algorithm"], "1f1b");
  const json& res = j["results"];
  EXPECT_DOUBLE_EQ(res["iteration_time_ms"].get<double>(), 1e3 * rep.iteration_s);
  // Throughput from the inputs: GBS 16 x seq 4096 tokens per iteration over 8 GPUs.
  EXPECT_NEAR(res["tokens_per_s_per_gpu"].get<double>(), 16.0 * 4096 / rep.iteration_s / 8,
              1e-9 * res["tokens_per_s_per_gpu"].get<double>());
  EXPECT_NEAR(res["iteration_time_ms"].get<double>(),
              res["pipeline_time_ms"].get<double>() + res["optimizer_time_ms"].get<double>() +
                  res["param_gather_exposed_ms"].get<double>(),
              1e-9 * res["iteration_time_ms"].get<double>());
  EXPECT_DOUBLE_EQ(res["mfu_pct"].get<double>(), 100.0 * rep.mfu);
  // One chunk per (rank, chunk) with its priced ops; one rank entry per pipeline rank with the
  // schedule's in-flight count (1F1B: pp - r).
  ASSERT_EQ(j["chunks"].size(), 4u);
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(j["chunks"][c]["ops"].size(), rep.chunks[c].ops.size());
    EXPECT_DOUBLE_EQ(j["chunks"][c]["f_ms"].get<double>(), 1e3 * rep.chunks[c].f_s);
  }
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(j["ranks"][static_cast<std::size_t>(r)]["peak_inflight_microbatches"], 4 - r);
  }
  ASSERT_FALSE(j["critical_path"].empty());
  EXPECT_DOUBLE_EQ(j["critical_path"].back()["end_ms"].get<double>(), 1e3 * rep.pipeline_s);
  EXPECT_DOUBLE_EQ(j["memory"]["peak_point_bytes"].get<double>(), rep.memory.peak_point_bytes);
  EXPECT_EQ(j["warnings"][0], "a test warning");
}

TEST(PerfReportText, SummaryLines) {
  const JobSpec job = pp4_job();
  const PerfReport rep = project_performance(job);
  const std::string t = perf_summary_text(job, rep);
  EXPECT_NE(t.find("Cluster      1 node(s) x 8 h100_sxm = 8 GPUs"), std::string::npos);
  EXPECT_NE(t.find("Parallelism  TP 2 PP 4 VPP 1 CP 1 EP 1 ETP 2 DP 1, SP, distributed optimizer"),
            std::string::npos);
  EXPECT_NE(t.find("Batch        MBS 1 GBS 16 seq 4096 -> 16 microbatches per DP rank"),
            std::string::npos);
  EXPECT_NE(t.find(fmt::format("Iteration time          {:>12.1f} ms", 1e3 * rep.iteration_s)),
            std::string::npos);
  EXPECT_NE(t.find(fmt::format("Tokens/s/GPU            {:>12.1f}", rep.tokens_per_s_per_gpu)),
            std::string::npos);
  // One chunk-time row per (rank, chunk).
  EXPECT_EQ(count(t, "\n     0     0     0 ") + count(t, "\n     3     0     3 "), 2u);
  const std::string ops = op_table_text(job, rep);
  EXPECT_EQ(count(ops, "== pipeline rank "), 4u);
}

// The trace has one process per pipeline rank, one thread per stream, and one complete event per
// simulated action and communication task plus the optimizer step of each rank.
TEST(PerfReportTrace, OneEventPerSimulatedAction) {
  const JobSpec job = pp4_job();
  PerfOptions po;
  po.record_timeline = true;
  const PerfReport rep = project_performance(job, po);
  const json j = json::parse(chrome_trace_json(rep));
  std::size_t complete = 0, processes = 0, threads = 0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "X") ++complete;
    if (e["ph"] == "M" && e["name"] == "process_name") ++processes;
    if (e["ph"] == "M" && e["name"] == "thread_name") ++threads;
  }
  EXPECT_EQ(processes, 4u);
  EXPECT_EQ(threads, 4u * rep.simulation.stream_names.size());
  EXPECT_EQ(complete, rep.simulation.timeline.size() + 4u);
  // 1F1B: F and BW for each of 16 microbatches on each of the 4 ranks, plus the DP tasks.
  EXPECT_GE(rep.simulation.timeline.size(), 4u * 16u * 2u);
}

// An expert-parallel job adds one "ep dispatch/combine" track per rank with one event per F and B
// (BW) action of a chunk with EP collectives, as long as that phase's priced dispatch / combine.
TEST(PerfReportTrace, EpDispatchAndCombineOnTheirOwnTrack) {
  JobSpec job = testing::make_job(testing::mixtral_8x7b(), {.ep = 8, .gbs = 16});
  PerfOptions po;
  po.record_timeline = true;
  po.with_memory = false;
  const PerfReport rep = project_performance(job, po);
  ASSERT_FALSE(rep.ep_comm.empty());
  const json j = json::parse(chrome_trace_json(rep));
  const std::size_t ep_tid = rep.simulation.stream_names.size();
  std::size_t ep_events = 0, actions = 0;
  double ep_f_us = -1.0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["tid"] == ep_tid) {
      ++ep_events;
      if (e["name"].get<std::string>().find("(F ") != std::string::npos) ep_f_us = e["dur"];
    }
  }
  for (const schedule::TimelineEvent& e : rep.simulation.timeline) {
    if (e.stream == 0 && e.phase != schedule::Phase::kW) ++actions;
  }
  EXPECT_EQ(ep_events, actions);
  EXPECT_NEAR(ep_f_us, rep.chunks[0].ep_f_s * 1e6, 1e-6);
}

// ------------------------------------------------------------------------------------------ job

TEST(JobReport, JsonEchoesLayoutAndStages) {
  const JobSpec job = pp4_job();
  const json j = json::parse(job_json(job));
  EXPECT_EQ(j["schema_version"], kJobJsonSchemaVersion);
  EXPECT_EQ(j["parallel"]["tp"], 2);
  EXPECT_EQ(j["parallel"]["dp"], 1);
  ASSERT_EQ(j["parallel"]["stages"].size(), 4u);
  int layers = 0;
  for (const json& s : j["parallel"]["stages"]) layers += s["num_layers"].get<int>();
  EXPECT_EQ(layers, 32);
  EXPECT_EQ(j["parallel"]["stages"][0]["embedding"], true);
  EXPECT_EQ(j["parallel"]["stages"][3]["output"], true);
  EXPECT_EQ(j["runtime"]["num_microbatches"], 16);
  // The job builder resolves auto (PP 4, VPP 1: 1F1B) and records it as a default.
  EXPECT_EQ(j["runtime"]["schedule"], "1f1b");
  EXPECT_EQ(j["cluster"]["world_size"], 8);
  EXPECT_EQ(j["defaults"][0]["key"], "schedule");
  EXPECT_EQ(j["defaults"].back()["key"], "use_flash_attn");
  EXPECT_NE(job_summary_text(job).find("llama3.1_8B"), std::string::npos);
}

}  // namespace
}  // namespace projector
