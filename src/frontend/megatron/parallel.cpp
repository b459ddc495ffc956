// Megatron arguments -> the draft's parallel layout: sizes, virtual stages, stage split, sharding,
// overlap. Nothing is derived here (DP, stages, defaults: the job builder).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "frontend/megatron/adapter.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

// Names a draft field by its Megatron key and, when the input states it, its location.
void name_field(const ArgReader& r, JobDraft& d, DraftField f, const std::string& key) {
  d.set_origin(f, key, r.has(key) ? r.where(key) : SourceLocation{});
}

void read_sizes(ArgReader& r, JobDraft& d) {
  const std::pair<DraftField, const char*> keys[] = {
      {DraftField::kTp, "tensor_model_parallel_size"},
      {DraftField::kPp, "pipeline_model_parallel_size"},
      {DraftField::kCp, "context_parallel_size"},
      {DraftField::kEp, "expert_model_parallel_size"},
      {DraftField::kEtp, "expert_tensor_parallel_size"}};
  for (const auto& [field, key] : keys) name_field(r, d, field, key);
  d.tp = positive_arg(r, "tensor_model_parallel_size");
  d.pp = positive_arg(r, "pipeline_model_parallel_size");
  d.cp = positive_arg(r, "context_parallel_size");
  d.ep = positive_arg(r, "expert_model_parallel_size");
  d.etp = positive_arg(r, "expert_tensor_parallel_size");
  name_field(r, d, DraftField::kVpp, "num_virtual_stages_per_pipeline_rank");
  d.vpp = positive_arg(r, "num_virtual_stages_per_pipeline_rank");
  if (!d.vpp && r.has("num_layers_per_virtual_pipeline_stage")) {
    name_field(r, d, DraftField::kVpp, "num_layers_per_virtual_pipeline_stage");
    d.layers_per_virtual_stage = positive_arg(r, "num_layers_per_virtual_pipeline_stage");
  }
}

