// Per-layer FSDP collectives (ParallelSpec::fsdp_per_layer): XLA gathers each scanned layer's
// weights just before the layer runs, prefetching the next layer's while this one computes, and
// gathers them again for the backward (the remat replay and the input gradients need them; a
// gathered weight is not a saved residual); the weight gradients are reduce-scattered as soon as
// the layer's backward has produced them. With hybrid sharding the gradient shard is then
// all-reduced over the replicas (MaxText's data axis, usually DCN). Both move the compute dtype:
// MaxText casts each weight to it before use (moe.py RoutedMoE, linears.py), so the gather is of
// the cast weight and the reduction of its gradient, which is cast to grad_dtype afterwards.
#include <algorithm>

#include "projector/job/spec.h"
#include "workload/build_detail.h"

namespace projector::workload_detail {
namespace {

Op collective(const char* name, WorkPhase phase, GroupKind g, CollectiveKind k, int size,
              double bytes) {
  Op op;
  op.name = name;
  op.phase = phase;
  op.kind = OpKind::kCollective;
  op.group = g;
  op.collective = k;
  op.group_size = size;
  op.bytes = bytes;
  op.overlap = Overlap::kWithBlockCompute;
  return op;
}

}  // namespace

std::vector<Op> fsdp_layer_ops(const JobSpec& job, double dense_params, double expert_params) {
  std::vector<Op> out;
  const ParallelSpec& p = job.parallel;
  if (!p.fsdp_per_layer || p.fsdp == FsdpKind::kNone) return out;
  const int replicate = std::max(1, p.dp_replicate);
  const int dense_shard = std::max(1, job.dp() * p.cp / replicate);
  const int expert_shard = std::max(1, job.expert_dp() / replicate);
  // The cast to the compute dtype commutes with the gather, and the gradient of the cast weight is
  // reduced before it is cast back to the gradient dtype: both move compute-dtype bytes.
  const double act_b = bytes_per_element(job.runtime.precision.params_dtype);
  const double grad_b = act_b;
  struct Part {
    double params;
    int shard;
    GroupKind group;
    const char* gather;
    const char* regather;
    const char* reduce;
    const char* replica;
  };
  const Part parts[] = {{dense_params, dense_shard, GroupKind::kDpCpShard, "fsdp.gather",
                         "fsdp.gather.bwd", "fsdp.grad_reduce_scatter", "fsdp.replica_all_reduce"},
                        {expert_params, expert_shard, GroupKind::kEdpShard, "fsdp.expert_gather",
                         "fsdp.expert_gather.bwd", "fsdp.expert_grad_reduce_scatter",
                         "fsdp.expert_replica_all_reduce"}};
  for (const Part& part : parts) {
    if (part.params <= 0.0) continue;
    if (part.shard > 1) {
      const double gathered = part.params * act_b;
      out.push_back(collective(part.gather, WorkPhase::kF, part.group, CollectiveKind::kAllGather,
                               part.shard, gathered));
      out.push_back(collective(part.regather, WorkPhase::kB, part.group, CollectiveKind::kAllGather,
                               part.shard, gathered));
      out.push_back(collective(part.reduce, WorkPhase::kW, part.group,
                               CollectiveKind::kReduceScatter, part.shard, part.params * grad_b));
    }
    if (replicate > 1) {
      out.push_back(collective(part.replica, WorkPhase::kW, GroupKind::kDpCpReplicate,
                               CollectiveKind::kAllReduce, replicate,
                               part.params / part.shard * grad_b));
    }
  }
  return out;
}

}  // namespace projector::workload_detail
