// Loading framework profiles (job/profile.h) from data/frameworks/*.yaml.
#include "projector/job/profile.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "job/recsys_profile_read.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"
#include "projector/util/text.h"

namespace projector {
namespace {

namespace fs = std::filesystem;

struct Reader {
  std::string file;

  [[noreturn]] void fail(const YAML::Node& n, const std::string& key,
                         const std::string& message) const {
    const int line = n.IsDefined() && n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
    throw InputError({file, line, 0}, key, message);
  }
  std::string text(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, key, "expected text");
    return n.Scalar();
  }
  bool boolean(const YAML::Node& n, const std::string& key) const {
    bool b = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b)) fail(n, key, "expected true or false");
    return b;
  }
  int integer(const YAML::Node& n, const std::string& key) const {
    int v = 0;
    if (!n.IsScalar() || !YAML::convert<int>::decode(n, v) || v < 1) {
      fail(n, key, "expected a positive integer");
    }
    return v;
  }
  double number(const YAML::Node& n, const std::string& key) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || v < 0) {
      fail(n, key, "expected a non-negative number");
    }
    return v;
  }
  template <typename E, std::size_t N>
  E choice(const YAML::Node& n, const std::string& key,
           const std::pair<const char*, E> (&names)[N]) const {
    const std::string t = to_lower(text(n, key));
    for (const auto& [name, value] : names) {
      if (t == name) return value;
    }
    std::string list;
    for (const auto& [name, value] : names) list += (list.empty() ? "" : ", ") + std::string(name);
    fail(n, key, fmt::format("unknown value '{}' ({})", t, list));
  }
};

constexpr std::pair<const char*, WhenRule> kWhen[] = {
    {"false", WhenRule::kNever},
    {"true", WhenRule::kAlways},
    {"with_tp", WhenRule::kWithTp},
    {"with_distributed_optimizer", WhenRule::kWithDistributedOptimizer},
    {"with_sequence_parallel", WhenRule::kWithSequenceParallel},
    {"without_pp", WhenRule::kWithoutPp},
    {"with_vpp", WhenRule::kWithVpp}};
constexpr std::pair<const char*, AttentionKernel> kKernels[] = {{"fused", AttentionKernel::kFused},
                                                                {"fa2", AttentionKernel::kFa2}};
constexpr std::pair<const char*, Fp8Recipe> kRecipes[] = {
    {"delayed", Fp8Recipe::kDelayed},     {"tensorwise", Fp8Recipe::kTensorwise},
    {"blockwise", Fp8Recipe::kBlockwise}, {"mxfp8", Fp8Recipe::kMxfp8},
    {"rowwise", Fp8Recipe::kRowwise},     {"rowwise_with_gw_hp", Fp8Recipe::kRowwiseHpWgrad}};
constexpr std::pair<const char*, Dtype> kGradDtypes[] = {{"fp32", Dtype::kFp32},
                                                         {"bf16", Dtype::kBf16}};
constexpr std::pair<const char*, FsdpKind> kFsdp[] = {
    {"none", FsdpKind::kNone}, {"fsdp2", FsdpKind::kFsdp2}, {"zero3", FsdpKind::kZero3}};
constexpr std::pair<const char*, MicrobatchRule> kMicrobatch[] = {
    {"global_batch", MicrobatchRule::kGlobalBatch},
    {"local_batch", MicrobatchRule::kLocalBatch},
    {"per_device_batch", MicrobatchRule::kPerDeviceBatch}};
constexpr std::pair<const char*, NormKind> kNorms[] = {{"layernorm", NormKind::kLayerNorm},
                                                       {"rmsnorm", NormKind::kRmsNorm}};
constexpr std::pair<const char*, PositionEmbeddingKind> kPositions[] = {
    {"learned_absolute", PositionEmbeddingKind::kLearnedAbsolute},
    {"rope", PositionEmbeddingKind::kRope},
    {"none", PositionEmbeddingKind::kNone}};
constexpr std::pair<const char*, FlopCounting> kFlops[] = {{"model", FlopCounting::kModel},
                                                           {"hardware", FlopCounting::kHardware}};

