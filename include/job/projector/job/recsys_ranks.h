// What the embedding plan puts on each rank of a recommendation job: the table shards it holds
// (memory) and the rows it gathers, the pooled outputs it writes and the bytes it exchanges in one
// step (workload). One pure function of the JobSpec (its tables, plan, local batch and world), read
// by the memory projection, the workload and the reports, so they cannot disagree.
//
// Per step, with local batch B, world W, global batch B_g = B W, ids spread uniformly over rows:
//   table-wise / column-wise shard: gathers B_g x pooling rows of its columns, writes B_g pooled
//   rows;
//     the pooled rows go to their samples' ranks by all-to-all;
//   row-wise shard: gathers B_g x pooling x its share of the rows, writes B_g partial pooled rows,
//     reduce-scattered over the world (all-gathered in backward);
//   table-row-wise: the same within one node (intra-node reduce-scatter), then an inter-node
//     all-to-all of the reduced rows;
//   data-parallel: every rank gathers B x pooling rows of the whole table; its gradient is
//     all-reduced with the dense gradients.
#pragma once

#include <vector>

#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

struct RecsysRankLoad {
  int rank = 0;
  int shards = 0;
  int tbe_groups = 0;                // distinct (sharding, placement) groups: one fused kernel each
  double table_hbm_bytes = 0.0;      // shard rows in HBM (for UVM caching: the cache of its rows)
  double table_host_bytes = 0.0;     // UVM / UVM-cached shards: rows in host memory
  double state_hbm_bytes = 0.0;      // fused-optimizer state of its HBM shards
  double state_host_bytes = 0.0;     // and of its host-memory shards
  double cache_aux_bytes = 0.0;      // UVM cache bookkeeping in HBM
  double dp_table_bytes = 0.0;       // data-parallel tables (replicated; in table_hbm_bytes too)
  double lookups = 0.0;              // rows gathered per step, all shards
  double gather_bytes = 0.0;         // their bytes (rows x shard columns x dtype)
  double host_gather_bytes = 0.0;    // part served from host memory (UVM misses)
  double output_bytes = 0.0;         // pooled rows its lookup kernels write (fp32)
  double state_bytes_per_row = 0.0;  // mean optimizer state bytes per gathered row
  double a2a_send_bytes = 0.0;       // table-/column-wise pooled rows sent (forward)
  double a2a_recv_bytes = 0.0;       // pooled rows received for its local samples
  double rs_bytes = 0.0;             // row-wise reduce-scatter input (world group)
  double twrw_rs_bytes = 0.0;        // table-row-wise intra-node reduce-scatter input
  double twrw_a2a_bytes = 0.0;       // table-row-wise inter-node all-to-all
  double input_send_bytes = 0.0;     // input KJT ids and lengths sent by the input all-to-all
  double input_recv_bytes = 0.0;     // ids and lengths received for its shards
};

// One entry per rank of the world (ranks in order).
std::vector<RecsysRankLoad> recsys_rank_loads(const JobSpec& job);

// HBM bytes of a rank's table-batched lookups. Forward: its rows (those in HBM), the ids and the
// pooled outputs. Backward: the pooled gradients, a radix sort of the ids (~4 passes of id and
// position), and per gathered row the weights and the fused optimizer's state read and written.
struct EmbeddingTraffic {
  double fwd_bytes = 0.0;
  double bwd_bytes = 0.0;
};
EmbeddingTraffic embedding_traffic(const JobSpec& job, const RecsysRankLoad& r);

// Bytes of one local batch on the device before distribution: dense features, labels, the KJT.
double recsys_input_batch_bytes(const JobSpec& job);

}  // namespace projector
