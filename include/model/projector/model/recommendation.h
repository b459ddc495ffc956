// The recommendation model family (DLRM and its descendants): sparse features looked up in
// embedding tables and pooled, dense features through a bottom MLP, a feature interaction (dot,
// DCN-v2 cross layers, projection branches, or HSTU blocks over a user-history sequence), and a
// top (over) MLP. Field names follow TorchRec's dlrm_main.py arguments and Primus' DLRM-v4 keys.
//
// Besides the model, this header holds what the framework decides around it: how each table is
// sharded (EmbeddingPlan, TorchRec's ShardingType vocabulary), the optimizers fused into the
// embedding backward and applied to the dense part, and the TorchRec planner's inputs
// (RecsysRuntime), all resolved by the job builder (job/recsys_plan.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projector/util/dtype.h"

namespace projector {

enum class EmbeddingPooling : std::uint8_t { kSum, kMean, kNone };

// How one table is split over the ranks (TorchRec's ShardingType). kAuto: the planner decides.
enum class EmbeddingSharding : std::uint8_t {
  kAuto,
  kDataParallel,  // every rank holds the whole table; gradients all-reduced
  kTableWise,     // one rank holds the table
  kColumnWise,    // column blocks of the table on different ranks
  kRowWise,       // row blocks on every rank; pooled outputs reduce-scattered
  kTableRowWise,  // row blocks on the ranks of one node; intra-node reduce-scatter + inter-node a2a
};
std::string_view to_string(EmbeddingSharding s);
// Accepts TorchRec's names (table_wise, row_wise, ...), their short forms (tw, rw, cw, twrw, dp)
// and Primus' embedding_sharding values (table, row, column, data). nullopt when unknown.
std::optional<EmbeddingSharding> parse_embedding_sharding(std::string_view name);
// "auto, data_parallel, table_wise, column_wise, row_wise, table_row_wise".
std::string embedding_sharding_names();

// Where a table's rows live (TorchRec's compute kernel).
enum class EmbeddingPlacement : std::uint8_t {
  kHbm,         // FUSED: the table in device memory
  kUvmCaching,  // FUSED_UVM_CACHING: the table in host memory, a cache of its rows in HBM
  kUvm,         // FUSED_UVM: the table in host memory, every row read over the host link
};
std::string_view to_string(EmbeddingPlacement p);

// Optimizers of the family: fused into the embedding backward (FBGEMM's TBE) or stepping the
// dense part.
enum class RecsysOptimizer : std::uint8_t {
  kSgd,
  kAdagrad,         // torch.optim.Adagrad / FBGEMM EXACT_ADAGRAD: one fp32 sum per element
  kRowWiseAdagrad,  // FBGEMM EXACT_ROWWISE_ADAGRAD: one fp32 sum per row
  kAdam,            // two fp32 moments per element
};
std::string_view to_string(RecsysOptimizer o);
std::optional<RecsysOptimizer> parse_recsys_optimizer(std::string_view name);
// Optimizer state bytes per table row of `dim` elements (fp32 state).
double optimizer_state_bytes_per_row(RecsysOptimizer o, int dim);

// One sparse feature's table (an EmbeddingBagConfig).
struct EmbeddingTableSpec {
  std::string name;
  std::int64_t num_embeddings = 0;  // rows
  int embedding_dim = 0;
  double pooling_factor = 1.0;  // mean lookups per sample (multi-hot size; 1 for one-hot)
  EmbeddingPooling pooling = EmbeddingPooling::kSum;
  Dtype dtype = Dtype::kFp32;
  EmbeddingSharding sharding = EmbeddingSharding::kAuto;  // pinned by the config, else the planner
};

// A stack of fully connected layers; layer_sizes are the output widths in order.
struct DenseStackSpec {
  std::vector<std::int64_t> layer_sizes;
};

enum class FeatureInteraction : std::uint8_t {
  kDot,         // pairwise dot products of the pooled embeddings and the bottom-MLP output (DLRM)
  kDcn,         // DCN-v2 low-rank cross layers, DLRM-DCN
  kProjection,  // two MLP branches projected and multiplied (DLRM_Projection)
  kConcat,      // plain concatenation (the HSTU ranker's over-MLP input)
};
std::string_view to_string(FeatureInteraction i);

// HSTU blocks (DLRM-v4 / generative recommenders) over a jagged user-history sequence padded to
// max_seq_len, of which fill_factor is valid: a fused UVQK projection, SiLU-gated attention, an
// output projection.
struct HstuSpec {
  int num_layers = 0;  // 0: no HSTU blocks
  int hidden_size = 0;
  int num_heads = 0;
  int qk_dim = 0;
  int v_dim = 0;
  int max_seq_len = 0;
  double fill_factor = 1.0;
  // Valid positions of one sample's sequence (what the GEMMs and attention run on).
  std::int64_t effective_seq_len() const;
};

struct RecommendationSpec {
  int dense_features = 0;
  std::vector<EmbeddingTableSpec> tables;
  DenseStackSpec bottom_mlp;  // dense_arch_layer_sizes
  FeatureInteraction interaction = FeatureInteraction::kDot;
  int dcn_num_layers = 0;              // kDcn only
  int dcn_low_rank_dim = 0;            // kDcn only
  DenseStackSpec interaction_branch1;  // kProjection only
  DenseStackSpec interaction_branch2;
  DenseStackSpec top_mlp;  // over_arch_layer_sizes
  HstuSpec hstu;

