// The host side of an eager framework (perf/host.h): the device waits for ops the host has not
// issued yet, and a device-to-host read drains the host's lead.
#include "perf/host.h"

#include <gtest/gtest.h>

#include "projector/hardware/catalog.h"
#include "projector/job/profile.h"
#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "support/job_builders.h"

namespace projector {
namespace {

using perf_detail::HostClock;
using perf_detail::HostWork;

constexpr double kUs = 1e-6;

// By hand: host 10 us per op; device 5, 30, 5 us. The device starts op 1 at 10 (ends 15), op 2
// when the host issues it at 20 (ends 50), op 3 at 50 (ends 55): 15 us idle. A sync before op 3
// makes the host wait until 50, issue at 60, the device end at 65: 25 us idle.
TEST(HostClock, DeviceWaitsForTheHost) {
  const auto run = [](bool sync_last) {
    HostClock c;
    c.issue(10 * kUs, 5 * kUs, false);
    c.issue(10 * kUs, 30 * kUs, false);
    c.issue(10 * kUs, 5 * kUs, sync_last);
    return c;
  };
  const HostClock free_run = run(false);
  EXPECT_NEAR(free_run.device_s, 55 * kUs, 1e-12);
  EXPECT_NEAR(free_run.idle_s(), 15 * kUs, 1e-12);
  const HostClock synced = run(true);
  EXPECT_NEAR(synced.device_s, 65 * kUs, 1e-12);
  EXPECT_NEAR(synced.idle_s(), 25 * kUs, 1e-12);
}

// Megatron-Core's census (data/frameworks/megatron-lm.yaml host_census), as the builder attaches
// it to a job of that profile.
std::shared_ptr<const HostCensus> megatron_census() {
  static const std::shared_ptr<const HostCensus> c =
      load_named_framework_profile(default_data_dir(), "megatron-lm").host_census;
  return c;
}

JobSpec with_host(JobSpec job, double us) {
  job.runtime.host_dispatch = {us * kUs, us * kUs, us * kUs, megatron_census()};
  return job;
}

PerfReport project(const JobSpec& job) {
  PerfOptions po;
  po.with_memory = false;
  po.keep_op_table = true;
  return project_performance(job, po);
}

// The Megatron census: per-expert GEMM launches follow the local experts; the dropless forward
// dispatch makes the host wait, the backward's all-to-all does not; Primus-Turbo's sync-free
// stage 2 and a capacity factor remove the wait.
TEST(HostWork, MegatronMoeCensus) {
  const JobSpec job = with_host(testing::make_dropless_ep_job(8, 64, 8), 1.0);
  const PerfReport rep = project(job);
  bool saw_fc1 = false, saw_sync = false;
  for (const PricedOp& po : rep.chunks.at(0).ops) {
    const HostWork w = perf_detail::host_work(job, po.op);
    if (po.op.name == "moe.experts.fc1") {
      saw_fc1 = true;
      EXPECT_EQ(w.launches, 64 / 8);  // one cuBLAS call per local expert
    }
    if (w.sync) {
      saw_sync = true;
      EXPECT_EQ(po.op.phase, WorkPhase::kF);
      EXPECT_EQ(po.op.name, "moe.dispatch_a2a");
    }
  }
  EXPECT_TRUE(saw_fc1);
  EXPECT_TRUE(saw_sync);
  // Without a census (a framework whose profile counts none) the same ops are generic: the
  // grouped GEMM one module entry and no per-expert launches, the dispatch one call, no read.
  JobSpec generic = job;
  generic.runtime.host_dispatch.census.reset();
  for (const PricedOp& po : rep.chunks.at(0).ops) {
    const HostWork w = perf_detail::host_work(generic, po.op);
    EXPECT_EQ(w.launches, 0.0) << po.op.name;
    EXPECT_FALSE(w.sync) << po.op.name;
    if (po.op.name == "moe.experts.fc1") {
      EXPECT_EQ(w.modules, 1.0);
    }
  }

  JobSpec sync_free = job;
  sync_free.runtime.moe_host_sync_free = true;  // as the adapters set it (stages 2-3)
  JobSpec capacity = job;
  for (LayerSpec& l : capacity.model.layers) l.moe.capacity_factor = 1.25;
  for (const PricedOp& po : rep.chunks.at(0).ops) {
    EXPECT_FALSE(perf_detail::host_work(sync_free, po.op).sync) << po.op.name;
    EXPECT_FALSE(perf_detail::host_work(capacity, po.op).sync) << po.op.name;
  }
}

// CUDA graphs: a captured op costs the host nothing; the scopes capture what Megatron's modules
// name (attn, moe_router) and no more; a full-iteration graph also has no host read.
TEST(HostWork, CudaGraphScopesRemoveIssueTime) {
  JobSpec job = with_host(testing::make_dropless_ep_job(8, 64, 8), 10.0);
  const PerfReport rep = project(job);
  job.runtime.cuda_graphs.add(CudaGraphModule::kAttn);
  job.runtime.cuda_graphs.add(CudaGraphModule::kMoeRouter);
  JobSpec full = job;
  full.runtime.cuda_graphs = CudaGraphs{};
  full.runtime.cuda_graphs.full_iteration = true;
  int attn = 0;
  for (const PricedOp& po : rep.chunks.at(0).ops) {
    const std::string& n = po.op.name;
    const double t = perf_detail::host_time_s(job, perf_detail::host_work(job, po.op));
    if (n.starts_with("attn.") || n.starts_with("moe.router") || n.starts_with("moe.topk")) {
      EXPECT_EQ(t, 0.0) << n;
      attn += n.starts_with("attn.") ? 1 : 0;
    } else if (n.starts_with("moe.experts.")) {
      EXPECT_GT(t, 0.0) << n;
    }
    const HostWork fw = perf_detail::host_work(full, po.op);
    EXPECT_EQ(perf_detail::host_time_s(full, fw), 0.0) << n;
    EXPECT_FALSE(fw.sync) << n;
  }
  EXPECT_GT(attn, 0);
  EXPECT_LE(project(job).chunks.at(0).f_s, rep.chunks.at(0).f_s);
}

// Full recompute replays each layer's forward before its backward, the dispatch's host read
// included: the recomputed dispatch waits for the device like the forward's.
TEST(HostWork, RecomputedDispatchReadsTheHostAgain) {
  JobSpec job = with_host(testing::make_dropless_ep_job(8, 64, 8), 1.0);
  job.runtime.recompute.granularity = RecomputeGranularity::kFull;
  job.runtime.recompute.num_layers = 1;
  int recomputed_syncs = 0;
  const PerfReport rep = project(job);
  for (const PricedOp& po : rep.chunks.at(0).ops) {
    if (!po.op.recompute) continue;
    if (perf_detail::host_work(job, po.op).sync) {
      EXPECT_EQ(po.op.name, "moe.dispatch_a2a.recompute");
      ++recomputed_syncs;
    }
  }
  EXPECT_GT(recomputed_syncs, 0);
}

// Whatever the costs, a phase takes at least the longer of the host's and the device's work and
// at most their sum; with no host costs it is the device's work alone.
TEST(HostWork, PhaseBetweenMaxAndSumOfHostAndDevice) {
  const JobSpec job = testing::make_dropless_ep_job(8, 64, 8);
  const PerfReport device_only = project(with_host(job, 0.0));
  const ChunkTiming& d = device_only.chunks.at(0);
  EXPECT_EQ(d.host_idle_s[0], 0.0);
  for (double us : {1.0, 50.0, 2000.0}) {
    const JobSpec hj = with_host(job, us);
    const PerfReport rep = project(hj);
    const ChunkTiming& c = rep.chunks.at(0);
    double host_f = 0.0;
    for (const PricedOp& po : c.ops) {
      if (po.op.phase != WorkPhase::kF) continue;
      host_f += po.repeat * perf_detail::host_time_s(hj, perf_detail::host_work(hj, po.op));
    }
    EXPECT_GE(c.f_s, std::max(host_f, d.f_s) - 1e-12) << us;
    EXPECT_LE(c.f_s, host_f + d.f_s + 1e-12) << us;
    EXPECT_NEAR(c.f_s - c.host_idle_s[0], d.f_s, 1e-9 * d.f_s) << us;
  }
}

// A large dense model's GEMMs dwarf the host's issue time: at the x86 costs the device hardly
// waits.
TEST(HostWork, LargeDenseLayersHideTheHost) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.gpn = 1, .gbs = 4});
  const PerfReport rep = project(with_host(job, 13.5));
  const ChunkTiming& c = rep.chunks.at(0);
  EXPECT_GT(c.host_idle_s[0], 0.0);  // the chunk starts with the host's first issue
  EXPECT_LT(c.host_idle_s[0] + c.host_idle_s[1] + c.host_idle_s[2], 0.01 * (c.f_s + c.b_s + c.w_s));
}

