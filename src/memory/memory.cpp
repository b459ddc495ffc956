// Memory projection. Notation: T = tokens of one microbatch on one CP rank (mbs x seq / cp),
// h = hidden, t = TP, sp = t with sequence parallelism else 1, e = activation bytes (params
// dtype), g = bytes of a saved GEMM input (e, or 1 when an fp8 recipe saves the quantised input).
//
// Saved tensors of a standard decoder layer per microbatch (Korthikanti et al. 2022, Table 2,
// generalised); with MHA, GELU, F = 4h, dropout, no flash attention, t = sp = 1 and e = g = 2
// this is exactly sbh(34 + 5as/h):
//   input norm input            T h e / sp            (2sbh)
//   QKV GEMM input (norm out)   T h g / sp            (2sbh)
//   Q, K, V                     T (q + 2kv) e / t     (Q, K 4sbh; V 2sbh)
//   softmax out, dropout mask and dropout out   b a s^2 (e + 1 + e) / t   (5as^2b), only without
//     flash attention and the last two only with attention dropout; flash attention instead
//     keeps the fp32 logsumexp, b a s 4 / t
//   output-proj input (context) T q g / t             (2sbh)
//   two residual dropout masks  2 T h 1 / sp          (2sbh), only with hidden dropout
//   pre-MLP norm input          T h e / sp            (2sbh)
//   fc1 input (norm out)        T h g / sp            (2sbh)
//   activation input (fc1 out)  T up e / t, up = 2F gated else F      (8sbh)
//   fc2 input (activation out)  T F g / t             (8sbh)
// MLA replaces the QKV part with its latents (down-projection input, latent-norm inputs, the
// gathered up-projection inputs, which the duplicated down-projections leave unsharded by TP) and
// the up-projected Q (a(qk+rope)), K (a(qk+rope)), V (a v). MoE replaces the MLP with the router
// input and fp32 probabilities + routing map (T E 5 / sp), the expert GEMM inputs/outputs for the
// T_e tokens this rank receives (T_e = T topk etp / sp, x capacity factor or x imbalance), the
// combine input kept for the probability gradient (T topk h e / sp; only the permuted fp32
// probabilities when the experts apply them, RuntimeSpec::moe_probs_in_experts) and the shared
// experts.
#include "projector/memory/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>

#include "memory/memory_detail.h"
#include "memory/recsys.h"
#include "memory/remedies.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/recompute_policy.h"
#include "projector/util/error.h"

namespace projector {

std::string_view to_string(MemoryComponent c) {
  switch (c) {
    case MemoryComponent::kWeights:
      return "weights";
    case MemoryComponent::kFp8WeightCopies:
      return "fp8_weight_copies";
    case MemoryComponent::kGradients:
      return "gradients";
    case MemoryComponent::kMasterWeights:
      return "master_weights";
    case MemoryComponent::kOptimizerStates:
      return "optimizer_states";
    case MemoryComponent::kFsdpUnsharded:
      return "fsdp_unsharded";
    case MemoryComponent::kActivations:
      return "activations";
    case MemoryComponent::kTransient:
      return "transient";
    case MemoryComponent::kWorkspace:
      return "workspace";
    case MemoryComponent::kFragmentation:
      return "fragmentation";
    case MemoryComponent::kRuntimeContext:
      return "runtime_context";
    case MemoryComponent::kCommBuffers:
      return "comm_buffers";
    case MemoryComponent::kCount:
      break;
  }
  return "?";
}

bool in_caching_allocator(MemoryComponent c) {
  return c != MemoryComponent::kRuntimeContext && c != MemoryComponent::kCommBuffers;
}

std::string_view to_string(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::kFits:
      return "FITS";
    case MemoryVerdict::kAtRisk:
      return "AT RISK";
    case MemoryVerdict::kOom:
      return "OOM";
    case MemoryVerdict::kUnknown:
      return "UNKNOWN";
  }
  return "?";
}

