// Layout derivation (job/layout.h).
#include "projector/job/layout.h"

#include <algorithm>

#include "projector/job/spec.h"

namespace projector {

DataParallelSizes data_parallel_sizes(std::int64_t world, int tp, int pp, int cp, int etp, int ep) {
  DataParallelSizes s;
  const std::int64_t dense = static_cast<std::int64_t>(tp) * pp * cp;
  const std::int64_t expert = static_cast<std::int64_t>(etp) * ep * pp;
  if (dense > 0 && world % dense == 0) s.dp = world / dense;
  if (expert > 0 && world % expert == 0) s.expert_dp = world / expert;
  return s;
}

void balanced_stages_into(std::vector<VirtualStage>& out, int num_layers, int pp, int vpp,
                          int mtp_layers) {
  const int count = std::max(1, pp) * std::max(1, vpp);
  out.assign(static_cast<std::size_t>(count), VirtualStage{});
  const int base = num_layers / count;
  const int extra = num_layers % count;
  int first = 0;
  for (int z = 0; z < count; ++z) {
    VirtualStage& st = out[static_cast<std::size_t>(z)];
    st.first_layer = first;
    st.num_layers = base + (z < extra ? 1 : 0);
    first += st.num_layers;
  }
  out.front().has_embedding = true;
  out.back().has_output = true;
  out.back().mtp_layers = mtp_layers;
}

std::vector<VirtualStage> balanced_stages(int num_layers, int pp, int vpp, int mtp_layers) {
  std::vector<VirtualStage> out;
  balanced_stages_into(out, num_layers, pp, vpp, mtp_layers);
  return out;
}

void apply_layout(JobSpec& job, const LayoutChoice& c) {
  ParallelSpec& p = job.parallel;
  p.tp = c.tp;
  p.pp = c.pp;
  p.vpp = c.vpp;
  p.cp = c.cp;
  p.ep = c.ep;
  p.etp = c.etp;
  balanced_stages_into(p.stages, job.model.num_layers(), c.pp, c.vpp, job.model.mtp_num_layers);
  job.runtime.micro_batch_size = c.mbs;
  job.runtime.schedule = c.schedule;
}

void relayout(JobSpec& job, const LayoutChoice& c) {
  apply_layout(job, c);
  ParallelSpec& p = job.parallel;
  // Megatron turns sequence parallelism off at TP 1 (MG1 arguments.py:1433-1439), as the builder.
  p.sequence_parallel = p.applies(p.sequence_parallel_rule) && p.tp > 1;
  p.overlap_param_gather = p.applies(p.overlap_param_gather_rule);
  p.tp_comm_overlap = p.applies(p.tp_comm_overlap_rule);
  p.p2p_overlap = p.applies(p.p2p_overlap_rule);
  p.reshard_after_forward = p.applies(p.reshard_after_forward_rule);
  // Accumulation outside the schedule (torchtitan): without PP every microbatch is its own round;
  // with PP the per-replica batch is one flush of the schedule.
  RuntimeSpec& rt = job.runtime;
  rt.accumulation_rounds = 1;
  if (rt.accumulation_outside_schedule && p.pp == 1) {
    rt.accumulation_rounds = std::max(1, job.num_microbatches());
  }
}

}  // namespace projector
