// Hand-assembled JobSpecs for tests of the workload, performance and sweep layers. The hardware
// comes from the bundled catalogue (data/hardware), the model from model_builders.h.
#pragma once

#include "projector/hardware/catalog.h"
#include "projector/model/job.h"
#include "support/model_builders.h"

namespace projector::testing {

// Balanced layout: base = L / (pp*vpp), the first L mod (pp*vpp) stages get one more layer.
inline std::vector<VirtualStage> balanced(int layers, int pp, int vpp) {
  const int z = pp * vpp;
  std::vector<VirtualStage> out(static_cast<std::size_t>(z));
  int first = 0;
  for (int i = 0; i < z; ++i) {
    VirtualStage& s = out[static_cast<std::size_t>(i)];
    s.first_layer = first;
    s.num_layers = layers / z + (i < layers % z ? 1 : 0);
    first += s.num_layers;
  }
  out.front().has_embedding = true;
  out.back().has_output = true;
  return out;
}

struct JobShape {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  int nodes = 1, gpn = 8;
  int mbs = 1, gbs = 8, seq = 4096;
  bool sp = false;
  bool dist_opt = true;
  bool overlap_grad = true;
  const char* accelerator = "h100_sxm";
};

inline JobSpec make_job(ModelSpec model, const JobShape& s) {
  JobSpec job;
  job.source = "<test>";
  job.model = std::move(model);
  ParallelSpec& p = job.parallel;
  p.tp = s.tp;
  p.pp = s.pp;
  p.vpp = s.vpp;
  p.cp = s.cp;
  p.ep = s.ep;
  p.etp = s.tp;
  p.sequence_parallel = s.sp;
  p.distributed_optimizer = s.dist_opt;
  p.overlap_grad_reduce = s.overlap_grad;
  p.overlap_param_gather = s.overlap_grad;
  const int world = s.nodes * s.gpn;
  p.dp = world / (s.tp * s.pp * s.cp);
  p.expert_dp = world / (p.etp * s.ep * s.pp);
  p.stages = balanced(job.model.num_layers(), s.pp, s.vpp);
  job.runtime.micro_batch_size = s.mbs;
  job.runtime.global_batch_size = s.gbs;
  job.runtime.seq_length = s.seq;
  job.runtime.flash_attention = true;
  job.cluster.nodes = s.nodes;
  job.cluster.gpus_per_node = s.gpn;
  const std::string data = default_data_dir();
  job.cluster.accelerator = load_accelerator(s.accelerator, data);
  job.cluster.network = default_network_for(job.cluster.accelerator, data);
  return job;
}

}  // namespace projector::testing
