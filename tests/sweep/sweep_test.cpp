#include "projector/sweep/sweep.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "projector/interval/interval.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/util/error.h"
#include "support/job_builders.h"

namespace projector::sweep {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Llama 3.2 1B on one node of 8 x H100 (80 GB), GBS 32, seq 4096: the sweeps below are small
// enough to brute-force.
JobSpec small_base() {
  return testing::make_job(testing::llama32_1b(), {.nodes = 1, .gpn = 8, .gbs = 32, .seq = 4096});
}

// The job a candidate describes, assembled field by field (not through apply_candidate), so the
// brute force also checks the sweep's re-layout. Hardware loaded once.
JobSpec hand_job(const Candidate& c) {
  static const JobSpec hw = small_base();
  JobSpec job;
  job.source = "<test>";
  job.model = testing::llama32_1b();
  job.cluster = hw.cluster;
  ParallelSpec& p = job.parallel;
  p.tp = c.tp;
  p.pp = c.pp;
  p.vpp = c.vpp;
  p.cp = c.cp;
  p.ep = c.ep;
  p.etp = c.tp;
  // The base states sequence_parallel: false (testing::JobShape), and a stated value holds for
  // every layout (Megatron reads the argument as given).
  p.sequence_parallel = false;
  // Legal candidates split the 16 layers evenly (no uneven layouts in these sweeps).
  const int z = c.pp * c.vpp;
  for (int i = 0; i < z; ++i) p.stages.push_back({i * 16 / z, 16 / z, i == 0, i == z - 1, 0});
  p.distributed_optimizer = c.sharding == Sharding::kDistributedOptimizer;
  if (c.sharding == Sharding::kFsdp) p.fsdp = FsdpKind::kZero3;
  p.overlap_grad_reduce = true;  // as testing::make_job sets it for the base
  p.overlap_param_gather = true;
  job.runtime.micro_batch_size = c.mbs;
  job.runtime.global_batch_size = 32;
  job.runtime.seq_length = 4096;
  job.runtime.flash_attention = true;
  job.runtime.kernel_gap_fraction = hw.runtime.kernel_gap_fraction;  // the framework's, kept
  job.runtime.host_dispatch = hw.runtime.host_dispatch;              // likewise
  job.runtime.schedule = c.schedule;
  RecomputeSpec& r = job.runtime.recompute;
  switch (c.recompute.kind) {
    case RecomputeKind::kNone:
      break;
    case RecomputeKind::kSelective:
      r.granularity = RecomputeGranularity::kSelective;
      r.modules = {RecomputeModule::kCoreAttn};
      break;
    case RecomputeKind::kFull:
      r.granularity = RecomputeGranularity::kFull;
      r.num_layers = 1;
      break;
    case RecomputeKind::kFullBlock:
      r.granularity = RecomputeGranularity::kFull;
      r.method = RecomputeMethod::kBlock;
      r.num_layers = c.recompute.num_layers;
      break;
    case RecomputeKind::kOpPolicy:
      r.granularity = RecomputeGranularity::kOpPolicy;
      break;
    case RecomputeKind::kEveryN:
      for (int i = c.recompute.num_layers - 1; i < 16; i += c.recompute.num_layers) {
        r.layer_ids.push_back(i);
      }
      break;
    case RecomputeKind::kTensorPolicy:
      r.granularity = RecomputeGranularity::kTensors;
      break;
  }
  return job;
}

// The sweep's screen: no remedies, no allocator replay (docs/memory.md "Allocator").
MemoryOptions no_remedies() {
  MemoryOptions mo;
  mo.suggest_remedies = false;
  mo.replay_allocator = false;
  return mo;
}

// The best layout of the sweep equals the best found by projecting every legal candidate one by
// one through project_memory + project_performance (fresh cost cache each time).
TEST(Sweep, BestEqualsBruteForce) {
  const JobSpec base = small_base();
  Grid grid = parse_grid("mbs=1,2,4; recompute=none,selective,full,block2");
  SpaceOptions space;
  Options opts;
  opts.memory_limit = 0.25;  // 20 GB: prunes the large micro batches without recompute
  opts.threads = 2;
  const Result r = run_sweep(base, grid, space, opts);
  ASSERT_GT(r.projected, 0u);
  ASSERT_GT(r.oom, 0u);
  EXPECT_EQ(r.failed, 0u);

  const Enumeration en = enumerate(base, grid, space);
  const double limit = 0.25 * base.cluster.accelerator.hbm_bytes;
  double best = -1.0;
  Candidate best_c;
  std::size_t projected = 0, oom = 0;
  for (const Candidate& c : en.legal) {
    const JobSpec job = hand_job(c);
    if (project_memory(job, no_remedies()).peak_point_bytes > limit) {
      ++oom;
      continue;
    }
    ++projected;
    PerfOptions po;
    po.with_memory = false;
    po.keep_op_table = false;
    const double t = project_performance(job, po).tokens_per_s_per_gpu;
    if (t > best) {  // strict: the first of equals wins, as in the sweep
      best = t;
      best_c = c;
    }
  }
  EXPECT_EQ(r.projected, projected);
  EXPECT_EQ(r.oom, oom);
  EXPECT_EQ(r.ranked.front().candidate, best_c)
      << describe(r.ranked.front().candidate) << " vs " << describe(best_c);
  EXPECT_DOUBLE_EQ(r.ranked.front().tokens_per_s_per_gpu, best);
  // Ranked best first.
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    EXPECT_GE(r.ranked[i - 1].tokens_per_s_per_gpu, r.ranked[i].tokens_per_s_per_gpu);
  }
}

