// The recommendation family's part of a memory report (memory/memory.h): per rank, the embedding
// shards, their optimizer state and what the plan keeps in host memory.
#pragma once

#include <string>
#include <vector>

namespace projector {

struct RecsysRankMemory {
  int rank = 0;
  int shards = 0;
  double table_bytes = 0.0;        // embedding rows in HBM (UVM caching: the row cache)
  double table_state_bytes = 0.0;  // their fused-optimizer state in HBM
  double cache_aux_bytes = 0.0;    // UVM cache bookkeeping
  double dense_bytes = 0.0;        // dense weights + gradients + dense optimizer state
  double activation_bytes = 0.0;   // saved activations and in-flight input batches
  double buffer_bytes = 0.0;       // transients, workspace, communicator buffers, context
  double host_bytes = 0.0;         // rows and state kept in host memory (UVM)
  double total_bytes = 0.0;        // point estimate in HBM
};

struct RecsysMemory {
  // Every rank when the world has at most kAllRanksUpTo ranks; otherwise the heaviest and the
  // lightest.
  static constexpr int kAllRanksUpTo = 64;
  std::vector<RecsysRankMemory> ranks;
  int world = 0;
  double planner_budget_bytes = 0.0;  // HBM per rank the planner allowed the tables
  bool planned = true;                // false: no plan fit the planner's budget
  std::string plan;                   // describe_plan
  double host_bytes_max = 0.0;        // largest host-memory share of one rank
};

}  // namespace projector