// pipeline_model_parallel_layout, else decoder_first/last_pipeline_num_layers, else balanced
// (with the embedding / loss optionally counted as layers). Megatron refuses the layout together
// with any other split argument, and first / last counts together with the account flags (MG2
// transformer_config.py:2229-2258).
void read_layer_split(ArgReader& r, JobDraft& d) {
  LayerSplit& s = d.layer_split;
  const bool emb = r.bool_quiet("account_for_embedding_in_pipeline_split", false);
  const bool loss = r.bool_quiet("account_for_loss_in_pipeline_split", false);
  const bool first_last =
      r.has("decoder_first_pipeline_num_layers") || r.has("decoder_last_pipeline_num_layers");
  const char* account_key =
      emb ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split";
  if (const ConfigValue* layout = r.get("pipeline_model_parallel_layout")) {
    const std::string key = "pipeline_model_parallel_layout";
    if (emb || loss || first_last) {
      r.fail(key,
             "cannot be set with decoder_first/last_pipeline_num_layers or the "
             "account_for_*_in_pipeline_split flags (Megatron refuses the combination)");
    }
    name_field(r, d, DraftField::kLayerSplit, key);
    std::string error;
    const auto stages = parse_pipeline_layout(layout->to_text(), error);
    if (!stages) r.fail(key, error);
    s.kind = LayerSplit::Kind::kStated;
    for (const LayoutStage& st : *stages) {
      s.stages.push_back({st.decoder_layers, st.embedding, st.loss, st.mtp_layers});
    }
    return;
  }
  const bool first = r.has("decoder_first_pipeline_num_layers");
  const bool last = r.has("decoder_last_pipeline_num_layers");
  if (first_last && (emb || loss)) {
    r.fail(account_key,
           "cannot be combined with decoder_first/last_pipeline_num_layers (Megatron refuses it)");
  }
  if (first || last) {
    s.kind = LayerSplit::Kind::kFirstLast;
    name_field(r, d, DraftField::kLayerSplit,
               first ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers");
    if (first) {
      s.first_stage_layers = static_cast<int>(r.require_int("decoder_first_pipeline_num_layers"));
    }
    if (last) {
      s.last_stage_layers = static_cast<int>(r.require_int("decoder_last_pipeline_num_layers"));
    }
    return;
  }
  s.embedding_in_split = emb;
  s.loss_in_split = loss;
  // Named when the layers do not divide by PP x VPP (MG2 transformer_config.py uneven splits).
  s.first_stage_key = "decoder_first_pipeline_num_layers";
  s.layout_key = "pipeline_model_parallel_layout";
  name_field(r, d, DraftField::kLayerSplit, emb || loss ? account_key : "num_layers");
}

void read_sharding(ArgReader& r, JobDraft& d) {
  name_field(r, d, DraftField::kDistributedOptimizer, "use_distributed_optimizer");
  if (r.has("use_distributed_optimizer")) {
    d.distributed_optimizer = r.bool_quiet("use_distributed_optimizer", false);
  }
  d.set_origin(DraftField::kFsdp, "fsdp");  // Megatron has one switch per FSDP flavour
  if (r.has("use_torch_fsdp2")) name_field(r, d, DraftField::kFsdp, "use_torch_fsdp2");
  if (r.bool_quiet("use_torch_fsdp2", false)) {
    d.fsdp = FsdpKind::kFsdp2;
  } else if (r.bool_quiet("use_megatron_fsdp", false)) {
    name_field(r, d, DraftField::kFsdp, "data_parallel_sharding_strategy");
    const std::string strategy =
        r.string_or("data_parallel_sharding_strategy", "no_shard", "Megatron default");
    if (strategy == "optim_grads_params") {
      d.fsdp = FsdpKind::kZero3;
    } else if (strategy == "optim_grads" || strategy == "optim") {
      // optim: ZeRO-1, the distributed optimizer; optim_grads: ZeRO-2, the main gradients
      // sharded as well (MG2 megatron_fsdp.py data_parallel_sharding_strategy).
      d.fsdp = FsdpKind::kNone;
      d.distributed_optimizer = true;
      d.parallel.grads_sharded = strategy == "optim_grads";
    } else if (strategy != "no_shard") {
      r.fail("data_parallel_sharding_strategy",
             fmt::format("unknown strategy '{}' (no_shard, optim, optim_grads, "
                         "optim_grads_params)",
                         strategy));
    } else {
      d.fsdp = FsdpKind::kNone;
    }
  } else if (r.has("use_torch_fsdp2") || r.has("use_megatron_fsdp")) {
    d.fsdp = FsdpKind::kNone;
  }
  // num_distributed_optimizer_instances (MG23): the distributed optimizer (and Megatron-FSDP, as
  // HSDP) shards over dp x cp / instances contiguous ranks, reduce-scatters and all-gathers there,
  // and all-reduces each shard across the instances: ParallelSpec::dp_replicate. The builder
  // checks that it divides DP.
  const std::int64_t instances = r.int_quiet("num_distributed_optimizer_instances", 1);
  if (instances < 1) r.fail("num_distributed_optimizer_instances", "must be at least 1");
  d.parallel.dp_replicate = static_cast<int>(instances);
}

void read_overlap(ArgReader& r, JobDraft& d) {
  const std::pair<DraftField, const char*> flags[] = {
      {DraftField::kSequenceParallel, "sequence_parallel"},
      {DraftField::kOverlapGradReduce, "overlap_grad_reduce"},
      {DraftField::kOverlapParamGather, "overlap_param_gather"},
      {DraftField::kTpCommOverlap, "tp_comm_overlap"}};
  std::optional<bool>* targets[] = {&d.sequence_parallel, &d.overlap_grad_reduce,
                                    &d.overlap_param_gather, &d.tp_comm_overlap};
  for (std::size_t i = 0; i < std::size(flags); ++i) {
    const auto& [field, key] = flags[i];
    name_field(r, d, field, key);
    if (r.has(key)) *targets[i] = r.bool_quiet(key, false);
  }
}

CpCommType cp_comm_type(ArgReader& r, JobDraft& d) {
  const ConfigValue* cct = r.get("cp_comm_type");
  if (cct == nullptr) return CpCommType::kP2p;
  std::string text =
      cct->is_list() && !cct->items.empty() ? cct->items[0].to_text() : cct->to_text();
  if (cct->is_list()) {
    for (const ConfigValue& item : cct->items) {
      if (item.to_text() != text) {
        d.warnings.push_back(
            fmt::format("cp_comm_type differs per layer; projecting every layer with '{}'", text));
        break;
      }
    }
  }
  text = to_lower(text);
  if (text == "p2p") return CpCommType::kP2p;
  if (text == "all_gather" || text == "allgather") return CpCommType::kAllGather;
  if (text == "a2a") return CpCommType::kA2a;
  if (text == "a2a+p2p") return CpCommType::kA2aP2p;
  r.fail("cp_comm_type", fmt::format("unknown '{}' (p2p, all_gather, a2a, a2a+p2p)", text));
}

// hierarchical_context_parallel_sizes (MG24): Megatron asserts the sizes' product is CP and that
// a2a+p2p states them; Transformer Engine's a2a+p2p takes exactly two levels, [a2a, p2p], the
// first over neighbouring CP ranks. With another cp_comm_type the groups exist but go unused.
void read_cp_hierarchy(ArgReader& r, JobDraft& d) {
  const std::string key = "hierarchical_context_parallel_sizes";
  std::vector<std::int64_t> sizes;
  if (const ConfigValue* v = r.get(key)) {
    if (v->is_list()) {
      for (const ConfigValue& item : v->items) sizes.push_back(r.as_int(key, item));
    } else {
      sizes.push_back(r.as_int(key, *v));
    }
  }
  const bool hierarchical = d.parallel.cp_comm_type == CpCommType::kA2aP2p;
  if (sizes.empty()) {
    if (hierarchical) {
      r.fail("cp_comm_type",
             "a2a+p2p needs hierarchical_context_parallel_sizes [a2a, p2p] (Megatron asserts it)");
    }
    return;
  }
  std::int64_t product = 1;
  for (const std::int64_t n : sizes) {
    if (n < 1) r.fail(key, fmt::format("sizes must be positive, got {}", n));
    product *= n;
    if (product > kMaxCount) r.fail(key, "product too large");
  }
  const int cp = d.cp.value_or(1);
  if (product != cp) {
    r.fail(key, fmt::format("the sizes multiply to {}, not context_parallel_size {} (Megatron "
                            "asserts they match)",
                            product, cp));
  }
  if (!hierarchical) return;
  if (sizes.size() != 2) {
    r.fail(key, fmt::format("a2a+p2p takes two levels [a2a, p2p], got {} (Transformer Engine's "
                            "cp_group = [a2a group, p2p group])",
                            sizes.size()));
  }
  d.parallel.cp_a2a_size = static_cast<int>(sizes[0]);
}

// overlap_p2p_comm (MG1 validate_args): Megatron keeps it only with virtual stages and otherwise
// batches each step's sends and receives and waits for them. Stated false: sends hold the stream
// with VPP too; stated true or unset: the profile's rule (with_vpp).
void read_p2p_overlap(ArgReader& r, JobDraft& d) {
  name_field(r, d, DraftField::kP2pOverlap, "overlap_p2p_comm");
  if (r.has("overlap_p2p_comm") && !r.bool_quiet("overlap_p2p_comm", true)) d.p2p_overlap = false;
}

}  // namespace

std::optional<int> positive_arg(ArgReader& r, const std::string& key) {
  if (!r.has(key)) return std::nullopt;
  const std::int64_t v = r.require_int(key);
  if (v < 1 || v > kMaxCount) {
    r.fail(key, fmt::format("must be a positive integer up to {}, got {}", kMaxCount, v));
  }
  return static_cast<int>(v);
}

void read_parallel(ArgReader& r, const ModelSpec& /*model*/, JobDraft& d) {
  read_sizes(r, d);
  read_layer_split(r, d);
  read_sharding(r, d);
  read_overlap(r, d);
  read_p2p_overlap(r, d);
  d.parallel.cp_comm_type = cp_comm_type(r, d);
  read_cp_hierarchy(r, d);
  d.parallel.ddp_bucket_size_params = r.int_quiet("ddp_bucket_size", 0);
  if (d.parallel.ddp_bucket_size_params < 0) r.fail("ddp_bucket_size", "must not be negative");
  d.parallel.allow_tp_beyond_node = r.bool_quiet("allow_tp_beyond_node", false);
}

}  // namespace projector::frontend_detail