// 1, 2 and 4 threads give identical results, bit for bit.
TEST(Sweep, DeterministicAcrossThreadCounts) {
  const JobSpec base = small_base();
  const Grid grid = parse_grid("mbs=1,2; recompute=none,full; sharding=distopt,fsdp");
  SpaceOptions space;
  space.include_vshape = true;
  Options opts;
  opts.memory_limit = 0.3;
  std::vector<Result> results;
  for (int t : {1, 2, 4}) {
    opts.threads = t;
    results.push_back(run_sweep(base, grid, space, opts));
  }
  const Result& a = results[0];
  ASSERT_GT(a.ranked.size(), 10u);
  for (const Result& b : results) {
    EXPECT_EQ(a.enumerated, b.enumerated);
    EXPECT_EQ(a.illegal_by_rule, b.illegal_by_rule);
    EXPECT_EQ(a.oom, b.oom);
    EXPECT_EQ(a.projected, b.projected);
    EXPECT_EQ(a.pareto, b.pareto);
    ASSERT_EQ(a.ranked.size(), b.ranked.size());
    for (std::size_t i = 0; i < a.ranked.size(); ++i) {
      EXPECT_EQ(a.ranked[i].candidate, b.ranked[i].candidate) << i;
      EXPECT_EQ(a.ranked[i].index, b.ranked[i].index) << i;
      EXPECT_EQ(a.ranked[i].iteration_s, b.ranked[i].iteration_s) << i;
      EXPECT_EQ(a.ranked[i].peak_point_bytes, b.ranked[i].peak_point_bytes) << i;
      EXPECT_EQ(a.ranked[i].bubble_fraction, b.ranked[i].bubble_fraction) << i;
    }
    std::ostringstream ca, cb;
    write_csv(ca, a);
    write_csv(cb, b);
    EXPECT_EQ(ca.str(), cb.str());
  }
}

