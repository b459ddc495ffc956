// The answers people plan with (docs/performance.md "Time to train"): how long a run of N tokens
// takes at the projected throughput, the GPU-hours, the cost at a stated price and the board
// energy, each with the range the calibrated throughput range gives.
#pragma once

#include <string_view>

#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/perf/perf.h"

namespace projector {

struct PlanInputs {
  double train_tokens = 0.0;       // 0: no plan
  double gpu_hour_cost_usd = 0.0;  // 0: no cost figure
};

// "15T", "300B", "2.5e12", "1,000,000": a positive token count (K/M/B/T decimal suffixes, case
// insensitive). InputError naming `key` otherwise.
double parse_token_count(std::string_view text, std::string_view key);

// --train-tokens / --gpu-hour-cost as every command (and the Python module) reads them: empty
// text is no plan; a price needs a token count and lies in (0, 1e9] USD. InputError otherwise.
PlanInputs make_plan_inputs(std::string_view train_tokens_text, double gpu_hour_cost_usd);

// Time to train at rep's throughput (rep.range, when set, gives the lo / hi of each figure):
// days = tokens / (tokens/s) / 86,400, GPU-hours = days x 24 x devices, cost = GPU-hours x price,
// energy = devices x wall time x (idle + (board - idle) x busy): board power while the compute
// stream runs (an upper end of what computing draws), the catalogue's measured idle power while it
// waits, busy = rep.busy_fraction; board power throughout when the idle power is unpublished or
// the run was not simulated. Hosts, network and cooling excluded.
TrainingPlan plan_training(const JobSpec& job, const PerfReport& rep, const PlanInputs& in);
// The same from a throughput per GPU and its range (lo = hi = 0: no range) and the busy fraction
// (0: unknown, board power throughout), as a sweep has them.
TrainingPlan plan_from_rate(const JobSpec& job, int world_size, double tokens_per_s_per_gpu,
                            double tokens_lo, double tokens_hi, const PlanInputs& in,
                            double busy_fraction = 0.0);

}  // namespace projector
