// Recompute choices of a re-layout (job/recompute.h).
#include "projector/job/recompute.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace projector {
namespace {

// The positive count after `prefix` ("block4" -> 4); nullopt when the rest is not one.
std::optional<int> count_after(std::string_view text, std::string_view prefix) {
  if (text.size() <= prefix.size() || text.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::string_view digits = text.substr(prefix.size());
  int v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc{} || end != digits.data() + digits.size() || v < 1) return std::nullopt;
  return v;
}

}  // namespace

std::string to_string(const RecomputeChoice& c) {
  switch (c.kind) {
    case RecomputeKind::kNone:
      return "none";
    case RecomputeKind::kSelective:
      return "selective";
    case RecomputeKind::kFull:
      return "full";
    case RecomputeKind::kFullBlock:
      return fmt::format("block{}", c.num_layers);
    case RecomputeKind::kOpPolicy:
      return "op";
    case RecomputeKind::kEveryN:
      return fmt::format("every{}", c.num_layers);
    case RecomputeKind::kTensorPolicy:
      return c.tensors == nullptr ? std::string("remat:base")
                                  : fmt::format("remat:{}", c.tensors->name);
  }
  return "none";
}

const NamedTensorPolicy* find_tensor_policy(std::span<const NamedTensorPolicy> named,
                                            std::string_view name) {
  const auto it = std::find_if(named.begin(), named.end(),
                               [name](const NamedTensorPolicy& p) { return p.name == name; });
  return it == named.end() ? nullptr : &*it;
}

std::optional<RecomputeChoice> parse_recompute_choice(std::string_view t,
                                                      std::span<const NamedTensorPolicy> named) {
  if (t == "none") return RecomputeChoice{RecomputeKind::kNone};
  if (t == "selective") return RecomputeChoice{RecomputeKind::kSelective};
  if (t == "full") return RecomputeChoice{RecomputeKind::kFull};
  if (t == "op") return RecomputeChoice{RecomputeKind::kOpPolicy};
  if (const auto n = count_after(t, "block")) return RecomputeChoice{RecomputeKind::kFullBlock, *n};
  if (const auto n = count_after(t, "every")) return RecomputeChoice{RecomputeKind::kEveryN, *n};
  if (t == "remat:base") return RecomputeChoice{RecomputeKind::kTensorPolicy};
  if (t.substr(0, 6) == "remat:") {
    if (const NamedTensorPolicy* p = find_tensor_policy(named, t.substr(6))) {
      return RecomputeChoice{RecomputeKind::kTensorPolicy, 0, p};
    }
  }
  return std::nullopt;
}

bool checkpoints_whole_layers(const RecomputeChoice& c) {
  return c.kind == RecomputeKind::kFull || c.kind == RecomputeKind::kFullBlock ||
         c.kind == RecomputeKind::kEveryN;
}

void apply_recompute(JobSpec& job, const RecomputeChoice& c) {
  RecomputeSpec& rc = job.runtime.recompute;
  rc.layer_ids.clear();
  rc.modules.clear();
  rc.method = RecomputeMethod::kUniform;
  rc.num_layers = 0;
  switch (c.kind) {
    case RecomputeKind::kNone:
      rc.granularity = RecomputeGranularity::kNone;
      break;
    case RecomputeKind::kSelective:
      rc.granularity = RecomputeGranularity::kSelective;
      rc.modules = job.runtime.selective_default;
      break;
    case RecomputeKind::kFull:
      rc.granularity = RecomputeGranularity::kFull;
      rc.num_layers = 1;
      break;
    case RecomputeKind::kFullBlock:
      rc.granularity = RecomputeGranularity::kFull;
      rc.method = RecomputeMethod::kBlock;
      rc.num_layers = c.num_layers;
      break;
    case RecomputeKind::kOpPolicy:
      rc.granularity = RecomputeGranularity::kOpPolicy;
      rc.memory_budget = -1.0;
      break;
    case RecomputeKind::kEveryN:
      rc.granularity = RecomputeGranularity::kNone;
      for (int i = 0; i < job.model.num_layers(); ++i) {
        if ((i + 1) % std::max(1, c.num_layers) == 0) rc.layer_ids.push_back(i);
      }
      break;
    case RecomputeKind::kTensorPolicy:
      rc.granularity = RecomputeGranularity::kTensors;
      if (c.tensors != nullptr) rc.tensors = c.tensors->policy;
      break;
  }
}

}  // namespace projector
