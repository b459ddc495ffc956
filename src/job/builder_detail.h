// Internal to job: the job builder's steps share one Builder (builder.cpp: sizes, DP, rules and
// their messages; builder_cluster.cpp: hardware, nodes, device mesh; builder_batches.cpp: MBS,
// GBS, sequence, accumulation; builder_stages.cpp: VPP, stages, schedule;
// builder_defaults.cpp: the framework profile's parallel and runtime defaults).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "projector/job/builder.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/model/bounds.h"
#include "projector/schedule/schedule.h"

namespace projector::job_detail {

// "--hardware", "environment PRIMUS_GPU_ARCH", "exp.yaml:12 (gpu_arch)": where a value was stated.
inline std::string origin_text(const SourceLocation& where, const std::string& key) {
  if (where.file.empty()) return "stated";
  if (where.line > 0) return fmt::format("{}:{} ({})", where.file, where.line, key);
  return where.file;
}

inline std::string show(bool v) {
  return v ? "true" : "false";
}
inline std::string show(int v) {
  return fmt::format("{}", v);
}
inline std::string show(double v) {
  return fmt::format("{}", v);
}
inline std::string show(Dtype v) {
  return std::string(to_string(v));
}
inline std::string show(Fp8Recipe v) {
  return std::string(to_string(v));
}
inline std::string show(FsdpKind v) {
  return std::string(to_string(v));
}
inline std::string show(const RecomputeModules& v) {
  return fmt::format("[{}]", fmt::join(v.names(), ", "));
}

inline bool has_moe(const ModelSpec& m) {
  return std::any_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return l.is_moe; });
}

// The schedule module's selection rule for `auto`.
inline schedule::ScheduleSelection auto_schedule(int pp, int vpp) {
  return schedule::select_schedule(ScheduleKind::kAuto, pp, vpp, false);
}

class Builder {
 public:
  explicit Builder(const JobDraft& d) : d_(d) {
    job_.source = d.source;
    job_.model = d.model;
    job_.parallel = d.parallel;
    job_.runtime = d.runtime;
    job_.defaults = d.defaults;
    job_.warnings = d.warnings;
  }

  JobSpec build(const ClusterRequest& request) {
    model_bounds();
    sizes();
    cluster(request);
    mesh_layout(request);
    expert_tensor_parallel();
    data_parallel();
    batches();
    virtual_stages();
    schedule_choice();
    if (job_.model.family == ModelFamily::kRecommendation) {
      recommendation();  // the LLM behaviour defaults do not apply
    } else {
      parallel_defaults();
      runtime_defaults();
    }
    // The split policy the rules read (job/rules.h rule_facts), kept for re-layouts of the job.
    job_.parallel.uneven_layers_allowed = d_.layer_split.allow_uneven;
    job_.parallel.stages_stated = d_.layer_split.kind != LayerSplit::Kind::kBalanced ||
                                  d_.layer_split.embedding_in_split || d_.layer_split.loss_in_split;
    check_rules();
    return std::move(job_);
  }

 private:
  [[noreturn]] void fail(LayoutRule rule, DraftField f, const std::string& message) const {
    const FieldOrigin& o = d_.origin(f);
    SourceLocation where = o.where;
    if (where.file.empty() && where.line == 0) where.file = d_.source;
    throw JobRuleError(rule, f, std::move(where), d_.key(f), message);
  }
  // `flag` when the command line stated it (a layout flag the user just typed is what to blame),
  // else `otherwise`.
  DraftField flag_or(DraftField flag, DraftField otherwise) const {
    const std::string& file = d_.origin(flag).where.file;
    return file.rfind("--", 0) == 0 ? flag : otherwise;
  }
  void record(DraftField f, std::string value, std::string reason, bool from_profile = false) {
    job_.defaults.push_back(
        {d_.key(f), std::move(value), std::move(reason), from_profile ? d_.profile.name : ""});
  }
  // The stated value, else the profile's (recorded), else `fallback` (recorded as unset).
  template <typename T>
  T decide(DraftField f, const std::optional<T>& stated, const ProfileDefault<T>& def, T fallback) {
    if (stated) return *stated;
    if (def.value) {
      record(f, show(*def.value), def.source, true);
      return *def.value;
    }
    record(f, show(fallback), fmt::format("{} has no default", d_.profile.name), true);
    return fallback;
  }
  // The stated value, else the profile's rule for this layout (recorded). `rule` keeps what decided
  // it (a stated value as kAlways / kNever) for a later re-layout (job/layout.h relayout).
  bool decide_when(DraftField f, const std::optional<bool>& stated,
                   const ProfileDefault<WhenRule>& def, WhenRule& rule) {
    if (stated) {
      rule = *stated ? WhenRule::kAlways : WhenRule::kNever;
      return *stated;
    }
    rule = def.value.value_or(WhenRule::kNever);
    const bool v = job_.parallel.applies(rule);
    record(f, show(v),
           def.value ? fmt::format("{} ({})", to_string(*def.value), def.source)
                     : fmt::format("{} has no default", d_.profile.name),
           true);
    return v;
  }

