// Memory remedies (memory/remedies.h): each candidate change is a job the builder's rules accept
// (job/rules.h), re-laid out as its framework would (job/layout.h relayout), and re-projected.
#include "memory/remedies.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "projector/job/layout.h"
#include "projector/job/recompute.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/schedule/schedule.h"

namespace projector::memory_detail {
namespace {

// The job with recompute choice `c`, as its framework applies it (job/recompute.h).
JobSpec with_recompute(const JobSpec& job, const RecomputeChoice& c) {
  JobSpec j = job;
  apply_recompute(j, c);
  return j;
}

// The largest micro batch below the job's that still divides each data-parallel rank's share of
// the global batch into whole accumulation rounds (torchtitan's local batch; 0: none).
int smaller_micro_batch(const JobSpec& job) {
  const int dp = std::max(1, job.dp());
  const int per_rank = job.runtime.global_batch_size / dp;
  const int rounds = std::max(1, job.runtime.accumulation_rounds);
  for (int m = job.runtime.micro_batch_size - 1; m >= 1; --m) {
    if (per_rank % m == 0 && (per_rank / m) % rounds == 0) return m;
  }
  return 0;
}

// MaxText's own knobs (docs/maxtext.md): the remat policy, the per-device batch with gradient
// accumulation (the global batch kept), optimizer state in host memory, a pipeline axis.
template <typename Attempt>
void add_maxtext_remedies(const JobSpec& job, const Attempt& attempt) {
  const RecomputeSpec& rc = job.runtime.recompute;
  const NamedTensorPolicy* full = find_tensor_policy(job.runtime.tensor_policies, "full");
  if (full != nullptr &&
      !(rc.granularity == RecomputeGranularity::kTensors && rc.tensors == full->policy)) {
    attempt("remat_policy: full", with_recompute(job, {RecomputeKind::kTensorPolicy, 0, full}));
  }
  if (const int mbs = smaller_micro_batch(job); mbs > 0) {
    JobSpec j = job;
    j.runtime.micro_batch_size = mbs;
    const int dp = std::max(1, job.dp());
    const int accumulation = job.runtime.global_batch_size / (j.runtime.micro_batch_size * dp);
    const double per_device = static_cast<double>(job.runtime.global_batch_size) /
                              (static_cast<double>(job.cluster.world_size()) * accumulation);
    attempt(fmt::format("per_device_batch_size: {:g}, gradient_accumulation_steps: {}", per_device,
                        accumulation),
            j);
  }
  if (!job.runtime.optimizer_host_offload) {
    JobSpec j = job;
    j.runtime.optimizer_host_offload = true;
    attempt("optimizer_memory_host_offload: true", j);
  }
  if (job.parallel.pp == 1 && job.dp() % 2 == 0) {
    JobSpec j = job;
    LayoutChoice deeper = layout_choice(job);
    deeper.pp = 2;
    relayout(j, deeper);
    attempt(fmt::format("{}_pipeline_parallelism: 2 (balanced layers)",
                        job.cluster.nodes > 1 ? "dcn" : "ici"),
            j);
  }
}

// torchtitan's own knobs (docs/torchtitan.md): its activation checkpointing modes (per-op
// selective, full), FSDP2 over the data-parallel ranks, a smaller local / pipeline microbatch,
// a deeper pipeline. No Megatron names: torchtitan has no distributed optimizer or core_attn set.
template <typename Attempt, typename Legal>
void add_torchtitan_remedies(const JobSpec& job, const Attempt& attempt, const Legal& legal) {
  const RecomputeSpec& rc = job.runtime.recompute;
  const ParallelSpec& p = job.parallel;
  if (rc.granularity == RecomputeGranularity::kNone) {
    attempt("activation_checkpoint.mode: selective, selective_ac_option: op",
            with_recompute(job, {RecomputeKind::kOpPolicy}));
  }
  if (rc.granularity != RecomputeGranularity::kFull) {
    attempt("activation_checkpoint.mode: full", with_recompute(job, {RecomputeKind::kFull}));
  }
  if (p.fsdp == FsdpKind::kNone && job.dp() * p.cp > 1) {
    JobSpec j = job;
    j.parallel.fsdp = FsdpKind::kFsdp2;
    j.parallel.dp_replicate = 1;
    attempt("parallelism.data_parallel_shard_degree: -1 (FSDP2 over the data-parallel ranks)", j);
  }
  if (const int mbs = smaller_micro_batch(job); mbs > 0) {
    JobSpec j = job;
    j.runtime.micro_batch_size = mbs;
    attempt(p.pp > 1 ? fmt::format("parallelism.pipeline_parallel_microbatch_size: {}", mbs)
                     : fmt::format("training.local_batch_size: {} (gradient accumulation keeps the "
                                   "global batch)",
                                   mbs),
            j);
  }
  LayoutChoice deeper = layout_choice(job);
  deeper.pp = 2 * p.pp;
  if (job.dp() % 2 == 0 && legal(deeper)) {
    JobSpec j = job;
    relayout(j, deeper);
    attempt(fmt::format("parallelism.pipeline_parallel_degree: {} (balanced layers, DP {})",
                        j.parallel.pp, j.dp()),
            j);
  }
}

// Megatron's knobs (the Megatron-family back-ends: Megatron-LM / Core, NeMo, Primus, DeepSpeed):
// selective / full recompute, the distributed optimizer, FSDP, sequence parallelism, a smaller
// micro batch, twice the pipeline stages.
template <typename Attempt, typename Legal>
void add_megatron_remedies(const JobSpec& job, const Attempt& attempt, const Legal& legal) {
  const ParallelSpec& p = job.parallel;
  const RecomputeSpec& rc = job.runtime.recompute;
  if (rc.granularity == RecomputeGranularity::kNone) {
    // The framework's selective set (its profile's selective_recompute), named as it is written.
    attempt(fmt::format("selective recompute ({})",
                        fmt::join(job.runtime.selective_default.names(), ", ")),
            with_recompute(job, {RecomputeKind::kSelective}));
  }
  if (!(rc.granularity == RecomputeGranularity::kFull && rc.method == RecomputeMethod::kUniform &&
        rc.num_layers <= 1)) {
    attempt("full recompute (uniform, 1 layer)", with_recompute(job, {RecomputeKind::kFull}));
  }
  if (!p.distributed_optimizer && p.fsdp == FsdpKind::kNone && job.dp() * p.cp > 1) {
    JobSpec j = job;
    j.parallel.distributed_optimizer = true;
    attempt("distributed optimizer", j);
  }
  if (p.fsdp == FsdpKind::kNone && job.dp() * p.cp > 1) {
    JobSpec j = job;
    j.parallel.fsdp = FsdpKind::kZero3;
    attempt("FSDP (params, grads and optimizer sharded)", j);
  }
  if (p.tp > 1 && !p.sequence_parallel) {
    JobSpec j = job;
    j.parallel.sequence_parallel = true;
    attempt("sequence parallel", j);
  }
  if (const int mbs = smaller_micro_batch(job); mbs > 0) {
    JobSpec j = job;
    j.runtime.micro_batch_size = mbs;
    attempt("micro batch size " + std::to_string(mbs), j);
  }
  // Twice the pipeline stages, balanced, when the rule set allows that layout.
  LayoutChoice deeper = layout_choice(job);
  deeper.pp = 2 * p.pp;
  if (job.dp() % 2 == 0 && legal(deeper)) {
    JobSpec j = job;
    relayout(j, deeper);
    attempt("pipeline parallel " + std::to_string(j.parallel.pp) + " (balanced layers, DP " +
                std::to_string(j.dp()) + ")",
            j);
  }
}

}  // namespace

void add_remedies(const JobSpec& job, const MemoryOptions& options, MemoryReport& report) {
  MemoryOptions inner = options;
  inner.suggest_remedies = false;
  // A remedy is only suggested when the changed job obeys the job builder's rule set: as built
  // while the stages stay, with the framework's balanced split once PP or VPP change.
  const RuleFacts same_stages = rule_facts(job, RulePurpose::kStated);
  const RuleFacts restaged = rule_facts(job, RulePurpose::kRestage);
  auto legal = [&](LayoutChoice c) {
    // Jobs built by hand may say auto: resolve it as the performance projection does.
    c.schedule = schedule::select_schedule(c.schedule, c.pp, c.vpp, false).algorithm;
    const bool restage = c.pp != job.parallel.pp || c.vpp != job.parallel.vpp;
    return check_layout(restage ? restaged : same_stages, c) == LayoutRule::kLegal;
  };
  // Only what lowers the peak by at least 1 % is worth a line.
  auto attempt = [&](std::string change, const JobSpec& changed) {
    if (!legal(layout_choice(changed))) return;
    const MemoryReport r = project_memory(changed, inner);
    if (r.peak_point_bytes >= 0.99 * report.peak_point_bytes) return;
    report.remedies.push_back(
        {std::move(change), r.peak_point_bytes, r.peak_upper_bytes, r.verdict});
  };
  if (job.runtime.backend == "maxtext") {
    add_maxtext_remedies(job, attempt);
    return;
  }
  if (job.runtime.backend == "torchtitan") {
    add_torchtitan_remedies(job, attempt, legal);
    return;
  }
  add_megatron_remedies(job, attempt, legal);
}

}  // namespace projector::memory_detail
