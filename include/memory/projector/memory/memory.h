// Per-GPU memory projection of a training job: static memory sharded exactly as Megatron-Core
// shards it, saved activations per microbatch from each module's saved-tensor set, the pipeline
// schedule's in-flight microbatches, the largest transient, and the runtime overheads, for every
// distinct pipeline rank class. Pure functions of the JobSpec; microseconds per call.
//
// Model summary (the header comments of memory.cpp give each formula with its derivation):
// * Static: weights (params dtype; fp8 with --fp8-param-gather), fp8 weight copies + transposes
//   kept by the fp8 recipes, gradient buffers (main_grads_dtype), fp32 master weights and
//   optimizer moments. TP shards attention/MLP/vocab; norms, the router and MLA down-projections
//   are replicated. Routed experts are sharded over EP x ETP and their optimizer state over
//   expert-DP. The distributed optimizer shards master + moments over DP x CP (dense) and expert-DP
//   (experts); FSDP shards weights, grads and optimizer state and adds the unsharded window.
// * Activations: per decoder layer and microbatch, the tensors autograd keeps (Korthikanti et al.
//   2022 generalised: GQA/MLA, gated MLPs, flash attention, dropout masks only when dropout > 0,
//   sequence and context parallelism, MoE dispatch, fp8 GEMM inputs), minus what the recompute
//   policy drops.
// * Schedule: in-flight (chunk-)microbatches per pipeline rank (see InFlight below).
// * Overheads: AcceleratorSpec::Calibration (runtime context, communicator buffers x number of
//   communicators, GEMM workspace, allocator fragmentation point / upper fractions).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projector/job/spec.h"
#include "projector/memory/recsys_memory.h"
#include "projector/model/job.h"
#include "projector/schedule/in_flight.h"
#include "projector/util/allocator_kind.h"

