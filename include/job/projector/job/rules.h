// The one named rule set every job obeys, whoever builds it: the front-end adapters, the validation
// mapper, the sweep, the memory remedies and the test builders all check their layouts here (the
// job builder, job/builder.h, for a stated job; the sweep for each enumerated candidate).
//
// check_layout() is cheap (a few integer divisions) so the sweep can run it 10^6 times; everything
// it needs from the model and the cluster is computed once into RuleFacts.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

// Checking order; a layout is reported under the first rule it breaks.
enum class LayoutRule : std::uint8_t {
  kLegal,
  kTpHeads,          // attention heads % TP
  kTpKvHeads,        // KV heads (query groups) % TP
  kTpLinearHeads,    // GDN / KDA key and value heads % TP
  kTpUnsupported,    // TP > 1 with a layer that runs at TP 1 only (KDA, short conv, V4, Flux)
  kTpBeyondNode,     // TP > GPUs per node
  kWorldDense,       // world % (TP x PP x CP)
  kLayers,           // layers % (PP x VPP) (balanced), or fewer layers than stages
  kPpUnsupported,    // PP > 1 for a model built on one stage (Flux)
  kNotMoe,           // EP > 1 (search: or ETP != TP) on a model without experts
  kExpertsEp,        // experts % EP
  kWorldExpert,      // world % (ETP x EP x PP)
  kCpUnsupported,    // CP > 1 over layers (or in a framework) whose CP split is not modelled
  kSeqCp,            // CP > 1 and seq % (2 x CP)
  kCpHierarchy,      // a2a+p2p: CP or the heads per TP rank % the all-to-all level
  kGbs,              // GBS % (MBS x DP)
  kScheduleNeedsPp,  // VPP > 1 (search: any schedule but 1f1b) with PP == 1
  kScheduleVpp,      // schedule and VPP do not match (interleaved >= 2, V-shape == 2)
  kInterleavedMicrobatches,  // interleaved: microbatches % PP != 0
  kDualPipeMicrobatches,     // dualpipev: microbatches < 2 x PP
  kSplitBackwardRecompute,   // zero-bubble / V-shape schedules split B and W: no full recompute
  kScheduleWidenedTransfer,  // attention residuals at PP > 1: 1F1B and interleaved 1F1B only
  kMoeOverlapDispatcher,     // combined 1F1B (EP overlap) with the allgather dispatcher
  kMoeOverlapLayout,         // combined 1F1B without EP > 1, or at PP > 1 without VPP >= 2
  kDeferredWgradNeedsPp,     // deferred output-layer weight gradients without pipeline stages
  kRecomputeBlock,           // search: block recompute of >= the layers of the smallest chunk
  // Rules only a stated job can break (an enumerated candidate is built to satisfy them).
  kSizes,       // a size, batch or length below 1 or above kMaxCount
  kWorldSize,   // nodes x GPUs per node above kMaxWorldSize
  kLayerSplit,  // a stated layout or first / last stage counts that do not place every layer
  kCount
};
inline constexpr int kNumLayoutRules = static_cast<int>(LayoutRule::kCount);
std::string_view to_string(LayoutRule r);    // short id, e.g. "tp_heads"
std::string_view explanation(LayoutRule r);  // one line for reports

// What the rules read from the model and the cluster.
struct RuleFacts {
  int layers = 0;
  int heads_gcd = 0;         // every layer's attention heads are a multiple of this
  int kv_gcd = 0;            // standard-attention KV heads (0: none)
  bool kv_padded = false;    // KV heads the TP does not divide are padded (XLA), not refused
  int linear_heads_gcd = 0;  // GDN / KDA key and value heads (0: no such layer)
  bool tp_one = false;  // a layer that runs at TP 1 only (Primus' KDA, LFM2 short conv, V4, Flux)
  // CP 1 only: a layer whose CP split is not modelled (V4 attention, GDN / KDA / short conv,
  // Flux's joint attention) or a framework that cannot split this model (JobSpec cp_unsupported).
  bool cp_one = false;
  bool pp_one = false;   // the model is built on one pipeline stage (Flux)
  int seq_multiple = 1;  // the sequence must be a multiple of this (V4's compressor windows)
  int cp_a2a = 0;        // a2a+p2p: the all-to-all level's size, which must divide CP (0: none)
  // Kimi-K3's attention residuals widen the stage transfer, which Primus does only for 1F1B and
  // interleaved 1F1B (PR14 kimi_k3_pp_shape_patches.py:188-199).
  bool stock_schedules_only = false;
  // Megatron's combined 1F1B (overlap_moe_expert_parallel_comm) and whether the job's MoE
  // dispatcher is the allgather one (Megatron asserts the alltoall or flex dispatcher, EP > 1 and,
  // with PP > 1, virtual stages).
  bool moe_overlap = false;
  bool allgather_dispatcher = false;
  // Megatron's defer_embedding_wgrad_compute, which it refuses without pipeline parallelism
  // (MG28 model_parallel_config.py:545-548).
  bool deferred_output_wgrad = false;
  int experts_gcd = 0;  // routed experts (0: dense model)
  int seq = 0;
  int gbs = 0;
  int gpus_per_node = 8;
  std::int64_t world = 8;
  bool tp_beyond_node = false;
  // Balanced split: the first L mod (PP x VPP) stages take one more layer (else it must divide).
  bool uneven_layers = false;
  // The stages come from a stated layout or stage counts (checked by kLayerSplit instead).
  bool stated_stages = false;
  // The sweep: also reject layouts that only duplicate another one (ETP != TP on a dense model,
  // a pipeline schedule without pipeline parallelism, block recompute covering whole chunks).
  bool search = false;
};
// The model's part alone (what every layout of this model must obey).
RuleFacts rule_facts(const ModelSpec& model, int seq, int gbs, int gpus_per_node,
                     std::int64_t world);

