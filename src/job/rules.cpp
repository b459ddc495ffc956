// The legality rules (job/rules.h).
#include "projector/job/rules.h"

#include <algorithm>
#include <numeric>

#include "projector/job/spec.h"

namespace projector {

RuleFacts rule_facts(const ModelSpec& model, int seq, int gbs, int gpus_per_node,
                     std::int64_t world) {
  RuleFacts f;
  f.layers = model.num_layers();
  for (const LayerSpec& l : model.layers) {
    if (l.has_attention() && l.attention.kind == AttentionKind::kCompressed) {
      // DeepSeek-V4 attention: every TP rank would run all heads (PR11
      // deepseek_v4_layer_specs.py:241-262 duplicates q_down, kv and o_a) and its CP split is not
      // modelled.
      f.tp_one = true;
      f.cp_one = true;
      f.seq_multiple = std::max(f.seq_multiple, l.attention.compressed.compress_ratio);
    }
    if (l.has_attention()) {
      f.heads_gcd = std::gcd(f.heads_gcd, l.attention.num_heads);
      if (l.attention.kind == AttentionKind::kStandard) {
        f.kv_gcd = std::gcd(f.kv_gcd, l.attention.num_query_groups);
      }
    }
    if (l.has_mamba()) {
      // Mamba-2 shards its heads and its B / C groups over TP (MG11 mamba_mixer.py:262-271).
      f.heads_gcd = std::gcd(f.heads_gcd, l.mamba.num_heads);
      f.kv_gcd = std::gcd(f.kv_gcd, l.mamba.num_groups);
    }
    if (l.has_linear_attention() && l.linear.short_conv()) {
      // Primus builds LFM2's short-conv linears unsplit (PR10 attention.py:137-158): TP 1 only.
      // CP would cut the causal conv at shard boundaries: not modelled.
      f.tp_one = true;
      f.cp_one = true;
    } else if (l.has_linear_attention()) {
      // GDN / KDA shard their value and key heads over TP (MG2 transformer_config.py:1500-1509);
      // Primus' KDA runs at TP 1 only (PR8 kimi_delta_attention.py:300). Their CP split (a head
      // all-to-all) is not modelled.
      f.linear_heads_gcd = std::gcd(f.linear_heads_gcd, l.linear.num_value_heads);
      f.linear_heads_gcd = std::gcd(f.linear_heads_gcd, l.linear.num_key_heads);
      f.tp_one = f.tp_one || l.linear.kind == LinearAttentionKind::kKda;
      f.cp_one = true;
    }
    if (l.is_moe) f.experts_gcd = std::gcd(f.experts_gcd, l.moe.num_experts);
  }
  if (model.diffusion.enabled()) {
    // Primus builds Flux on one stage (PR9 model.py:203-209); the TP and CP splits of its joint
    // attention and adaLN blocks are not modelled.
    f.tp_one = true;
    f.cp_one = true;
    f.pp_one = true;
  }
  f.stock_schedules_only = model.attn_res_block_size > 0;
  f.seq = seq;
  f.gbs = gbs;
  f.gpus_per_node = gpus_per_node;
  f.world = world;
  return f;
}

RuleFacts rule_facts(const JobSpec& job, RulePurpose purpose, std::int64_t world) {
  const ParallelSpec& p = job.parallel;
  RuleFacts f = rule_facts(job.model, job.runtime.seq_length, job.runtime.global_batch_size,
                           job.cluster.gpus_per_node, world > 0 ? world : job.cluster.world_size());
  f.cp_one = f.cp_one || !p.cp_unsupported.empty();
  f.kv_padded = p.kv_heads_padded;
  f.tp_beyond_node = p.allow_tp_beyond_node;
  f.uneven_layers = p.uneven_layers_allowed;
  // Only the decoder LMs split layers the Megatron way; the other families place their blocks
  // themselves (checked by kLayerSplit), whoever lays them out.
  const bool other_family = job.model.family != ModelFamily::kDecoderLm;
  f.stated_stages = other_family || (purpose == RulePurpose::kStated && p.stages_stated);
  f.search = purpose == RulePurpose::kSearch;
  f.moe_overlap = combined_forward_backward(job);
  f.allgather_dispatcher = job.runtime.moe_dispatcher == MoeDispatcher::kAllGather;
  f.deferred_output_wgrad = job.runtime.defer_output_wgrad;
  if (p.cp_comm_type == CpCommType::kA2aP2p) f.cp_a2a = p.cp_a2a_size;
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
  c.accumulation_rounds = job.runtime.accumulation_rounds;
  c.full_recompute = rc.granularity == RecomputeGranularity::kFull;
  c.recompute_block_layers =
      c.full_recompute && rc.method == RecomputeMethod::kBlock ? rc.num_layers : 0;
  return c;
}

std::string_view to_string(LayoutRule r) {
  switch (r) {
    case LayoutRule::kLegal:
      return "legal";
    case LayoutRule::kTpHeads:
      return "tp_heads";
    case LayoutRule::kTpKvHeads:
      return "tp_kv_heads";
    case LayoutRule::kTpLinearHeads:
      return "tp_linear_heads";
    case LayoutRule::kTpUnsupported:
      return "tp_unsupported";
    case LayoutRule::kTpBeyondNode:
      return "tp_beyond_node";
    case LayoutRule::kWorldDense:
      return "world_tp_pp_cp";
    case LayoutRule::kLayers:
      return "layers_pp_vpp";
    case LayoutRule::kPpUnsupported:
      return "pp_unsupported";
    case LayoutRule::kNotMoe:
      return "ep_on_dense_model";
    case LayoutRule::kExpertsEp:
      return "experts_ep";
    case LayoutRule::kWorldExpert:
      return "world_etp_ep_pp";
    case LayoutRule::kCpUnsupported:
      return "cp_unsupported";
    case LayoutRule::kSeqCp:
      return "seq_cp";
    case LayoutRule::kCpHierarchy:
      return "cp_hierarchy";
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
    case LayoutRule::kScheduleWidenedTransfer:
      return "schedule_widened_transfer";
    case LayoutRule::kRecomputeBlock:
      return "recompute_block";
    case LayoutRule::kSizes:
      return "sizes";
    case LayoutRule::kWorldSize:
      return "world_size";
    case LayoutRule::kLayerSplit:
      return "layer_split";
    case LayoutRule::kMoeOverlapDispatcher:
      return "moe_overlap_dispatcher";
    case LayoutRule::kMoeOverlapLayout:
      return "moe_overlap_layout";
    case LayoutRule::kDeferredWgradNeedsPp:
      return "deferred_wgrad_needs_pp";
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
    case LayoutRule::kTpLinearHeads:
      return "linear-attention (GDN / KDA) heads not divisible by TP";
    case LayoutRule::kTpUnsupported:
      return "TP > 1 with layers that run at TP 1 only (KDA, LFM2 short conv, DeepSeek-V4 "
             "attention, Flux)";
    case LayoutRule::kTpBeyondNode:
      return "TP larger than one node";
    case LayoutRule::kWorldDense:
      return "world size not divisible by TP x PP x CP";
    case LayoutRule::kLayers:
      return "layers not divisible by PP x VPP (balanced layout)";
    case LayoutRule::kPpUnsupported:
      return "PP > 1 for a model built on one pipeline stage (Flux)";
    case LayoutRule::kNotMoe:
      return "EP > 1 or ETP != TP on a model without experts";
    case LayoutRule::kExpertsEp:
      return "experts not divisible by EP";
    case LayoutRule::kWorldExpert:
      return "world size not divisible by ETP x EP x PP";
    case LayoutRule::kCpUnsupported:
      return "CP > 1 over layers whose CP split is not modelled (DeepSeek-V4 attention, GDN / KDA "
             "/ short conv, Flux) or in a framework that cannot split the model";
    case LayoutRule::kSeqCp:
      return "sequence length not divisible by 2 x CP (or by DeepSeek-V4's compress ratio)";
    case LayoutRule::kCpHierarchy:
      return "a2a+p2p context parallelism: CP or the heads per TP rank not a multiple of the "
             "all-to-all level (hierarchical_context_parallel_sizes)";
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
    case LayoutRule::kScheduleWidenedTransfer:
      return "attention residuals widen the stage transfer only for 1F1B and interleaved 1F1B";
    case LayoutRule::kRecomputeBlock:
      return "block recompute covers the whole chunk (use full) or is < 1";
    case LayoutRule::kSizes:
      return "a parallel size, batch or sequence length out of range";
    case LayoutRule::kWorldSize:
      return "world size out of range";
    case LayoutRule::kLayerSplit:
      return "stated layout does not place every layer on PP x VPP stages";
    case LayoutRule::kMoeOverlapDispatcher:
      return "EP overlap (combined 1F1B) needs the alltoall or flex dispatcher";
    case LayoutRule::kMoeOverlapLayout:
      return "EP overlap (combined 1F1B) needs EP > 1 and, with PP > 1, VPP >= 2";
    case LayoutRule::kDeferredWgradNeedsPp:
      return "deferred output-layer weight gradients (defer_embedding_wgrad_compute) need PP > 1";
    case LayoutRule::kCount:
      break;
  }
  return "?";
}

}  // namespace projector
