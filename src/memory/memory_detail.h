// Internal to memory: what the files of the memory projection share (memory.cpp puts a rank
// together; activations.cpp sizes the saved tensors of layers and chunks; static_memory.cpp the
// weights, gradients, optimizer state and buffers; pipeline.cpp the schedule's in-flight
// microbatches). Notation as in memory.cpp.
#pragma once

#include <optional>
#include <vector>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/schedule/schedule.h"

namespace projector::memory_detail {

// A component's index in ComponentBytes.
constexpr std::size_t idx(MemoryComponent c) {
  return static_cast<std::size_t>(c);
}

// Selective-recompute modules, resolved once per projection.
struct SelectiveSet {
  bool core_attn = false, mlp = false, moe = false, moe_act = false, layernorm = false,
       mla_up_proj = false, shared_experts = false;
};

SelectiveSet selective_set(const RecomputeSpec& r);

struct Geometry {
  double tokens = 0.0;  // T
  double h = 0.0;
  double t = 1.0;
  double sp = 1.0;
  double e = 2.0;
  double g = 2.0;
  double g_expert = 2.0;   // g of the routed-expert GEMMs (PrecisionSpec::fp8_experts)
  double seq_local = 0.0;  // s / cp
  double mbs = 1.0;
  // The dense GEMMs quantise their inputs (fp8 when the recipe covers them, fp4 on every
  // linear): a second, quantised copy of an input shared by two GEMMs.
  bool quantized_dense = false;
};

Geometry geometry(const JobSpec& job);
// Bytes per element of a saved GEMM input under the job's fp8 / fp4 recipe.
double gemm_input_bytes(const PrecisionSpec& p);

// ------------------------------------------------------------------- activations.cpp
LayerActivation layer_act_full(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                               const LayerSpec& layer, bool upper, const MemoryOptions& options);

// PyTorch's eager cross entropy on upcast logits (torch.nn.functional.cross_entropy on
// `logits.float()`) as the caching allocator sees it. Forward: the output layer's params-dtype
// logits, their fp32 copy, then the saved log-softmax (the chunk's last saved block); the copy
// and the params-dtype logits are freed once the loss returns. Backward: nll_loss's dense fp32
// gradient, then log_softmax's, each the size of the copy. The freed params-dtype logits leave a
// hole no later fp32 tensor fits in: the allocator replay reserves it beyond the allocated peak.
struct EagerLossChain {
  double logits_bytes = 0.0;     // params-dtype logits; 0: the chunk has no such loss
  double upcast_bytes = 0.0;     // their fp32 copy; each backward gradient is as large
  double other_transient = 0.0;  // the chunk's largest temporary besides the loss
  bool present() const { return logits_bytes > 0.0; }
};

struct ChunkActivation {
  double per_microbatch = 0.0;  // saved bytes of one microbatch of this chunk
  double w_retained = 0.0;
  double transient = 0.0;
  const char* transient_source = "";
  // The least transient a compiler that rematerialises to the memory limit reaches (XLA's
  // HloRematerialization pass, docs/tpu.md "XLA memory"): the working set of the tensors the
  // backward reads that only a GEMM can produce; cheap elementwise outputs (norms, activations,
  // residual sums) are recomputed next to their consumer. Equals `transient` without it.
  double transient_floor = 0.0;
  EagerLossChain loss;  // with `blocks`, the last block is the saved log-softmax
};

// Per-layer activations, computed once per run of identically shaped layers.
struct LayerActCache {
  const JobSpec* job = nullptr;
  const Geometry* geo = nullptr;
  const SelectiveSet* sel = nullptr;
  const MemoryOptions* options = nullptr;
  bool upper = false;
  const LayerSpec* layer = nullptr;
  LayerActivation act;

