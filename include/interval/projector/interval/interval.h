// Honest error bars (docs/validation.md "Calibrated ranges"): a job's regime, the residuals of the
// published runs of data/validation (data/validation/residuals.json, written by
// scripts/fit_frameworks.py --residuals), and the 80 % range they give a projection.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/job.h"
#include "projector/perf/perf.h"

namespace projector {

// A job's regime: "<vendor>/<generation>/<model>/<backend>/<pipeline>/<precision>/<scale>", e.g.
// "nvidia/hopper/moe-ep/megatron/pp/fp8/gpus<=1024". `levels` runs from the key itself to coarser
// regimes (dropping scale, precision, pipeline, back-end, model, then generation) and ends with
// "all".
struct Regime {
  std::string key;
  std::vector<std::string> levels;
};
// The kernel class of a regime key: "recurrent" (a hybrid with Mamba-2 or linear-attention
// mixers, model part "recurrent-..."), "recsys", or "transformer". Ranges never borrow residuals
// across kernel classes.
std::string regime_kernel_class(const std::string& regime_key);
Regime classify_regime(const JobSpec& job);

// One published run's residuals: 100 x (predicted / measured - 1), throughput scored
// leave-one-family-out, peak memory as projected.
struct ResidualRun {
  std::string id;
  std::string family;
  std::string regime;
  std::optional<double> throughput_pct;
  std::optional<double> memory_pct;
};
struct ResidualTable {
  std::string file;
  std::vector<ResidualRun> runs;
};
inline constexpr const char* kResidualsFile = "validation/residuals.json";
// <data_dir>/validation/residuals.json; an absent file is an empty table (no ranges).
ResidualTable load_residuals(const std::string& data_dir);
ResidualTable parse_residuals(const std::string& json_text, const std::string& file);

// Pooling rule: the finest level of the regime with at least this many residuals of the job's
// kernel class.
inline constexpr int kMinRegimeRuns = 8;

struct ResidualQuantiles {
  std::string level;
  int runs = 0;
  double q10_pct = 0.0;
  double q90_pct = 0.0;
};
enum class ResidualMetric { kThroughput, kMemory };
// The 10th / 90th percentiles (the q (n + 1)-th order statistic, interpolated) of the residuals
// of the job's kernel class at the finest level with kMinRegimeRuns or more, leaving out
// `exclude_family` (a run's own family when it is scored); nullopt when the table has no residual
// at all or range_refusal() refuses one.
std::optional<ResidualQuantiles> residual_quantiles(const ResidualTable& table,
                                                    const Regime& regime, ResidualMetric metric,
                                                    const std::string& exclude_family = "");
// Why a regime gets no range from `table` ("" when it gets one): no residual of its kernel class
// on its vendor (leaving out `exclude_family`). A recurrent hybrid on a vendor where no published
// run of one was scored would borrow another vendor's or another class's errors: refused.
std::string range_refusal(const ResidualTable& table, const Regime& regime, ResidualMetric metric,
                          const std::string& exclude_family = "");
// Quantile q of sorted values as the q (n + 1)-th order statistic (1-based, linearly interpolated,
// clamped to the first and last): the prediction-interval convention.
double sorted_quantile(const std::vector<double>& sorted, double q);

// The throughput part of a calibrated range from quantiles already looked up (a sweep looks them
// up once per regime).
CalibratedRange range_from_quantiles(const ResidualQuantiles& q, const std::string& regime_key,
                                     const PerfReport& rep);

// The calibrated range of a projection: a measured value M with residual r = P / M - 1 lies in
// [P / (1 + q90), P / (1 + q10)] for a rate P, [P (1 + q10), P (1 + q90)] for a time.
std::optional<CalibratedRange> calibrated_range(const ResidualTable& table, const JobSpec& job,
                                                const PerfReport& rep,
                                                const std::string& exclude_family = "");

// The calibrated range of a memory projection's peak (MemoryReport::range) from the memory
// residuals of the job's regime, and the verdict it gives (verdict_with_range): the peak rank's
// allocator part is scaled by [1 / (1 + q90), 1 / (1 + q10)] (the residuals compare allocator
// peaks), the runtime context and communicator buffers kept. No residual: the report unchanged.
void attach_memory_range(const ResidualTable& table, const JobSpec& job, MemoryReport& rep,
                         const std::string& exclude_family = "");

}  // namespace projector