RecomputeModules read_modules(const Reader& r, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence()) r.fail(n, key, "expected a list of recompute modules");
  RecomputeModules out;
  for (const YAML::Node& item : n) {
    const std::optional<RecomputeModule> m = parse_recompute_module(r.text(item, key));
    if (!m) r.fail(item, key, fmt::format("unknown recompute module '{}'", item.Scalar()));
    out.add(*m);
  }
  return out;
}

std::vector<EtpChoice> read_etp(const Reader& r, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence() || n.size() == 0) r.fail(n, key, "expected a list such as [tp, 1]");
  std::vector<EtpChoice> out;
  for (const YAML::Node& item : n) {
    if (item.IsScalar() && to_lower(item.Scalar()) == "tp") {
      out.push_back({true, 1});
    } else {
      out.push_back({false, r.integer(item, key)});
    }
  }
  return out;
}

// Reads `{value, source}` into `out`; a null value means "no default".
template <typename T, typename Read>
void read_default(const Reader& r, const YAML::Node& entry, const std::string& key,
                  ProfileDefault<T>& out, Read read) {
  if (!entry.IsMap()) r.fail(entry, key, "expected {value: ..., source: ...}");
  for (const auto& kv : entry) {
    const std::string k = kv.first.Scalar();
    if (k != "value" && k != "source") r.fail(kv.first, key + "." + k, "unknown key");
  }
  const YAML::Node source = entry["source"];
  if (!source.IsDefined() || !source.IsScalar() || source.Scalar().empty()) {
    r.fail(entry, key + ".source", "every profile value needs a source");
  }
  out.source = source.Scalar();
  const YAML::Node value = entry["value"];
  if (!value.IsDefined()) r.fail(entry, key + ".value", "missing");
  if (value.IsNull()) {
    out.value.reset();
  } else {
    out.value = read(value, key + ".value");
  }
}