// Every rule rejects a hand-picked candidate that breaks it (and only it: the same candidate with
// the offending value fixed is legal). Base: Llama 3.2 1B (16 layers, 32 heads, 8 KV heads), one
// node of 8 GPUs, GBS 32, seq 4096.
TEST(Sweep, LegalityRules) {
  // The sweep checks layers with the job's own split policy; Megatron's refuses uneven splits
  // (the test builders allow them).
  JobSpec base = small_base();
  base.parallel.uneven_layers_allowed = false;
  auto rule = [&](Candidate c, const JobSpec* b = nullptr, SpaceOptions o = {}) {
    return check_legality(b != nullptr ? *b : base, c, o);
  };
  const Candidate ok{
      .tp = 2, .pp = 2, .vpp = 1, .cp = 2, .ep = 1, .etp = 2, .mbs = 1, .recompute = {}};
  EXPECT_EQ(rule(ok), Rule::kLegal);  // 2 x 2 x 2 = 8 GPUs, DP 1, 32 microbatches

  Candidate c = ok;
  c.tp = 3, c.etp = 3;  // 32 heads % 3 != 0
  EXPECT_EQ(rule(c), Rule::kTpHeads);
  c = ok;
  c.tp = 16, c.etp = 16, c.pp = 1, c.cp = 1;  // 32 heads divide, 8 KV heads do not
  EXPECT_EQ(rule(c), Rule::kTpKvHeads);
  {
    JobSpec four = base;  // 4 GPUs per node, 2 nodes: TP 8 spans two nodes
    four.cluster.gpus_per_node = 4;
    four.cluster.nodes = 2;
    c = ok;
    c.tp = 8, c.etp = 8, c.pp = 1, c.cp = 1;
    EXPECT_EQ(rule(c, &four), Rule::kTpBeyondNode);
    SpaceOptions allow;
    allow.allow_tp_beyond_node = true;
    EXPECT_EQ(rule(c, &four, allow), Rule::kLegal);
  }
  c = ok;
  c.cp = 4;  // 2 x 2 x 4 = 16 does not divide 8
  EXPECT_EQ(rule(c), Rule::kWorldDense);
  c = ok;
  c.vpp = 3, c.schedule = ScheduleKind::kInterleaved;  // 16 layers % (2 x 3) != 0
  EXPECT_EQ(rule(c), Rule::kLayers);
  {
    SpaceOptions uneven;
    uneven.allow_uneven_layers = true;  // 6 stages of 3,3,3,3,2,2 layers; 32 microbatches % 2 = 0
    EXPECT_EQ(rule(c, &base, uneven), Rule::kLegal);
    const JobSpec j = make_job(base, c, 1);
    ASSERT_EQ(j.parallel.stages.size(), 6u);
    EXPECT_EQ(j.parallel.stages[0].num_layers, 3);
    EXPECT_EQ(j.parallel.stages[5].num_layers, 2);
  }
  c = ok;
  c.ep = 2;  // no experts
  EXPECT_EQ(rule(c), Rule::kNotMoe);
  {
    JobSpec moe = testing::make_job(testing::mixtral_8x7b(), {.gpn = 8, .gbs = 32});
    Candidate m{.tp = 1, .pp = 1, .vpp = 1, .cp = 1, .ep = 8, .etp = 1, .mbs = 1, .recompute = {}};
    EXPECT_EQ(rule(m, &moe), Rule::kLegal);  // 8 experts over EP 8
    m.ep = 3;                                // 8 experts % 3 != 0
    EXPECT_EQ(rule(m, &moe), Rule::kExpertsEp);
    m.ep = 4, m.etp = 2, m.pp = 2;  // ETP x EP x PP = 16 does not divide 8
    EXPECT_EQ(rule(m, &moe), Rule::kWorldExpert);
  }
  {
    JobSpec odd = base;
    odd.runtime.seq_length = 4100;  // 4100 % (2 x 2) == 0 but 4100 % (2 x 4) != 0
    c = ok;
    EXPECT_EQ(rule(c, &odd), Rule::kLegal);
    c.cp = 4, c.pp = 1;
    EXPECT_EQ(rule(c, &odd), Rule::kSeqCp);
  }
  c = ok;
  c.tp = 1, c.etp = 1, c.pp = 1, c.cp = 1, c.mbs = 8;  // DP 8 x MBS 8 = 64 does not divide 32
  EXPECT_EQ(rule(c), Rule::kGbs);
  c = ok;
  c.pp = 1, c.cp = 4, c.schedule = ScheduleKind::kZeroBubble;  // nothing to pipeline
  EXPECT_EQ(rule(c), Rule::kScheduleNeedsPp);
  c = ok;
  c.vpp = 2;  // 1f1b with 2 chunks
  EXPECT_EQ(rule(c), Rule::kScheduleVpp);
  c.schedule = ScheduleKind::kZbvFormatted, c.vpp = 4;  // V-shape needs exactly 2
  EXPECT_EQ(rule(c), Rule::kScheduleVpp);
  {
    JobSpec b12 = base;
    b12.runtime.global_batch_size = 12;  // TP1 PP4 CP1: DP 2, 6 microbatches, 6 % 4 != 0
    Candidate i{.tp = 1, .pp = 4, .vpp = 2, .cp = 1, .ep = 1, .etp = 1, .mbs = 1, .recompute = {}};
    i.schedule = ScheduleKind::kInterleaved;
    EXPECT_EQ(rule(i, &b12), Rule::kInterleavedMicrobatches);
    i.schedule = ScheduleKind::kDualPipeV;  // 6 < 2 x 4
    EXPECT_EQ(rule(i, &b12), Rule::kDualPipeMicrobatches);
    i.schedule = ScheduleKind::kZbvGreedyHalf;  // no microbatch rule
    EXPECT_EQ(rule(i, &b12), Rule::kLegal);
  }
  c = ok;
  c.schedule = ScheduleKind::kZeroBubble;
  EXPECT_EQ(rule(c), Rule::kLegal);
  c.recompute = {RecomputeKind::kFull, 0};
  EXPECT_EQ(rule(c), Rule::kSplitBackwardRecompute);
  c = ok;  // PP 2: 8 layers per chunk
  c.recompute = {RecomputeKind::kFullBlock, 7};
  EXPECT_EQ(rule(c), Rule::kLegal);
  c.recompute = {RecomputeKind::kFullBlock, 8};
  EXPECT_EQ(rule(c), Rule::kRecomputeBlock);
  {
    // Attention residuals (Kimi-K3) at PP > 1: Primus widens the stage transfer for 1F1B and
    // interleaved 1F1B only (kimi_k3_pp_shape_patches.py:188-199), so the sweep offers no other.
    JobSpec res = base;
    res.model.attn_res_block_size = 12;
    Candidate z = ok;
    EXPECT_EQ(rule(z, &res), Rule::kLegal);
    z.schedule = ScheduleKind::kZeroBubble;
    EXPECT_EQ(rule(z, &res), Rule::kScheduleWidenedTransfer);
    z.pp = 1, z.cp = 4;  // no stage transfer: the rule has nothing to say (1F1B only at PP 1)
    z.schedule = ScheduleKind::k1F1B;
    EXPECT_EQ(rule(z, &res), Rule::kLegal);
  }
}

