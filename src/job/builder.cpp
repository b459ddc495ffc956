// The job builder (job/builder.h): JobDraft -> JobSpec. The steps, in order: sizes, cluster,
// expert TP, data parallelism, batches, virtual stages, schedule, framework defaults, rules.
#include "projector/job/builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "job/builder_detail.h"
#include "projector/job/spec.h"

namespace projector::job_detail {

void Builder::sizes() {
  ParallelSpec& p = job_.parallel;
  if (!d_.mesh.empty()) {
    // Derived from the mesh once the devices are known (mesh_layout).
    p.tp = p.pp = p.cp = p.ep = 1;
    etp_choices_ = {1};
    p.etp = 1;
    return;
  }
  constexpr std::int64_t kGroup = kMaxWorldSize;  // a group cannot exceed the world
  p.tp = size_or(DraftField::kTp, d_.tp, 1, "not stated; no tensor parallelism", kGroup);
  p.pp = size_or(DraftField::kPp, d_.pp, 1, "not stated; no pipeline parallelism", kGroup);
  p.cp = size_or(DraftField::kCp, d_.cp, 1, "not stated; no context parallelism", kGroup);
  const bool moe = has_moe(job_.model);
  p.ep = size_or(DraftField::kEp, d_.ep, 1, moe ? "not stated; no expert parallelism" : nullptr,
                 kGroup);
  if (d_.vpp) size_or(DraftField::kVpp, d_.vpp, 1, nullptr, kMaxLayers);
  if (d_.layers_per_virtual_stage)
    size_or(DraftField::kVpp, d_.layers_per_virtual_stage, 1, nullptr, kMaxLayers);
  etp_choices_.clear();
  if (d_.etp) {
    etp_choices_.push_back(size_or(DraftField::kEtp, d_.etp, 1, nullptr, kGroup));
  } else if (!moe) {
    etp_choices_.push_back(p.tp);  // no experts: ETP has no meaning
  } else {
    for (const EtpChoice& c :
         d_.profile.expert_tensor_parallel.value.value_or(std::vector<EtpChoice>{{true, 1}})) {
      const int v = c.equal_to_tp ? p.tp : c.size;
      if (std::find(etp_choices_.begin(), etp_choices_.end(), v) == etp_choices_.end()) {
        etp_choices_.push_back(v);
      }
    }
  }
  p.etp = etp_choices_.front();
}

// The product of a group's sizes, refused past kMaxWorldSize (it must divide the world).
std::int64_t Builder::group_size(DraftField f, const char* what,
                                 std::initializer_list<std::int64_t> sizes) const {
  std::optional<std::int64_t> product = 1;
  for (const std::int64_t v : sizes) {
    if (product) product = bounded_product(*product, v, kMaxWorldSize);
  }
  if (!product) {
    fail(LayoutRule::kWorldSize, f,
         fmt::format("{} needs more than the {} GPUs this tool models", what, kMaxWorldSize));
  }
  return *product;
}

void Builder::expert_tensor_parallel() {
  ParallelSpec& p = job_.parallel;
  if (d_.etp || !has_moe(job_.model)) return;
  const ProfileDefault<std::vector<EtpChoice>>& def = d_.profile.expert_tensor_parallel;
  for (std::size_t i = 0; i < etp_choices_.size(); ++i) {
    const int etp = etp_choices_[i];
    const std::int64_t group = static_cast<std::int64_t>(etp) * p.ep * p.pp;
    if (world_ % group != 0 && i + 1 < etp_choices_.size()) continue;
    p.etp = etp;
    record(DraftField::kEtp, show(etp),
           i == 0 ? def.source
                  : fmt::format("ETP {} would make ETP x EP x PP = {} not divide the world of {} "
                                "GPUs; the framework's other documented choice ({})",
                                etp_choices_.front(),
                                static_cast<std::int64_t>(etp_choices_.front()) * p.ep * p.pp,
                                world_, def.source),
           true);
    return;
  }
}

void Builder::data_parallel() {
  // DP follows from the world and the degrees (JobSpec::dp); 0 when the world does not divide,
  // which a rule reports. Here only a stated DP and the replicate degree are checked against it.
  const ParallelSpec& p = job_.parallel;
  const int dp = job_.dp();
  if (d_.dp && dp > 0 && dp != *d_.dp) {
    fail(LayoutRule::kWorldDense, DraftField::kDp,
         fmt::format("DP {} x TP {} x PP {} x CP {} = {} GPUs, but the world is {} GPUs", *d_.dp,
                     p.tp, p.pp, p.cp, static_cast<std::int64_t>(*d_.dp) * p.tp * p.pp * p.cp,
                     world_));
  }
  if (p.dp_replicate > 1 && dp > 0 && dp % p.dp_replicate != 0) {
    fail(LayoutRule::kWorldDense, DraftField::kDp,
         fmt::format("the replicate degree {} does not divide DP {}", p.dp_replicate, dp));
  }
}

// TorchRec runs the dense part data-parallel and shards the tables (job/recsys_plan.h).
void Builder::recommendation() {
  const ParallelSpec& p = job_.parallel;
  const std::pair<DraftField, int> sizes[] = {{DraftField::kTp, p.tp},
                                              {DraftField::kPp, p.pp},
                                              {DraftField::kCp, p.cp},
                                              {DraftField::kEp, p.ep}};
  for (const auto& [field, v] : sizes) {
    if (v != 1) {
      fail(LayoutRule::kSizes, field,
           fmt::format("must be 1 for a recommendation model (the dense part runs data-parallel, "
                       "the embedding tables are sharded), got {}",
                       v));
    }
  }
  resolve_recsys(d_.recsys, d_.profile, job_, job_.defaults);
}

void Builder::check_rules() const {
  const LayoutRule rule =
      check_layout(rule_facts(job_, RulePurpose::kStated, world_), layout_choice(job_));
  if (rule != LayoutRule::kLegal) fail(rule, field_of(rule), rule_message(rule));
  if (const std::optional<BoundViolation> v =
          check_runtime_bounds(job_.runtime, job_.parallel, job_.num_microbatches())) {
    fail_bound(*v, DraftField::kGlobalBatchSize);
  }
}

void Builder::model_bounds() {
  if (const std::optional<BoundViolation> v = check_model_bounds(job_.model)) {
    fail_bound(*v, DraftField::kModel);
  }
}

void Builder::fail_bound(const BoundViolation& v, DraftField fallback) const {
  std::optional<FieldOrigin> o = d_.model_origin ? d_.model_origin(v.key) : std::nullopt;
  for (int i = 0; !o && i < kNumDraftFields; ++i) {  // a batch or recompute field
    const auto f = static_cast<DraftField>(i);
    if (to_string(f) == v.key || d_.origin(f).key == v.key) o = d_.origin(f);
  }
  FieldOrigin where = o.value_or(FieldOrigin{v.key, {}});
  if (where.where.file.empty() && where.where.line == 0) where.where.file = d_.source;
  throw JobRuleError(LayoutRule::kSizes, fallback, std::move(where.where),
                     where.key.empty() ? v.key : where.key, v.message);
}

// The GDN / KDA layer that breaks kTpLinearHeads, by its head counts.
std::string linear_heads_message(const ModelSpec& model, int tp) {
  for (const LayerSpec& l : model.layers) {
    if (!l.has_linear_attention()) continue;
    const LinearAttentionSpec& s = l.linear;
    if (s.kind == LinearAttentionKind::kKda && tp != 1) {
      return fmt::format("Kimi Delta Attention runs at TP 1 only (Primus), got TP {}", tp);
    }
    if (s.short_conv() && tp != 1) {
      return fmt::format(
          "LFM2 short-conv layers are modelled at TP 1 only (Primus does not split them), got TP "
          "{}",
          tp);
    }
    if (s.num_key_heads % tp != 0 || s.num_value_heads % tp != 0) {
      return fmt::format(
          "{} key / {} value heads of the linear attention (linear_num_key_heads / "
          "linear_num_value_heads) are not divisible by TP {}",
          s.num_key_heads, s.num_value_heads, tp);
    }
  }
  if (model.diffusion.enabled()) {
    return fmt::format(
        "tensor parallelism of Flux blocks (joint attention, adaLN) is not modelled, got TP {}",
        tp);
  }
  for (const LayerSpec& l : model.layers) {
    if (l.has_attention() && l.attention.kind == AttentionKind::kCompressed) {
      return fmt::format(
          "DeepSeek-V4 attention runs at TP 1 only (Primus duplicates its projections on every TP "
          "rank), got TP {}",
          tp);
    }
  }
  return fmt::format("linear-attention heads are not divisible by TP {}", tp);
}

// The framework or the layer that breaks kCpUnsupported.
std::string cp_unsupported_message(const JobSpec& job, int cp) {
  if (!job.parallel.cp_unsupported.empty()) {
    return fmt::format("{}, got CP {}", job.parallel.cp_unsupported, cp);
  }
  if (job.model.diffusion.enabled()) {
    return fmt::format("context parallelism of Flux's joint attention is not modelled, got CP {}",
                       cp);
  }
  for (const LayerSpec& l : job.model.layers) {
    if (l.has_attention() && l.attention.kind == AttentionKind::kCompressed) {
      return fmt::format(
          "context parallelism over DeepSeek-V4's compressed attention is not modelled, got CP {}",
          cp);
    }
    if (l.has_linear_attention()) {
      return fmt::format("context parallelism over {} layers is not modelled, got CP {}",
                         l.linear.short_conv() ? "LFM2 short-conv" : "GDN / KDA (head all-to-all)",
                         cp);
    }
  }
  return fmt::format("context parallelism is not modelled for this model, got CP {}", cp);
}

std::string Builder::rule_message(LayoutRule rule) const {
  const ParallelSpec& p = job_.parallel;
  const RuntimeSpec& rt = job_.runtime;
  const ClusterSpec& cl = job_.cluster;
  const LayerSpec* layer = job_.model.layers.empty() ? nullptr : &job_.model.layers.front();
  const std::int64_t per_step = static_cast<std::int64_t>(rt.micro_batch_size) * job_.dp();
  const std::int64_t m = per_step > 0 ? rt.global_batch_size / per_step : 0;
  const int rounds = std::max(1, rt.accumulation_rounds);
  const std::string per_round =
      rounds > 1 ? fmt::format(" per pipeline flush ({} accumulation rounds)", rounds) : "";
  switch (rule) {
    case LayoutRule::kTpHeads:
      return fmt::format("{} attention heads are not divisible by TP {}",
                         layer ? layer->attention.num_heads : 0, p.tp);
    case LayoutRule::kTpKvHeads:
      return fmt::format("{} KV heads (query groups) are not divisible by TP {}",
                         layer ? layer->attention.num_query_groups : 0, p.tp);
    case LayoutRule::kTpLinearHeads:
    case LayoutRule::kTpUnsupported:
      return linear_heads_message(job_.model, p.tp);
    case LayoutRule::kPpUnsupported:
      return fmt::format("Flux is built on one pipeline stage (PR9 model.py:203-209), got PP {}",
                         p.pp);
    case LayoutRule::kCpUnsupported:
      return cp_unsupported_message(job_, p.cp);
    case LayoutRule::kTpBeyondNode:
      return fmt::format(
          "TP {} spans more than one node of {} GPUs (--allow-tp-beyond-node / "
          "allow_tp_beyond_node to project it anyway)",
          p.tp, cl.gpus_per_node);
    case LayoutRule::kWorldDense:
      return fmt::format(
          "world size {} ({} nodes x {} GPUs) is not divisible by TP x PP x CP = "
          "{} x {} x {} = {}",
          world_, cl.nodes, cl.gpus_per_node, p.tp, p.pp, p.cp,
          static_cast<std::int64_t>(p.tp) * p.pp * p.cp);
    case LayoutRule::kNotMoe:
      return fmt::format("expert parallelism {} on a model without experts", p.ep);
    case LayoutRule::kExpertsEp: {
      int experts = 0;
      for (const LayerSpec& l : job_.model.layers) experts = l.is_moe ? l.moe.num_experts : experts;
      return fmt::format("{} experts are not divisible by EP {}", experts, p.ep);
    }
    case LayoutRule::kWorldExpert:
      return fmt::format("world size {} is not divisible by ETP x EP x PP = {} x {} x {} = {}",
                         world_, p.etp, p.ep, p.pp, static_cast<std::int64_t>(p.etp) * p.ep * p.pp);
    case LayoutRule::kSeqCp:
      if (p.cp <= 1 || rt.seq_length % (2 * p.cp) == 0) {
        // The rule's own fact: the largest compress ratio of the model.
        return fmt::format(
            "sequence length {} is not a multiple of the compress ratio {} (DeepSeek-V4's "
            "compressor pools whole windows)",
            rt.seq_length, rule_facts(job_, RulePurpose::kStated, world_).seq_multiple);
      }
      return fmt::format(
          "sequence length {} is not divisible by 2 x CP = {} (load-balanced "
          "context parallelism)",
          rt.seq_length, 2 * p.cp);
    case LayoutRule::kCpHierarchy:
      return fmt::format(
          "CP {} or the heads per TP rank (TP {}) are not a multiple of the all-to-all level {} "
          "of a2a+p2p context parallelism (hierarchical_context_parallel_sizes; Transformer "
          "Engine splits each rank's heads over it)",
          p.cp, p.tp, p.cp_a2a_size);
    case LayoutRule::kGbs:
      return fmt::format("global batch {} is not divisible by micro_batch_size x DP = {} x {} = {}",
                         rt.global_batch_size, rt.micro_batch_size, job_.dp(), per_step);
    case LayoutRule::kScheduleVpp:
      return fmt::format(
          "schedule {} does not fit VPP {} (interleaved needs >= 2, the V-shape "
          "schedules exactly 2, the others 1)",
          to_string(rt.schedule), p.vpp);
    case LayoutRule::kInterleavedMicrobatches:
      return fmt::format(
          "{} microbatches{} are not a multiple of PP {}: the interleaved schedule "
          "requires it",
          m / rounds, per_round, p.pp);
    case LayoutRule::kDualPipeMicrobatches:
      return fmt::format("dualpipev needs at least 2 x PP = {} microbatches{}, got {}", 2 * p.pp,
                         per_round, m / rounds);
    case LayoutRule::kSplitBackwardRecompute:
      return fmt::format(
          "schedule {} splits the backward into B and W and cannot be combined "
          "with full recompute",
          to_string(rt.schedule));
    case LayoutRule::kScheduleWidenedTransfer:
      return fmt::format(
          "schedule {} at PP {}: attention residuals (Kimi-K3) widen the stage transfer only for "
          "1F1B and interleaved 1F1B; Primus refuses the others (kimi_k3_pp_shape_patches.py)",
          to_string(rt.schedule), p.pp);
    case LayoutRule::kMoeOverlapDispatcher:
      return "needs the alltoall or flex dispatcher (Megatron asserts it)";
    case LayoutRule::kDeferredWgradNeedsPp:
      return "defers the output layer's weight gradients into the pipeline flush, which needs "
             "pipeline parallelism (PP > 1; Megatron refuses it at PP 1)";
    case LayoutRule::kMoeOverlapLayout:
      return p.ep <= 1 ? "overlap_moe_expert_parallel_comm needs expert parallelism (EP > 1; "
                         "Megatron asserts it)"
                       : fmt::format(
                             "overlap_moe_expert_parallel_comm at PP {} needs virtual "
                             "pipeline stages (VPP >= 2, VPP is {}; Megatron asserts it)",
                             p.pp, p.vpp);
    default:
      return std::string(explanation(rule));
  }
}

}  // namespace projector::job_detail