void read_defaults(const Reader& r, const YAML::Node& defaults, FrameworkProfile& p) {
  using Fn = std::function<void(const YAML::Node&, const std::string&)>;
  auto b = [&](ProfileDefault<bool>& d) -> Fn {
    return [&r, &d](const YAML::Node& e, const std::string& k) {
      read_default(r, e, k, d,
                   [&](const YAML::Node& v, const std::string& kk) { return r.boolean(v, kk); });
    };
  };
  auto i = [&](ProfileDefault<int>& d) -> Fn {
    return [&r, &d](const YAML::Node& e, const std::string& k) {
      read_default(r, e, k, d,
                   [&](const YAML::Node& v, const std::string& kk) { return r.integer(v, kk); });
    };
  };
  // A host issue cost in microseconds: non-negative and below 10 ms.
  auto host_us = [&](ProfileDefault<double>& d) -> Fn {
    return [&r, &d](const YAML::Node& e, const std::string& k) {
      read_default(r, e, k, d, [&](const YAML::Node& v, const std::string& kk) {
        const double us = r.number(v, kk);
        if (us < 0.0 || us >= 1e4) r.fail(v, kk, "expected microseconds in [0, 10000)");
        return us;
      });
    };
  };
  auto c = [&](auto& d, const auto& names) -> Fn {
    return [&r, &d, &names](const YAML::Node& e, const std::string& k) {
      read_default(r, e, k, d, [&](const YAML::Node& v, const std::string& kk) {
        return r.choice(v, kk, names);
      });
    };
  };
  const std::pair<const char*, Fn> fields[] = {
      {"distributed_optimizer", b(p.distributed_optimizer)},
      {"sequence_parallel", c(p.sequence_parallel, kWhen)},
      {"overlap_grad_reduce", b(p.overlap_grad_reduce)},
      {"overlap_param_gather", c(p.overlap_param_gather, kWhen)},
      {"tp_comm_overlap", c(p.tp_comm_overlap, kWhen)},
      {"p2p_overlap", c(p.p2p_overlap, kWhen)},
      {"flash_attention", b(p.flash_attention)},
      {"attention_kernel", c(p.attention_kernel, kKernels)},
      {"fp8_recipe", c(p.fp8_recipe, kRecipes)},
      {"fp8_param_gather",
       [&](const YAML::Node& e, const std::string& k) {
         read_default(r, e, k, p.fp8_param_gather, [&](const YAML::Node& v, const std::string& kk) {
           if (!v.IsSequence()) r.fail(v, kk, "expected a list of FP8 recipes, e.g. [delayed]");
           std::vector<Fp8Recipe> out;
           for (const YAML::Node& item : v) out.push_back(r.choice(item, kk, kRecipes));
           return out;
         });
       }},
      {"grad_reduce_dtype", c(p.grad_reduce_dtype, kGradDtypes)},
      {"fsdp", c(p.fsdp, kFsdp)},
      {"vocab_padding", i(p.vocab_padding)},
      {"dropout",
       [&](const YAML::Node& e, const std::string& k) {
         read_default(r, e, k, p.dropout,
                      [&](const YAML::Node& v, const std::string& kk) { return r.number(v, kk); });
       }},
      {"norm", c(p.norm, kNorms)},
      {"position_embedding", c(p.position_embedding, kPositions)},
      {"tied_embeddings", b(p.tied_embeddings)},
      {"kernel_gap_fraction",
       [&](const YAML::Node& e, const std::string& k) {
         read_default(r, e, k, p.kernel_gap_fraction,
                      [&](const YAML::Node& v, const std::string& kk) {
                        const double g = r.number(v, kk);
                        if (g < 0.0 || g >= 0.9) r.fail(v, kk, "expected a fraction in [0, 0.9)");
                        return g;
                      });
       }},
      {"host_op_us", host_us(p.host_op_us)},
      {"host_module_us", host_us(p.host_module_us)},
      {"host_launch_us", host_us(p.host_launch_us)},
      {"kv_heads_padded", b(p.kv_heads_padded)},
      {"ddp_bucket_min_params", i(p.ddp_bucket_min_params)},
      {"ddp_bucket_params_per_dp", i(p.ddp_bucket_params_per_dp)},
      {"selective_recompute",
       [&](const YAML::Node& e, const std::string& k) {
         read_default(
             r, e, k, p.selective_recompute,
             [&](const YAML::Node& v, const std::string& kk) { return read_modules(r, v, kk); });
       }},
      {"loss_grad_in_place", b(p.loss_grad_in_place)},
      {"expandable_segments", b(p.expandable_segments)},
      {"moe_probs_in_experts", b(p.moe_probs_in_experts)},
      {"deepep_num_sms", i(p.deepep_num_sms)},
      {"hybridep_num_sms", i(p.hybridep_num_sms)},
      {"microbatch_rule", c(p.microbatch_rule, kMicrobatch)},
      {"flop_counting", c(p.flop_counting, kFlops)},
      {"expert_tensor_parallel",
       [&](const YAML::Node& e, const std::string& k) {
         read_default(
             r, e, k, p.expert_tensor_parallel,
             [&](const YAML::Node& v, const std::string& kk) { return read_etp(r, v, kk); });
       }},
      {"micro_batch_size", i(p.micro_batch_size)},
      {"global_batch_size", i(p.global_batch_size)},
      {"seq_length", i(p.seq_length)},
      {"accelerator",
       [&](const YAML::Node& e, const std::string& k) {
         read_default(r, e, k, p.accelerator,
                      [&](const YAML::Node& v, const std::string& kk) { return r.text(v, kk); });
       }},
  };
  if (!defaults.IsMap()) r.fail(defaults, "defaults", "expected a mapping");
  for (const auto& kv : defaults) {
    const std::string key = kv.first.Scalar();
    const auto it = std::find_if(std::begin(fields), std::end(fields),
                                 [&](const auto& f) { return key == f.first; });
    if (it == std::end(fields)) r.fail(kv.first, "defaults." + key, "unknown profile value");
    it->second(kv.second, "defaults." + key);
  }
}

// A count of host calls: a non-negative number below a million.
double calls(const Reader& r, const YAML::Node& n, const std::string& key) {
  const double v = r.number(n, key);
  if (v >= 1e6) r.fail(n, key, "expected a count of calls below 1e6");
  return v;
}

HostTransferCalls read_transfer(const Reader& r, const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence() || n.size() != 2) r.fail(n, key, "expected [forward, backward] calls");
  return {calls(r, n[0], key), calls(r, n[1], key)};
}