namespace projector {

// One line of the per-rank breakdown. Order is the print order.
enum class MemoryComponent : int {
  kWeights,          // model weights in their storage dtype
  kFp8WeightCopies,  // fp8 weight casts (+ transposes) cached for the GEMMs during the step
  kGradients,        // main-grad buffers (main_grads_dtype)
  kMasterWeights,    // fp32 master copy held by the optimizer
  kOptimizerStates,  // exp_avg + exp_avg_sq (Adam) / momentum (SGD, Muon)
  kFsdpUnsharded,    // FSDP: gathered weights (current + prefetched unit) and unsharded grads
  kActivations,      // saved activations of all in-flight microbatches at the schedule's peak
  kTransient,        // largest single temporary on top of them (loss, MoE dispatch, recompute)
  kWorkspace,        // GEMM library workspace
  kFragmentation,    // allocator rounding and fragmentation (fraction of dynamic memory)
  kRuntimeContext,   // CUDA/HIP context, kernels, allocator pools (outside the caching allocator)
  kCommBuffers,      // NCCL/RCCL buffers x communicators (+ DeepEP buffers)
  kCount
};
inline constexpr int kNumMemoryComponents = static_cast<int>(MemoryComponent::kCount);
std::string_view to_string(MemoryComponent c);
// Components allocated through the framework's caching allocator (what
// torch.cuda.max_memory_reserved reports): everything except runtime context and comm buffers.
bool in_caching_allocator(MemoryComponent c);

using ComponentBytes = std::array<double, kNumMemoryComponents>;

enum class MemoryVerdict { kFits, kAtRisk, kOom, kUnknown };  // kUnknown: hbm_bytes not known
std::string_view to_string(MemoryVerdict v);

// Saved activations of one decoder layer for one microbatch on one rank, by module (bytes).
struct LayerActivation {
  double norms_bytes = 0.0;      // inputs of the input and pre-MLP norms (+ MLA latent norms)
  double attention_bytes = 0.0;  // QKV/MLA projection inputs, Q/K/V, output-proj input
  double core_attn_bytes = 0.0;  // s^2 softmax/dropout terms, or flash attention's logsumexp
  double mlp_bytes = 0.0;        // dense MLP: fc1 input, activation input, fc2 input
  double moe_bytes = 0.0;        // router, dispatched tokens, expert GEMM inputs, combine
  double shared_expert_bytes = 0.0;
  double dropout_mask_bytes = 0.0;
  double hyper_bytes = 0.0;  // hyper-connection mixers: the K-stream inputs, fp32 norms, outputs
  double offloaded_bytes = 0.0;   // moved to host memory (module-level activation offloading)
  double total_bytes = 0.0;       // sum of the above after the recompute policy, less offloaded
  double full_bytes = 0.0;        // the saved set without any recompute (recompute working set)
  double input_bytes = 0.0;       // the layer input (what full recompute keeps)
  double w_retained_bytes = 0.0;  // kept after B until W in zero-bubble schedules (GEMM inputs
                                  // + output grads of the weight GEMMs)
  double largest_temporary_bytes = 0.0;  // biggest non-saved temporary (MoE A2A buffers, grads)
  // TE-captured CUDA graphs: the layer's static input buffers (hidden states, and the attention
  // mask when attention is captured), held per microbatch in flight whatever the recompute.
  double cuda_graph_input_bytes = 0.0;
};

// How the MoE token load on the reported expert-parallel rank is assumed.
struct MemoryOptions {
  // Dropless routing: the point estimate assumes balanced routing (each EP rank receives
  // topk x tokens / ... its share); the upper bound assumes the most loaded EP rank receives this
  // many times the mean (capped at the hard bound where every token picks this rank's experts).
  double moe_dropless_imbalance_upper = 2.0;
  // Re-run the projection with each remedy when the verdict is not FITS.
  bool suggest_remedies = true;
  // Optional memo of the schedule tables' in-flight states (one per thread, e.g. a sweep worker's);
  // null: each projection builds the table it needs.
  schedule::InFlightCache* in_flight_cache = nullptr;
  // Optional: the table the job's schedule resolves to, when the caller has already built it (the
  // performance projection). Used only when it matches the job's schedule, PP, VPP and
  // microbatches.
  const schedule::ScheduleTable* table = nullptr;
  // Replay each rank's allocation timeline through the allocator model (allocator.h) for the
  // reserved peak. Off: the reserved peak is the allocated one plus the residual fraction only
  // (what a sweep screens with; docs/memory.md "Allocator").
  bool replay_allocator = true;
};

// Saved bytes of `layer` for one microbatch under the job's parallelism, precision and recompute
// policy (`recomputed_fully`: the layer is inside a full-recompute group and keeps only its input).
// `upper`: dropless MoE at the imbalance upper bound instead of balanced.
LayerActivation layer_activation(const JobSpec& job, const LayerSpec& layer, bool upper = false,
                                 const MemoryOptions& options = {});

// Pipeline in-flight microbatches of one rank at its activation peak, read from the schedule
// table the simulator runs (schedule/in_flight.h): `per_chunk[c]` microbatches of chunk c hold all
// their saved activations (F ran, B not yet), `w_only_per_chunk[c]` only the weight-gradient
// inputs (a split B ran, its W not yet: the zero-bubble family). Which state is the peak depends
// on the chunks' sizes, so project_memory evaluates every state the rank passes through that no
// other covers and keeps the largest. E.g. 1F1B: rank r holds min(pp - r, m); interleaved: the
// first warm-up + 1 forwards in Megatron's order (warm-up = 2 (pp - r - 1) + (v - 1) pp, capped at
// m v as in Megatron-LM's get_pp_rank_microbatches); ZB-H1: pp - r full plus r W-only (when m
// allows); ZB-V: 2 pp chunk-microbatches (Qi et al. 2023); V-Half / V-Min: the (p + 2) // 2 and
// (p + 4) // 3 whole microbatches of Qi et al. 2024; DualPipeV: 2 pp + 1 (DeepSeek's DualPipe:
// PP + 1 stage-microbatches with PP = 2 x devices).
struct InFlight {
  std::vector<double> per_chunk;         // indexed by chunk
  std::vector<double> w_only_per_chunk;  // indexed by chunk
  double w_only = 0.0;                   // sum of w_only_per_chunk
  double total_chunk_microbatches() const;
};
// The largest in-flight state (by count; the first one reached) of pipeline rank `pp_rank` for
// the schedule `schedule` resolves to (schedule::select_schedule). Throws InputError when the
// schedule cannot be built for that shape, as the performance projection does.
InFlight in_flight_microbatches(ScheduleKind schedule, int pp, int vpp, int pp_rank,
                                int num_microbatches, schedule::InFlightCache* cache = nullptr);
// Virtual stage that pipeline rank r runs as chunk c: interleaved c*pp + r; V schedules
// c == 0 ? r : 2pp - 1 - r (schedule::ScheduleTable::stage_of). ParallelSpec::stages is in
// data-flow order.
int virtual_stage_index(ScheduleKind schedule, int pp, int pp_rank, int chunk);

// Parameter counts held by one pipeline rank (after TP/EP sharding, before DP/FSDP sharding).
struct RankParams {
  double dense_params = 0.0;         // non-expert weights on this rank (TP shards)
  double dense_gemm_params = 0.0;    // the part that runs through fp8 GEMMs
  double expert_params = 0.0;        // routed-expert weights on this rank (EP x ETP shard)
  double largest_unit_params = 0.0;  // FSDP unit (layer / embedding / output) on this rank
  // The GEMM / expert weights of layers kept out of the fp8 / fp4 recipe (first_last_layers_bf16)
  double bf16_gemm_params = 0.0;
  double bf16_expert_params = 0.0;
};

// The moment a rank's allocated bytes peak on its allocation timeline (docs/memory.md
// "Timeline"): which action of the schedule runs, and which temporary is live on top of the saved
// activations it holds.
struct PeakMoment {
  int action = -1;  // index into the rank's actions of one flush (schedule::memory_order); -1: none
  std::string phase;        // "F", "B", "W" or "BW" (schedule::Phase)
  int chunk = 0;            // the rank's model chunk
  int microbatch = 0;       // within the flush
  std::string temporary;    // the temporary live at the moment ("" when none)
  double held_bytes = 0.0;  // saved activations held at the moment (all chunks)
  double temporary_bytes = 0.0;
};

struct RankMemory {
  int pp_rank = 0;
  std::vector<int> virtual_stages;  // data-flow indices of its chunks
  int num_layers = 0;
  bool has_embedding = false;
  bool has_output = false;
  int mtp_layers = 0;
  RankParams params;
  InFlight in_flight;                            // the state at the point activation peak
  double activation_per_microbatch_bytes = 0.0;  // all chunks, one microbatch
  // Per chunk, one microbatch (point): all saved activations, and what a split B leaves until W.
  // The activation component is sum_c in_flight.per_chunk[c] x activation_per_chunk_bytes[c] +
  // in_flight.w_only_per_chunk[c] x w_only_per_chunk_bytes[c].
  std::vector<double> activation_per_chunk_bytes;
  std::vector<double> w_only_per_chunk_bytes;
  ComponentBytes point{};
  ComponentBytes upper{};
  double total_point_bytes = 0.0;
  double total_upper_bytes = 0.0;
  double allocator_point_bytes = 0.0;  // point minus runtime context and comm buffers
  double allocator_upper_bytes = 0.0;
  int communicators = 0;         // communicators this rank belongs to
  std::string transient_source;  // which temporary sets kTransient
  // Allocation timeline of one flush (memory/timeline.cpp): the bytes allocated through the
  // framework's allocator while each action of the rank runs (static buffers, the saved
  // activations held, the action's temporary), in schedule order. Its maximum is the moment the
  // point components decompose.
  std::vector<double> timeline_bytes;
  PeakMoment moment;
  double peak_allocated_bytes = 0.0;  // max of timeline_bytes (torch max_memory_allocated)
  // What the allocator model reserves beyond the allocated peak when it replays the timeline
  // (rounding, split blocks, per-stream pools); part of kFragmentation, with the residual
  // fraction. allocator_point_bytes is the reserved peak (torch max_memory_reserved).
  double allocator_excess_bytes = 0.0;
  int allocator_segments = 0;  // segments the replay created
};

// What re-running the projection with one change gives.
struct MemoryRemedy {
  std::string change;  // e.g. "recompute full (uniform, 1 layer)"
  double peak_point_bytes = 0.0;
  double peak_upper_bytes = 0.0;
  MemoryVerdict verdict = MemoryVerdict::kUnknown;
};

// The calibrated 80 % range of the peak (interval/interval.h, data/validation/residuals.json):
// the peak rank's total with its allocator part scaled by the 10th / 90th percentile residuals
// of published peaks in the job's regime.
struct MemoryRange {
  std::string regime;  // the job's regime key
  std::string level;   // the pooled regime the residuals came from
  int runs = 0;        // residuals behind the range
  double peak_lo_bytes = 0.0;
  double peak_hi_bytes = 0.0;
  MemoryVerdict model_verdict = MemoryVerdict::kUnknown;  // from the point and upper alone
};

// The verdict with a calibrated range (docs/memory.md "Verdict"): OOM only when even the low end
// of the range exceeds HBM; AT RISK when the range (or the upper bracket, or the point) reaches
// past it; FITS when everything stays below.
MemoryVerdict verdict_with_range(double point_bytes, double upper_bytes, double lo_bytes,
                                 double hi_bytes, double capacity_bytes);

struct MemoryReport {
  static constexpr int kSchemaVersion = 3;
  ScheduleKind schedule = ScheduleKind::k1F1B;  // resolved
  int num_microbatches = 0;
  double tokens_per_microbatch = 0.0;  // per rank: mbs x seq / cp
  std::vector<RankMemory> ranks;       // one per pipeline rank (each is a distinct chunk set)
  int peak_rank = 0;                   // index into ranks with the highest point total
  int peak_upper_rank = 0;
  double peak_point_bytes = 0.0;
  double peak_upper_bytes = 0.0;
  double capacity_bytes = 0.0;  // AcceleratorSpec::hbm_bytes
  MemoryVerdict verdict = MemoryVerdict::kUnknown;
  DeviceAllocatorKind allocator = DeviceAllocatorKind::kCaching;  // RuntimeSpec::allocator
  bool allocator_replayed = false;  // MemoryOptions::replay_allocator and a timeline to replay
  std::vector<MemoryComponent> largest_components;  // of the peak rank, largest first (top 3)
  std::vector<MemoryRemedy> remedies;               // only when the verdict is AT RISK or OOM
  std::vector<std::string> notes;    // assumptions and defaults the projection applied
  std::optional<MemoryRange> range;  // set by attach_memory_range (interval/interval.h)
  // Sources of the overheads (from the calibration), in component order.
  std::array<std::string, kNumMemoryComponents> sources{};
  // Recommendation family: `ranks` are GPU ranks (the heaviest first), with the table detail here.
  RecsysMemory recsys;
  bool has_recsys = false;
};

// Refuses a malformed job (check_job_invariants, model/job.h) with an InputError.
MemoryReport project_memory(const JobSpec& job, const MemoryOptions& options);
MemoryReport project_memory(const JobSpec& job);

}  // namespace projector
