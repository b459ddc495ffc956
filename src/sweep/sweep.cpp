// Running a sweep: a pool of workers, each with its own JobSpec, CostCache and in-flight memo,
// pulls candidates from a shared counter, prunes by memory and projects performance. Outcomes are
// stored by candidate index so the ranking does not depend on which worker ran what.
#include "projector/sweep/sweep.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/util/error.h"

namespace projector::sweep {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the calling thread: the per-stage cost figures stay meaningful on a loaded machine.
std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

enum class Status : std::uint8_t { kNotEvaluated, kOom, kProjected, kFailed };

struct Outcome {
  Status status = Status::kNotEvaluated;
  Entry entry;
  std::string failure;
};

constexpr std::size_t kChunk = 4;  // candidates a worker claims at a time
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Shared {
  Shared(const JobSpec& b, const std::vector<Candidate>& c, int n, const Options& o, double limit,
         std::vector<Outcome>& out)
      : base(b), candidates(c), nodes(n), options(o), limit_bytes(limit), outcomes(out) {}
  const JobSpec& base;
  const std::vector<Candidate>& candidates;
  int nodes;
  const Options& options;
  double limit_bytes;
  std::vector<Outcome>& outcomes;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::atomic<std::int64_t> memory_ns{0};
  std::atomic<std::int64_t> perf_ns{0};
  std::mutex mutex;
  std::condition_variable finished_cv;
  int finished_workers = 0;
};

bool stop_requested(const Options& o) {
  return o.stop != nullptr && o.stop->load(std::memory_order_relaxed);
}

// What one worker owns: its job (rewritten per candidate) and its memos.
struct WorkerState {
  JobSpec job;
  CostCache cache;
  schedule::InFlightCache in_flight;
  std::int64_t memory_ns = 0;
  std::int64_t perf_ns = 0;
  std::map<std::string, std::optional<ResidualQuantiles>> ranges;  // by regime key
};

void evaluate(const Candidate& c, std::size_t index, Shared& s, WorkerState& w) {
  JobSpec& job = w.job;
  Outcome& out = s.outcomes[index];
  Entry& e = out.entry;
  e.candidate = c;
  e.index = index;
  try {
    apply_candidate(c, s.nodes, job);
    e.candidate.dp = job.dp();
    e.candidate.expert_dp = job.expert_dp();
    e.num_microbatches = job.num_microbatches();
    e.sequence_parallel = job.parallel.sequence_parallel;
    const std::int64_t t0 = thread_cpu_ns();
    MemoryOptions mo;
    mo.suggest_remedies = false;
    mo.in_flight_cache = &w.in_flight;
    // The screen is allocated + the residual fraction; the allocator replay (about 0.1 ms a
    // layout) is left to `memory` / `both` on the chosen one (docs/memory.md "Allocator").
    mo.replay_allocator = false;
    const MemoryReport mem = project_memory(job, mo);
    const std::int64_t t1 = thread_cpu_ns();
    w.memory_ns += t1 - t0;
    e.peak_point_bytes = mem.peak_point_bytes;
    e.peak_upper_bytes = mem.peak_upper_bytes;
    e.peak_bytes = s.options.prune_on_upper_bound ? mem.peak_upper_bytes : mem.peak_point_bytes;
    if (s.limit_bytes > 0.0 && e.peak_bytes > s.limit_bytes) {
      out.status = Status::kOom;
      return;
    }
    PerfOptions po;
    po.keep_op_table = false;
    po.with_memory = false;
    const PerfReport rep = project_performance(job, w.cache, po);
    w.perf_ns += thread_cpu_ns() - t1;
    e.iteration_s = rep.iteration_s;
    e.tokens_per_s_per_gpu = rep.tokens_per_s_per_gpu;
    if (s.options.residuals != nullptr) {
      // Quantiles once per regime and worker: the layouts of a sweep share a few regimes.
      const Regime regime = classify_regime(job);
      auto it = w.ranges.find(regime.key);
      if (it == w.ranges.end()) {
        it = w.ranges
                 .emplace(regime.key, residual_quantiles(*s.options.residuals, regime,
                                                         ResidualMetric::kThroughput))
                 .first;
      }
      if (it->second) {
        const CalibratedRange range = range_from_quantiles(*it->second, regime.key, rep);
        e.tokens_lo = range.tokens_per_s_per_gpu_lo;
        e.tokens_hi = range.tokens_per_s_per_gpu_hi;
      }
    }
    e.mfu = rep.mfu;
    e.bubble_fraction = rep.bubble_fraction;
    e.busy_fraction = rep.busy_fraction;
    e.exposed = rep.exposed;
    out.status = Status::kProjected;
  } catch (const std::exception& ex) {
    out.status = Status::kFailed;
    out.failure = fmt::format("{}: {}", describe(c), ex.what());
  }
}

void worker(Shared& s) {
  WorkerState w{s.base, CostCache(s.base.cluster.accelerator, s.base.cluster.network), {}, 0, 0,
                {}};
  const std::size_t n = s.candidates.size();
  while (!stop_requested(s.options)) {
    const std::size_t begin = s.next.fetch_add(kChunk, std::memory_order_relaxed);
    if (begin >= n) break;
    const std::size_t end = std::min(n, begin + kChunk);
    for (std::size_t i = begin; i < end; ++i) {
      if (stop_requested(s.options)) break;
      evaluate(s.candidates[i], i, s, w);
      s.done.fetch_add(1, std::memory_order_relaxed);
    }
  }
  s.memory_ns.fetch_add(w.memory_ns, std::memory_order_relaxed);
  s.perf_ns.fetch_add(w.perf_ns, std::memory_order_relaxed);
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    ++s.finished_workers;
  }
  s.finished_cv.notify_all();
}