HostCensusOp read_census_op(const Reader& r, const std::string& name, const YAML::Node& n,
                            const std::string& key) {
  if (!n.IsMap()) r.fail(n, key, "expected {ops, modules, per_expert}");
  HostCensusOp op{name};
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();
    if (k == "ops") {
      op.ops = calls(r, kv.second, key + ".ops");
    } else if (k == "modules") {
      op.modules = calls(r, kv.second, key + ".modules");
    } else if (k == "per_expert" && kv.second.IsSequence()) {
      for (const YAML::Node& e : kv.second) {
        const std::string what = to_lower(r.text(e, key + ".per_expert"));
        if (what != "launch" && what != "hook") {
          r.fail(e, key + ".per_expert", "expected launch or hook");
        }
        (what == "launch" ? op.launch_per_expert : op.hook_per_expert) = true;
      }
    } else {
      r.fail(kv.first, key + "." + k, "unknown key (ops, modules, per_expert: [launch, hook])");
    }
  }
  return op;
}

// `host_census:` {source, ops: {name: {ops, modules, per_expert}}, transfers: {...}}.
std::shared_ptr<const HostCensus> read_host_census(const Reader& r, const YAML::Node& n) {
  if (!n.IsMap()) r.fail(n, "host_census", "expected {source, ops, transfers}");
  auto c = std::make_shared<HostCensus>();
  const std::pair<const char*, HostTransferCalls HostCensus::*> transfers[] = {
      {"alltoall_dispatch", &HostCensus::alltoall_dispatch},
      {"alltoall_combine", &HostCensus::alltoall_combine},
      {"flex_dispatch", &HostCensus::flex_dispatch},
      {"flex_combine", &HostCensus::flex_combine},
      {"deepep_multihot", &HostCensus::deepep_multihot}};
  for (const auto& kv : n) {
    const std::string k = kv.first.Scalar();
    if (k == "source") {
      c->source = r.text(kv.second, "host_census.source");
    } else if (k == "ops" && kv.second.IsMap()) {
      for (const auto& op : kv.second) {
        const std::string name = op.first.Scalar();
        c->moe_ops.push_back(read_census_op(r, name, op.second, "host_census.ops." + name));
      }
    } else if (k == "transfers" && kv.second.IsMap()) {
      for (const auto& t : kv.second) {
        const std::string name = t.first.Scalar();
        const auto it = std::find_if(std::begin(transfers), std::end(transfers),
                                     [&](const auto& e) { return name == e.first; });
        if (it == std::end(transfers)) {
          r.fail(t.first, "host_census.transfers." + name,
                 "unknown transfer (alltoall_dispatch, alltoall_combine, flex_dispatch, "
                 "flex_combine, deepep_multihot)");
        }
        (*c).*(it->second) = read_transfer(r, t.second, "host_census.transfers." + name);
      }
    } else if (k == "ops" || k == "transfers") {
      r.fail(kv.second, "host_census." + k, "expected a mapping");
    } else {
      r.fail(kv.first, "host_census." + k, "unknown key (source, ops, transfers)");
    }
  }
  if (c->source.empty()) r.fail(n, "host_census.source", "every profile value needs a source");
  return c;
}

YAML::Node load_file(const std::string& path) {
  const std::string text = read_input_file(path);
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& ex) {
    throw InputError({path, ex.mark.line + 1, ex.mark.column + 1}, "", ex.msg);
  }
}

