// A run described by its framework config alone (`description: config`, docs/validation.md
// "Runs described by their config"): the measurement was published as a comment in the config,
// so the config is the run's reading; the regime labels the free-text mapper would take from the
// entry come from the loaded job instead.
#include <fmt/format.h>

#include <algorithm>

#include "projector/frontend/loader.h"
#include "projector/util/error.h"
#include "validate/mapper.h"
#include "validate/run_config.h"

namespace projector::validate_detail {
namespace {

bool any_moe_layer(const ModelSpec& model) {
  return std::any_of(model.layers.begin(), model.layers.end(),
                     [](const LayerSpec& l) { return l.is_moe; });
}

}  // namespace

MappedRun map_config_run(const RunEntry& e, MappingCatalogue& catalogue) {
  MappedRun out;
  out.id = e.id;
  if (!e.config) {
    out.reason = "description: config without a config";
    return out;
  }
  JobDraft draft;
  const FrameworkProfile* profile = catalogue.profiles().match(e.framework);
  if (profile == nullptr) profile = catalogue.profiles().find("unknown");
  if (profile != nullptr) {
    draft.profile = *profile;
    out.framework = profile->name;
    out.backend = profile->backend;
  }
  Mapper m(e, out, draft);
  m.note(fmt::format("described by its config {} (the run's only description)", e.config->path));
  try {
    out.job = load_job(load_request_of(*e.config, catalogue.data_dir()));
  } catch (const InputError& ex) {
    out.reason = fmt::format("config {}: {}", e.config->path, ex.what());
    return out;
  }
  for (const AppliedDefault& a : out.job.defaults) {
    out.assumptions.push_back(fmt::format("{} = {} ({}{})", a.key, a.value,
                                          a.source.empty() ? "" : a.source + ": ", a.reason));
  }
  for (const std::string& w : out.job.warnings) out.assumptions.push_back("config: " + w);
  out.accelerator_family = accelerator_family(out.job.cluster.accelerator, e.hardware.accelerator);
  const int per_chip = std::max(1, out.job.cluster.devices_per_chip);
  out.num_gpus = static_cast<int>(out.job.cluster.world_size() / per_chip);
  out.moe = any_moe_layer(out.job.model);
  out.fp8 = out.job.runtime.precision.fp8 != Fp8Recipe::kNone;
  out.flop_convention = read_convention(m, e.measured.flop_counting);
  out.mapped = true;
  return out;
}

}  // namespace projector::validate_detail
