// The host side of an eager framework (perf/host.h). What the host issues per MoE op is the
// framework's census (RuntimeSpec::host_dispatch.census, its profile's host_census); other ops,
// and every op of a framework without a census, are counted generically.
#include "perf/host.h"

#include <algorithm>
#include <string_view>

#include "projector/job/spec.h"

namespace projector::perf_detail {
namespace {

bool dropless_sync(const JobSpec& job) {
  // Megatron's dropless dispatch reads the token counts on the host: the all-to-all dispatcher
  // waits on a device-to-host copy (token_dispatcher.py d2h_event.synchronize), DeepEP spins on
  // the receive counter (buffer.hpp). A framework that keeps them on the device says so
  // (RuntimeSpec::moe_host_sync_free, set by its adapter).
  const bool capacity =
      std::any_of(job.model.layers.begin(), job.model.layers.end(),
                  [](const LayerSpec& l) { return l.is_moe && l.moe.capacity_factor > 0.0; });
  return !capacity && !job.runtime.moe_host_sync_free;
}

// The EP transfers of the dispatch and combine (all-to-all and flex dispatchers), as the
// framework's census counts them.
HostWork moe_transfer(const JobSpec& job, const HostCensus& census, std::string_view n,
                      WorkPhase ph) {
  const bool flex = job.runtime.moe_dispatcher == MoeDispatcher::kFlex;
  // Megatron's DeepEP path converts the top-k indices with the default indices-to-multihot;
  // HybridEP and the others take the map.
  const bool multihot = flex && job.runtime.moe_dispatch_kernel == MoeDispatchKernel::kDeepEp;
  const bool fwd = ph == WorkPhase::kF;
  const auto calls = [fwd](const HostTransferCalls& t) { return fwd ? t.forward : t.backward; };
  HostWork w;
  if (n.starts_with("moe.dispatch")) {
    w.ops = calls(flex ? census.flex_dispatch : census.alltoall_dispatch);
    if (multihot) w.ops += calls(census.deepep_multihot);
    w.sync = (fwd || multihot) && dropless_sync(job);
    return w;
  }
  w.ops = calls(flex ? census.flex_combine : census.alltoall_combine);
  return w;
}

HostWork generic(const Op& op) {
  HostWork w;
  const double steps = std::max(1, op.steps);
  switch (op.kind) {
    case OpKind::kGemm:
    case OpKind::kGroupedGemm:
      // A TE module's forward or backward entry; a weight gradient is its DDP hook.
      if (op.phase == WorkPhase::kW) {
        w.ops = steps;
      } else {
        w.modules = steps;
      }
      break;
    case OpKind::kAttention:
      w.modules = 1;
      break;
    default:
      w.ops = 1;
      break;
  }
  return w;
}

bool static_moe(const JobSpec& job) {
  return !dropless_sync(job);
}

// The op replays inside a CUDA graph (Megatron cuda_graph_modules, MG1 arguments.py help):
// attn = _forward_attention, mlp = a dense layer's _forward_mlp, moe = a drop-and-pad MoE layer,
// moe_router = up to the router (its norm, the shared experts), moe_preprocess = the dispatcher's
// preprocess, mamba = the Mamba mixer; no module = the whole layer (static shapes only).
bool captured(const JobSpec& job, std::string_view n) {
  const CudaGraphs& g = job.runtime.cuda_graphs;
  if (g.full_iteration) return true;
  if (g.modules == 0) return false;
  const bool moe = n.starts_with("moe.");
  if (g.has(CudaGraphModule::kLayer) && (!moe || static_moe(job))) return true;
  if (n.starts_with("attn.")) return g.has(CudaGraphModule::kAttn);
  if (n.starts_with("mamba.")) return g.has(CudaGraphModule::kMamba);
  if (n.starts_with("mlp.")) {
    return g.has(CudaGraphModule::kMlp) ||
           (n.starts_with("mlp.norm") && g.has(CudaGraphModule::kMoeRouter));
  }
  if (!moe) return false;
  if (g.has(CudaGraphModule::kMoe) && static_moe(job)) return true;
  if (n.starts_with("moe.router") || n.starts_with("moe.topk") || n.starts_with("moe.shared.")) {
    return g.has(CudaGraphModule::kMoeRouter);
  }
  // The all-to-all dispatcher permutes in its preprocess; flex permutes after the dispatch.
  return n.starts_with("moe.permute") && g.has(CudaGraphModule::kMoePreprocess) &&
         job.runtime.moe_dispatcher != MoeDispatcher::kFlex;
}

HostWork census(const JobSpec& job, const Op& op) {
  // A recomputed forward op (replayed before the backward, named "<op>.recompute") issues what
  // its forward issues, host reads included.
  std::string_view n = op.name;
  if (op.recompute && n.ends_with(".recompute"))
    n.remove_suffix(std::string_view(".recompute").size());
  const WorkPhase ph = op.recompute ? WorkPhase::kF : op.phase;
  const HostCensus* census = job.runtime.host_dispatch.census.get();
  if (census != nullptr && n.starts_with("moe.") && !n.starts_with("moe.shared.")) {
    if (op.kind == OpKind::kCollective &&
        (n.starts_with("moe.dispatch") || n.starts_with("moe.combine"))) {
      return moe_transfer(job, *census, n, ph);
    }
    for (const HostCensusOp& c : census->moe_ops) {
      if (c.name != n) continue;
      const double groups =
          op.kind == OpKind::kGroupedGemm ? std::max<double>(1.0, op.gemm.batch) : 1.0;
      HostWork w;
      w.ops = c.ops + (c.hook_per_expert ? groups : 0.0);
      w.modules = c.modules;
      w.launches = c.launch_per_expert ? groups : 0.0;
      // Without an EP transfer the grouped GEMM's split sizes are the first host read.
      if (n == "moe.experts.fc1" && ph == WorkPhase::kF &&
          job.parallel.ep * job.parallel.etp == 1) {
        w.sync = dropless_sync(job);
      }
      return w;
    }
  }
  return generic(op);
}

}  // namespace

HostWork host_work(const JobSpec& job, const Op& op) {
  if (!captured(job, op.name)) return census(job, op);
  // A captured op: no issue time, and a full-iteration graph has no host read either.
  HostWork w;
  w.sync = !job.runtime.cuda_graphs.full_iteration && census(job, op).sync;
  return w;
}

double host_time_s(const JobSpec& job, const HostWork& w) {
  const HostDispatch& h = job.runtime.host_dispatch;
  const double scale = job.cluster.accelerator.calibration.host_dispatch_scale.value;
  return (scale > 0.0 ? scale : 1.0) *
         (w.ops * h.op_s + w.modules * h.module_s + w.launches * h.launch_s);
}

void HostClock::issue(double host_cost_s, double device_cost_s, bool sync) {
  if (sync) host_s = std::max(host_s, device_s);
  host_s += host_cost_s;
  device_s = std::max(device_s, host_s) + device_cost_s;
  busy_s += device_cost_s;
}

}  // namespace projector::perf_detail
