// Overrides that apply to the neutral draft whatever the back-end: Primus' environment variables
// (PRIMUS_TP ... PRIMUS_ETP, NNODES, GPUS_PER_NODE, PRIMUS_GPU_ARCH) and the first-class CLI flags.
// Command line beats environment beats file; a value given with --set (a back-end key) also beats
// the environment.
#include "frontend/primus/overrides.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <string>

#include "frontend/megatron/adapter.h"
#include "projector/frontend/primus_turbo.h"
#include "projector/hardware/catalog.h"
#include "projector/util/allocator_kind.h"

namespace projector::frontend_detail {
namespace {

std::optional<std::int64_t> env_int(const LoadRequest& request, const char* var) {
  if (!request.env) return std::nullopt;
  const std::optional<std::string> v = request.env(var);
  if (!v || v->empty()) return std::nullopt;
  const SourceLocation where{fmt::format("environment {}", var), 0, 0};
  const ConfigValue c = resolve_plain_scalar(*v, where);
  if (c.kind != ConfigValue::Kind::kInt || c.i < 1 || c.i > kMaxCount) {
    throw InputError(where, var,
                     fmt::format("expected a positive integer up to {}, got '{}'", kMaxCount, *v));
  }
  return c.i;
}

std::optional<int>* size_field(JobDraft& d, DraftField f) {
  switch (f) {
    case DraftField::kTp:
      return &d.tp;
    case DraftField::kPp:
      return &d.pp;
    case DraftField::kCp:
      return &d.cp;
    case DraftField::kEp:
      return &d.ep;
    case DraftField::kEtp:
      return &d.etp;
    case DraftField::kVpp:
      return &d.vpp;
    case DraftField::kMicroBatchSize:
      return &d.micro_batch_size;
    case DraftField::kGlobalBatchSize:
      return &d.global_batch_size;
    case DraftField::kSeqLength:
      return &d.seq_length;
    default:
      return nullptr;
  }
}

void set_size(JobDraft& d, DraftField f, int value, SourceLocation where) {
  *size_field(d, f) = value;
  if (f == DraftField::kVpp) d.layers_per_virtual_stage.reset();
  d.set_origin(f, d.key(f), std::move(where));
}

void apply_environment(const LoadRequest& request, JobDraft& d) {
  static constexpr std::pair<const char*, DraftField> kVars[] = {
      {"PRIMUS_TP", DraftField::kTp},   {"PRIMUS_PP", DraftField::kPp},
      {"PRIMUS_EP", DraftField::kEp},   {"PRIMUS_CP", DraftField::kCp},
      {"PRIMUS_VPP", DraftField::kVpp}, {"PRIMUS_ETP", DraftField::kEtp}};
  for (const auto& [var, field] : kVars) {
    const std::optional<std::int64_t> v = env_int(request, var);
    if (!v) continue;
    const FieldOrigin& o = d.origin(field);
    if (o.where.file == "--set") continue;  // the command line beats the environment
    const std::optional<int>& old = *size_field(d, field);
    if (old && *old != *v) {
      d.warnings.push_back(fmt::format("{}={} overrides {}: {} ({}:{})", var, *v, d.key(field),
                                       *old, o.where.file, o.where.line));
    }
    set_size(d, field, static_cast<int>(*v), {fmt::format("environment {}", var), 0, 0});
  }
  // The PyTorch allocator's settings, as Primus' projection reads them (P10): the
  // first variable that states expandable_segments decides.
  if (!request.env) return;
  for (const char* var :
       {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"}) {
    const std::optional<std::string> v = request.env(var);
    if (!v) continue;
    if (const std::optional<bool> e = expandable_segments_of(*v)) {
      d.expandable_segments = *e;
      d.set_origin(DraftField::kExpandableSegments, var,
                   {fmt::format("environment {}", var), 0, 0});
      return;
    }
  }
}

void apply_cli(const CliOverrides& c, JobDraft& d) {
  const std::tuple<const std::optional<int>&, const char*, DraftField> sizes[] = {
      {c.tp, "--tp", DraftField::kTp},
      {c.pp, "--pp", DraftField::kPp},
      {c.cp, "--cp", DraftField::kCp},
      {c.ep, "--ep", DraftField::kEp},
      {c.etp, "--etp", DraftField::kEtp},
      {c.vpp, "--vpp", DraftField::kVpp},
      {c.micro_batch_size, "--mbs", DraftField::kMicroBatchSize},
      {c.global_batch_size, "--gbs", DraftField::kGlobalBatchSize},
      {c.seq_length, "--seq", DraftField::kSeqLength}};
  for (const auto& [value, flag, field] : sizes) {
    if (value) set_size(d, field, *value, {flag, 0, 0});
  }
  if (c.enable_zero_bubble) d.prefer_zero_bubble = *c.enable_zero_bubble;
  if (c.alloc_conf) {
    const std::optional<bool> e = expandable_segments_of(*c.alloc_conf);
    if (!e) {
      throw InputError({"--alloc-conf", 0, 0}, "alloc_conf",
                       fmt::format("'{}' states no expandable_segments:True|False, the one "
                                   "allocator setting the memory model reads",
                                   *c.alloc_conf));
    }
    d.expandable_segments = *e;
    d.set_origin(DraftField::kExpandableSegments, "--alloc-conf", {"--alloc-conf", 0, 0});
  }
  // DeepEP dispatch and combine: the flex dispatcher with the DeepEP kernel (a kernel choice: what
  // hides the communication is decided by the overlap settings, not by DeepEP).
  // The kernel's compute units when the config named none (the Megatron adapter's defaults).
  auto use_deepep = [&d](MoeDispatchKernel kernel) {
    d.runtime.moe_dispatcher = MoeDispatcher::kFlex;
    d.runtime.moe_dispatch_kernel = kernel;
    d.runtime.deepep = d.runtime.moe_dedup_dispatch = true;
    if (d.runtime.moe_comm_compute_units == 0) {
      const bool turbo = kernel == MoeDispatchKernel::kTurboDeepEp;
      const ProfileDefault<int>& def = d.profile.deepep_num_sms;
      const int units = turbo ? frontend_detail::kTurboDeepEpDefaultCus : def.value.value_or(0);
      d.runtime.moe_comm_compute_units = units;
      d.defaults.push_back({turbo ? "turbo_deepep_num_cu" : "moe_deepep_num_sms",
                            std::to_string(units),
                            turbo       ? "not stated: Primus default (primus_turbo.yaml)"
                            : def.value ? "not stated: " + def.source
                                        : "not stated; the profile names no budget",
                            turbo || !def.value ? "" : d.profile.name});
    }
  };
  if (c.enable_deepep && *c.enable_deepep) use_deepep(MoeDispatchKernel::kDeepEp);
  if (c.moe_expert_load_cv) {
    if (!(*c.moe_expert_load_cv >= 0.0 && *c.moe_expert_load_cv <= 16.0)) {
      throw InputError({"--moe-expert-load-cv", 0, 0}, "moe_expert_load_cv", "must be 0..16");
    }
    d.runtime.moe_expert_load_cv = *c.moe_expert_load_cv;
    d.runtime.moe_routing =
        *c.moe_expert_load_cv > 0.0 ? MoeRouting::kLearned : MoeRouting::kBalanced;
  }
  if (c.sync_free_stage) {
    if (*c.sync_free_stage < 0 || *c.sync_free_stage > 3) {
      throw InputError({"--sync-free-stage", 0, 0}, "turbo_sync_free_moe_stage", "must be 0..3");
    }
    d.runtime.sync_free_moe_stage = *c.sync_free_stage;
    // The flag stands for a Primus Turbo run (without Turbo it means nothing): stage 1 and above
    // fuse the router and the token permutation, as the config key does with
    // enable_primus_turbo; stages 2 and 3 also turn Turbo's DeepEP on (PR4
    // rocm_arg_validation.py _get_sync_free_moe_options).
    const SyncFreeMoeOptions sync_free = sync_free_moe_options(*c.sync_free_stage);
    if (sync_free.permute_fusion) d.runtime.moe_permute_fusion = true;
    d.runtime.moe_host_sync_free = sync_free.host_sync_free;
    if (sync_free.turbo_deepep) use_deepep(MoeDispatchKernel::kTurboDeepEp);
  }
  if (c.pipeline_schedule) {
    const std::optional<ScheduleKind> s = parse_schedule_name(*c.pipeline_schedule);
    const SourceLocation where{"--pipeline-schedule-algorithm", 0, 0};
    if (!s) {
      throw InputError(where, d.key(DraftField::kSchedule),
                       fmt::format("unknown pipeline schedule '{}' ({})", *c.pipeline_schedule,
                                   schedule_kind_names()));
    }
    d.schedule = *s;
    d.set_origin(DraftField::kSchedule, d.key(DraftField::kSchedule), where);
  }
}

// Primus keeps its experiment configs per accelerator (examples/<backend>/configs/MI355X/...): a
// config in such a folder, with nothing else naming the hardware, runs on that accelerator.
void folder_accelerator(const LoadRequest& request, ClusterRequest& c) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(request.config_path).parent_path();
  if (dir.empty() || dir.parent_path().filename() != "configs") return;
  const std::string folder = dir.filename().string();
  const std::optional<std::string> name = match_accelerator_name(folder, c.data_dir);
  if (!name) return;
  c.default_hardware = *name;
  c.default_hardware_reason = fmt::format(
      "the config sits in Primus' configs/{}/ folder and no --hardware / --gpu-arch / "
      "PRIMUS_GPU_ARCH names the accelerator",
      folder);
}

}  // namespace

void apply_overrides(const LoadRequest& request, JobDraft& d) {
  apply_environment(request, d);
  apply_cli(request.cli, d);
  if (request.allow_tp_beyond_node) d.parallel.allow_tp_beyond_node = true;
}

ClusterRequest cluster_request(const LoadRequest& request, JobDraft& d) {
  ClusterRequest c;
  c.data_dir = request.data_dir.empty() ? default_data_dir() : request.data_dir;
  c.hardware = request.hardware;
  if (!c.hardware.empty()) {
    d.set_origin(DraftField::kHardware, "hardware", {"--hardware", 0, 0});
  } else if (request.env) {
    if (auto arch = request.env("PRIMUS_GPU_ARCH"); arch && !arch->empty()) {
      c.hardware = *arch;
      d.set_origin(DraftField::kHardware, "PRIMUS_GPU_ARCH", {"environment PRIMUS_GPU_ARCH", 0, 0});
    }
  }
  c.default_hardware_reason = "no --hardware / --gpu-arch / PRIMUS_GPU_ARCH";
  if (c.hardware.empty()) folder_accelerator(request, c);
  c.network = request.hardware_config;
  c.network_where = {"--hardware-config", 0, 0};
  if (request.cli.gpus_per_node) {
    c.gpus_per_node = *request.cli.gpus_per_node;
    d.set_origin(DraftField::kGpusPerNode, "gpus_per_node", {"--gpus-per-node", 0, 0});
  } else if (const auto g = env_int(request, "GPUS_PER_NODE")) {
    c.gpus_per_node = *g;
    d.set_origin(DraftField::kGpusPerNode, "gpus_per_node", {"environment GPUS_PER_NODE", 0, 0});
  }
  if (request.cli.nodes) {
    c.nodes = *request.cli.nodes;
    d.set_origin(DraftField::kNodes, "nodes", {"--nodes", 0, 0});
  } else if (const auto n = env_int(request, "NNODES")) {
    c.nodes = *n;
    c.nodes_at_least_minimum = true;
    d.set_origin(DraftField::kNodes, "NNODES", {"environment NNODES", 0, 0});
  }
  return c;
}

}  // namespace projector::frontend_detail