// Enumeration counts on an axis set small enough to count by hand.
TEST(Sweep, EnumerationCounts) {
  const JobSpec base = small_base();
  // 3 TP x 2 PP x 1 CP x 2 MBS x 1 x 1 x 1 = 12 combinations, 1f1b only.
  // TP 3: 4 illegal (heads). TP 1/2 x PP 1/2 x MBS 1/2: DP = 8/(tp pp) in {8,4,4,2}; GBS 32 %
  // (MBS x DP) == 0 for all 8, so 8 legal.
  const Grid g = parse_grid(
      "tp=1,2,3; pp=1,2; cp=1; mbs=1,2; schedule=1f1b; recompute=none; "
      "sharding=distopt");
  const Enumeration en = enumerate(base, g, {});
  EXPECT_EQ(en.enumerated, 12u);
  EXPECT_EQ(en.legal.size(), 8u);
  EXPECT_EQ(en.illegal_by_rule[static_cast<int>(Rule::kTpHeads)], 4u);
  EXPECT_EQ(en.illegal(), 4u);
  // Default axes on 8 GPUs, 16 layers: every TP x PP x CP (powers of 2) with product <= 8 is 20
  // triples; check that each legal candidate obeys every rule by construction.
  const Enumeration all = enumerate(base, Grid{}, {});
  EXPECT_EQ(all.enumerated, all.legal.size() + all.illegal());
  for (const Candidate& c : all.legal) {
    EXPECT_EQ(8 % (c.tp * c.pp * c.cp), 0);
    EXPECT_EQ(c.dp, 8 / (c.tp * c.pp * c.cp));
    EXPECT_EQ(16 % (c.pp * c.vpp), 0);
    EXPECT_EQ(32 % (c.mbs * c.dp), 0);
  }
}