namespace {

using memory_detail::activation_peak;
using memory_detail::chunk_activation;
using memory_detail::ChunkActivation;
using memory_detail::communicator_count;
using memory_detail::Context;
using memory_detail::geometry;
using memory_detail::layer_act_full;
using memory_detail::RankChunks;
using memory_detail::resolve_pipeline;
using memory_detail::selective_set;
using memory_detail::static_memory;
using memory_detail::to_in_flight;

double sum(const ComponentBytes& c) {
  double s = 0.0;
  for (double v : c) s += v;
  return s;
}

using memory_detail::verdict_of;

using memory_detail::idx;

// Activation geometry, recompute set, MTP layer and the notes on defaults the model applies.
void resolve_activations(Context& cx, MemoryReport& report) {
  const JobSpec& job = cx.job;
  const RecomputeSpec& rc = job.runtime.recompute;
  if (rc.granularity == RecomputeGranularity::kFull && rc.method == RecomputeMethod::kUniform &&
      rc.num_layers < 1) {
    report.notes.push_back("full uniform recompute without recompute_num_layers: 1 layer groups");
  }
  cx.geo = geometry(job);
  report.tokens_per_microbatch = cx.geo.tokens;
  cx.sel = selective_set(rc);
  if (!job.model.layers.empty() && job.model.mtp_num_layers > 0) {
    const LayerSpec& last = job.model.layers.back();
    cx.mtp_point = layer_act_full(job, cx.geo, cx.sel, last, false, cx.options);
    cx.mtp_upper = layer_act_full(job, cx.geo, cx.sel, last, true, cx.options);
  }
  for (const LayerSpec& l : job.model.layers) {
    cx.dropless_moe = cx.dropless_moe || (l.is_moe && l.moe.capacity_factor <= 0.0);
  }
  if (cx.dropless_moe) {
    const double cv = job.runtime.moe_expert_load_cv;
    const std::string point =
        cv > 0.0 ? fmt::format("the busiest EP rank's share for an expert-load CV of {:.2f}", cv)
                 : std::string("balanced routing");
    report.notes.push_back(fmt::format(
        "dropless MoE: point assumes {}; upper assumes the most loaded EP rank gets {:.2f}x the "
        "mean tokens",
        point, cx.options.moe_dropless_imbalance_upper));
  }
  // Without a vocabulary-parallel loss every TP rank holds the gathered, full-width logits.
  cx.vocab_local = static_cast<double>(padded_vocab_size(job.model, job.parallel.tp)) /
                   (job.parallel.vocab_parallel_loss ? std::max(1, job.parallel.tp) : 1);
  cx.cache_point = {&job, &cx.geo, &cx.sel, &cx.options, false, nullptr, {}};
  cx.cache_upper = {&job, &cx.geo, &cx.sel, &cx.options, true, nullptr, {}};
  if (job.parallel.fsdp != FsdpKind::kNone) {
    report.notes.push_back(
        job.parallel.reshard_after_forward
            ? "FSDP window: 2 gathered units (current + prefetched) + 1 unit of unsharded grads"
            : "FSDP window: no reshard after forward, every unit of the rank stays gathered from "
              "its forward to its backward, + 1 unit of unsharded grads");
  }
  if (job.parallel.fsdp == FsdpKind::kFsdp2 && job.runtime.fsdp_param_is_master &&
      optimizer_bytes_per_param(job.runtime).master_bytes > 0) {
    report.notes.push_back(
        "FSDP2 mixed precision: the sharded parameter is the fp32 master copy; the params-dtype "
        "copy exists only while gathered");
  }
  if (job.model.tied_embeddings && cx.pp > 1) {
    report.notes.push_back("tied embeddings: the last stage holds a copy of the word embedding");
  }
  if (const int k = job.deferred_output_wgrads(); k > 0) {
    report.notes.push_back(fmt::format(
        "deferred output-layer weight gradients: the last stage keeps the output layer's input "
        "and logit gradient of {} microbatches until its drain, counted whole at its peak (one "
        "microbatch's pair more than the last forward sees)",
        k));
  }
}

// Megatron's defer_embedding_wgrad_compute (MG28 layers.py:1227-1231, 660-663): the stage with
// the output layer keeps each deferred microbatch's input (the sequence-parallel shard) and the
// gradient of its logits ([tokens, vocab / TP], the output's dtype) until the drain.
double deferred_wgrad_bytes(const Context& cx, const RankMemory& rm) {
  const int k = cx.job.deferred_output_wgrads();
  if (k <= 0 || !rm.has_output) return 0.0;
  const memory_detail::Geometry& g = cx.geo;
  return k * (g.tokens * g.h * g.e / g.sp + g.tokens * cx.vocab_local * g.e);
}

// The residual fractions of the job's allocator (docs/memory.md "Allocator"): the expandable-
// segment pair when the accelerator file has one, else the fixed-segment pair.
struct Residual {
  const Sourced* point;
  const Sourced* upper;
};
Residual residual_of(const JobSpec& job) {
  const AcceleratorSpec::Calibration& cal = job.cluster.accelerator.calibration;
  if (job.runtime.allocator == DeviceAllocatorKind::kCachingExpandable &&
      cal.fragmentation_expandable_fraction.value > 0.0) {
    return {&cal.fragmentation_expandable_fraction,
            cal.fragmentation_expandable_upper_fraction.value > 0.0
                ? &cal.fragmentation_expandable_upper_fraction
                : &cal.fragmentation_upper_fraction};
  }
  return {&cal.fragmentation_fraction, &cal.fragmentation_upper_fraction};
}

void fill_sources(const JobSpec& job, MemoryReport& report) {
  const AcceleratorSpec::Calibration& cal = job.cluster.accelerator.calibration;
  const Residual residual = residual_of(job);
  auto& src = report.sources;
  src[idx(MemoryComponent::kRuntimeContext)] = cal.runtime_context_bytes.source;
  src[idx(MemoryComponent::kCommBuffers)] =
      cal.comm_buffer_bytes_per_group.source + " (per communicator)";
  src[idx(MemoryComponent::kWorkspace)] = cal.workspace_bytes.source;
  src[idx(MemoryComponent::kFragmentation)] =
      "the allocator replay (docs/memory.md Allocator) + residual: " + residual.point->source +
      " / upper: " + residual.upper->source;
  src[idx(MemoryComponent::kWeights)] = "accounting.h stage_params x params dtype";
  src[idx(MemoryComponent::kGradients)] = "params x main_grads_dtype";
  src[idx(MemoryComponent::kMasterWeights)] = "fp32 copy, sharded by the optimizer";
  src[idx(MemoryComponent::kOptimizerStates)] = "optimizer moments and their dtypes";
  src[idx(MemoryComponent::kActivations)] =
      "saved-tensor model x the schedule table's in-flight microbatches";
  src[idx(MemoryComponent::kTransient)] = "largest temporary (per rank)";
}

// Chunk parameters and activations of rank `r`; fills the parameter and layout fields of `rm`.
const RankChunks& rank_chunks(Context& cx, int r, RankMemory& rm) {
  const JobSpec& job = cx.job;
  const std::size_t v = static_cast<std::size_t>(cx.vpp);
  rm.pp_rank = r;
  rm.virtual_stages.resize(v);
  bool has_emb = false;
  for (int c = 0; c < cx.vpp; ++c) {
    const int z = virtual_stage_index(cx.schedule, cx.pp, r, c);
    rm.virtual_stages[static_cast<std::size_t>(c)] = z;
    has_emb = has_emb || (*cx.stages)[static_cast<std::size_t>(z)].has_embedding;
  }
  RankChunks& out = cx.chunks;  // reused from rank to rank: its vectors keep their capacity
  out.transient_point = out.transient_upper = out.transient_floor = 0.0;
  out.has_moe = false;
  out.blocks.resize(v);
  out.full_upper.assign(v, 0.0);
  out.w_only_upper.assign(v, 0.0);
  out.transient_per_chunk.assign(v, 0.0);
  out.transient_source_per_chunk.assign(v, "");
  out.loss_per_chunk.assign(v, memory_detail::EagerLossChain{});
  rm.activation_per_chunk_bytes.assign(v, 0.0);
  rm.w_only_per_chunk_bytes.assign(v, 0.0);
  for (std::size_t c = 0; c < v; ++c) {
    const VirtualStage& st = (*cx.stages)[static_cast<std::size_t>(rm.virtual_stages[c])];
    const StageParams sp =
        stage_params(job.model, job.parallel, st, has_emb, &job.runtime.precision);
    rm.params.dense_params += sp.dense_params;
    rm.params.dense_gemm_params += sp.dense_gemm_params;
    rm.params.expert_params += sp.expert_params;
    rm.params.bf16_gemm_params += sp.bf16_gemm_params;
    rm.params.bf16_expert_params += sp.bf16_expert_params;
    rm.params.largest_unit_params = std::max(rm.params.largest_unit_params, sp.largest_unit_params);
    rm.num_layers += sp.decoder_layers;
    rm.has_embedding = rm.has_embedding || st.has_embedding;
    rm.has_output = rm.has_output || st.has_output;
    rm.mtp_layers += st.mtp_layers;
    out.has_moe = out.has_moe || sp.expert_params > 0.0;

    const ChunkActivation p = chunk_activation(job, cx.geo, st, cx.cache_point, cx.mtp_point,
                                               cx.vocab_local, &out.blocks[c]);
    out.transient_per_chunk[c] = p.transient;
    out.transient_source_per_chunk[c] = p.transient_source;
    out.loss_per_chunk[c] = p.loss;
    const ChunkActivation u = cx.dropless_moe ? chunk_activation(job, cx.geo, st, cx.cache_upper,
                                                                 cx.mtp_upper, cx.vocab_local)
                                              : p;
    rm.activation_per_chunk_bytes[c] = p.per_microbatch;
    out.full_upper[c] = u.per_microbatch;
    rm.w_only_per_chunk_bytes[c] = p.w_retained;
    out.w_only_upper[c] = u.w_retained;
    rm.activation_per_microbatch_bytes += p.per_microbatch;
    if (p.transient > out.transient_point) {
      out.transient_point = p.transient;
      rm.transient_source = p.transient_source;
    }
    out.transient_floor = std::max(out.transient_floor, p.transient_floor);
    out.transient_upper = std::max(out.transient_upper, u.transient);
  }
  return out;
}

// What the caching allocator holds throughout the step: every static component but the two that
// live outside it (runtime context, communicator buffers).
double allocator_static_bytes(const ComponentBytes& s) {
  double b = 0.0;
  for (int i = 0; i < kNumMemoryComponents; ++i) {
    if (in_caching_allocator(static_cast<MemoryComponent>(i))) b += s[static_cast<std::size_t>(i)];
  }
  return b;
}

RankMemory project_rank(Context& cx, int r, bool replay) {
  RankMemory rm;
  const RankChunks& ch = rank_chunks(cx, r, rm);
  const double deferred = deferred_wgrad_bytes(cx, rm);
  const double act_u =
      activation_peak(*cx.in_flight, r, ch.full_upper, ch.w_only_upper, nullptr) + deferred;
  rm.communicators = communicator_count(cx.job, rm.has_embedding || rm.has_output, ch.has_moe);

  const ComponentBytes s = static_memory(cx, rm, ch.has_moe);
  // The point decomposes the timeline's peak moment: the activations held then (rm.in_flight)
  // and the temporary of the action that runs.
  memory_detail::build_timeline(cx, r, ch, allocator_static_bytes(s), rm);
  const double act_p = rm.moment.held_bytes + deferred;
  const Residual residual = residual_of(cx.job);
  rm.point = s;
  rm.upper = s;
  rm.point[idx(MemoryComponent::kActivations)] = act_p;
  rm.upper[idx(MemoryComponent::kActivations)] = act_u;
  const double window = s[idx(MemoryComponent::kFsdpUnsharded)];
  double transient_p = rm.moment.temporary_bytes;
  if (!rm.moment.temporary.empty()) rm.transient_source = rm.moment.temporary;
  const double capacity = cx.job.cluster.accelerator.hbm_bytes;
  if (cx.job.runtime.whole_step_compiled && capacity > 0.0 && ch.transient_floor < transient_p) {
    // XLA rematerialises to the device's memory limit at compile time: a step whose working set
    // would not fit recomputes cheap tensors instead, down to the floor (ChunkActivation).
    const double frag = residual.point->value;
    const double total = sum(s) + act_p + transient_p + frag * (act_p + transient_p + window);
    const double excess = total - capacity;
    if (excess > 0.0) {
      transient_p = std::max(ch.transient_floor, transient_p - excess / (1.0 + frag));
      rm.transient_source = "working set rematerialised by XLA to the HBM limit";
    }
  }
  rm.point[idx(MemoryComponent::kTransient)] = transient_p;
  rm.upper[idx(MemoryComponent::kTransient)] = ch.transient_upper;
  const double static_alloc = allocator_static_bytes(s);
  rm.peak_allocated_bytes = static_alloc + act_p + transient_p;  // after XLA's rematerialisation
  const double outside =
      s[idx(MemoryComponent::kRuntimeContext)] + s[idx(MemoryComponent::kCommBuffers)];
  if (replay && cx.replay_table != nullptr) {  // no table: XLA, or MemoryOptions said no
    const memory_detail::Replay rp = memory_detail::replay_allocator(
        cx, r, ch, rm, s, capacity > 0.0 ? capacity - outside : 0.0);
    rm.allocator_excess_bytes = std::max(0.0, rp.peak_reserved_bytes - rm.peak_allocated_bytes);
    rm.allocator_segments = rp.segments;
  }
  // The residual fraction covers what the timeline's per-layer blocks do not show (each layer's
  // many tensors and the kernels' workspaces); the replay's excess is added to it.
  rm.point[idx(MemoryComponent::kFragmentation)] =
      residual.point->value * (act_p + transient_p + window) + rm.allocator_excess_bytes;
  rm.upper[idx(MemoryComponent::kFragmentation)] =
      residual.upper->value * (act_u + ch.transient_upper + window) + rm.allocator_excess_bytes;
  rm.total_point_bytes = sum(rm.point);
  rm.total_upper_bytes = sum(rm.upper);
  rm.allocator_point_bytes = rm.total_point_bytes - outside;
  rm.allocator_upper_bytes = rm.total_upper_bytes - outside;
  return rm;
}

// The allocator replay of the ranks that can hold the device peak: those whose allocated peak is
// within kReplayBand of the largest. A rank further below would need its allocator to reserve that
// much more than the leading rank's to overtake it; the others keep allocated + residual
// (allocator_segments 0, noted).
void replay_candidates(Context& cx, MemoryReport& report) {
  constexpr double kReplayBand = 0.10;
  memory_detail::resolve_replay_table(cx);
  double top = 0.0;
  for (const RankMemory& rm : report.ranks) top = std::max(top, rm.peak_allocated_bytes);
  int skipped = 0;
  for (RankMemory& rm : report.ranks) {
    if (rm.peak_allocated_bytes >= (1.0 - kReplayBand) * top) {
      rm = project_rank(cx, rm.pp_rank, true);
    } else {
      ++skipped;
    }
  }
  if (skipped > 0) {
    report.notes.push_back(fmt::format(
        "allocator replayed on the pipeline ranks within {:.0f} % of the largest allocated peak; "
        "the {} others are allocated + residual fraction",
        100.0 * kReplayBand, skipped));
  }
}

void add_largest_components(const ComponentBytes& pk, MemoryReport& report) {
  std::array<int, kNumMemoryComponents> order{};
  for (int i = 0; i < kNumMemoryComponents; ++i) order[static_cast<std::size_t>(i)] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return pk[static_cast<std::size_t>(a)] > pk[static_cast<std::size_t>(b)];
  });
  for (int i = 0; i < 3; ++i) {
    report.largest_components.push_back(static_cast<MemoryComponent>(order[i]));
  }
}