FrameworkProfile load_profile(const std::string& path, int depth) {
  const Reader r{path};
  const YAML::Node root = load_file(path);
  if (!root.IsMap()) r.fail(root, "", "a framework profile is a mapping");
  FrameworkProfile p;
  const std::string stem = fs::path(path).stem().string();
  if (const YAML::Node parent = root["extends"]; parent.IsDefined() && !parent.IsNull()) {
    if (depth > 8) r.fail(parent, "extends", "too deep (a cycle?)");
    const fs::path parent_path =
        fs::path(path).parent_path() / (r.text(parent, "extends") + ".yaml");
    std::error_code ec;
    if (!fs::is_regular_file(parent_path, ec)) {
      r.fail(parent, "extends", fmt::format("no profile '{}'", parent.Scalar()));
    }
    p = load_profile(parent_path.string(), depth + 1);
    p.match.clear();
    p.notes.clear();
  }
  p.name = stem;
  p.file = path;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "name") {
      if (r.text(v, key) != stem)
        r.fail(v, key, fmt::format("must equal the file name '{}'", stem));
    } else if (key == "title") {
      p.title = r.text(v, key);
    } else if (key == "backend") {
      p.backend = r.text(v, key);
    } else if (key == "match") {
      if (!v.IsSequence()) r.fail(v, key, "expected a list of keywords");
      for (const YAML::Node& m : v) p.match.push_back(to_lower(r.text(m, key)));
    } else if (key == "defaults") {
      read_defaults(r, v, p);
    } else if (key == "host_census") {
      p.host_census = read_host_census(r, v);
    } else if (key == "recsys") {
      job_detail::read_recsys_profile(path, v, p.recsys);
    } else if (key == "notes") {
      if (!v.IsSequence()) r.fail(v, key, "expected a list of notes");
      for (const YAML::Node& n : v) {
        p.notes.push_back(r.text(n, key));
        if (p.notes.back().empty()) r.fail(n, key, "a note is not empty");
      }
    } else if (key != "extends") {
      r.fail(kv.first, key,
             "unknown key (name, title, backend, extends, match, notes, defaults, host_census, "
             "recsys)");
    }
  }
  if (p.backend.empty()) r.fail(root, "backend", "required");
  return p;
}

}  // namespace

std::string_view to_string(WhenRule w) {
  for (const auto& [name, value] : kWhen) {
    if (value == w) return name;
  }
  return "?";
}

std::string_view to_string(MicrobatchRule m) {
  for (const auto& [name, value] : kMicrobatch) {
    if (value == m) return name;
  }
  return "?";
}

ProfileCatalog::ProfileCatalog(std::vector<FrameworkProfile> profiles)
    : profiles_(std::move(profiles)) {}

const FrameworkProfile* ProfileCatalog::find(std::string_view name) const {
  const std::string n = to_lower(name);
  for (const FrameworkProfile& p : profiles_) {
    if (p.name == n) return &p;
  }
  return nullptr;
}

const FrameworkProfile* ProfileCatalog::match(std::string_view text) const {
  const std::string t = to_lower(text);
  const FrameworkProfile* best = nullptr;
  std::size_t best_pos = std::string::npos;
  std::size_t best_len = 0;
  for (const FrameworkProfile& p : profiles_) {
    for (const std::string& word : p.match) {
      const std::size_t pos = t.find(word);
      if (pos == std::string::npos) continue;
      if (pos < best_pos || (pos == best_pos && word.size() > best_len)) {
        best = &p;
        best_pos = pos;
        best_len = word.size();
      }
    }
  }
  return best;
}

std::vector<std::string> ProfileCatalog::names() const {
  std::vector<std::string> out;
  for (const FrameworkProfile& p : profiles_) out.push_back(p.name);
  return out;
}

FrameworkProfile load_framework_profile(const std::string& path) {
  return load_profile(path, 0);
}

FrameworkProfile load_named_framework_profile(const std::string& data_dir, std::string_view name) {
  const fs::path dir = fs::path(data_dir) / "frameworks";
  const std::string stem = to_lower(name);
  const bool plain = !stem.empty() && stem.find_first_of("/\\.") == std::string::npos;
  const fs::path file = dir / (stem + ".yaml");
  std::error_code ec;
  if (!plain || !fs::is_regular_file(file, ec)) {
    throw InputError({dir.string(), 0, 0}, "framework",
                     fmt::format("no framework profile '{}'", name));
  }
  return load_framework_profile(file.string());
}

ProfileCatalog load_framework_profiles(const std::string& data_dir) {
  const fs::path dir = fs::path(data_dir) / "frameworks";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError({dir.string(), 0, 0}, "", "no framework profiles (data/frameworks/)");
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<FrameworkProfile> profiles;
  for (const std::string& f : files) profiles.push_back(load_framework_profile(f));
  return ProfileCatalog(std::move(profiles));
}

}  // namespace projector