  int size_or(DraftField f, const std::optional<int>& v, int fallback, const char* reason,
              std::int64_t max_value) {
    if (!v) {
      if (reason != nullptr) record(f, show(fallback), reason);
      return fallback;
    }
    if (*v < 1 || *v > max_value) {
      fail(LayoutRule::kSizes, f,
           fmt::format("must be a positive integer up to {}, got {}", max_value, *v));
    }
    return *v;
  }
  // A bound broken by a value of the model or the batches: named by the adapter's key and line
  // when the input stated it, else by the input file.
  [[noreturn]] void fail_bound(const BoundViolation& v, DraftField fallback) const;

  void model_bounds();
  // A catalogue error that names no file, placed where the name was given (else the input).
  InputError located(const InputError& e, SourceLocation where) const {
    if (!e.where().file.empty()) return e;
    if (where.file.empty()) where.file = d_.source;
    return InputError(std::move(where), e.key(), e.message());
  }
  void sizes();
  std::int64_t group_size(DraftField f, const char* what,
                          std::initializer_list<std::int64_t> sizes) const;
  void cluster(const ClusterRequest& request);
  void load_hardware(const ClusterRequest& request);
  std::int64_t mesh_min_world() const;
  std::int64_t world_lcm(std::int64_t a, std::int64_t b, DraftField f) const;
  void mesh_layout(const ClusterRequest& request);
  void experts_on_fsdp(std::int64_t fsdp_shards);
  void override_mesh_axes(std::vector<MeshAxis>& mesh) const;
  int mesh_slices(const ClusterRequest& request);
  void mesh_torus(const ClusterRequest& request, std::vector<MeshAxis>& mesh, int slices);
  void per_device_batches();
  void expert_tensor_parallel();
  void data_parallel();
  void batches();
  void micro_batch_size();
  void sequence_length();
  void global_batch_size();
  void accumulation_rounds();
  int derived_batch(std::int64_t gbs, const char* what) const {
    if (gbs > kMaxGlobalBatch) {
      fail(LayoutRule::kSizes, DraftField::kGlobalBatchSize,
           fmt::format("not stated, and {} = {} is more than the {} sequences this tool models",
                       what, gbs, kMaxGlobalBatch));
    }
    return static_cast<int>(gbs);
  }
  void virtual_stages();
  int derived_vpp();
  void stated_stages(const std::vector<StatedStage>& stages);
  void first_last_stages();
  void stages_from_ranks(const std::vector<int>& per_rank, int less_first, int less_last);
  void balanced_split();
  void weighted_split();
  void schedule_choice();
  void parallel_defaults();
  void fp8_attention_check();
  void recurrent_kernel_check();
  void runtime_defaults();
  void fp8_param_default();
  void host_dispatch_defaults();
  void allocator_defaults();
  void recommendation();
  void check_rules() const;
  std::string rule_message(LayoutRule rule) const;

  const JobDraft& d_;
  JobSpec job_;
  std::int64_t world_ = 0;
  std::vector<int> etp_choices_;  // in order of preference (one when stated)
  // What a device mesh implies when the draft does not state it otherwise.
  std::optional<FsdpKind> mesh_fsdp_;
  std::optional<bool> mesh_sequence_parallel_;
};

}  // namespace projector::job_detail
