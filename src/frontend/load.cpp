// load_job: experiment -> trainer namespace -> back-end adapter -> draft -> overrides -> job.
#include <fmt/format.h>

#include <filesystem>

#include "frontend/primus/overrides.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/builder.h"
#include "projector/job/spec.h"

namespace projector {
namespace {

std::string model_name(const ResolvedConfig& config) {
  if (config.model_preset_path.empty()) return "(inline)";
  std::string name = std::filesystem::path(config.model_preset_path).filename().string();
  if (name.ends_with(".yaml")) name.resize(name.size() - 5);
  return name;
}

}  // namespace

JobDraft build_job_draft(const ResolvedConfig& config, const LoadRequest& request) {
  const AdapterRegistry& registry =
      request.adapters != nullptr ? *request.adapters : builtin_adapters();
  const BackendAdapter* adapter = registry.find(config.framework);
  if (adapter == nullptr) {
    throw InputError({config.source, 0, 0}, "framework",
                     fmt::format("no back-end adapter '{}' registered", config.framework));
  }
  const std::string data_dir = request.data_dir.empty() ? default_data_dir() : request.data_dir;
  // Only the profile the adapter names is read (process start-up, issue 29).
  const std::string_view profile_name = adapter->profile(config.primus_experiment);
  AdapterInput in;
  in.profile = load_named_framework_profile(data_dir, profile_name);
  in.args = config.args;
  in.user_keys = config.user_keys;
  in.source = config.source;
  in.model_name = model_name(config);
  in.data_dir = data_dir;
  in.backend_path = request.backend_path;
  in.framework_version = request.framework_version;
  if (in.backend_path.empty() && request.env) {
    if (auto p = request.env("BACKEND_PATH")) in.backend_path = *p;
  }
  in.primus_path = request.primus_path;
  if (in.primus_path.empty() && request.env) {
    if (auto p = request.env("PRIMUS_PATH")) in.primus_path = *p;
  }
  in.module_preset =
      config.module_preset_path.empty() ? config.bundled_preset_path : config.module_preset_path;
  in.env = request.env;
  in.defaults = config.defaults;
  in.warnings = config.warnings;
  in.strict_keys = request.strict_keys;
  JobDraft draft = adapter->normalize(in);
  frontend_detail::apply_overrides(request, draft);
  return draft;
}

JobSpec build_job_spec(const ResolvedConfig& config, const LoadRequest& request) {
  JobDraft draft = build_job_draft(config, request);
  const ClusterRequest cluster = frontend_detail::cluster_request(request, draft);
  return finalize_job(draft, cluster);
}

JobSpec load_job(const LoadRequest& request) {
  return build_job_spec(resolve_config(request), request);
}

}  // namespace projector
