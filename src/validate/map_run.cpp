// Mapping a published run (free-form, partly unstated) to a JobSpec: the entry is read into a
// neutral JobDraft (free text by keywords, each reading listed), the framework profile named by its
// `framework:` text supplies the defaults, and the job builder derives and checks the job. Values
// the entry leaves open never fail the run: they are defaulted and listed as assumptions.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "projector/frontend/layer_pattern.h"
#include "projector/frontend/primus_turbo.h"
#include "projector/hardware/catalog.h"
#include "projector/job/builder.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/util/error.h"
#include "projector/util/text.h"
#include "validate/mapper.h"

namespace projector {
namespace {

using validate_detail::has;
using validate_detail::Mapper;

// The entry's names for the draft fields, so rule violations and defaults read in its terms.
void name_fields(JobDraft& d) {
  const std::pair<DraftField, const char*> names[] = {
      {DraftField::kModel, "model"},
      {DraftField::kTp, "training.tp"},
      {DraftField::kPp, "training.pp"},
      {DraftField::kVpp, "training.vpp"},
      {DraftField::kCp, "training.cp"},
      {DraftField::kEp, "training.ep"},
      {DraftField::kEtp, "training.etp"},
      {DraftField::kLayerSplit, "training.pipeline_layout"},
      {DraftField::kSequenceParallel, "training.sequence_parallel"},
      {DraftField::kDistributedOptimizer, "training.distributed_optimizer"},
      {DraftField::kOverlapGradReduce, "training.overlap_grad_reduce"},
      {DraftField::kOverlapParamGather, "training.overlap_param_gather"},
      {DraftField::kTpCommOverlap, "training.tp_comm_overlap"},
      {DraftField::kFsdp, "training.fsdp"},
      {DraftField::kMicroBatchSize, "training.micro_batch_size"},
      {DraftField::kGlobalBatchSize, "training.global_batch_size"},
      {DraftField::kSeqLength, "training.seq_len"},
      {DraftField::kFlashAttention, "training.flash_attention"},
      {DraftField::kFp8Recipe, "training.fp8_recipe"},
      {DraftField::kFp8ParamGather, "training.precision: fp8_param_gather"},
      {DraftField::kGradReduceDtype, "training.grad_reduce_dtype"},
      {DraftField::kAttentionDropout, "model.attention_dropout"},
      {DraftField::kHiddenDropout, "model.hidden_dropout"},
      {DraftField::kVocabPadding, "model.vocab_padding"},
      {DraftField::kRecompute, "training.recompute"},
      {DraftField::kRecomputeModules, "training.recompute_modules"},
      {DraftField::kLossGradInPlace, "runtime.loss_grad_in_place"},
      {DraftField::kSchedule, "training.pipeline_schedule"},
      {DraftField::kHardware, "hardware.accelerator"},
      {DraftField::kNodes, "hardware.count"},
      {DraftField::kGpusPerNode, "hardware.per_node"}};
  for (const auto& [field, key] : names) d.set_origin(field, key);
}

// The accelerator, its network, nodes x GPUs per node; 0 GPUs when not stated.
int map_cluster(Mapper& m, MappingCatalogue& catalogue, ClusterSpec& cl) {
  const RunEntry::Hardware& hw = m.e_.hardware;
  if (hw.accelerator.empty()) {
    m.fail("hardware.accelerator not stated");
  } else {
    try {
      const std::optional<std::string> name = catalogue.match_accelerator(hw.accelerator);
      if (!name) {
        m.fail("hardware.accelerator '" + hw.accelerator + "' not in the catalogue");
      } else {
        cl.accelerator = catalogue.accelerator(*name);
        m.out_.accelerator_name = *name;
        m.note("hardware.accelerator: '" + hw.accelerator + "' -> catalogue '" + *name + "'");
        try {
          cl.network = catalogue.default_network(cl.accelerator);
        } catch (const InputError& ex) {
          m.assume("cluster.network", "built-in defaults", ex.what());
        }
      }
    } catch (const InputError& ex) {
      m.fail(std::string("hardware catalogue: ") + ex.what());
    }
  }
  m.out_.accelerator_family = validate_detail::accelerator_family(cl.accelerator, hw.accelerator);
  if (!hw.count || *hw.count <= 0) {
    m.fail("hardware.count not stated");
    return 0;
  }
  const int world = *hw.count;
  int per_node = 0;
  if (hw.per_node && *hw.per_node > 0) {
    per_node = *hw.per_node;
  } else {
    per_node = cl.accelerator.default_gpus_per_node > 0 ? cl.accelerator.default_gpus_per_node : 8;
    m.assume("hardware.per_node", std::to_string(per_node),
             "not stated; the accelerator's usual node / host size");
  }
  if (world <= per_node) {
    cl.nodes = 1;
    cl.gpus_per_node = world;
  } else if (world % per_node != 0) {
    m.fail(fmt::format("{} GPUs do not fill nodes of {}", world, per_node));
  } else {
    cl.nodes = world / per_node;
    cl.gpus_per_node = per_node;
  }
  validate_detail::read_interconnect(m, hw.interconnect, cl);
  return world;
}

// Parallel sizes, the stage split and sharding as the entry states them.
void map_parallel(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  JobDraft& d = m.d_;
  for (const std::optional<int>* v : {&t.tp, &t.pp, &t.vpp, &t.cp, &t.ep, &t.etp}) {
    if (v->has_value() && **v < 1)
      return m.fail("training: tp, pp, vpp, cp, ep and etp must be at least 1");
  }
  d.tp = t.tp;
  d.pp = t.pp;
  d.vpp = t.vpp;
  // V-shape schedules run two chunks per rank by construction; a stated VPP of 1 there means "no
  // interleaving", not one chunk.
  const std::string schedule = to_lower(t.pipeline_schedule);
  if (t.vpp == 1 && (has(schedule, "dualpipe") || has(schedule, "zbv") || has(schedule, "zb-v"))) {
    d.vpp.reset();
    m.note("training.vpp: 1 with a V-shape schedule read as its two chunks per rank");
  }
  d.cp = t.cp;
  d.ep = t.ep;
  d.etp = t.etp;
  // A published run ran: where its framework's ETP default (Megatron: TP, no fall-back) would not
  // divide its world, it must have used ETP 1, the documented alternative for fine-grained
  // experts. Configs get no such inference (job/builder.cpp).
  ProfileDefault<std::vector<EtpChoice>>& etp = d.profile.expert_tensor_parallel;
  if (!d.etp && etp.value &&
      std::find(etp.value->begin(), etp.value->end(), EtpChoice{false, 1}) == etp.value->end()) {
    etp.value->push_back(EtpChoice{false, 1});
    etp.source += "; a run that ran with that layout illegal used ETP 1";
  }
  if (!m.out_.moe && t.ep.value_or(1) > 1) {
    m.note("training.ep > 1 on a dense model ignored");
    d.ep = 1;
  }
  const bool emb_in_split = t.account_for_embedding_in_pipeline_split.value_or(false);
  const bool loss_in_split = t.account_for_loss_in_pipeline_split.value_or(false);
  if (!t.pipeline_layout.empty() && (emb_in_split || loss_in_split)) {
    return m.fail(
        "training.pipeline_layout cannot be stated with account_for_*_in_pipeline_split "
        "(Megatron refuses the combination)");
  }
  if (!t.pipeline_layout.empty()) {
    std::string error;
    const auto parsed = parse_pipeline_layout(t.pipeline_layout, error);
    if (!parsed) return m.fail("training.pipeline_layout: " + error);
    d.layer_split.kind = LayerSplit::Kind::kStated;
    for (const LayoutStage& s : *parsed) {
      d.layer_split.stages.push_back({s.decoder_layers, s.embedding, s.loss, s.mtp_layers});
    }
  } else if ((emb_in_split || loss_in_split) && t.pp.value_or(1) > 1) {
    // Megatron's even split with the embedding / loss counted as layers (the builder checks
    // that they divide).
    d.layer_split.embedding_in_split = emb_in_split;
    d.layer_split.loss_in_split = loss_in_split;
  } else {
    // The run ran: its framework split the layers somehow, one more on the first stages.
    d.layer_split.allow_uneven = true;
  }
  // TP beyond a node is a sanity check for configs; a published run that used it ran.
  d.parallel.allow_tp_beyond_node = true;
}

// "sharding group N": FSDP shards over N ranks and replicates over the rest of DP x CP (HSDP).
void map_shard_group(Mapper& m, int group) {
  const RunEntry::Training& t = m.e_.training;
  const int model_ranks = t.tp.value_or(1) * t.pp.value_or(1);
  const int dp_cp = model_ranks > 0 ? m.out_.num_gpus / model_ranks : 0;
  const int dp = dp_cp / t.cp.value_or(1);
  if (group > 1 && group < dp_cp && dp_cp % group == 0 && dp > 0 && dp % (dp_cp / group) == 0) {
    m.d_.parallel.dp_replicate = dp_cp / group;
    m.note(
        fmt::format("training.fsdp: sharding group {} of DP x CP {}: sharded within groups "
                    "of {}, replicated {} times (hybrid sharding)",
                    group, dp_cp, group, dp_cp / group));
  } else {
    m.note(
        fmt::format("training.fsdp: sharding group {} read as sharding over all of DP x CP "
                    "({})",
                    group, dp_cp));
  }
}

// FSDP / ZeRO / distributed optimizer, sequence parallelism, overlap flags.
void map_sharding(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  JobDraft& d = m.d_;
  const std::string zero = to_lower(t.zero_stage);
  const std::string fsdp = to_lower(t.fsdp);
  const bool fsdp_degree = !fsdp.empty() && fsdp.size() < 8 &&
                           std::all_of(fsdp.begin(), fsdp.end(), ::isdigit) && std::stoi(fsdp) > 1;
  // The text's own reading first (phrases.h): "Megatron-FSDP, sharding group 8" is FSDP,
  // "FSDP ... does not reshard" is FSDP without resharding, "no (DDP ...)" is none.
  const validate_detail::FsdpReading fr = validate_detail::read_fsdp_text(t.fsdp);
  if (fr.kind && *fr.kind != FsdpKind::kNone) {
    d.fsdp = *fr.kind;
    m.note("training.fsdp: '" + t.fsdp + "' " + fr.how);
  } else if (has(zero, "fsdp") || has(zero, "zero-3") || has(zero, "zero3") || zero == "3") {
    d.fsdp = FsdpKind::kZero3;
  } else if (fsdp_degree || t.fsdp_shard_degree.value_or(1) > 1) {
    // A number is the FSDP shard degree (MaxText's ici_fsdp_parallelism): weights, gradients and
    // optimizer state are sharded.
    d.fsdp = FsdpKind::kFsdp2;
    m.note(fmt::format("training.fsdp: shard degree {} read as FSDP",
                       fsdp_degree ? t.fsdp : std::to_string(*t.fsdp_shard_degree)));
  } else if (fr.kind) {
    d.fsdp = FsdpKind::kNone;
  }
  if (d.fsdp && *d.fsdp != FsdpKind::kNone) {
    if (fr.shard_group) map_shard_group(m, *fr.shard_group);
    if (fr.reshard_after_forward) {
      d.parallel.reshard_after_forward_rule =
          *fr.reshard_after_forward ? WhenRule::kAlways : WhenRule::kNever;
      m.note(fmt::format("training.fsdp: reshard_after_forward {}",
                         *fr.reshard_after_forward ? "true"
                                                   : "false (gathered weights kept "
                                                     "from forward to backward)"));
    }
  }
  if (t.distributed_optimizer) {
    d.distributed_optimizer = *t.distributed_optimizer;
  } else if (has(zero, "zero-1") || has(zero, "zero1") || zero == "1") {
    d.distributed_optimizer = true;
    m.note("training.zero_stage: ZeRO-1 read as the distributed optimizer");
  } else if (fr.distributed_optimizer) {
    d.distributed_optimizer = true;
    m.note("training.fsdp: '" + t.fsdp + "' " + fr.how);
  }
  // ZeRO-2: the distributed optimizer's sharding of the gradients as well.
  const bool zero2 = has(zero, "zero-2") || has(zero, "zero2") || zero == "2";
  if ((fr.grads_sharded || zero2) && d.distributed_optimizer.value_or(true)) {
    d.distributed_optimizer = true;
    d.parallel.grads_sharded = true;
    if (zero2)
      m.note(
          "training.zero_stage: ZeRO-2 read as the distributed optimizer with the "
          "gradients sharded too");
  }
  d.sequence_parallel = t.sequence_parallel;
  const std::string overlap = to_lower(t.overlap);
  if (!overlap.empty()) {
    d.overlap_grad_reduce = has(overlap, "overlap-grad-reduce");
    d.overlap_param_gather = has(overlap, "overlap-param-gather");
    d.tp_comm_overlap = has(overlap, "tp-comm-overlap");
    // Megatron's loss fusion: Transformer Engine's kernel when TE is named, else the native fused
    // loss, the eager steps through torch.compile (MG29).
    const bool te_ce = has(overlap, "te ce loss fusion") ||
                       has(overlap, "te cross-entropy fusion") ||
                       has(overlap, "cross_entropy_fusion_impl te");
    if (te_ce || has(overlap, "ce loss fusion") || has(overlap, "cross_entropy_loss_fusion")) {
      d.runtime.cross_entropy_fusion = te_ce;
      d.runtime.cross_entropy_compiled = !te_ce;
    }
  }
}

// Micro and global batch: stated, or a per-replica batch (MaxText per_device_batch_size), or left
// to the profile's rule. With PP the microbatch count sets the bubble, so an unstated global batch
// fails the run instead of being guessed.
void map_batches(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  JobDraft& d = m.d_;
  const int pp = t.pp.value_or(1);
  const MicrobatchRule rule =
      d.profile.microbatch_rule.value.value_or(MicrobatchRule::kGlobalBatch);
  std::optional<int> replica;
  if (rule == MicrobatchRule::kPerDeviceBatch && t.per_device_batch_size &&
      *t.per_device_batch_size >= 1.0 && *t.per_device_batch_size <= kMaxGlobalBatch &&
      std::floor(*t.per_device_batch_size) == *t.per_device_batch_size) {
    replica = static_cast<int>(*t.per_device_batch_size);  // a whole per-replica batch
  }
  if (rule == MicrobatchRule::kGlobalBatch && t.batch_size_per_gpu) replica = t.batch_size_per_gpu;
  d.micro_batch_size = t.micro_batch_size;
  if (!d.micro_batch_size && replica && pp == 1) {
    d.micro_batch_size = replica;
    m.note(
        fmt::format("training.micro_batch_size: the per-replica batch {} ({}), no gradient "
                    "accumulation",
                    *replica, to_string(rule)));
  }
  if (!d.micro_batch_size) {
    const ProfileDefault<int>& def = d.profile.micro_batch_size;
    d.micro_batch_size = def.value.value_or(1);
    m.assume("training.micro_batch_size", std::to_string(*d.micro_batch_size),
             def.value ? "not stated; " + d.profile.name + ": " + def.source
                       : "not stated and the framework has no default");
  }
  d.global_batch_size = t.global_batch_size;
  if (d.global_batch_size) return;
  if (replica) {
    d.replica_batch_size = replica;
  } else if (pp > 1) {
    m.fail(
        "training.global_batch_size not stated and pp > 1 (the microbatch count decides the "
        "pipeline bubble)");
  } else {
    // Without PP the microbatch count only scales the step: one microbatch per replica.
    d.replica_batch_size = d.micro_batch_size;
    m.assume("training.global_batch_size", "micro_batch_size x dp",
             "not stated; one microbatch per data-parallel replica");
  }
}

// Primus-Turbo's "sync-free MoE stage N" (turbo_sync_free_moe_stage): from stage 1 Primus fuses
// the token permutation as well (PR4 rocm_arg_validation.py _get_sync_free_moe_options), as the
// Megatron adapter reads the config key (frontend/megatron/runtime.cpp).
void read_sync_free_stage(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  const std::string text = to_lower(t.moe_dispatcher + " " + t.overlap);
  static const std::regex kStage(R"(sync[- _]?free(?: moe)?(?: stage)?\D{0,3}([0-3])\b)");
  std::smatch s;
  if (!has(text + " " + to_lower(m.e_.framework), "turbo") || !std::regex_search(text, s, kStage)) {
    return;
  }
  RuntimeSpec& rt = m.d_.runtime;
  rt.sync_free_moe_stage = std::stoi(s[1].str());
  rt.moe_host_sync_free = sync_free_moe_options(rt.sync_free_moe_stage).host_sync_free;
  if (sync_free_moe_options(rt.sync_free_moe_stage).permute_fusion && !t.moe_permute_fusion) {
    rt.moe_permute_fusion = true;
    m.assume("training.moe_permute_fusion", "true",
             fmt::format("Primus-Turbo sync-free MoE stage {} fuses the token permutation (PR4 "
                         "rocm_arg_validation.py _get_sync_free_moe_options)",
                         rt.sync_free_moe_stage));
  }
}

// The names of the members of a module set (OffloadSpec, CudaGraphs), in enum order.
template <typename Module, typename Set>
std::vector<std::string> member_names(const Set& set) {
  std::vector<std::string> names;
  for (int i = 0; i < static_cast<int>(Module::kCount); ++i) {
    if (set.has(static_cast<Module>(i))) names.emplace_back(to_string(static_cast<Module>(i)));
  }
  return names;
}

// Megatron's fine-grained activation offloading as a run describes it ("fine-grained activation
// offloading to host of expert_fc1 and moe_act outputs"): the modules it names, as the Megatron
// adapter reads offload_modules (frontend/megatron/runtime.cpp read_offload).
void read_activation_offload(Mapper& m) {
  const std::string text = to_lower(m.e_.training.overlap);
  if (!has(text, "activation offload") && !has(text, "activation-offload")) return;
  OffloadSpec& off = m.d_.runtime.offload;
  static const std::regex kWord(R"([a-z_0-9]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kWord);
       it != std::sregex_iterator(); ++it) {
    if (const auto mod = parse_offload_module(it->str())) off.add(*mod);
  }
  if (off.modules == 0) {
    m.note("training.overlap: activation offloading named without its modules; not modelled");
    return;
  }
  m.note(fmt::format("training.overlap: fine-grained activation offloading of {}",
                     fmt::join(member_names<OffloadModule>(off), ", ")));
}

// training.cuda_graphs as the Megatron adapter reads cuda_graph_impl / cuda_graph_modules
// (frontend/megatron/runtime.cpp read_cuda_graphs): "none", "<impl>, scope [modules]",
// "full_iteration ...", "local, full_iteration"; unknown or unstated: none, said.
void read_cuda_graphs(Mapper& m) {
  const std::string text = to_lower(m.e_.training.cuda_graphs);
  CudaGraphs& g = m.d_.runtime.cuda_graphs;
  if (text.empty() || text.starts_with("none") || text == "null") return;
  if (text.starts_with("unknown")) {
    m.note("training.cuda_graphs: " + m.e_.training.cuda_graphs + "; read as none");
    return;
  }
  if (text.find("full_iteration") != std::string::npos) {
    g.full_iteration = true;
    m.note("training.cuda_graphs: full-iteration graph (no host issue time, no host read)");
    return;
  }
  const std::size_t open = text.find('[');
  const std::size_t close = text.find(']', open);
  if (open != std::string::npos && close != std::string::npos) {
    std::string name;
    for (std::size_t i = open + 1; i <= close; ++i) {
      const char c = text[i];
      if (c == ',' || c == ']' || c == ' ') {
        if (const auto mod = parse_cuda_graph_module(name)) g.add(*mod);
        name.clear();
      } else {
        name += c;
      }
    }
  }
  if (g.modules == 0) g.add(CudaGraphModule::kLayer);
  // Megatron's --enable-cuda-graph is the local implementation; a text that names neither is read
  // as local (its inputs alias the previous graph's output: no static input copies), and says so.
  const bool te = text.find("transformer_engine") != std::string::npos;
  g.impl = te ? CudaGraphImpl::kTransformerEngine : CudaGraphImpl::kLocal;
  m.note(fmt::format("training.cuda_graphs: {} captured (no host issue time){}",
                     fmt::join(member_names<CudaGraphModule>(g), ", "),
                     te ? "; TE static input buffers per layer and microbatch in flight"
                     : text.find("local") != std::string::npos
                         ? ""
                         : "; implementation not named, read as local (no static input copies)"));
}

// The recipe's MoE switches, read as the Megatron adapter reads overlap_moe_expert_parallel_comm,
// delay_wgrad_compute and moe_permute_fusion (frontend/megatron/runtime.cpp read_moe_overlap),
// with the conditions Megatron asserts: a run whose layout cannot have the overlap keeps it off
// and says so.
void map_moe_flags(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  RuntimeSpec& rt = m.d_.runtime;
  read_sync_free_stage(m);
  read_activation_offload(m);
  if (t.moe_permute_fusion) {
    rt.moe_permute_fusion = *t.moe_permute_fusion;
    m.note(fmt::format("training.moe_permute_fusion: {}", *t.moe_permute_fusion
                                                              ? "TE's fused token permute"
                                                              : "PyTorch's sort / index permute"));
  }
  if (!t.moe_a2a_overlap || !*t.moe_a2a_overlap) return;
  const int pp = t.pp.value_or(1);
  const int vpp = t.vpp.value_or(1);
  std::string why_not;
  if (t.ep.value_or(1) <= 1) why_not = "no expert parallelism";
  if (rt.moe_dispatcher == MoeDispatcher::kAllGather) why_not = "the allgather dispatcher";
  if (pp > 1 && vpp < 2) why_not = "a pipeline without virtual stages";
  if (rt.recompute.granularity == RecomputeGranularity::kFull ||
      rt.recompute.modules.has(RecomputeModule::kMoe)) {
    why_not = "full or MoE recompute";
  }
  if (!why_not.empty()) {
    m.note("training.moe_a2a_overlap: true, but Megatron allows it not with " + why_not +
           " (kept off)");
    return;
  }
  rt.moe_overlap.add(MoeOverlap::kOtherMicrobatch);
  const bool delayed = has(to_lower(t.overlap), "delay_wgrad");
  if (delayed) rt.moe_overlap.add(MoeOverlap::kDelayedWgrad);
  m.note(fmt::format(
      "training.moe_a2a_overlap: combined 1F1B, one microbatch's dispatch / combine beside "
      "another's compute{}",
      delayed ? ", expert weight gradients delayed (training.overlap: delay_wgrad_compute)" : ""));
}

// training.optimizer_states as a careful reader takes it: Megatron's precision-aware optimizer
// (use_precision_aware_optimizer) with the dtypes the text names for the main gradients and the
// two Adam moments (MG2 main_grads_dtype / exp_avg_dtype / exp_avg_sq_dtype; fp32 unless named);
// "off", "False" or no such phrase: Megatron's fp32 states.
void map_optimizer_states(Mapper& m) {
  const std::string t = to_lower(m.e_.training.optimizer_states);
  if (!has(t, "precision-aware") || has(t, "optimizer off") || has(t, "false")) return;
  RuntimeSpec& rt = m.d_.runtime;
  rt.precision_aware_optimizer = true;
  const bool bf16_grads = has(t, "bf16 main grads");
  m.d_.main_grads_dtype = bf16_grads ? Dtype::kBf16 : Dtype::kFp32;
  // "bf16 exp_avg / exp_avg_sq" names both moments, "bf16 exp_avg_sq" only the second.
  const bool both = has(t, "bf16 exp_avg / exp_avg_sq");
  const bool bf16_avg_sq = both || has(t, "bf16 exp_avg_sq");
  bool bf16_avg = both;
  for (std::size_t at = t.find("bf16 exp_avg"); !bf16_avg && at != std::string::npos;
       at = t.find("bf16 exp_avg", at + 1)) {
    bf16_avg = t.compare(at, 15, "bf16 exp_avg_sq") != 0;
  }
  rt.exp_avg_dtype = bf16_avg ? Dtype::kBf16 : Dtype::kFp32;
  rt.exp_avg_sq_dtype = bf16_avg_sq ? Dtype::kBf16 : Dtype::kFp32;
  m.note(fmt::format(
      "training.optimizer_states: precision-aware optimizer, main grads {}, exp_avg {}, "
      "exp_avg_sq {}",
      to_string(*m.d_.main_grads_dtype), to_string(rt.exp_avg_dtype),
      to_string(rt.exp_avg_sq_dtype)));
}

// training.recompute_modules (Megatron's names) decide what a selective recompute replays; a
// list beside "full" or "none" is noted and left out, an unknown name dropped with a note.
void read_recompute_modules(Mapper& m, const std::vector<std::string>& names) {
  if (names.empty()) return;
  RecomputeSpec& r = m.d_.runtime.recompute;
  if (r.granularity != RecomputeGranularity::kSelective) {
    m.note(fmt::format("training.recompute_modules ({}) ignored: the recompute is not selective",
                       fmt::join(names, ", ")));
    return;
  }
  RecomputeModules stated;
  for (const std::string& name : names) {
    if (const auto mod = parse_recompute_module(to_lower(name))) {
      stated.add(*mod);
    } else {
      m.note("training.recompute_modules: unknown module '" + name + "' dropped");
    }
  }
  if (stated.empty()) return;
  r.modules = stated;
  m.note(fmt::format("training.recompute_modules: selective recompute of {}",
                     fmt::join(r.modules.names(), ", ")));
}

// A Megatron-Core entry whose configuration "follows NeMo's performance scripts" (Megatron-LM's
// examples/llama README, MG4) runs NeMo's recipe settings wherever it states none: the recipes'
// overlaps, FP8 weights and dropout replace Megatron's store_true defaults. The profile keeps its
// name (the run stays a Megatron-Core run for the framework fit); each default says where it came
// from.
static void follow_nemo_recipes(FrameworkProfile& p, const FrameworkProfile& nemo) {
  // A NeMo profile (nemo-automodel) already extends the recipes, with its own exceptions.
  if (p.backend != nemo.backend || p.name.rfind("nemo", 0) == 0) return;
  auto take = [&](auto& mine, const auto& theirs) {
    if (!theirs.value) return;
    mine = theirs;
    mine.source = "the entry's configuration follows NeMo recipes: " + theirs.source;
  };
  take(p.overlap_grad_reduce, nemo.overlap_grad_reduce);
  take(p.overlap_param_gather, nemo.overlap_param_gather);
  take(p.tp_comm_overlap, nemo.tp_comm_overlap);
  take(p.fp8_param_gather, nemo.fp8_param_gather);
  take(p.dropout, nemo.dropout);
}

void map_runtime(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  JobDraft& d = m.d_;
  // Recommendation runs: their optimizer, dtype and sharding are read by map_recommendation.
  if (d.model.family == ModelFamily::kRecommendation) return;
  validate_detail::read_recompute(m, t.recompute);
  read_recompute_modules(m, t.recompute_modules);
  validate_detail::read_precision(m, t.precision);
  // The entry says its configuration follows NeMo's recipes: NeMo's gradient-reduce dtype.
  if (d.profile.name != "nemo" && has(to_lower(m.e_.framework), "nemo") && m.nemo != nullptr) {
    d.main_grads_dtype = m.nemo->grad_reduce_dtype.value;
    m.assume("training.grad_reduce_dtype", std::string(to_string(*d.main_grads_dtype)),
             "the entry's configuration follows NeMo recipes: " + m.nemo->grad_reduce_dtype.source);
    follow_nemo_recipes(d.profile, *m.nemo);
  }
  map_optimizer_states(m);
  validate_detail::read_schedule(m, t.pipeline_schedule);
  d.flash_attention = t.flash_attention;
  if (t.flash_attention && !t.flash_attention_text.empty()) {
    m.note(fmt::format("training.flash_attention: '{}' read as {} attention",
                       t.flash_attention_text, *t.flash_attention ? "fused (flash)" : "unfused"));
  }
  if (m.out_.moe && t.ep.value_or(1) > 1) validate_detail::read_dispatcher(m, t.moe_dispatcher);
  read_cuda_graphs(m);
  if (m.out_.moe) map_moe_flags(m);
  if (m.out_.moe) validate_detail::read_token_balance(m, t.moe_token_balance, m.e_.stated_text);
}

void map_training(Mapper& m) {
  map_parallel(m);
  map_sharding(m);
  map_batches(m);
  map_runtime(m);
}

// A measured run fit in memory. When the source does not state its recomputation and the job
// without any is clearly out of memory, the run must have recomputed: take the lightest legal
// setting that fits (selective core attention, then full recomputation of every layer).
// "Clearly": the no-recompute peak is more than kClearlyOom x the capacity, beyond what the
// memory projection's own error could explain; a run just above the capacity is projected as
// stated.
void infer_recompute_from_fit(Mapper& m, JobSpec& job) {
  constexpr double kClearlyOom = 1.5;
  MemoryOptions opts;
  opts.suggest_remedies = false;
  const MemoryReport none = project_memory(job, opts);
  if (none.capacity_bytes <= 0.0 || none.peak_point_bytes <= kClearlyOom * none.capacity_bytes) {
    return;
  }
  RecomputeSpec selective;
  selective.granularity = RecomputeGranularity::kSelective;
  selective.modules = {RecomputeModule::kCoreAttn};
  RecomputeSpec full;
  full.granularity = RecomputeGranularity::kFull;
  full.method = RecomputeMethod::kUniform;
  full.num_layers = 1;
  const std::pair<RecomputeSpec, const char*> kCandidates[] = {{selective, "selective (core_attn)"},
                                                               {full, "full (uniform, 1 layer)"}};
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const RecomputeSpec stated = job.runtime.recompute;
  const RuleFacts facts = rule_facts(job, RulePurpose::kStated);
  for (const auto& [spec, label] : kCandidates) {
    job.runtime.recompute = spec;
    if (check_layout(facts, layout_choice(job)) != LayoutRule::kLegal) continue;
    const MemoryReport r = project_memory(job, opts);
    if (r.verdict == MemoryVerdict::kOom) continue;
    m.retract("training.recompute");
    m.assume("training.recompute", label,
             fmt::format("not stated; without recomputation the projected peak is {:.0f} GiB of "
                         "{:.0f} GiB, and a measured run fit, so it recomputed at least this much",
                         none.peak_point_bytes / kGiB, none.capacity_bytes / kGiB));
    job.defaults.push_back(m.d_.defaults.back());
    return;
  }
  job.runtime.recompute = stated;
  m.note(fmt::format(
      "memory: projected out of memory ({:.0f} GiB of {:.0f} GiB) even with full recomputation",
      none.peak_point_bytes / kGiB, none.capacity_bytes / kGiB));
}

// What the draft says so far, for a run that cannot be finalized (regime labels, messages).
JobSpec partial_job(const JobDraft& d, const ClusterSpec& cl) {
  JobSpec job;
  job.source = d.source;
  job.model = d.model;
  job.parallel = d.parallel;
  job.parallel.tp = d.tp.value_or(1);
  job.parallel.pp = d.pp.value_or(1);
  job.parallel.vpp = d.vpp.value_or(1);
  job.parallel.cp = d.cp.value_or(1);
  job.parallel.ep = d.ep.value_or(1);
  job.runtime = d.runtime;
  job.cluster = cl;
  job.defaults = d.defaults;
  job.warnings = d.warnings;
  return job;
}

void finalize(Mapper& m, const ClusterSpec& cl) {
  ClusterRequest request;
  request.accelerator = cl.accelerator;
  request.loaded_network = cl.network;
  request.nodes = cl.nodes;
  request.gpus_per_node = cl.gpus_per_node;
  request.per_chip_counts = true;  // hardware.count and per_node count chips (TPU7x: 2 devices)
  try {
    m.out_.job = finalize_job(m.d_, request);
  } catch (const InputError& ex) {
    m.fail(ex.key().empty() ? ex.message() : ex.key() + ": " + ex.message());
    m.out_.job = partial_job(m.d_, cl);
    return;
  }
  // The builder's choices are assumptions of this run too.
  for (std::size_t i = m.d_.defaults.size(); i < m.out_.job.defaults.size(); ++i) {
    const AppliedDefault& a = m.out_.job.defaults[i];
    m.out_.assumptions.push_back(fmt::format("{} = {} ({}{})", a.key, a.value,
                                             a.source.empty() ? "" : a.source + ": ", a.reason));
  }
  const std::optional<int>& stated_dp = m.e_.training.dp;
  // MaxText runs may state the data axis (replicas) as dp rather than every batch-sharded rank.
  const bool data_axis =
      m.d_.profile.backend == "maxtext" && stated_dp == m.out_.job.parallel.dp_replicate;
  if (stated_dp && *stated_dp != m.out_.job.dp() && !data_axis) {
    m.fail(fmt::format("training.dp {} disagrees with GPUs / (tp x pp x cp) = {}", *stated_dp,
                       m.out_.job.dp()));
  }
}

}  // namespace

std::string validate_detail::accelerator_family(const AcceleratorSpec& a, const std::string& text) {
  const std::string v = to_lower(a.vendor + " " + a.name + " " + text);
  if (has(v, "tpu") || has(v, "google")) return "TPU";
  if (has(v, "amd") || has(v, "instinct") || has(v, "mi3")) return "AMD";
  if (has(v, "nvidia") || has(v, "a100") || has(v, "h100") || has(v, "b200")) return "NVIDIA";
  return "other";
}

MappedRun map_run(const RunEntry& entry, MappingCatalogue& catalogue) {
  const ProfileCatalog& profiles = catalogue.profiles();
  const std::string& data_dir = catalogue.data_dir();
  MappedRun out;
  out.id = entry.id;
  out.job.source = "<validation:" + entry.id + ">";
  JobDraft draft;
  draft.source = out.job.source;
  Mapper m(entry, out, draft);
  if (!entry.ok()) {
    out.reason = entry.errors.front();
    return out;
  }
  for (const std::string& w : entry.warnings) m.note("dropped: " + w);
  const FrameworkProfile* profile = profiles.match(entry.framework);
  m.nemo = profiles.find("nemo");
  if (profile == nullptr) {
    profile = profiles.find("unknown");
    m.assume("framework", "unknown",
             entry.framework.empty()
                 ? "not stated; no framework's conventions assumed"
                 : fmt::format("'{}' names no framework profile ({})", entry.framework,
                               fmt::join(profiles.names(), ", ")));
  }
  if (profile == nullptr) {
    out.reason = "no framework profile 'unknown' in " + data_dir + "/frameworks";
    return out;
  }
  draft.profile = *profile;
  out.framework = draft.profile.name;
  // Where the profile reads this framework through another's conventions, it says so per run.
  for (const std::string& n : draft.profile.notes) m.note(draft.profile.name + ": " + n);
  out.backend = draft.profile.backend;
  name_fields(draft);

  ClusterSpec cl;
  const int world = map_cluster(m, catalogue, cl);
  out.num_gpus = world;
  int seq = 0;
  if (entry.training.seq_len) {
    seq = *entry.training.seq_len;
  } else if (entry.model.seq_len) {
    seq = *entry.model.seq_len;
    m.note("training.seq_len taken from model.seq_len");
  } else if (to_lower(entry.model.type) == "dlrm" || entry.model.dlrm) {
    seq = 1;  // a recommendation sample is one row
  } else {
    m.fail("seq_len not stated (no framework default)");
  }
  draft.seq_length = seq > 0 ? std::optional<int>(seq) : std::nullopt;
  m.data_dir = data_dir;
  if (draft.profile.backend == "torchtitan") {
    validate_detail::map_torchtitan_run(m, data_dir, seq);
  } else if (draft.profile.backend == "maxtext") {
    validate_detail::map_model(m, seq);
    validate_detail::map_maxtext_training(m, cl);
  } else {
    validate_detail::map_model(m, seq);
    map_training(m);
  }
  out.flop_convention = validate_detail::read_convention(m, entry.measured.flop_counting);
  if (out.reason.empty()) {
    finalize(m, cl);
  } else {
    out.job = partial_job(draft, cl);
  }
  out.fp8 = out.job.runtime.precision.fp8 != Fp8Recipe::kNone;
  out.mapped = out.reason.empty();
  if (out.mapped && entry.training.recompute.empty() &&
      out.job.model.family == ModelFamily::kDecoderLm) {
    infer_recompute_from_fit(m, out.job);
  }
  return out;
}

MappedRun map_run(const RunEntry& entry, const std::string& data_dir,
                  const ProfileCatalog& profiles) {
  MappingCatalogue catalogue(data_dir, profiles);
  return map_run(entry, catalogue);
}

MappedRun map_run(const RunEntry& entry, const std::string& data_dir) {
  MappingCatalogue catalogue(data_dir);
  return map_run(entry, catalogue);
}

}  // namespace projector