namespace projector {

using job_detail::Builder;

std::string JobDraft::key(DraftField f) const {
  const FieldOrigin& o = origin(f);
  return o.key.empty() ? std::string(to_string(f)) : o.key;
}

std::string_view to_string(DraftField f) {
  static constexpr std::string_view kNames[] = {"model",
                                                "tp",
                                                "pp",
                                                "vpp",
                                                "cp",
                                                "ep",
                                                "etp",
                                                "layer_split",
                                                "sequence_parallel",
                                                "distributed_optimizer",
                                                "overlap_grad_reduce",
                                                "overlap_param_gather",
                                                "tp_comm_overlap",
                                                "fsdp",
                                                "micro_batch_size",
                                                "global_batch_size",
                                                "seq_length",
                                                "flash_attention",
                                                "fp8_recipe",
                                                "grad_reduce_dtype",
                                                "attention_dropout",
                                                "hidden_dropout",
                                                "vocab_padding",
                                                "recompute",
                                                "recompute_modules",
                                                "loss_grad_in_place",
                                                "schedule",
                                                "hardware",
                                                "nodes",
                                                "gpus_per_node",
                                                "dp",
                                                "mesh",
                                                "kernel_gap_fraction",
                                                "moe_overlap",
                                                "host_dispatch",
                                                "expandable_segments",
                                                "fp8_param_gather",
                                                "p2p_overlap",
                                                "defer_output_wgrad"};
  static_assert(std::size(kNames) == kNumDraftFields);
  const auto i = static_cast<std::size_t>(f);
  return i < std::size(kNames) ? kNames[i] : "?";
}

DraftField field_of(LayoutRule rule) {
  switch (rule) {
    case LayoutRule::kTpHeads:
    case LayoutRule::kTpKvHeads:
    case LayoutRule::kTpLinearHeads:
    case LayoutRule::kTpUnsupported:
    case LayoutRule::kTpBeyondNode:
    case LayoutRule::kWorldDense:
      return DraftField::kTp;
    case LayoutRule::kLayers:
    case LayoutRule::kLayerSplit:
      return DraftField::kLayerSplit;
    case LayoutRule::kNotMoe:
    case LayoutRule::kExpertsEp:
    case LayoutRule::kWorldExpert:
      return DraftField::kEp;
    case LayoutRule::kSeqCp:
      return DraftField::kSeqLength;
    case LayoutRule::kCpUnsupported:
    case LayoutRule::kCpHierarchy:
      return DraftField::kCp;
    case LayoutRule::kPpUnsupported:
      return DraftField::kPp;
    case LayoutRule::kGbs:
      return DraftField::kGlobalBatchSize;
    case LayoutRule::kScheduleNeedsPp:
      return DraftField::kPp;
    case LayoutRule::kScheduleVpp:
    case LayoutRule::kInterleavedMicrobatches:
    case LayoutRule::kDualPipeMicrobatches:
    case LayoutRule::kSplitBackwardRecompute:
    case LayoutRule::kScheduleWidenedTransfer:
      return DraftField::kSchedule;
    case LayoutRule::kRecomputeBlock:
      return DraftField::kRecompute;
    case LayoutRule::kWorldSize:
      return DraftField::kNodes;
    case LayoutRule::kMoeOverlapDispatcher:
    case LayoutRule::kMoeOverlapLayout:
      return DraftField::kMoeOverlap;
    case LayoutRule::kDeferredWgradNeedsPp:
      return DraftField::kDeferOutputWgrad;
    case LayoutRule::kSizes:
    case LayoutRule::kLegal:
    case LayoutRule::kCount:
      break;
  }
  return DraftField::kModel;
}

JobSpec finalize_job(const JobDraft& draft, const ClusterRequest& cluster) {
  return Builder(draft).build(cluster);
}

}  // namespace projector