  const LayerActivation& get(const LayerSpec& l) {
    if (layer == nullptr || !same_layer_shape(*layer, l)) {
      act = layer_act_full(*job, *geo, *sel, l, upper, *options);
      layer = &l;
    }
    return act;
  }
  // A layer kept out of the fp8 / fp4 recipe saves its GEMM inputs in the params dtype.
  LayerActivation get_unquantized(const LayerSpec& l) const {
    Geometry g = *geo;
    g.g = g.e;
    g.g_expert = g.e;
    g.quantized_dense = false;
    return layer_act_full(*job, g, *sel, l, upper, *options);
  }
};

// `blocks` (optional): receives the saved bytes of one microbatch layer by layer, then those of
// the embedding and output head, as the allocation timeline allocates them (sum: per_microbatch).
ChunkActivation chunk_activation(const JobSpec& job, const Geometry& geo, const VirtualStage& st,
                                 LayerActCache& acts, const LayerActivation& mtp_act,
                                 double vocab_local, std::vector<double>* blocks = nullptr);

// Saved bytes of one microbatch per chunk of a rank, point and upper (dropless MoE imbalance).
struct RankChunks {
  std::vector<double> full_upper, w_only_upper;  // all saved activations / W set after a split B
  // (the point sizes go straight to RankMemory::activation_per_chunk_bytes /
  // w_only_per_chunk_bytes)
  double transient_point = 0.0, transient_upper = 0.0;
  double transient_floor = 0.0;  // ChunkActivation::transient_floor of the rank's largest chunk
  bool has_moe = false;
  // Per chunk (point): its largest temporary and what it is, and the saved blocks of one
  // microbatch (chunk_activation `blocks`).
  std::vector<double> transient_per_chunk;
  std::vector<const char*> transient_source_per_chunk;
  std::vector<std::vector<double>> blocks;
  std::vector<EagerLossChain> loss_per_chunk;
};

// What one projection resolves once and every rank reads.
struct Context {
  Context(const JobSpec& j, const MemoryOptions& o) : job(j), options(o) {}
  const JobSpec& job;
  const MemoryOptions& options;
  int pp = 1;
  int vpp = 1;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  const std::vector<VirtualStage>* stages = nullptr;
  std::optional<schedule::InFlightProfile> own_in_flight;  // when there is no cache
  const schedule::InFlightProfile* in_flight = nullptr;
  std::optional<schedule::ScheduleTable> own_table;  // when neither the caller nor a cache has it
  const schedule::ScheduleTable* table = nullptr;
  schedule::ScheduleRequest request;  // what `table` was built from
  // The table the allocator replay walks: `table`, or the same schedule with fewer microbatches
  // when the steady state repeats (replay_table below).
  std::optional<schedule::ScheduleTable> own_replay_table;
  const schedule::ScheduleTable* replay_table = nullptr;
  Geometry geo;
  SelectiveSet sel;
  LayerActivation mtp_point, mtp_upper;
  bool dropless_moe = false;
  double vocab_local = 0.0;
  // Per-layer activations, shared by every rank (runs of identical layers are computed once).
  LayerActCache cache_point, cache_upper;
  RankChunks chunks;  // the current rank's, reused
};

// ------------------------------------------------------------------- pipeline.cpp
InFlight to_in_flight(const schedule::InFlightProfile& profile, int rank, int state);
void resolve_pipeline(Context& cx, MemoryReport& report);
double activation_peak(const schedule::InFlightProfile& profile, int rank,
                       const std::vector<double>& full, const std::vector<double>& w_only,
                       int* which);

// ------------------------------------------------------------------- timeline.cpp
// The allocation timeline of rank `r` (RankMemory::timeline_bytes, moment, in_flight): walks the
// rank's actions of one flush. `static_bytes`: what the allocator holds throughout.
void build_timeline(const Context& cx, int r, const RankChunks& ch, double static_bytes,
                    RankMemory& rm);
// Replays the timeline of rank `r` (two flushes, so that the second reuses what the first left
// cached) through the allocator model: the simulated reserved peak. `s`: the static components.
struct Replay {
  double peak_reserved_bytes = 0.0;
  double peak_allocated_bytes = 0.0;
  int segments = 0;
};
Replay replay_allocator(const Context& cx, int r, const RankChunks& ch, const RankMemory& rm,
                        const ComponentBytes& s, double capacity_bytes);
// Sets cx.replay_table. Every steady-state step of a schedule frees one microbatch's blocks and
// allocates the next one's of the same sizes, which reuse them exactly; so beyond the warm-up
// (at most (vpp + 2) x pp microbatches for every schedule here) more microbatches add nothing
// to what the allocator reserves, and the replay runs the schedule with at most that many.
void resolve_replay_table(Context& cx);

// ------------------------------------------------------------------- static_memory.cpp
ComponentBytes static_memory(const Context& cx, const RankMemory& rm, bool has_moe);
int communicator_count(const JobSpec& job, bool holds_embedding_or_output, bool has_moe);

}  // namespace projector::memory_detail
