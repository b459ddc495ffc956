// The workload: for one rank class, the ordered ops of one microbatch through each of its model
// chunks, split into forward (F), input-gradient backward (B) and weight-gradient backward (W),
// each with its shape, FLOPs, bytes moved and dtype, and the collectives in their true places.
// Pure shapes and counts: pricing is done by the cost providers (price.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/cost/attention.h"
#include "projector/cost/collective.h"
#include "projector/cost/gemm.h"
#include "projector/cost/memory_ops.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

enum class WorkPhase { kF, kB, kW };

enum class OpKind {
  kGemm,          // dense GEMM: m x n x k
  kGroupedGemm,   // MoE experts: `groups` GEMMs of (m / groups) x n x k each
  kAttention,     // flash-attention core (forward, or backward in phase B)
  kMemoryBound,   // elementwise / norm / permute / loss: priced by bytes
  kCollective,    // TP / CP / EP / DP collective inside the microbatch
  kHostTransfer,  // copy between device and host memory (activation offload), `bytes` one way
};

// How a collective relates to compute when it runs.
enum class Overlap {
  kExposed,            // on the critical path of the compute stream
  kWithCompute,        // overlappable with independent compute (TP comm overlap, CP ring)
  kWithSharedExperts,  // EP dispatch / combine that the layer's shared experts, running on a side
                       // stream, hide (moe_shared_expert_overlap)
  // Issued for the next (forward) or previous (backward) layer and hidden behind this block's
  // whole compute in the same phase: per-layer FSDP gathers / reduce-scatters of a scanned layer
  // stack, activation offload copies. Only what exceeds the block's compute is exposed.
  kWithBlockCompute
};

struct Op {
  std::string name;
  WorkPhase phase = WorkPhase::kF;
  OpKind kind = OpKind::kGemm;
  GemmShape gemm;            // kGemm; kGroupedGemm: batch = groups, m = rows per group
  AttentionShape attention;  // kAttention (phase F: forward kernel, B: backward kernel)
  MemOpClass mem_class = MemOpClass::kElementwise;  // kMemoryBound
  // kCollective
  GroupKind group = GroupKind::kTp;
  CollectiveKind collective = CollectiveKind::kAllReduce;
  Overlap overlap = Overlap::kExposed;
  int group_size = 1;
  // > 0: the communicator is group_size ranks at this rank distance (the recommendation family's
  // node-local and cross-node groups) instead of the layout's `group`.
  int group_stride = 0;
  // All-to-all of a node-aggregating dispatcher (DeepEP / HybridEP): CommGroup::node_aggregated.
  bool node_aggregated = false;
  double node_forward_ratio = 0.0;  // CommGroup::node_forward_ratio
  // Repetitions of the same op back to back: CP ring P2P rounds (each of `bytes`), or one GEMM
  // per expert (SequentialMLP; `flops` is the total, the shape is one expert's).
  int steps = 1;
  // Counts.
  double flops = 0.0;
  double bytes = 0.0;       // HBM bytes for memory-bound ops; per-rank buffer bytes for collectives
  bool recompute = false;   // part of a recompute forward replayed before the backward
  double bwd_bytes = -1.0;  // memory-bound / collective: bytes of its backward (< 0: default)
  bool weightless = false;  // GEMM of two activations (unfused attention): no weight gradient;
                            // its backward is two input-gradient GEMMs
  bool forward_only = false;  // no backward: frozen weights fed a detached input (V4's indexer)
  // Work only the backward does, listed with the forward it belongs to: the recomputation inside
  // a fused kernel's backward (Mamba-2's SSD). Its backward is the op itself, in phase B.
  bool backward_only = false;
};

struct LayerWork {
  int layer = -1;  // (first) decoder layer index; -1 for embedding / output / MTP blocks
  int count = 1;   // consecutive identical layers this block stands for (ops are per layer)
  std::string label;
  std::vector<Op> ops;
};

// One model chunk (virtual stage) of one pipeline rank, for one microbatch.
struct ChunkWork {
  int pp_rank = 0;
  int chunk = 0;
  std::vector<LayerWork> blocks;  // in forward order
};

// Per-iteration, non-microbatch work of a rank: gradient sync, parameter gather, optimizer.
struct IterationWork {
  std::vector<Op> grad_sync;  // per chunk, in the order chunks finish their backward
  std::vector<int> grad_sync_chunk;
  std::vector<Op> param_gather;  // distributed-optimizer all-gather or FSDP gathers
  std::vector<int> param_gather_chunk;
  Op optimizer;                   // memory-bound optimizer step
  std::int64_t local_params = 0;  // parameters held by this rank (unsharded)
  // Recommendation family: the next batch's input all-to-all (ids and lengths), which TorchRec's
  // train pipeline runs on its data-dist stream while this batch computes (empty: none).
  Op input_dist;
};

struct RankWork {
  int pp_rank = 0;
  std::vector<ChunkWork> chunks;  // vpp entries
  IterationWork iteration;
  double p2p_bytes = 0.0;  // activation bytes sent to the next stage per microbatch
};

// The ops of every pipeline rank. Ranks in one pipeline stage that differ only in their TP/CP/DP/EP
// coordinate do the same work (balanced routing), so one entry per pipeline rank.
struct Workload {
  std::vector<RankWork> ranks;
};

Workload build_workload(const JobSpec& job);

// The communicator of `kind` that rank 0 belongs to, laid out on the job's nodes and pods.
CommGroup job_group(const JobSpec& job, GroupKind kind);

// The ops of one decoder layer for one microbatch on one rank (F, B and W phases, with recompute
// ops when the layer is recomputed). Exposed for tests and the `workload` command.
LayerWork build_layer_work(const JobSpec& job, int layer_index);

std::string_view to_string(WorkPhase p);
std::string_view to_string(OpKind k);

}  // namespace projector
