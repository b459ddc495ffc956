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
#include <string>
#include <string_view>
#include <vector>

#include "projector/model/job.h"

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
  double total_bytes = 0.0;       // sum of the above after the recompute policy
  double full_bytes = 0.0;        // the saved set without any recompute (recompute working set)
  double input_bytes = 0.0;       // the layer input (what full recompute keeps)
  double w_retained_bytes = 0.0;  // kept after B until W in zero-bubble schedules (GEMM inputs
                                  // + output grads of the weight GEMMs)
  double largest_temporary_bytes = 0.0;  // biggest non-saved temporary (MoE A2A buffers, grads)
};

// How the MoE token load on the reported expert-parallel rank is assumed.
struct MemoryOptions {
  // Dropless routing: the point estimate assumes balanced routing (each EP rank receives
  // topk x tokens / ... its share); the upper bound assumes the most loaded EP rank receives this
  // many times the mean (capped at the hard bound where every token picks this rank's experts).
  double moe_dropless_imbalance_upper = 2.0;
  // Re-run the projection with each remedy when the verdict is not FITS.
  bool suggest_remedies = true;
};

// Saved bytes of `layer` for one microbatch under the job's parallelism, precision and recompute
// policy (`recomputed_fully`: the layer is inside a full-recompute group and keeps only its input).
// `upper`: dropless MoE at the imbalance upper bound instead of balanced.
LayerActivation layer_activation(const JobSpec& job, const LayerSpec& layer, bool upper = false,
                                 const MemoryOptions& options = {});

// Pipeline in-flight model. Each rank holds `per_chunk[c]` microbatches of its chunk c at the
// activation peak, plus `w_only` microbatches whose B ran but whose W has not (zero bubble).
//  * pp == 1: one microbatch.
//  * 1F1B: rank r holds min(pp - r, m) microbatches.
//  * Interleaved (Megatron): warm-up (pp - r - 1) * 2 + (v - 1) * pp forwards, +1 in steady state,
//    capped at m * v; the in-flight set is the first that many forwards in Megatron's order
//    (groups of pp microbatches per chunk), so uneven chunks are summed exactly.
//  * ZB-H1 (Qi et al. 2023): the same min(pp - r, m) full microbatches as 1F1B; W of rank r is
//    delayed by up to r slots, so min(r, m) more microbatches keep their W set (GEMM inputs and
//    output grads). The first rank holds pp full microbatches, as 1F1B does.
//  * V schedules (2 chunks; chunk 0 = virtual stage r, chunk 1 = virtual stage 2pp - 1 - r):
//    treated as a 1F1B pipeline of 2pp virtual stages, stage z holds 2pp - z microbatches, so
//    rank r holds 2pp - r of chunk 0 and r + 1 of chunk 1 (2pp + 1 chunk-microbatches on every
//    rank, about pp whole-rank microbatches: the V-ZB memory of Qi et al. 2024). V-Half keeps
//    half (ceil) and V-Min a third (ceil) of each; DualPipeV holds pp + 1 microbatches of each
//    chunk (DeepSeek-V3 report: DualPipe activation memory PP + 1). All capped at m.
struct InFlight {
  std::vector<double> per_chunk;  // indexed by chunk
  double w_only = 0.0;
  double total_chunk_microbatches() const;
};
// Resolved schedule: kAuto -> 1F1B (vpp == 1) or interleaved.
ScheduleKind resolve_schedule(ScheduleKind requested, int pp, int vpp);
InFlight in_flight_microbatches(ScheduleKind schedule, int pp, int vpp, int pp_rank,
                                int num_microbatches);
// Interleaved only: chunk of the k-th forward in Megatron's order.
int interleaved_forward_chunk(int k, int pp, int vpp);
// Virtual stage that pipeline rank r runs as chunk c: interleaved c*pp + r; V schedules
// c == 0 ? r : 2pp - 1 - r. (ParallelSpec::stages is in data-flow order.)
int virtual_stage_index(ScheduleKind schedule, int pp, int pp_rank, int chunk);

// Parameter counts held by one pipeline rank (after TP/EP sharding, before DP/FSDP sharding).
struct RankParams {
  double dense_params = 0.0;         // non-expert weights on this rank (TP shards)
  double dense_gemm_params = 0.0;    // the part that runs through fp8 GEMMs
  double expert_params = 0.0;        // routed-expert weights on this rank (EP x ETP shard)
  double largest_unit_params = 0.0;  // FSDP unit (layer / embedding / output) on this rank
};

struct RankMemory {
  int pp_rank = 0;
  std::vector<int> virtual_stages;  // data-flow indices of its chunks
  int num_layers = 0;
  bool has_embedding = false;
  bool has_output = false;
  int mtp_layers = 0;
  RankParams params;
  InFlight in_flight;
  double activation_per_microbatch_bytes = 0.0;  // all chunks, one microbatch
  ComponentBytes point{};
  ComponentBytes upper{};
  double total_point_bytes = 0.0;
  double total_upper_bytes = 0.0;
  double allocator_point_bytes = 0.0;  // point minus runtime context and comm buffers
  double allocator_upper_bytes = 0.0;
  int communicators = 0;         // communicators this rank belongs to
  std::string transient_source;  // which temporary sets kTransient
};

// What re-running the projection with one change gives.
struct MemoryRemedy {
  std::string change;  // e.g. "recompute full (uniform, 1 layer)"
  double peak_point_bytes = 0.0;
  double peak_upper_bytes = 0.0;
  MemoryVerdict verdict = MemoryVerdict::kUnknown;
};

struct MemoryReport {
  static constexpr int kSchemaVersion = 1;
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
  std::vector<MemoryComponent> largest_components;  // of the peak rank, largest first (top 3)
  std::vector<MemoryRemedy> remedies;               // only when the verdict is AT RISK or OOM
  std::vector<std::string> notes;  // assumptions and defaults the projection applied
  // Sources of the overheads (from the calibration), in component order.
  std::array<std::string, kNumMemoryComponents> sources{};
};

// Refuses a malformed job (check_job_invariants, model/job.h) with an InputError.
MemoryReport project_memory(const JobSpec& job, const MemoryOptions& options);
MemoryReport project_memory(const JobSpec& job);

}  // namespace projector
