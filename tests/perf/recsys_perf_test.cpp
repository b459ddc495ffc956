// The step of TorchRec's train pipeline: its breakdown adds up to the device step, the step is the
// longest of device, host and input pipeline (or the sum without pipelining), throughput is the
// global batch over the step, and the regimes the README runs show (host-bound at small batch,
// device-bound at large) come out.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "support/recsys_jobs.h"

namespace projector {
namespace {

PerfReport project(const JobSpec& job) {
  PerfOptions o;
  o.with_memory = false;
  return project_performance(job, o);
}

TEST(RecsysPerf, StepAddsUp) {
  for (const char* f : {"readme_dot_sgd_lbs256", "readme_dcnv2_adagrad_lbs16384",
                        "mlperf_dlrm_dcnv2", "primus_dlrm_v4_hstu"}) {
    SCOPED_TRACE(f);
    const JobSpec job = testing::load_recsys(f);
    const PerfReport rep = project(job);
    ASSERT_TRUE(rep.has_recsys);
    const RecsysStep& s = rep.recsys;
    EXPECT_NEAR(
        s.device_s,
        s.embedding_s + s.embedding_host_s + s.comm_s + s.dense_s + s.dp_exposed_s + s.optimizer_s,
        1e-12);
    EXPECT_DOUBLE_EQ(s.step_s, std::max({s.device_s, s.host_s, s.input_dist_s, s.h2d_s}));
    EXPECT_DOUBLE_EQ(s.exposed_s, s.step_s - s.device_s);
    EXPECT_DOUBLE_EQ(s.samples_per_s, job.runtime.global_batch_size / s.step_s);
    EXPECT_DOUBLE_EQ(rep.tokens_per_s, s.samples_per_s);
    EXPECT_DOUBLE_EQ(rep.iteration_s, s.step_s);
    EXPECT_GT(s.embedding_s, 0.0);
    EXPECT_GT(s.dense_s, 0.0);
  }
}

// The README's local-batch-256 run is bound by the host, the 16384 DCN run by its fp32 GEMMs.
TEST(RecsysPerf, Regimes) {
  const PerfReport small = project(testing::load_recsys("readme_dot_sgd_lbs256"));
  EXPECT_EQ(small.recsys.bound, "host");
  const PerfReport large = project(testing::load_recsys("readme_dcnv2_adagrad_lbs16384"));
  EXPECT_EQ(large.recsys.bound, "device");
  EXPECT_GT(large.recsys.dense_s, 0.8 * large.recsys.device_s);
}

// Without TrainPipelineSparseDist the next batch's copy and input all-to-all add to the step.
TEST(RecsysPerf, UnpipelinedInputAdds) {
  JobSpec job = testing::load_recsys("readme_dcnv2_adagrad_lbs16384");
  const PerfReport piped = project(job);
  job.runtime.recsys.pipelined_input = false;
  const PerfReport serial = project(job);
  EXPECT_DOUBLE_EQ(serial.recsys.step_s,
                   serial.recsys.device_s + serial.recsys.input_dist_s + serial.recsys.h2d_s);
  EXPECT_GT(serial.recsys.step_s, piped.recsys.step_s);
}

// Two nodes at the same local batch: the output and input all-to-alls cross the network.
TEST(RecsysPerf, MoreNodesMoreCommunication) {
  const std::vector<std::string> tw = {"embedding_sharding=table_wise"};
  const PerfReport one = project(testing::load_recsys("readme_dot_adagrad_lbs2048", tw));
  const PerfReport two =
      project(testing::load_recsys("readme_dot_adagrad_lbs2048", tw, "a100_40gb", 2));
  EXPECT_EQ(two.world_size, 16);
  EXPECT_GT(two.recsys.comm_s, one.recsys.comm_s);
  EXPECT_GT(two.recsys.input_dist_s, one.recsys.input_dist_s);
}

// HSTU attention runs over the valid positions: a fuller sequence costs more.
TEST(RecsysPerf, HstuFill) {
  const PerfReport sparse =
      project(testing::load_recsys("primus_dlrm_v4_hstu", {"hstu_fill_factor=0.2"}, "mi300x"));
  const PerfReport full =
      project(testing::load_recsys("primus_dlrm_v4_hstu", {"hstu_fill_factor=0.8"}, "mi300x"));
  EXPECT_GT(full.recsys.dense_s, 3.0 * sparse.recsys.dense_s);
}

}  // namespace
}  // namespace projector
