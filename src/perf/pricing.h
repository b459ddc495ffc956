// Internal to perf: one op's price (perf.cpp), and the recommendation family's step (recsys.cpp).
#pragma once

#include "projector/job/spec.h"
#include "projector/perf/perf.h"

namespace projector::perf_detail {

// Compute ops through the cost providers; collectives on the op's communicator.
OpCost price_op(const JobSpec& job, CostCache& cache, const Op& op);

// After the simulation of a recommendation job: the train pipeline's step (device, host, input
// pipeline), its breakdown, and the throughput in samples per second (rep.recsys).
void finish_recsys_step(const JobSpec& job, CostCache& cache, PerfReport& rep);

}  // namespace projector::perf_detail