// Nothing fits: the message names the candidate with the smallest overshoot and the GiB over,
// which a brute force over the legal candidates confirms.
TEST(Sweep, NowhereFitsMessage) {
  const JobSpec base = small_base();
  const Grid grid = parse_grid("mbs=1; recompute=none,full");
  Options opts;
  opts.memory_limit = 0.02;  // 1.6 GB: 1.24B params need >= 18 B/param / 8 GPUs = 2.8 GB
  opts.threads = 2;
  const Result r = run_sweep(base, grid, {}, opts);
  EXPECT_EQ(r.projected, 0u);
  ASSERT_TRUE(r.smallest_overshoot.any);
  const double limit = 0.02 * base.cluster.accelerator.hbm_bytes;
  double least = 1e300;
  Candidate least_c;
  for (const Candidate& c : enumerate(base, grid, {}).legal) {
    const double over = project_memory(hand_job(c), no_remedies()).peak_point_bytes - limit;
    if (over < least) {
      least = over;
      least_c = c;
    }
  }
  EXPECT_GT(least, 0.0);
  EXPECT_EQ(r.smallest_overshoot.candidate, least_c);
  const std::string msg = nowhere_fits_message(r);
  EXPECT_NE(msg.find(describe(least_c)), std::string::npos) << msg;
  char over[32];
  std::snprintf(over, sizeof over, "%.2f GiB over", least / kGiB);
  EXPECT_NE(msg.find(over), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

Options two_threads() {
  Options o;
  o.threads = 2;
  return o;
}

// Pareto front: no front member is dominated; every other projected layout is dominated by a
// front member (at least as fast and at most as much memory).
TEST(Sweep, ParetoFront) {
  const Result r = run_sweep(small_base(), parse_grid("mbs=1,2,4"), {}, two_threads());
  ASSERT_FALSE(r.pareto.empty());
  auto dominates = [](const Entry& a, const Entry& b) {
    return a.tokens_per_s_per_gpu >= b.tokens_per_s_per_gpu && a.peak_bytes <= b.peak_bytes &&
           (a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu || a.peak_bytes < b.peak_bytes);
  };
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Entry& e = r.ranked[i];
    bool dominated = false;
    for (const Entry& o : r.ranked) dominated = dominated || dominates(o, e);
    if (e.pareto) {
      EXPECT_FALSE(dominated) << describe(e.candidate);
    } else {
      bool by_front = false;
      for (std::size_t f : r.pareto) {
        const Entry& p = r.ranked[f];
        by_front = by_front || (p.tokens_per_s_per_gpu >= e.tokens_per_s_per_gpu &&
                                p.peak_bytes <= e.peak_bytes);
      }
      EXPECT_TRUE(by_front) << describe(e.candidate);
    }
  }
  // The fastest layout is always on the front.
  EXPECT_TRUE(r.ranked.front().pareto);
}

// A stop request before the start evaluates nothing and says so.
TEST(Sweep, StopFlag) {
  std::atomic<bool> stop{true};
  Options o;
  o.stop = &stop;
  o.threads = 2;
  const Result r = run_sweep(small_base(), parse_grid("mbs=1"), {}, o);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.projected + r.oom, 0u);
  EXPECT_EQ(r.not_evaluated, r.enumerated - r.illegal);
  EXPECT_GT(r.not_evaluated, 0u);
}

