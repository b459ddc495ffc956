// Hand-assembled jobs for tests of the workload, performance and sweep layers, built by the job
// builder (job/builder.h) like every other producer: the test states the layout, the builder
// derives DP, expert DP and the stages and checks the rules. The hardware comes from the bundled
// catalogue (data/hardware), the model from model_builders.h.
#pragma once

#include "projector/hardware/catalog.h"
#include "projector/job/builder.h"
#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "support/model_builders.h"

namespace projector::testing {

struct JobShape {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1;
  int nodes = 1, gpn = 8;
  int mbs = 1, gbs = 8, seq = 4096;
  bool sp = false;
  bool dist_opt = true;
  bool overlap_grad = true;
  const char* accelerator = "h100_sxm";
  ScheduleKind schedule = ScheduleKind::kAuto;
};

// A draft stating every setting the shape fixes (nothing is left to a framework default except
// the Megatron-LM profile's: fp32 gradients, core_attn selective set, in-place loss gradient).
inline JobDraft make_draft(ModelSpec model, const JobShape& s) {
  JobDraft d;
  d.source = "<test>";
  d.profile = load_framework_profile(default_data_dir() + "/frameworks/megatron-lm.yaml");
  d.attention_dropout = model.attention_dropout;
  d.hidden_dropout = model.hidden_dropout;
  d.vocab_padding = model.make_vocab_size_divisible_by;
  d.model = std::move(model);
  d.tp = s.tp;
  d.pp = s.pp;
  d.vpp = s.vpp;
  d.cp = s.cp;
  d.ep = s.ep;
  d.etp = s.tp;
  d.layer_split.allow_uneven = true;
  d.sequence_parallel = s.sp;
  d.distributed_optimizer = s.dist_opt;
  d.fsdp = FsdpKind::kNone;
  d.overlap_grad_reduce = s.overlap_grad;
  d.overlap_param_gather = s.overlap_grad;
  d.tp_comm_overlap = false;
  d.micro_batch_size = s.mbs;
  d.global_batch_size = s.gbs;
  d.seq_length = s.seq;
  d.flash_attention = true;
  d.schedule = s.schedule;
  return d;
}

inline ClusterRequest make_cluster(const JobShape& s) {
  ClusterRequest c;
  c.hardware = s.accelerator;
  c.nodes = s.nodes;
  c.gpus_per_node = s.gpn;
  return c;
}

inline JobSpec make_job(ModelSpec model, const JobShape& s) {
  return finalize_job(make_draft(std::move(model), s), make_cluster(s));
}

// Llama 3.1 8B under PyTorch FSDP2 (torchtitan's sharding): HSDP replicate groups and the
// reshard-after-forward policy as given.
inline JobSpec make_fsdp2_job(const JobShape& s, int replicate = 1, bool reshard = true) {
  JobDraft d = make_draft(llama31_8b(), s);
  d.fsdp = FsdpKind::kFsdp2;
  d.distributed_optimizer = false;
  d.parallel.dp_replicate = replicate;
  d.parallel.reshard_after_forward_rule = reshard ? WhenRule::kAlways : WhenRule::kNever;
  return finalize_job(d, make_cluster(s));
}

// Mixtral 8x7B shapes re-routed over `experts` experts, top-`topk`, on EP `ep` (8 GPUs a node)
// with the all-to-all dispatcher: dropless fine-grained routing as DeepSeek-V3 does it.
inline JobSpec make_dropless_ep_job(int ep, int experts, int topk) {
  ModelSpec m = mixtral_8x7b();
  for (LayerSpec& l : m.layers) {
    l.moe.num_experts = experts;
    l.moe.topk = topk;
  }
  JobSpec job = make_job(m, {.ep = ep, .nodes = ep > 8 ? ep / 8 : 1, .gbs = 64});
  job.runtime.moe_dispatcher = MoeDispatcher::kAllToAll;
  return job;
}

}  // namespace projector::testing
