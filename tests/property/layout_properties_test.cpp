// Properties every projection must have, checked over random legal layouts of catalogue models
// (a fixed seed: the same jobs every run). Each compares the projection with itself under a
// change whose direction is known without any model: more pipeline stages split the weights
// further; a faster accelerator cannot make a step slower; an upper bound is not below the point
// estimate; throughput is a positive, finite number; the sweep's result does not depend on how
// many threads computed it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/sweep/sweep.h"
#include "support/job_builders.h"

namespace {

using namespace projector;
using projector::testing::JobShape;
using projector::testing::make_job;

struct Case {
  std::string model;
  ModelSpec spec;
  JobShape shape;
  JobSpec job;
};

bool has_experts(const ModelSpec& m) {
  return std::any_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return l.is_moe; });
}

// `count` legal jobs: catalogue models on 1-4 nodes of 8 GPUs with random TP, PP, CP, EP, MBS,
// sequence, microbatch count, accelerator and (sometimes) interleaving. Illegal draws (the job
// builder's rules) are skipped.
std::vector<Case> random_legal_jobs(std::uint32_t seed, int count) {
  static const char* const kModels[] = {"llama3.2_1B",       "llama3.1_8B",      "qwen2.5_7B",
                                        "mixtral_8x7B_v0.1", "deepseek_v2_lite", "qwen3_30B_A3B"};
  static const char* const kAccelerators[] = {"h100_sxm", "mi300x", "b200", "a100_80gb"};
  std::mt19937 rng(seed);
  auto pick = [&rng](auto const& values) {
    return values[std::uniform_int_distribution<std::size_t>(0, std::size(values) - 1)(rng)];
  };
  std::vector<ModelSpec> specs;
  for (const char* m : kModels) specs.push_back(load_model_preset(m, default_data_dir()));
  std::vector<Case> out;
  for (int attempt = 0; attempt < 4000 && static_cast<int>(out.size()) < count; ++attempt) {
    const std::size_t mi =
        std::uniform_int_distribution<std::size_t>(0, std::size(kModels) - 1)(rng);
    Case c{kModels[mi], specs[mi], {}, {}};
    JobShape& s = c.shape;
    s.nodes = pick(std::vector<int>{1, 2, 4});
    s.tp = pick(std::vector<int>{1, 2, 4, 8});
    s.pp = pick(std::vector<int>{1, 2, 4});
    s.cp = pick(std::vector<int>{1, 1, 2});
    s.ep = has_experts(c.spec) ? pick(std::vector<int>{1, 2, 4, 8}) : 1;
    s.mbs = pick(std::vector<int>{1, 2});
    s.seq = pick(std::vector<int>{2048, 4096});
    s.sp = s.tp > 1;
    s.accelerator = pick(kAccelerators);
    const int world = s.nodes * s.gpn;
    if (world % (s.tp * s.pp * s.cp) != 0) continue;
    const int dp = world / (s.tp * s.pp * s.cp);
    s.gbs = s.mbs * dp * s.pp * pick(std::vector<int>{1, 2, 4});
    if (s.pp > 1 && pick(std::vector<int>{0, 1}) == 1 && c.spec.num_layers() % (2 * s.pp) == 0) {
      s.vpp = 2;
      s.schedule = ScheduleKind::kInterleaved;
    }
    try {
      c.job = make_job(c.spec, s);
    } catch (const InputError&) {
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = random_legal_jobs(19, 48);
  return kCases;
}

double max_rank_weights(const MemoryReport& r) {
  double w = 0.0;
  for (const RankMemory& rm : r.ranks) {
    w = std::max(w, rm.point[static_cast<std::size_t>(MemoryComponent::kWeights)]);
  }
  return w;
}

MemoryReport memory_of(const JobSpec& job) {
  MemoryOptions o;
  o.suggest_remedies = false;
  return project_memory(job, o);
}

PerfReport perf_of(const JobSpec& job) {
  PerfOptions o;
  o.keep_op_table = false;
  o.with_memory = false;
  return project_performance(job, o);
}

TEST(Property, EnoughRandomLegalLayouts) {
  EXPECT_EQ(cases().size(), 48u);
  int moe = 0, pp = 0, interleaved = 0, cp = 0;
  for (const Case& c : cases()) {
    moe += has_experts(c.spec);
    pp += c.shape.pp > 1;
    interleaved += c.shape.vpp > 1;
    cp += c.shape.cp > 1;
  }
  // The draw covers the layouts the properties are about.
  EXPECT_GT(moe, 5);
  EXPECT_GT(pp, 10);
  EXPECT_GT(interleaved, 2);
  EXPECT_GT(cp, 3);
}

// Doubling PP on the same GPUs (DP halves) splits the layers over twice the stages: no rank holds
// more weights than the heaviest rank held before (the embedding and the output layer stay on
// one stage each). Without FSDP, weights do not depend on DP.
TEST(Property, MorePipelineStagesNeverRaisePerGpuWeights) {
  int compared = 0;
  for (const Case& c : cases()) {
    JobShape more = c.shape;
    more.pp *= 2;
    more.vpp = 1;
    more.schedule = ScheduleKind::kAuto;
    JobSpec deeper;
    try {
      deeper = make_job(c.spec, more);
    } catch (const InputError&) {
      continue;  // PP x 2 breaks a rule (layers, world): not a comparable layout
    }
    ++compared;
    const double before = max_rank_weights(memory_of(c.job));
    const double after = max_rank_weights(memory_of(deeper));
    EXPECT_LE(after, before * (1.0 + 1e-12)) << c.model << " PP " << c.shape.pp << " -> " << more.pp
                                             << ": " << before << " -> " << after;
  }
  EXPECT_GT(compared, 15);
}

TEST(Property, ThroughputIsFiniteAndPositive) {
  for (const Case& c : cases()) {
    const PerfReport r = perf_of(c.job);
    EXPECT_TRUE(std::isfinite(r.tokens_per_s_per_gpu) && r.tokens_per_s_per_gpu > 0.0)
        << c.model << ": " << r.tokens_per_s_per_gpu;
    EXPECT_TRUE(std::isfinite(r.iteration_s) && r.iteration_s > 0.0) << c.model;
  }
}

// Twice the peak FLOP/s of every dtype (same memory, same network): no step is slower.
TEST(Property, DoublingThePeakNeverSlowsAJob) {
  for (const Case& c : cases()) {
    JobSpec faster = c.job;
    for (double& t : faster.cluster.accelerator.peak_tflops) t *= 2.0;
    const double before = perf_of(c.job).iteration_s;
    const double after = perf_of(faster).iteration_s;
    EXPECT_LE(after, before * (1.0 + 1e-9))
        << c.model << " " << c.shape.accelerator << " TP" << c.shape.tp << " PP" << c.shape.pp
        << " CP" << c.shape.cp << " EP" << c.shape.ep << ": " << before << " s -> " << after;
  }
}

TEST(Property, MemoryUpperBoundIsNotBelowThePoint) {
  for (const Case& c : cases()) {
    const MemoryReport r = memory_of(c.job);
    EXPECT_GE(r.peak_upper_bytes, r.peak_point_bytes) << c.model;
    for (const RankMemory& rm : r.ranks) {
      EXPECT_GE(rm.total_upper_bytes, rm.total_point_bytes) << c.model << " rank " << rm.pp_rank;
    }
  }
}

// A small sweep around three random bases: the same ranked list, values and CSV for 1, 2 and 3
// threads.
TEST(Property, SweepOutputIsIdenticalForAnyThreadCount) {
  const std::vector<Case>& all = cases();
  for (std::size_t i = 0; i < all.size(); i += all.size() / 3) {
    const JobSpec& base = all[i].job;
    const sweep::Grid grid = sweep::parse_grid("mbs=1,2; recompute=none,full");
    sweep::SpaceOptions space;
    std::vector<std::string> csv;
    std::vector<sweep::Result> results;
    for (const int threads : {1, 2, 3}) {
      sweep::Options o;
      o.threads = threads;
      results.push_back(sweep::run_sweep(base, grid, space, o));
      std::ostringstream out;
      sweep::write_csv(out, results.back());
      csv.push_back(out.str());
    }
    for (std::size_t t = 1; t < results.size(); ++t) {
      EXPECT_EQ(csv[t], csv[0]) << all[i].model;
      ASSERT_EQ(results[t].ranked.size(), results[0].ranked.size());
      for (std::size_t k = 0; k < results[0].ranked.size(); ++k) {
        EXPECT_EQ(results[t].ranked[k].candidate, results[0].ranked[k].candidate);
        EXPECT_EQ(results[t].ranked[k].iteration_s, results[0].ranked[k].iteration_s);
      }
    }
  }
}

}  // namespace