// Peak ranks, verdict, the three largest components of the peak rank, remedies.
void summarise(const JobSpec& job, const MemoryOptions& options, MemoryReport& report) {
  for (const RankMemory& rm : report.ranks) {
    // A NaN or negative total would never exceed the capacity: refuse a verdict on it rather
    // than print FITS (the input bounds should make this unreachable; this keeps it so).
    for (const double total : {rm.total_point_bytes, rm.total_upper_bytes}) {
      if (!(std::isfinite(total) && total >= 0.0)) {
        throw InputError({job.source, 0, 0}, "memory",
                         fmt::format("the projected memory of pipeline rank {} is {} bytes: no "
                                     "verdict on a total that is not a finite, non-negative "
                                     "number",
                                     rm.pp_rank, total));
      }
    }
    if (rm.total_point_bytes > report.peak_point_bytes) {
      report.peak_point_bytes = rm.total_point_bytes;
      report.peak_rank = rm.pp_rank;
    }
    if (rm.total_upper_bytes > report.peak_upper_bytes) {
      report.peak_upper_bytes = rm.total_upper_bytes;
      report.peak_upper_rank = rm.pp_rank;
    }
  }
  report.capacity_bytes = job.cluster.accelerator.hbm_bytes;
  report.verdict =
      verdict_of(report.peak_point_bytes, report.peak_upper_bytes, report.capacity_bytes);
  if (!report.ranks.empty()) {
    add_largest_components(report.ranks[static_cast<std::size_t>(report.peak_rank)].point, report);
  }
  if (options.suggest_remedies &&
      (report.verdict == MemoryVerdict::kOom || report.verdict == MemoryVerdict::kAtRisk)) {
    memory_detail::add_remedies(job, options, report);
  }
}

}  // namespace