TEST(Sweep, GridParsing) {
  const Grid g = parse_grid(
      " tp=1,2 ; pp=4; schedule=interleaved,zerobubble; recompute=block3; "
      "sharding=fsdp; bucket_mb=40; vpp=2,4");
  EXPECT_EQ(g.tp, (std::vector<int>{1, 2}));
  EXPECT_EQ(g.pp, (std::vector<int>{4}));
  EXPECT_EQ(g.vpp, (std::vector<int>{2, 4}));
  EXPECT_EQ(g.schedules,
            (std::vector<ScheduleKind>{ScheduleKind::kInterleaved, ScheduleKind::kZeroBubble}));
  ASSERT_EQ(g.recompute.size(), 1u);
  EXPECT_EQ(g.recompute[0], (RecomputeOption{RecomputeKind::kFullBlock, 3}));
  EXPECT_EQ(g.sharding, (std::vector<Sharding>{Sharding::kFsdp}));
  EXPECT_EQ(g.bucket_bytes, (std::vector<std::int64_t>{40000000}));
  for (const char* bad : {"tp=0", "tq=1", "tp", "schedule=gpipe", "recompute=partial", "mbs=x"}) {
    try {
      parse_grid(bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.key(), "--grid") << bad;
    }
  }
  EXPECT_THROW(parse_objective("speed"), InputError);
  EXPECT_EQ(parse_objective("mfu"), Objective::kMfu);
}

// The CLI end to end: a run that projects (CSV has one row per projected layout) and one where
// nothing fits (exit code 1 and the message on stderr).
TEST(Sweep, Cli) {
  const std::string cfg =
      std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../examples/inline-gpt-1.3B.yaml";
  const std::string csv = ::testing::TempDir() + "sweep_cli.csv";
  const std::string cmd = std::string(PROJECTOR_BINARY) + " sweep --config " + cfg +
                          " --nodes 1 --grid 'mbs=1,2; recompute=none' -j 2 --top 3 --csv " + csv +
                          " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(csv);
  std::string line;
  std::size_t rows = 0;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("rank,index,tp,pp", 0), 0u);
  while (std::getline(in, line)) ++rows;
  EXPECT_GT(rows, 0u);

  const std::string err = ::testing::TempDir() + "sweep_cli.err";
  const std::string cmd2 = std::string(PROJECTOR_BINARY) + " sweep --config " + cfg +
                           " --nodes 1 --grid 'mbs=1' --memory-limit 0.01 -j 2 > /dev/null 2> " +
                           err;
  const int rc = std::system(cmd2.c_str());
  EXPECT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  std::ifstream e(err);
  const std::string text((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("no layout fits"), std::string::npos) << text;
  EXPECT_NE(text.find("GiB over"), std::string::npos) << text;
}

