// The resolved job: the text `projector config` prints and the JSON document that
// `config --json` prints and `--export_config` writes.
#include "projector/report/job_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "json_common.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/describe.h"
#include "recsys_report.h"

namespace projector {
namespace {

const char* on_off(bool b) {
  return b ? "on" : "off";
}

std::string cp_comm(CpCommType t) {
  switch (t) {
    case CpCommType::kP2p:
      return "p2p";
    case CpCommType::kAllGather:
      return "all_gather";
    case CpCommType::kA2a:
      return "a2a";
    case CpCommType::kA2aP2p:
      return "a2a+p2p";
  }
  return "?";
}

std::string norm_name(NormKind n) {
  return n == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm";
}

std::string pos_name(PositionEmbeddingKind p) {
  switch (p) {
    case PositionEmbeddingKind::kRope:
      return "rope";
    case PositionEmbeddingKind::kLearnedAbsolute:
      return "learned_absolute";
    case PositionEmbeddingKind::kNone:
      return "none";
  }
  return "?";
}

std::string optimizer_name(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kMuon:
      return "muon";
  }
  return "?";
}

// The cluster, every default applied and every warning.
std::string cluster_and_defaults_text(const JobSpec& job) {
  const ClusterSpec& cl = job.cluster;
  std::string out;
  out += fmt::format(
      "\ncluster: {} node(s) x {} GPU(s) = {} x {}, network {}\n", cl.nodes, cl.gpus_per_node,
      cl.world_size(),
      cl.accelerator.display_name.empty() ? cl.accelerator.name : cl.accelerator.display_name,
      cl.network.name.empty() ? "(default)" : cl.network.name);
  out += fmt::format("\ndefaults applied ({}):\n", job.defaults.size());
  for (const AppliedDefault& d : job.defaults) {
    out += d.source.empty()
               ? fmt::format("  {} = {}  ({})\n", d.key, d.value, d.reason)
               : fmt::format("  {} = {}  ({}: {})\n", d.key, d.value, d.source, d.reason);
  }
  out += fmt::format("\nwarnings ({}):\n", job.warnings.size());
  for (const std::string& w : job.warnings) out += fmt::format("  {}\n", w);
  return out;
}

std::string summary_text(const JobSpec& job) {
  std::string out;
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const RuntimeSpec& rt = job.runtime;
  const ModelParams params = model_params(m, padded_vocab_size(m, p.tp));
  out += fmt::format("config: {}\n\n", job.source);
  out += fmt::format("model: {}\n", m.name);
  if (m.family == ModelFamily::kRecommendation) {
    out += report_detail::recsys_model_text(job);
    out += fmt::format(
        "\nparallel: the dense part data-parallel over {} GPUs, the tables as planned\n", job.dp());
    out += fmt::format("\nruntime: batch {} per GPU, {} global\n", rt.micro_batch_size,
                       rt.global_batch_size);
    return out + cluster_and_defaults_text(job);
  }
  out += fmt::format(
      "  layers {}, hidden {}, vocab {} (padded {} at TP {}), {}, {}, {} embeddings\n",
      m.num_layers(), m.hidden_size, m.vocab_size, padded_vocab_size(m, p.tp), p.tp,
      norm_name(m.norm), pos_name(m.position_embedding), m.tied_embeddings ? "tied" : "untied");
  if (m.mtp_num_layers > 0) out += fmt::format("  MTP layers: {}\n", m.mtp_num_layers);
  if (m.diffusion.enabled()) {
    out += fmt::format(
        "  Flux diffusion: sequence {} image + {} text tokens; \"vocab\" = proj_out's {} latent "
        "channels (MSE loss); pre-encoded latents and text\n",
        m.diffusion.image_tokens, m.diffusion.text_tokens, m.vocab_size);
  }
  out += fmt::format("  parameters: {:.3f} B total, {:.3f} B active per token\n",
                     params.total / 1e9, params.active / 1e9);
  for (const LayerRun& run : layer_runs(m)) {
    const std::string range =
        run.count == 1 ? fmt::format("layer {}", run.first)
                       : fmt::format("layers {}-{}", run.first, run.first + run.count - 1);
    out += fmt::format("  {} ({}x): {}\n", range, run.count, run.description);
  }
  out += fmt::format("\nparallel: TP {} PP {} VPP {} CP {} EP {} ETP {} | DP {} expert-DP {}\n",
                     p.tp, p.pp, p.vpp, p.cp, p.ep, p.etp, job.dp(), job.expert_dp());
  out += fmt::format(
      "  sequence parallel {}, distributed optimizer {}{}, FSDP {}, overlap grad-reduce {}, "
      "overlap param-gather {}, TP comm overlap {}, CP comm {}{}{}\n",
      on_off(p.sequence_parallel), on_off(p.distributed_optimizer),
      p.grads_sharded && p.distributed_optimizer ? " (gradients sharded too: ZeRO-2)" : "",
      to_string(p.fsdp), on_off(p.overlap_grad_reduce), on_off(p.overlap_param_gather),
      on_off(p.tp_comm_overlap), cp_comm(p.cp_comm_type),
      p.cp_comm_type == CpCommType::kA2aP2p && p.cp_a2a_size > 0
          ? fmt::format(" (all-to-all over {}, ring over {})", p.cp_a2a_size,
                        p.cp / std::max(1, p.cp_a2a_size))
          : std::string(),
      p.pp > 1 ? fmt::format(", P2P overlap {}", on_off(p.p2p_overlap)) : std::string());
  if (p.stages.size() > 1) {
    for (std::size_t z = 0; z < p.stages.size(); ++z) {
      out += fmt::format("  stage {:>3} (pp rank {}, chunk {}): {}\n", z, z % p.pp, z / p.pp,
                         describe_stage(p.stages[z]));
    }
  }
  out +=
      fmt::format("\nruntime: MBS {} GBS {} seq {} -> {} microbatches per replica\n",
                  rt.micro_batch_size, rt.global_batch_size, rt.seq_length, job.num_microbatches());
  out += fmt::format("  precision {} (fp8 {}, fp4 {}{}), GEMMs in {}\n",
                     to_string(rt.precision.params_dtype), to_string(rt.precision.fp8),
                     to_string(rt.precision.fp4), rt.precision.fp8_param ? ", fp8 params" : "",
                     to_string(rt.precision.gemm_dtype()));
  out += fmt::format("  recompute {}", to_string(rt.recompute.granularity));
  if (rt.recompute.granularity == RecomputeGranularity::kFull) {
    out += fmt::format(" ({}, {} layers)",
                       rt.recompute.method == RecomputeMethod::kBlock ? "block" : "uniform",
                       rt.recompute.num_layers);
  }
  if (!rt.recompute.modules.empty() &&
      rt.recompute.granularity == RecomputeGranularity::kSelective) {
    out += fmt::format(" modules [{}]", fmt::join(rt.recompute.modules.names(), ", "));
  }
  if (!rt.recompute.layer_ids.empty()) {
    out += fmt::format(" layer ids [{}]", fmt::join(rt.recompute.layer_ids, ","));
  }
  out += fmt::format(
      "\n  flash attention {}, CE fusion {}{}, MoE dispatcher {} ({} kernel{}{}), routing {}, EP "
      "overlap [{}], sync-free stage {}, schedule {}\n",
      on_off(rt.flash_attention),
      rt.cross_entropy_fusion ? "on" : (rt.cross_entropy_compiled ? "compiled" : "off"),
      rt.vocab_tiles > 1
          ? fmt::format(" ({} token tiles, {})", rt.vocab_tiles,
                        rt.loss_grad_in_forward ? "gradients in the forward" : "replayed")
          : "",
      to_string(rt.moe_dispatcher), to_string(rt.moe_dispatch_kernel),
      rt.moe_dedup_dispatch ? ", deduplicated" : "", rt.deepep ? ", DeepEP buffers" : "",
      to_string(rt.moe_routing), fmt::join(rt.moe_overlap.names(), ", "), rt.sync_free_moe_stage,
      to_string(rt.schedule));
  out += fmt::format(
      "  optimizer {}{} (main grads {}, exp_avg {}, exp_avg_sq {})\n", optimizer_name(rt.optimizer),
      rt.precision_aware_optimizer ? " precision-aware" : "", to_string(rt.main_grads_dtype),
      to_string(rt.exp_avg_dtype), to_string(rt.exp_avg_sq_dtype));
  return out + cluster_and_defaults_text(job);
}

report_detail::Json to_json(const JobSpec& job) {
  using json = report_detail::Json;
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const RuntimeSpec& rt = job.runtime;
  const ModelParams params = model_params(m, padded_vocab_size(m, p.tp));
  json j;
  j["schema_version"] = kJobJsonSchemaVersion;
  j["source"] = job.source;
  json layers = json::array();
  for (const LayerRun& run : layer_runs(m)) {
    layers.push_back(
        {{"first", run.first}, {"count", run.count}, {"description", run.description}});
  }
  j["model"] = {{"name", m.name},
                {"num_layers", m.num_layers()},
                {"hidden_size", m.hidden_size},
                {"vocab_size", m.vocab_size},
                {"padded_vocab_size", padded_vocab_size(m, p.tp)},
                {"normalization", norm_name(m.norm)},
                {"position_embedding_type", pos_name(m.position_embedding)},
                {"tied_embeddings", m.tied_embeddings},
                {"mtp_num_layers", m.mtp_num_layers},
                {"params_total", params.total},
                {"params_active", params.active},
                {"layer_runs", layers}};
  if (m.family == ModelFamily::kRecommendation) {
    j["model"]["family"] = "recommendation";
    j["model"]["recommendation"] = report_detail::recsys_model_json(job);
  }
  json stages = json::array();
  for (const VirtualStage& s : p.stages) {
    stages.push_back({{"first_layer", s.first_layer},
                      {"num_layers", s.num_layers},
                      {"embedding", s.has_embedding},
                      {"output", s.has_output},
                      {"mtp_layers", s.mtp_layers}});
  }
  j["parallel"] = report_detail::parallel_json(job);
  j["parallel"]["cp_comm_type"] = cp_comm(p.cp_comm_type);
  if (p.cp_comm_type == CpCommType::kA2aP2p) j["parallel"]["cp_a2a_size"] = p.cp_a2a_size;
  j["parallel"]["stages"] = stages;
  j["runtime"] = {
      {"micro_batch_size", rt.micro_batch_size},
      {"global_batch_size", rt.global_batch_size},
      {"seq_length", rt.seq_length},
      {"num_microbatches", job.num_microbatches()},
      {"params_dtype", std::string(to_string(rt.precision.params_dtype))},
      {"fp8_recipe", std::string(to_string(rt.precision.fp8))},
      {"fp4_recipe", std::string(to_string(rt.precision.fp4))},
      {"fp8_param", rt.precision.fp8_param},
      {"recompute_granularity", std::string(to_string(rt.recompute.granularity))},
      {"recompute_method", rt.recompute.method == RecomputeMethod::kBlock ? "block" : "uniform"},
      {"recompute_num_layers", rt.recompute.num_layers},
      {"recompute_modules", rt.recompute.modules.names()},
      {"recompute_layer_ids", rt.recompute.layer_ids},
      {"flash_attention", rt.flash_attention},
      {"cross_entropy_fusion", rt.cross_entropy_fusion},
      {"cross_entropy_compiled", rt.cross_entropy_compiled},
      {"vocab_tiles", rt.vocab_tiles},
      {"loss_grad_in_forward", rt.loss_grad_in_forward},
      {"deepep", rt.deepep},
      {"moe_dedup_dispatch", rt.moe_dedup_dispatch},
      {"moe_dispatcher", std::string(to_string(rt.moe_dispatcher))},
      {"moe_dispatch_kernel", std::string(to_string(rt.moe_dispatch_kernel))},
      {"moe_overlap", rt.moe_overlap.names()},
      {"moe_routing", std::string(to_string(rt.moe_routing))},
      {"moe_expert_load_cv", rt.moe_expert_load_cv},
      {"sync_free_moe_stage", rt.sync_free_moe_stage},
      {"schedule", std::string(to_string(rt.schedule))},
      {"optimizer", optimizer_name(rt.optimizer)},
      {"precision_aware_optimizer", rt.precision_aware_optimizer},
      {"main_grads_dtype", std::string(to_string(rt.main_grads_dtype))},
      {"exp_avg_dtype", std::string(to_string(rt.exp_avg_dtype))},
      {"exp_avg_sq_dtype", std::string(to_string(rt.exp_avg_sq_dtype))}};
  j["cluster"] = {{"nodes", job.cluster.nodes},
                  {"gpus_per_node", job.cluster.gpus_per_node},
                  {"world_size", job.cluster.world_size()},
                  {"accelerator", job.cluster.accelerator.name},
                  {"accelerator_origin", job.cluster.accelerator_origin},
                  {"network", job.cluster.network.name}};
  j["defaults"] = report_detail::defaults_json(job);
  j["warnings"] = job.warnings;
  return j;
}

}  // namespace

std::string job_summary_text(const JobSpec& job) {
  return summary_text(job);
}

std::string job_json(const JobSpec& job, int indent) {
  return to_json(job).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector
