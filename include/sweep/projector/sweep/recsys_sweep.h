// The sweep for recommendation jobs: embedding sharding choices (TorchRec's planner, or one
// sharding type pinned for every table) x local batch sizes, each re-planned, memory-projected and,
// when it fits, performance-projected; ranked by samples per second per GPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector::sweep {

struct RecsysGrid {
  // kAuto stands for TorchRec's planner. Default: the planner and every sharding type.
  std::vector<EmbeddingSharding> sharding;
  // Local (per-GPU) batch sizes. Default: the base job's batch x {1/4, 1/2, 1, 2, 4}.
  std::vector<int> batch;
};
// "embedding_sharding=planner,row_wise,table_wise; batch=1024,2048" (also `sharding`, `mbs`,
// `batch_size`). InputError key "--grid" on bad input.
RecsysGrid parse_recsys_grid(std::string_view text);

struct RecsysEntry {
  EmbeddingSharding sharding = EmbeddingSharding::kAuto;
  int batch = 0;
  bool fits = false;    // memory verdict FITS / AT RISK within the limit, and the plan fits
  bool planned = true;  // TorchRec's planner finds a plan (the pinned sharding fits its budget)
  double peak_bytes = 0.0;
  double step_s = 0.0;
  double samples_per_s = 0.0;
  double samples_per_s_per_gpu = 0.0;
  std::string bound;
  std::string plan;  // describe_plan of the candidate
};

struct RecsysResult {
  int world = 0;
  double limit_bytes = 0.0;
  std::vector<RecsysEntry> entries;  // fitting first, fastest first; then the others
  double elapsed_s = 0.0;
};

// memory_limit: fraction of HBM a candidate's point peak may use.
RecsysResult run_recsys_sweep(const JobSpec& base, const RecsysGrid& grid, double memory_limit);

std::string recsys_sweep_json(const RecsysResult& r, const JobSpec& base);

}  // namespace projector::sweep