// Who checks a layout of a built job, and so which of the job's policies apply:
//  kStated  the job as built (the builder; a producer that changes neither PP nor VPP, such as a
//           recompute change): its split policy and its stated stages as the builder saw them;
//  kRestage a producer that re-lays out the job with balanced stages (apply_layout: the memory
//           remedies, a PP or VPP change): the framework's split policy, no stated stages;
//  kSearch  the sweep: as kRestage, and layouts that only duplicate another are rejected too.
enum class RulePurpose : std::uint8_t { kStated, kRestage, kSearch };
// The one place a built job's facts are assembled: the model's part, the framework's capability
// (cp_unsupported), the job's split and TP policies, the job's world (or `world` when > 0).
RuleFacts rule_facts(const JobSpec& job, RulePurpose purpose, std::int64_t world = 0);

// The choices the rules constrain.
struct LayoutChoice {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1;
  int mbs = 1;
  ScheduleKind schedule = ScheduleKind::k1F1B;  // resolved (kAuto breaks kScheduleVpp)
  bool full_recompute = false;
  int recompute_block_layers = 0;  // full recompute, block method: layers per chunk; 0: uniform
  // Gradient accumulation outside the schedule (torchtitan): each round is its own pipeline flush
  // of microbatches / rounds, and the schedule rules apply to one round.
  int accumulation_rounds = 1;
};
LayoutChoice layout_choice(const JobSpec& job);

// Defined inline below: the sweep checks every candidate, so the call must not cost more than the
// few integer divisions it makes.
LayoutRule check_layout(const RuleFacts& facts, const LayoutChoice& choice);

// ------------------------------------------------------------------------------ implementation