// --top bounds the printed Pareto front too (issue 30), and --train-tokens / --rank-by cost add
// each layout's time to train and cost (issue 27): cost = GPU-hours x price, GPU-hours = days x 24
// x GPUs, checked on the JSON.
TEST(Sweep, CliTopBoundsTheFrontAndPricesTheRun) {
  const std::string cfg =
      std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../examples/inline-gpt-1.3B.yaml";
  const std::string out = ::testing::TempDir() + "sweep_cost.txt";
  const std::string json = ::testing::TempDir() + "sweep_cost.json";
  const std::string cmd = std::string(PROJECTOR_BINARY) + " sweep --config " + cfg +
                          " --nodes 1 -j 2 --top 2 --train-tokens 300B --gpu-hour-cost 2 "
                          "--rank-by cost --json " +
                          json + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream t(out);
  const std::string text((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("Training 300B tokens, top 2:"), std::string::npos) << text;
  std::ifstream j(json);
  const nlohmann::json doc = nlohmann::json::parse(j);
  EXPECT_EQ(doc["objective"], "cost");
  const std::size_t front = doc["pareto_ranks"].size();
  if (front > 2) {
    EXPECT_NE(text.find(fmt::format("... {} lighter, slower layouts", front - 2)),
              std::string::npos)
        << text;
  }
  const nlohmann::json& c = doc["candidates"][0];
  const double gpus = doc["world_size"].get<double>();
  const double days = 300e9 / (c["tokens_per_s_per_gpu"].get<double>() * gpus) / 86400.0;
  EXPECT_NEAR(c["time_to_train"]["days"].get<double>(), days, 1e-9 * days);
  EXPECT_NEAR(c["time_to_train"]["cost_usd"].get<double>(), 2.0 * days * 24.0 * gpus,
              1e-6 * days * gpus);
  // Cheapest first.
  for (std::size_t i = 1; i < doc["candidates"].size(); ++i) {
    EXPECT_LE(doc["candidates"][i - 1]["time_to_train"]["cost_usd"].get<double>(),
              doc["candidates"][i]["time_to_train"]["cost_usd"].get<double>() * (1 + 1e-12));
  }
  const std::string bad = std::string(PROJECTOR_BINARY) + " sweep --config " + cfg +
                          " --nodes 1 --rank-by cost > /dev/null 2>&1";
  const int rc = std::system(bad.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

// Calibrated ranges in the sweep (issue 27): each layout carries the range of its regime, and
// --rank-by p10 ranks by the range's low end. Hand-made residuals: layouts without a pipeline
// have residuals of +50 % (the projection reads 1.5x the measurement: low end P / 1.5), pipelined
// ones 0 % (low end P), so by p10 every pipelined layout outranks an unpipelined one whose point
// value is less than 1.5x its own.
TEST(Sweep, RanksByTheLowEndOfTheCalibratedRange) {
  const JobSpec base = small_base();
  ResidualTable t;
  for (int i = 0; i < 8; ++i) {
    t.runs.push_back({"a" + std::to_string(i), "f",
                      "nvidia/hopper/dense/megatron/nopp/bf16/gpus<=64", 50.0, std::nullopt});
    t.runs.push_back({"b" + std::to_string(i), "f", "nvidia/hopper/dense/megatron/pp/bf16/gpus<=64",
                      0.0, std::nullopt});
  }
  Grid grid = parse_grid("pp=1,2; mbs=1; recompute=full");
  SpaceOptions space;
  Options opts;
  opts.threads = 1;
  opts.residuals = &t;
  opts.objective = Objective::kTokensP10;
  const Result r = run_sweep(base, grid, space, opts);
  ASSERT_GT(r.ranked.size(), 1u);
  for (const Entry& e : r.ranked) {
    const double factor = e.candidate.pp > 1 ? 1.0 : 1.5;
    EXPECT_NEAR(e.tokens_lo, e.tokens_per_s_per_gpu / factor, 1e-9 * e.tokens_per_s_per_gpu);
    EXPECT_NEAR(e.tokens_hi, e.tokens_per_s_per_gpu / factor, 1e-9 * e.tokens_per_s_per_gpu);
  }
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    EXPECT_GE(r.ranked[i - 1].tokens_lo, r.ranked[i].tokens_lo);
  }
  EXPECT_GT(r.ranked.front().candidate.pp, 1);
}

}  // namespace
}  // namespace projector::sweep
