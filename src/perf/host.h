// Internal to perf: the host (CPU) side of an eager framework. Each op of the workload costs the
// host some time to issue (Python, the operator dispatcher, Transformer Engine's module logic, a
// C++ loop of kernel launches); the device cannot start an op before the host has issued it, and
// a device-to-host read (the dropless MoE dispatch needs its token counts on the host) drains the
// host's lead. Where the host's issue time exceeds the device's work, the device idles.
#pragma once

#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/workload/workload.h"

namespace projector::perf_detail {

// The host's work for one op, in the units of RuntimeSpec::host_dispatch.
struct HostWork {
  double ops = 0.0;       // eager operator calls (Python + dispatcher; DDP hooks)
  double modules = 0.0;   // Transformer Engine module / autograd-function entries
  double launches = 0.0;  // kernels issued from a C++ loop (TE's per-expert GEMMs)
  bool sync = false;      // the host first waits for the device (a device-to-host read)
};

// Megatron-family census (docs/host.md; HO4-HO6 in docs/references.md): what the host does to
// issue `op` in Megatron-Core with Transformer Engine.
HostWork host_work(const JobSpec& job, const Op& op);

// Seconds of host time for `w` under the job's host costs (0 when the host is not modelled).
double host_time_s(const JobSpec& job, const HostWork& w);

// Host and device clocks of one phase of a chunk, advanced op by op: the device starts an op
// when it is free and the host has issued it. `idle_s` is the device time lost waiting.
struct HostClock {
  double host_s = 0.0;
  double device_s = 0.0;
  double busy_s = 0.0;
  double idle_s() const { return device_s - busy_s; }
  void issue(double host_cost_s, double device_cost_s, bool sync);
};

}  // namespace projector::perf_detail