namespace rules_detail {

// `Int` is the width of the world-size arithmetic: 32 bits whenever the world fits (the sweep's
// hot path; 32-bit division is several times faster), 64 bits otherwise. Group sizes above the
// world cannot divide it and are rejected before any narrowing.
template <typename Int>
inline LayoutRule check_model_fit(const RuleFacts& f, const LayoutChoice& c) {
  if (f.heads_gcd % c.tp != 0) return LayoutRule::kTpHeads;
  if (f.kv_gcd > 0 && f.kv_gcd % c.tp != 0 && !f.kv_padded) return LayoutRule::kTpKvHeads;
  if (f.linear_heads_gcd > 0 && f.linear_heads_gcd % c.tp != 0) return LayoutRule::kTpLinearHeads;
  if (f.tp_one && c.tp != 1) return LayoutRule::kTpUnsupported;
  if (c.tp > f.gpus_per_node && !f.tp_beyond_node) return LayoutRule::kTpBeyondNode;
  const Int world = static_cast<Int>(f.world);
  // Products of two int sizes fit 64 bits; a partial product above the world is refused before
  // the third factor could overflow.
  const std::int64_t tp_pp = static_cast<std::int64_t>(c.tp) * c.pp;
  if (tp_pp > f.world || tp_pp * c.cp > f.world || world % static_cast<Int>(tp_pp * c.cp) != 0) {
    return LayoutRule::kWorldDense;
  }
  const std::int64_t stages = static_cast<std::int64_t>(c.pp) * c.vpp;
  if (!f.stated_stages && (f.uneven_layers ? f.layers < stages : f.layers % stages != 0)) {
    return LayoutRule::kLayers;
  }
  if (f.pp_one && c.pp != 1) return LayoutRule::kPpUnsupported;
  if (f.experts_gcd == 0) {
    if (c.ep != 1 || (f.search && c.etp != c.tp)) return LayoutRule::kNotMoe;
  } else {
    if (f.experts_gcd % c.ep != 0) return LayoutRule::kExpertsEp;
    const std::int64_t etp_ep = static_cast<std::int64_t>(c.etp) * c.ep;
    if (etp_ep > f.world || etp_ep * c.pp > f.world ||
        world % static_cast<Int>(etp_ep * c.pp) != 0) {
      return LayoutRule::kWorldExpert;
    }
  }
  if (c.cp > 1 && f.cp_one) return LayoutRule::kCpUnsupported;
  if (c.cp > 1 && f.seq % (2 * c.cp) != 0) return LayoutRule::kSeqCp;
  if (f.seq_multiple > 1 && f.seq % f.seq_multiple != 0) return LayoutRule::kSeqCp;
  if (c.cp > 1 && f.cp_a2a > 1) {
    // The all-to-all level splits each TP rank's query and KV heads (TE asserts they divide).
    if (c.cp % f.cp_a2a != 0 || (f.heads_gcd / c.tp) % f.cp_a2a != 0 ||
        (f.kv_gcd > 0 && (f.kv_gcd / c.tp) % f.cp_a2a != 0)) {
      return LayoutRule::kCpHierarchy;
    }
  }
  return LayoutRule::kLegal;
}

inline LayoutRule check_schedule(const RuleFacts& f, const LayoutChoice& c, std::int64_t m) {
  if (c.pp == 1 && (f.search ? c.schedule != ScheduleKind::k1F1B : c.vpp > 1)) {
    return LayoutRule::kScheduleNeedsPp;
  }
  switch (c.schedule) {
    case ScheduleKind::k1F1B:
    case ScheduleKind::kZeroBubble:
      if (c.vpp != 1) return LayoutRule::kScheduleVpp;
      break;
    case ScheduleKind::kInterleaved:
      if (c.vpp < 2) return LayoutRule::kScheduleVpp;
      break;
    case ScheduleKind::kAuto:
      return LayoutRule::kScheduleVpp;  // resolved before any check
    default:
      if (c.vpp != 2) return LayoutRule::kScheduleVpp;
      break;
  }
  if (c.accumulation_rounds > 1) m /= c.accumulation_rounds;
  if (c.schedule == ScheduleKind::kInterleaved && m % c.pp != 0) {
    return LayoutRule::kInterleavedMicrobatches;
  }
  if (c.schedule == ScheduleKind::kDualPipeV && m < 2 * c.pp) {
    return LayoutRule::kDualPipeMicrobatches;
  }
  if (c.full_recompute && projector::splits_backward(c.schedule))
    return LayoutRule::kSplitBackwardRecompute;
  if (f.stock_schedules_only && c.pp > 1 && c.schedule != ScheduleKind::k1F1B &&
      c.schedule != ScheduleKind::kInterleaved) {
    return LayoutRule::kScheduleWidenedTransfer;
  }
  if (f.moe_overlap) {
    if (f.allgather_dispatcher) return LayoutRule::kMoeOverlapDispatcher;
    if (c.ep <= 1 || (c.pp > 1 && c.vpp < 2)) return LayoutRule::kMoeOverlapLayout;
  }
  if (f.deferred_output_wgrad && c.pp == 1) return LayoutRule::kDeferredWgradNeedsPp;
  const std::int64_t stages = static_cast<std::int64_t>(c.pp) * c.vpp;
  if (f.search && c.recompute_block_layers != 0 &&
      (c.recompute_block_layers < 1 || c.recompute_block_layers >= f.layers / stages)) {
    return LayoutRule::kRecomputeBlock;
  }
  return LayoutRule::kLegal;
}

}  // namespace rules_detail

inline LayoutRule check_layout(const RuleFacts& f, const LayoutChoice& c) {
  if (f.world <= std::numeric_limits<std::int32_t>::max()) {
    if (const LayoutRule r = rules_detail::check_model_fit<std::int32_t>(f, c);
        r != LayoutRule::kLegal) {
      return r;
    }
    // DP <= world and MBS x DP > GBS cannot divide GBS: both stay in 32 bits.
    const std::int32_t dp = static_cast<std::int32_t>(f.world) / (c.tp * c.pp * c.cp);
    if (static_cast<std::int64_t>(c.mbs) * dp > f.gbs) return LayoutRule::kGbs;
    const std::int32_t per_step = c.mbs * dp;
    if (f.gbs % per_step != 0) return LayoutRule::kGbs;
    return rules_detail::check_schedule(f, c, f.gbs / per_step);
  }
  if (const LayoutRule r = rules_detail::check_model_fit<std::int64_t>(f, c);
      r != LayoutRule::kLegal)
    return r;
  const std::int64_t dp = f.world / (static_cast<std::int64_t>(c.tp) * c.pp * c.cp);
  const std::int64_t per_step = static_cast<std::int64_t>(c.mbs) * dp;
  if (f.gbs % per_step != 0) return LayoutRule::kGbs;
  return rules_detail::check_schedule(f, c, f.gbs / per_step);
}

}  // namespace projector