// Better first; ties by enumeration index (deterministic for any thread count).
bool better(const Entry& a, const Entry& b, Objective o) {
  const double sa = score(a, o);
  const double sb = score(b, o);
  if (sa != sb) return sa > sb;
  return a.index < b.index;
}

}  // namespace

double score(const Entry& e, Objective o) {
  switch (o) {
    case Objective::kTokensPerSPerGpu:
      return e.tokens_per_s_per_gpu;
    case Objective::kIterationTime:
      return -e.iteration_s;
    case Objective::kMfu:
      return e.mfu;
    case Objective::kTokensP10:
      return e.tokens_lo > 0.0 ? e.tokens_lo : e.tokens_per_s_per_gpu;
    case Objective::kCost:
      // Cost = tokens x price / (tokens/s/GPU x 3600) at a fixed world size: the cheapest is the
      // fastest per GPU.
      return e.tokens_per_s_per_gpu;
  }
  return 0.0;
}

TrainingPlan entry_plan(const Entry& e, const Result& r, const JobSpec& base) {
  return plan_from_rate(base, r.world, e.tokens_per_s_per_gpu, e.tokens_lo, e.tokens_hi, r.plan,
                        e.busy_fraction);
}

Result run_candidates(const JobSpec& base, const std::vector<Candidate>& candidates, int nodes,
                      const Options& options) {
  if (!(options.memory_limit > 0.0 && options.memory_limit <= 1.5)) {  // NaN fails too
    throw InputError(SourceLocation{"--memory-limit", 0, 0}, "--memory-limit",
                     fmt::format("{} is not a fraction of HBM in (0, 1.5]", options.memory_limit));
  }
  const auto t0 = Clock::now();
  Result r;
  r.objective = options.objective;
  r.plan = options.plan;
  r.nodes = nodes > 0 ? nodes : base.cluster.nodes;
  r.world = r.nodes * base.cluster.gpus_per_node;
  r.hbm_bytes = base.cluster.accelerator.hbm_bytes;
  r.limit_bytes = r.hbm_bytes > 0.0 ? options.memory_limit * r.hbm_bytes : 0.0;
  r.pruned_on_upper_bound = options.prune_on_upper_bound;

  std::vector<Outcome> outcomes(candidates.size());
  Shared s(base, candidates, r.nodes, options, r.limit_bytes, outcomes);
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(
                                                   1, (candidates.size() + kChunk - 1) / kChunk))));
  {
    std::vector<std::jthread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int i = 0; i < threads; ++i) pool.emplace_back([&s] { worker(s); });
    if (options.progress) {
      const auto interval = std::chrono::duration<double>(options.progress_interval_s);
      std::unique_lock<std::mutex> lock(s.mutex);
      while (
          !s.finished_cv.wait_for(lock, interval, [&] { return s.finished_workers == threads; })) {
        lock.unlock();
        options.progress(Progress{s.done.load(), candidates.size(), seconds_since(t0)});
        lock.lock();
      }
      lock.unlock();
      options.progress(Progress{s.done.load(), candidates.size(), seconds_since(t0)});
    }
  }  // joins

  r.stopped = stop_requested(options);
  for (Outcome& o : outcomes) {
    switch (o.status) {
      case Status::kNotEvaluated:
        ++r.not_evaluated;
        break;
      case Status::kOom: {
        ++r.oom;
        const double over = o.entry.peak_bytes - r.limit_bytes;
        if (!r.smallest_overshoot.any || over < r.smallest_overshoot.over_bytes) {
          r.smallest_overshoot = {true, o.entry.candidate, o.entry.peak_bytes, over,
                                  o.entry.sequence_parallel};
        }
        break;
      }
      case Status::kProjected:
        ++r.projected;
        r.ranked.push_back(o.entry);
        break;
      case Status::kFailed:
        ++r.failed;
        if (r.failures.size() < 5) r.failures.push_back(std::move(o.failure));
        break;
    }
  }
  std::sort(r.ranked.begin(), r.ranked.end(),
            [&](const Entry& a, const Entry& b) { return better(a, b, options.objective); });

  // Pareto front of (objective up, peak memory down): walk by ascending memory (ties: better
  // objective first, then index) and keep each entry that beats everything lighter than it.
  std::vector<std::size_t> by_memory(r.ranked.size());
  for (std::size_t i = 0; i < by_memory.size(); ++i) by_memory[i] = i;
  std::sort(by_memory.begin(), by_memory.end(), [&](std::size_t a, std::size_t b) {
    const Entry& ea = r.ranked[a];
    const Entry& eb = r.ranked[b];
    if (ea.peak_bytes != eb.peak_bytes) return ea.peak_bytes < eb.peak_bytes;
    return a < b;  // `ranked` order is already best-first with index ties
  });
  bool have_best = false;
  double best = 0.0;
  for (const std::size_t i : by_memory) {
    const double sc = score(r.ranked[i], options.objective);
    if (!have_best || sc > best) {
      have_best = true;
      best = sc;
      r.ranked[i].pareto = true;
      r.pareto.push_back(i);
    }
  }
  r.memory_s = static_cast<double>(s.memory_ns.load()) * 1e-9;
  r.performance_s = static_cast<double>(s.perf_ns.load()) * 1e-9;
  r.elapsed_s = seconds_since(t0);
  return r;
}