  // The width every table shares (TorchRec's DLRM requires one embedding_dim); 0 without tables.
  int embedding_dim() const { return tables.empty() ? 0 : tables.front().embedding_dim; }
  int num_sparse_features() const { return static_cast<int>(tables.size()); }
};

// ------------------------------------------------------------------------------- the plan

// One shard of a table: a block of rows x columns on one rank.
struct EmbeddingShard {
  int rank = 0;
  std::int64_t rows = 0;
  int cols = 0;
};

struct TablePlan {
  EmbeddingSharding sharding = EmbeddingSharding::kTableWise;  // never kAuto once planned
  EmbeddingPlacement placement = EmbeddingPlacement::kHbm;
  std::vector<EmbeddingShard> shards;
  bool pinned = false;           // stated by the config, not chosen by the planner
  double planner_cost_ms = 0.0;  // the planner's own estimate for the table (all shards)
};

// Where every table lives: the output of the TorchRec planner reproduction, or the stated plan.
struct EmbeddingPlan {
  std::vector<TablePlan> tables;   // one per RecommendationSpec::tables entry, in order
  std::string proposer;            // which proposer found it ("greedy", "uniform", "stated", ...)
  double max_rank_cost_ms = 0.0;   // the planner's rating: the costliest rank's estimate
  double rank_budget_bytes = 0.0;  // HBM the planner let the tables use per rank (after reserve)
  int proposals_evaluated = 0;
  bool planned = false;
};

// ---------------------------------------------------------------------- framework settings

// TorchRec's planner inputs: its topology defaults and its cost constants
// (torchrec/distributed/planner/constants.py, storage_reservations.py). Bytes and bytes/s.
struct PlannerSettings {
  double hbm_cap_bytes = 0.0;           // Topology hbm_cap (TorchRec's default, not the device's)
  double reservation_fraction = 0.0;    // HeuristicalStorageReservation percentage
  double dense_multiplier = 0.0;        // dense parameters x this reserved (params + opt + DDP)
  double kjt_copies = 0.0;              // input KJT copies reserved (2 batches x 10 copies)
  double pooling_factor = 1.0;          // lookups per sample assumed without constraints
  double hbm_bw = 0.0;                  // HBM_MEM_BW
  double hbm_to_ddr_bw = 0.0;           // HBM_TO_DDR_MEM_BW
  double intra_node_bw = 0.0;           // INTRA_NODE_BANDWIDTH
  double inter_node_bw = 0.0;           // CROSS_NODE_BANDWIDTH
  double uvm_caching_ratio = 0.0;       // UVM_CACHING_RATIO
  double bwd_compute_multiplier = 0.0;  // BWD_COMPUTE_MULTIPLIER
  double batched_copy_factor = 0.0;     // BATCHED_COPY_PERF_FACTOR
  double dp_elementwise_factor = 0.0;   // DP_ELEMENTWISE_KERNELS_PERF_FACTOR
  int min_cw_dim = 128;                 // MIN_CW_DIM
};

// How the framework trains the model; the job builder resolves it from the config and the
// framework profile (data/frameworks/torchrec.yaml, `recsys:`).
struct RecsysRuntime {
  RecsysOptimizer embedding_optimizer = RecsysOptimizer::kSgd;  // fused in the TBE backward
  RecsysOptimizer dense_optimizer = RecsysOptimizer::kSgd;
  Dtype dense_dtype = Dtype::kFp32;  // GEMM dtype of the dense part (fp32, tf32, bf16)
  bool pipelined_input = true;       // TrainPipelineSparseDist: input dist overlapped with compute
  int index_bytes = 8;               // bytes of one sparse id in the input KJT
  // Host-side work of one step on the training process (Python dispatch, the input batch):
  // overlapped with the device by the train pipeline, it bounds the step from below.
  double host_step_s = 0.0;
  double host_per_sample_s = 0.0;
  double uvm_cache_hit_rate = 0.0;  // fraction of UVM-cached lookups served from the HBM cache
  double host_link_bw = 0.0;        // device <-> host memory (UVM rows), bytes/s
  PlannerSettings planner;
};

}  // namespace projector
