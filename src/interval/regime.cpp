// The regime classifier: one key per built job, used by validate (to group residuals) and by
// every projecting command (to pick the residuals behind a range).
#include <fmt/format.h>

#include <algorithm>

#include "projector/cost/collective.h"
#include "projector/interval/interval.h"
#include "projector/job/spec.h"

namespace projector {

namespace {

std::string vendor_of(const AcceleratorSpec& acc) {
  if (acc.vendor == "NVIDIA") return "nvidia";
  if (acc.vendor == "AMD") return "amd";
  if (acc.vendor == "Google") return "tpu";
  return "other";
}

// The accelerator's generation, from its architecture: parts of one generation share the SM / CU
// design and the kernels the libraries ship for it (Hopper sm90; Blackwell sm100 / sm103; CDNA 3
// gfx942; ...), which is where op costs err alike. A TPU's architecture is its generation.
std::string generation_of(const AcceleratorSpec& acc) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"sm80", "ampere"},  {"sm90", "hopper"},  {"sm100", "blackwell"}, {"sm103", "blackwell"},
      {"gfx90a", "cdna2"}, {"gfx942", "cdna3"}, {"gfx950", "cdna4"}};
  for (const auto& [arch, name] : kNames) {
    if (acc.arch == arch) return name;
  }
  if (acc.arch.rfind("tpu", 0) == 0) {
    const std::string g = acc.arch.substr(3);
    return g.empty() || g[0] != '-' ? g : g.substr(1);
  }
  return acc.arch.empty() ? "unknown" : acc.arch;
}

// dense, moe, moe-ep or moe-ep-internode.
std::string transformer_model_of(const JobSpec& job) {
  const bool moe = std::any_of(job.model.layers.begin(), job.model.layers.end(),
                               [](const LayerSpec& l) { return l.is_moe; });
  if (!moe) return "dense";
  const ParallelSpec& p = job.parallel;
  if (p.ep <= 1) return "moe";
  const int etp = p.etp > 0 ? p.etp : p.tp;
  // The EP group spans nodes when its members (etp x ep consecutive ranks) outgrow the
  // collective model's node (a multi-host NVLink domain counts as one).
  const int node =
      collective_node_gpus(job.cluster.accelerator, job.cluster.network, job.cluster.gpus_per_node);
  return static_cast<std::int64_t>(p.ep) * etp > node ? "moe-ep-internode" : "moe-ep";
}

std::string model_of(const JobSpec& job) {
  if (job.model.family == ModelFamily::kRecommendation) return "recsys";
  // Hybrids with recurrent mixers (their scan kernels are a kernel class of their own).
  const bool recurrent = std::any_of(job.model.layers.begin(), job.model.layers.end(),
                                     [](const LayerSpec& l) { return l.has_recurrent_mixer(); });
  return recurrent ? "recurrent-" + transformer_model_of(job) : transformer_model_of(job);
}

std::string precision_of(const RuntimeSpec& rt) {
  if (rt.precision.fp4 != Fp4Recipe::kNone) return "fp4";
  if (rt.precision.fp8 != Fp8Recipe::kNone) return "fp8";
  return "bf16";
}

std::string scale_of(std::int64_t gpus) {
  if (gpus <= 64) return "gpus<=64";
  if (gpus <= 1024) return "gpus<=1024";
  return "gpus>1024";
}

}  // namespace

std::string regime_kernel_class(const std::string& regime_key) {
  // vendor / generation / model / ...
  const std::size_t a = regime_key.find('/');
  const std::size_t b = a == std::string::npos ? a : regime_key.find('/', a + 1);
  if (b == std::string::npos) return "transformer";
  const std::string model = regime_key.substr(b + 1, regime_key.find('/', b + 1) - b - 1);
  if (model == "recsys") return "recsys";
  return model.rfind("recurrent", 0) == 0 ? "recurrent" : "transformer";
}

Regime classify_regime(const JobSpec& job) {
  const std::string parts[] = {vendor_of(job.cluster.accelerator),
                               generation_of(job.cluster.accelerator),
                               model_of(job),
                               job.runtime.backend.empty() ? "unknown" : job.runtime.backend,
                               job.parallel.pp > 1 ? "pp" : "nopp",
                               precision_of(job.runtime),
                               scale_of(job.cluster.world_size())};
  Regime r;
  // Coarser levels drop the scale, the precision, the pipeline, the back-end, the model, the
  // generation.
  for (int n = 7; n >= 1; --n) {
    std::string level = parts[0];
    for (int i = 1; i < n; ++i) level += "/" + parts[i];
    r.levels.push_back(level);
  }
  r.levels.push_back("all");
  r.key = r.levels.front();
  return r;
}

}  // namespace projector
