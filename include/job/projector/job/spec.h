// The job model: what the job builder (job/builder.h) produces from an adapter's draft and what
// every projection reads. A job is a model (ModelSpec), a layout (ParallelSpec), the runtime
// settings (RuntimeSpec) and the cluster (ClusterSpec), with the defaults applied to it; their
// types live in model/job.h, below the job module, because the model's FLOP, parameter and
// tensor accounting reads them. The sizes that follow from others (DP, expert DP, microbatches)
// are computed here, never stored.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "projector/model/job.h"

namespace projector {

// A value the tool chose because the input did not say: recorded so it can be printed.
struct AppliedDefault {
  std::string key;
  std::string value;
  std::string reason;
  std::string source = "";  // the framework profile it came from (data/frameworks/<name>.yaml)
};

struct JobSpec {
  std::string source;  // config path (or "<validation:id>")
  ModelSpec model;
  ParallelSpec parallel;
  RuntimeSpec runtime;
  ClusterSpec cluster;
  std::vector<AppliedDefault> defaults;
  std::vector<std::string> warnings;

  // Data-parallel replicas of the dense part, world / (TP x PP x CP); 0 when the degrees do not
  // divide the world (check_job_invariants refuses such a job).
  int dp() const {
    const std::int64_t dense =
        static_cast<std::int64_t>(parallel.tp) * parallel.pp * std::max(1, parallel.cp);
    const std::int64_t world = cluster.world_size();
    return dense > 0 && world % dense == 0 ? static_cast<int>(world / dense) : 0;
  }
  // Data-parallel replicas of the experts, world / (ETP x EP x PP); 1 when the degrees do not
  // divide the world (a dense model has no expert groups; with experts the invariants refuse it).
  int expert_dp() const {
    const std::int64_t expert = static_cast<std::int64_t>(parallel.etp) * parallel.ep * parallel.pp;
    const std::int64_t world = cluster.world_size();
    return expert > 0 && world % expert == 0 ? static_cast<int>(world / expert) : 1;
  }
  // Ranks one FSDP group shards the weights over (HSDP: one replicate group's share).
  int fsdp_shard_size() const {
    return std::max(1, dp() * parallel.cp / std::max(1, parallel.dp_replicate));
  }
  // Microbatches per iteration on each data-parallel replica: gbs / (mbs x dp).
  int num_microbatches() const {
    const std::int64_t per_step = static_cast<std::int64_t>(runtime.micro_batch_size) * dp();
    return per_step > 0 ? static_cast<int>(runtime.global_batch_size / per_step) : 0;
  }
  // Microbatches of one flush of the schedule (gradient accumulation outside it: one round).
  int microbatches_per_flush() const {
    return num_microbatches() / std::max(1, runtime.accumulation_rounds);
  }
  // Microbatches whose output-layer weight gradient waits for the flush (defer_output_wgrad).
  int deferred_output_wgrads() const {
    // A loss that computes the head's gradients in its forward leaves nothing to defer.
    if (!runtime.defer_output_wgrad || parallel.pp <= 1 || runtime.loss_grad_in_forward) return 0;
    const int m = microbatches_per_flush();
    const int limit = runtime.output_wgrad_deferral_limit;
    return limit > 0 ? std::min(limit, m) : m;
  }
  std::int64_t tokens_per_iteration() const {
    return static_cast<std::int64_t>(runtime.global_batch_size) * runtime.seq_length;
  }
};

// Megatron's combined 1F1B (overlap_moe_expert_parallel_comm): the schedule pairs steady-state
// forwards and backwards of different microbatches (schedule::ScheduleRequest).
inline bool combined_forward_backward(const JobSpec& job) {
  return job.runtime.moe_overlap.has(MoeOverlap::kOtherMicrobatch);
}

// Routed tokens on the busiest expert-parallel rank over the mean (>= 1), for dropless routing
// with expert loads of coefficient of variation cv: a rank's load sums E/EP expert loads (its CV
// cv / sqrt(E/EP)), and the largest of EP such loads lies z(EP) standard deviations above the mean
// (z: the expected maximum of EP standard normals, Blom's approximation). Capped at what one rank
// can receive (every token's copies that fit its experts). 1 with capacity-padded dispatch (the
// buffers are sized to the capacity whatever the routing) or without expert parallelism.
double moe_rank_load_factor(const JobSpec& job, const MoeSpec& moe);

// The invariants every projection relies on: positive sizes, TP x PP x CP x DP and, with experts,
// ETP x EP x PP x expert-DP equal to the world, pp x vpp contiguous stages covering every layer
// once, a schedule that matches VPP, a global batch divisible by MBS x DP, a non-empty selective
// recompute set. The job builder (job/builder.h) produces only such jobs; project_memory and
// project_performance call this and refuse a malformed job with an InputError (key "job") instead
// of repairing it. Also refuses a model family the projections do not model yet.
void check_job_invariants(const JobSpec& job);

}  // namespace projector