Result run_sweep(const JobSpec& base, const Grid& grid, const SpaceOptions& space,
                 const Options& options) {
  const auto t0 = Clock::now();
  const Enumeration en = enumerate(base, grid, space, options.stop);
  const int nodes = space.nodes > 0 ? space.nodes : base.cluster.nodes;
  Result r = run_candidates(base, en.stopped ? std::vector<Candidate>{} : en.legal, nodes, options);
  r.stopped = r.stopped || en.stopped;
  r.enumerated = en.enumerated;
  r.illegal_by_rule = en.illegal_by_rule;
  r.illegal = en.illegal();
  r.elapsed_s = seconds_since(t0);
  return r;
}

std::string nowhere_fits_message(const Result& r) {
  if (r.projected > 0 || !r.smallest_overshoot.any) return "";
  const Overshoot& o = r.smallest_overshoot;
  return fmt::format(
      "no layout fits in {:.1f} GiB ({:.2f} x {:.1f} GiB HBM, {} peak) on {} node(s): {} legal "
      "candidate(s) all exceed it; the closest is {} at {:.2f} GiB, {:.2f} GiB over",
      r.limit_bytes / kGiB, r.hbm_bytes > 0 ? r.limit_bytes / r.hbm_bytes : 0.0, r.hbm_bytes / kGiB,
      r.pruned_on_upper_bound ? "upper-bound" : "point-estimate", r.nodes, r.oom,
      describe(o.candidate), o.peak_bytes / kGiB, o.over_bytes / kGiB);
}

}  // namespace projector::sweep
