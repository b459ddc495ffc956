// The legality rules (job/rules.h).
#include "projector/job/rules.h"

#include <numeric>

namespace projector {
namespace {

bool splits_backward(ScheduleKind s) {
  return s == ScheduleKind::kZeroBubble || is_v_shape(s);
}

LayoutRule check_model_fit(const RuleFacts& f, const LayoutChoice& c) {
  if (f.heads_gcd % c.tp != 0) return LayoutRule::kTpHeads;
  if (f.kv_gcd > 0 && f.kv_gcd % c.tp != 0) return LayoutRule::kTpKvHeads;
  if (c.tp > f.gpus_per_node && !f.tp_beyond_node) return LayoutRule::kTpBeyondNode;
  const std::int64_t dense_group = static_cast<std::int64_t>(c.tp) * c.pp * c.cp;
  if (f.world % dense_group != 0) return LayoutRule::kWorldDense;
  const int stages = c.pp * c.vpp;
  if (!f.stated_stages && (f.uneven_layers ? f.layers < stages : f.layers % stages != 0)) {
    return LayoutRule::kLayers;
  }
  if (f.experts_gcd == 0) {
    if (c.ep != 1 || (f.search && c.etp != c.tp)) return LayoutRule::kNotMoe;
  } else {
    if (f.experts_gcd % c.ep != 0) return LayoutRule::kExpertsEp;
    if (f.world % (static_cast<std::int64_t>(c.etp) * c.ep * c.pp) != 0) {
      return LayoutRule::kWorldExpert;
    }
  }
  if (c.cp > 1 && f.seq % (2 * c.cp) != 0) return LayoutRule::kSeqCp;
  return LayoutRule::kLegal;
}

LayoutRule check_schedule(const RuleFacts& f, const LayoutChoice& c, std::int64_t m) {
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
  if (c.schedule == ScheduleKind::kInterleaved && m % c.pp != 0) {
    return LayoutRule::kInterleavedMicrobatches;
  }
  if (c.schedule == ScheduleKind::kDualPipeV && m < 2 * c.pp) {
    return LayoutRule::kDualPipeMicrobatches;
  }
  if (c.full_recompute && splits_backward(c.schedule)) return LayoutRule::kSplitBackwardRecompute;
  const int stages = c.pp * c.vpp;
  if (f.search && c.recompute_block_layers != 0 &&
      (c.recompute_block_layers < 1 || c.recompute_block_layers >= f.layers / stages)) {
    return LayoutRule::kRecomputeBlock;
  }
  return LayoutRule::kLegal;
}

}  // namespace

RuleFacts rule_facts(const ModelSpec& model, int seq, int gbs, int gpus_per_node,
                     std::int64_t world) {
  RuleFacts f;
  f.layers = model.num_layers();
  for (const LayerSpec& l : model.layers) {
    f.heads_gcd = std::gcd(f.heads_gcd, l.attention.num_heads);
    if (l.attention.kind == AttentionKind::kStandard) {
      f.kv_gcd = std::gcd(f.kv_gcd, l.attention.num_query_groups);
    }
    if (l.is_moe) f.experts_gcd = std::gcd(f.experts_gcd, l.moe.num_experts);
  }
  f.seq = seq;
  f.gbs = gbs;
  f.gpus_per_node = gpus_per_node;
  f.world = world;
  return f;
}

LayoutChoice layout_choice(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const RecomputeSpec& rc = job.runtime.recompute;
  LayoutChoice c;
  c.tp = p.tp;
  c.pp = p.pp;
  c.vpp = p.vpp;
  c.cp = p.cp;
  c.ep = p.ep;
  c.etp = p.etp;
  c.mbs = job.runtime.micro_batch_size;
  c.schedule = job.runtime.schedule;
  c.full_recompute = rc.granularity == RecomputeGranularity::kFull;
  c.recompute_block_layers =
      c.full_recompute && rc.method == RecomputeMethod::kBlock ? rc.num_layers : 0;
  return c;
}

LayoutRule check_layout(const RuleFacts& f, const LayoutChoice& c) {
  if (const LayoutRule r = check_model_fit(f, c); r != LayoutRule::kLegal) return r;
  const std::int64_t dp = f.world / (static_cast<std::int64_t>(c.tp) * c.pp * c.cp);
  const std::int64_t per_step = static_cast<std::int64_t>(c.mbs) * dp;
  if (f.gbs % per_step != 0) return LayoutRule::kGbs;
  return check_schedule(f, c, f.gbs / per_step);
}

std::string_view to_string(LayoutRule r) {
  switch (r) {
    case LayoutRule::kLegal:
      return "legal";
    case LayoutRule::kTpHeads:
      return "tp_heads";
    case LayoutRule::kTpKvHeads:
      return "tp_kv_heads";
    case LayoutRule::kTpBeyondNode:
      return "tp_beyond_node";
    case LayoutRule::kWorldDense:
      return "world_tp_pp_cp";
    case LayoutRule::kLayers:
      return "layers_pp_vpp";
    case LayoutRule::kNotMoe:
      return "ep_on_dense_model";
    case LayoutRule::kExpertsEp:
      return "experts_ep";
    case LayoutRule::kWorldExpert:
      return "world_etp_ep_pp";
    case LayoutRule::kSeqCp:
      return "seq_cp";
    case LayoutRule::kGbs:
      return "gbs_mbs_dp";
    case LayoutRule::kScheduleNeedsPp:
      return "schedule_needs_pp";
    case LayoutRule::kScheduleVpp:
      return "schedule_vpp";
    case LayoutRule::kInterleavedMicrobatches:
      return "interleaved_microbatches";
    case LayoutRule::kDualPipeMicrobatches:
      return "dualpipev_microbatches";
    case LayoutRule::kSplitBackwardRecompute:
      return "split_backward_full_recompute";
    case LayoutRule::kRecomputeBlock:
      return "recompute_block";
    case LayoutRule::kSizes:
      return "sizes";
    case LayoutRule::kWorldSize:
      return "world_size";
    case LayoutRule::kLayerSplit:
      return "layer_split";
    case LayoutRule::kCount:
      break;
  }
  return "?";
}

std::string_view explanation(LayoutRule r) {
  switch (r) {
    case LayoutRule::kLegal:
      return "legal";
    case LayoutRule::kTpHeads:
      return "attention heads not divisible by TP";
    case LayoutRule::kTpKvHeads:
      return "KV heads (query groups) not divisible by TP";
    case LayoutRule::kTpBeyondNode:
      return "TP larger than one node";
    case LayoutRule::kWorldDense:
      return "world size not divisible by TP x PP x CP";
    case LayoutRule::kLayers:
      return "layers not divisible by PP x VPP (balanced layout)";
    case LayoutRule::kNotMoe:
      return "EP > 1 or ETP != TP on a model without experts";
    case LayoutRule::kExpertsEp:
      return "experts not divisible by EP";
    case LayoutRule::kWorldExpert:
      return "world size not divisible by ETP x EP x PP";
    case LayoutRule::kSeqCp:
      return "sequence length not divisible by 2 x CP";
    case LayoutRule::kGbs:
      return "global batch not divisible by MBS x DP";
    case LayoutRule::kScheduleNeedsPp:
      return "pipeline schedule other than 1f1b without pipeline parallelism";
    case LayoutRule::kScheduleVpp:
      return "schedule does not match VPP (interleaved >= 2, V-shape == 2, others 1)";
    case LayoutRule::kInterleavedMicrobatches:
      return "interleaved schedule needs microbatches divisible by PP";
    case LayoutRule::kDualPipeMicrobatches:
      return "dualpipev needs at least 2 x PP microbatches";
    case LayoutRule::kSplitBackwardRecompute:
      return "zero-bubble / V-shape schedules cannot be combined with full recompute";
    case LayoutRule::kRecomputeBlock:
      return "block recompute covers the whole chunk (use full) or is < 1";
    case LayoutRule::kSizes:
      return "a parallel size, batch or sequence length out of range";
    case LayoutRule::kWorldSize:
      return "world size out of range";
    case LayoutRule::kLayerSplit:
      return "stated layout does not place every layer on PP x VPP stages";
    case LayoutRule::kCount:
      break;
  }
  return "?";
}

}  // namespace projector