// A slower host CPU (Grace: host_dispatch_scale) scales every op's issue time.
TEST(HostWork, HostScaleMultiplies) {
  JobSpec job = with_host(testing::make_dropless_ep_job(8, 64, 8), 5.0);
  HostWork w;
  w.ops = 3;
  w.modules = 1;
  w.launches = 8;
  const double x86 = perf_detail::host_time_s(job, w);
  EXPECT_NEAR(x86, 12 * 5.0 * kUs, 1e-15);
  job.cluster.accelerator.calibration.host_dispatch_scale.value = 2.75;
  EXPECT_NEAR(perf_detail::host_time_s(job, w), 2.75 * x86, 1e-15);
}

// The shipped Grace scale is HO8's measured ratio (a Linear forward's host time on GB200 over an
// H100 DGX's Xeon 8480C: 37.08 / 13.48 us); GB300 (Grace too) borrows it; x86 parts leave it unset.
TEST(HostWork, GraceScaleIsTheMeasuredRatio) {
  const std::string data = PROJECTOR_DEFAULT_DATA_DIR;
  for (const char* grace : {"gb200", "gb300"}) {
    EXPECT_NEAR(load_accelerator(grace, data).calibration.host_dispatch_scale.value, 37.08 / 13.48,
                0.01)
        << grace;
  }
  EXPECT_EQ(load_accelerator("h100_sxm", data).calibration.host_dispatch_scale.value, 0.0);
}

}  // namespace
}  // namespace projector
