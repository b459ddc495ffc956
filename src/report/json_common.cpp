#include "json_common.h"

#include "projector/job/spec.h"

namespace projector::report_detail {

Json parallel_json(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"vpp", p.vpp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"etp", p.etp},
          {"dp", job.dp()},
          {"expert_dp", job.expert_dp()},
          {"sequence_parallel", p.sequence_parallel},
          {"distributed_optimizer", p.distributed_optimizer},
          {"grads_sharded", p.grads_sharded && p.distributed_optimizer},
          {"fsdp", std::string(to_string(p.fsdp))},
          {"overlap_grad_reduce", p.overlap_grad_reduce},
          {"overlap_param_gather", p.overlap_param_gather},
          {"tp_comm_overlap", p.tp_comm_overlap},
          {"p2p_overlap", p.p2p_overlap}};
}

Json defaults_json(const JobSpec& job) {
  Json out = Json::array();
  for (const AppliedDefault& d : job.defaults) {
    out.push_back(
        {{"key", d.key}, {"value", d.value}, {"reason", d.reason}, {"profile", d.source}});
  }
  return out;
}

}  // namespace projector::report_detail
