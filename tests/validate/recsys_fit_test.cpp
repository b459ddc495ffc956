// The fit behind the recommendation family's calibration values, redone from
// data/validation/recsys_runs.yaml (the only end-to-end measurements that may be fitted), and its
// leave-one-out check. Three values are fitted, no more, all of TorchRec's profile
// (data/frameworks/torchrec.yaml): its compute-stream kernel_gap_fraction (here as the efficiency
// 1 - gap: the share of the compute stream the kernels keep busy) and its host time per step and
// per sample. The test fails when the data files drift from the fit, when an
// in-sample run is off by more than 20 %, or when a left-out run is off by more than 25 %.
//
// Procedure (docs/recsys.md): for each candidate efficiency on a grid, each run's device step is
// projected; the runs whose measured step exceeds their device step are host-bound candidates, and
// the host time h0 + h1 x local batch is their least-squares line (with a single batch size the
// two are not separable: the minimum-norm split at that batch, h0 = h1 x batch); the efficiency
// minimising the squared log errors of all runs wins, ties going to the prior (the sibling
// A100 80GB fit, 0.827).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;
constexpr double kPrior = 0.827;

struct FitRun {
  std::string id;
  JobSpec job;
  double batch = 0.0;
  double measured_step_s = 0.0;
  std::vector<double> device_s;  // per grid efficiency
};

std::vector<double> grid() {
  std::vector<double> g;
  for (int i = 60; i <= 100; ++i) g.push_back(i / 100.0);
  return g;
}

double device_step(JobSpec job, double efficiency) {
  job.runtime.kernel_gap_fraction = 1.0 - efficiency;
  job.runtime.recsys.host_step_s = 0.0;
  job.runtime.recsys.host_per_sample_s = 0.0;
  PerfOptions o;
  o.keep_op_table = false;
  o.with_memory = false;
  return project_performance(job, o).recsys.step_s;
}

const std::vector<FitRun>& runs() {
  static const std::vector<FitRun> out = [] {
    std::vector<FitRun> v;
    const ProfileCatalog profiles = load_framework_profiles(kData);
    for (const RunEntry& e : load_runs(kData + "/validation/recsys_runs.yaml")) {
      MappedRun m = map_run(e, kData, profiles);
      EXPECT_TRUE(m.mapped) << e.id << ": " << m.reason;
      FitRun r{e.id, m.job, static_cast<double>(m.job.runtime.micro_batch_size), 0.0, {}};
      r.measured_step_s = m.job.runtime.global_batch_size / *e.measured.samples_per_sec_total;
      for (double g : grid()) r.device_s.push_back(device_step(m.job, g));
      v.push_back(std::move(r));
    }
    return v;
  }();
  return out;
}

struct Fit {
  double efficiency = kPrior;
  double h0 = 0.0, h1 = 0.0;
  std::size_t g = 0;  // grid index
};

// Host line through the host-bound runs (their measured steps) at efficiency index g.
bool host_line(const std::vector<const FitRun*>& set, std::size_t g, double& h0, double& h1) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const FitRun* r : set) {
    if (r->measured_step_s <= r->device_s[g]) continue;
    n += 1;
    sx += r->batch;
    sy += r->measured_step_s;
    sxx += r->batch * r->batch;
    sxy += r->batch * r->measured_step_s;
  }
  if (n == 0) return false;
  const double var = sxx - sx * sx / n;
  if (var <= 1e-9 * sxx) {  // one batch size: the minimum-norm split
    const double b = sx / n;
    h1 = sy / n / (2.0 * b);
    h0 = h1 * b;
    return true;
  }
  h1 = (sxy - sx * sy / n) / var;
  h0 = (sy - h1 * sx) / n;
  return true;
}

double predicted_step(const FitRun& r, const Fit& f) {
  return std::max(r.device_s[f.g], f.h0 + f.h1 * r.batch);
}

Fit fit(const std::vector<const FitRun*>& set) {
  Fit best;
  double best_cost = std::numeric_limits<double>::infinity();
  const std::vector<double> g = grid();
  for (std::size_t i = 0; i < g.size(); ++i) {
    Fit f;
    f.g = i;
    f.efficiency = g[i];
    if (!host_line(set, i, f.h0, f.h1)) f.h0 = f.h1 = 0.0;
    double cost = 1e-9 * (g[i] - kPrior) * (g[i] - kPrior);  // ties: nearest the prior
    for (const FitRun* r : set) {
      const double e = std::log(predicted_step(*r, f) / r->measured_step_s);
      cost += e * e;
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = f;
    }
  }
  return best;
}

double samples_error_pct(const FitRun& r, const Fit& f) {
  return 100.0 * (r.measured_step_s / predicted_step(r, f) - 1.0);
}

TEST(RecsysFit, DataFilesHoldTheInSampleFit) {
  std::vector<const FitRun*> all;
  for (const FitRun& r : runs()) all.push_back(&r);
  ASSERT_EQ(all.size(), 4u);
  const Fit f = fit(all);
  const FitRun& any = runs().front();
  const RecsysRuntime& rt = any.job.runtime.recsys;
  std::printf("in-sample fit: kernel_gap_fraction %.2f, host %.2f ms + %.2f us/sample\n",
              1.0 - f.efficiency, f.h0 * 1e3, f.h1 * 1e6);
  EXPECT_NEAR(any.job.runtime.kernel_gap_fraction, 1.0 - f.efficiency, 0.0051);
  EXPECT_NEAR(rt.host_step_s * 1e3, f.h0 * 1e3, 0.05);
  EXPECT_NEAR(rt.host_per_sample_s * 1e6, f.h1 * 1e6, 0.05);
  for (const FitRun& r : runs()) {
    const double e = samples_error_pct(r, f);
    std::printf("  in-sample %-48s %+6.1f %%\n", r.id.c_str(), e);
    EXPECT_LT(std::abs(e), 20.0) << r.id;
  }
}

TEST(RecsysFit, LeaveOneOut) {
  double sum = 0.0;
  for (std::size_t out = 0; out < runs().size(); ++out) {
    std::vector<const FitRun*> rest;
    for (std::size_t i = 0; i < runs().size(); ++i) {
      if (i != out) rest.push_back(&runs()[i]);
    }
    const Fit f = fit(rest);
    const double e = samples_error_pct(runs()[out], f);
    sum += std::abs(e);
    std::printf("  left out %-49s %+6.1f %%  (efficiency %.2f, host %.2f ms + %.2f us/sample)\n",
                runs()[out].id.c_str(), e, f.efficiency, f.h0 * 1e3, f.h1 * 1e6);
    EXPECT_LT(std::abs(e), 25.0) << runs()[out].id;
  }
  std::printf("  leave-one-out MAPE %.1f %%\n", sum / runs().size());
}

}  // namespace
}  // namespace projector