MemoryReport project_memory(const JobSpec& job) {
  return project_memory(job, MemoryOptions{});
}

MemoryReport project_memory(const JobSpec& job, const MemoryOptions& options) {
  check_job_invariants(job);  // a malformed job is refused, never repaired
  if (job.model.family == ModelFamily::kRecommendation) {
    MemoryReport report = memory_detail::project_recsys_memory(job, options);
    report.allocator = job.runtime.allocator;
    fill_sources(job, report);
    if (!report.ranks.empty()) add_largest_components(report.ranks.front().point, report);
    return report;
  }
  MemoryReport report;
  report.allocator = job.runtime.allocator;
  // XLA's static assignment reserves what is live: nothing beyond the allocated peak to replay.
  report.allocator_replayed =
      options.replay_allocator && job.runtime.allocator != DeviceAllocatorKind::kXla;
  Context cx{job, options};
  resolve_pipeline(cx, report);
  resolve_activations(cx, report);
  fill_sources(job, report);
  report.ranks.reserve(static_cast<std::size_t>(cx.pp));
  for (int r = 0; r < cx.pp; ++r) report.ranks.push_back(project_rank(cx, r, false));
  if (report.allocator_replayed) replay_candidates(cx, report);
  summarise(job, options, report);
  const double budget = job.runtime.recompute.memory_budget;
  if (budget > 0.0 && budget < 1.0) {
    // A compiler-chosen budget is a point inside a bracket: full AC (0) to no AC (1).
    MemoryOptions inner = options;
    inner.suggest_remedies = false;
    double peak[2] = {0.0, 0.0};
    for (int i = 0; i < 2; ++i) {
      JobSpec j = job;
      j.runtime.recompute.memory_budget = i;
      peak[i] = project_memory(j, inner).peak_point_bytes;
    }
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    report.notes.push_back(fmt::format(
        "activation memory budget {}: the compiler decides what to save; the peak lies between "
        "{:.2f} GiB (budget 0, full AC) and {:.2f} GiB (budget 1, no AC)",
        budget, peak[0] / kGiB, peak[1] / kGiB));
  }
  return report;
}

namespace memory_detail {

MemoryVerdict verdict_of(double point, double upper, double capacity) {
  if (capacity <= 0.0) return MemoryVerdict::kUnknown;
  if (point > capacity) return MemoryVerdict::kOom;
  if (upper > capacity) return MemoryVerdict::kAtRisk;
  return MemoryVerdict::kFits;
}

}  // namespace memory_detail

MemoryVerdict verdict_with_range(double point_bytes, double upper_bytes, double lo_bytes,
                                 double hi_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0.0) return MemoryVerdict::kUnknown;
  // A published run of this regime measured up to (1 + q90) below the projection: the job is
  // out of memory only if it would be even then.
  if (lo_bytes > capacity_bytes) return MemoryVerdict::kOom;
  const double high = std::max({point_bytes, upper_bytes, hi_bytes});
  return high > capacity_bytes ? MemoryVerdict::kAtRisk : MemoryVerdict::kFits;
}

}  // namespace projector
