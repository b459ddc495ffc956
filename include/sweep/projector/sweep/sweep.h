// Layout sweep: every legal parallel layout of a job's model on a fixed cluster, pruned by the
// memory projection, ranked by the full performance projection.
//
// Flow: enumerate() walks the Cartesian product of the axes (TP, PP, CP, EP, ETP, pipeline
// schedule x VPP, MBS, recompute policy, optimizer sharding, DDP bucket size) and rejects each
// combination that breaks a legality rule (Rule). run_sweep() then projects memory for every legal
// candidate (microseconds), drops those whose peak exceeds memory_limit x HBM, and runs the full
// performance projection (workload, cost models, schedule event simulation) on the survivors.
//
// Fixed from the base job: model, GBS, sequence length, precision, optimizer, overlap flags,
// hardware. Replaced per candidate: the layout fields of ParallelSpec, micro batch, schedule and
// recompute policy. Pipeline stages are always Megatron's balanced split (an explicit
// pipeline_model_parallel_layout or decoder_first/last_pipeline_num_layers of the base config is
// not carried over). The switches a framework ties to the layout (sequence parallelism, the
// overlaps, FSDP's reshard, accumulation rounds) and the recompute choice are written as the job's
// framework does (job/layout.h relayout, job/recompute.h apply_recompute).
//
// Determinism: each candidate's outcome is a pure function of (base job, candidate), results are
// stored by enumeration index, and ranking ties are broken by enumeration index, so the output is
// identical for any thread count.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "projector/interval/interval.h"
#include "projector/interval/training_plan.h"
#include "projector/job/recompute.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/perf/perf.h"

namespace projector::sweep {

// What "best" means. With GBS, sequence length and world size fixed, all three rank the same way
// (tokens per iteration and model FLOPs are constants); they differ only in what is printed.
// kTokensP10: the pessimistic end of each layout's calibrated 80 % range (Entry::tokens_lo; the
// point value where the job's regime has no residuals), `--rank-by p10`. kCost: the lowest cost
// (GPU-hours x price) of the --train-tokens run; at the sweep's fixed world size the same order as
// tokens/s/GPU, named so that the cost columns are what is ranked.
enum class Objective { kTokensPerSPerGpu, kIterationTime, kMfu, kTokensP10, kCost };
Objective parse_objective(std::string_view text);  // InputError key "--objective"
std::string_view to_string(Objective o);

enum class Sharding : std::uint8_t {
  kDistributedOptimizer,  // Megatron distributed optimizer (ZeRO-1: master + moments sharded)
  kFsdp,                  // Megatron FSDP optim_grads_params (weights, grads, optimizer sharded)
  // PyTorch FSDP2 as torchtitan applies it: per-block units, the fp32 master sharded, reshard after
  // forward unless PP; with Candidate::dp_replicate > 1 hybrid (HSDP).
  kFsdp2,
};
std::string_view to_string(Sharding s);

// The recompute axis takes the job module's choices (job/recompute.h): none, selective (the
// framework's selective set), full, block<N>, op, every<N>, and a per-tensor policy the job's
// framework names (remat:<name>; remat:base keeps the job's own).
using projector::RecomputeKind;
using RecomputeOption = RecomputeChoice;

// One layout. dp / expert_dp follow from the world size.
struct Candidate {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1;
  int mbs = 1;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  RecomputeOption recompute;
  Sharding sharding = Sharding::kDistributedOptimizer;
  std::int64_t bucket_bytes = 0;  // ddp_bucket_size; 0: Megatron's default
  int dp_replicate = 1;           // HSDP replicate groups (kFsdp2 only)
  int dp = 1, expert_dp = 1;      // filled by enumerate() / apply_candidate()
  friend bool operator==(const Candidate&, const Candidate&) = default;
};
// "TP2 PP4 VPP2 CP1 EP1 ETP2 DP8 MBS1 interleaved recompute=none dist-opt" (bucket when set).
std::string describe(const Candidate& c);

// The axes. An empty axis takes its default (SpaceOptions below); a non-empty one is used as
// given (values that break a rule are counted as illegal, not silently dropped).
struct Grid {
  std::vector<int> tp, pp, vpp, cp, ep, etp, mbs;
  std::vector<ScheduleKind> schedules;
  std::vector<RecomputeOption> recompute;
  // The text of each recompute value as written (parallel to `recompute`): a remat:<name> value
  // is looked up in the base job's named policies when the space is built (enumerate), since
  // which names exist is the job's framework's.
  std::vector<std::string> recompute_text;
  std::vector<Sharding> sharding;
  std::vector<std::int64_t> bucket_bytes;
  std::vector<int> replicate;  // HSDP replicate degrees (with sharding fsdp2)
};
// "tp=1,2,4,8; pp=1,2,4; ep=8,16; mbs=1,2,4; vpp=2,4; cp=1,2; etp=1;
//  schedule=1f1b,interleaved,zero-bubble,zbv-formatted,zbv-greedy-min,zbv-greedy-half,dualpipev;
//  recompute=none,selective,full,block2,op,every2; sharding=distopt,fsdp,fsdp2; bucket_mb=40,160;
//  replicate=1,2"
// Separators: ';' between axes, ',' between values. InputError key "--grid" on bad input.
Grid parse_grid(std::string_view text);

struct SpaceOptions {
  int nodes = 0;  // 0: the base job's
  // Default axes:
  //   tp: divisors of gpus_per_node (of the world with allow_tp_beyond_node)
  //   pp: divisors of the world up to the number of layers
  //   cp: divisors d of the world with seq_length % (2d) == 0
  //   ep: MoE: divisors of the world up to the expert count; dense: 1
  //   etp: MoE: {TP, 1}; dense: TP
  //   schedule x vpp: 1f1b and zero-bubble (vpp 1), interleaved with every vpp >= 2 dividing the
  //     layer count (with allow_uneven_layers also every power of two), plus zbv-formatted /
  //     zbv-greedy-min / zbv-greedy-half / dualpipev (vpp 2) when include_vshape
  //   mbs: default_mbs; recompute: none, selective, full; sharding: both; bucket: the base job's
  bool include_vshape = false;
  // Megatron's balanced layout needs layers % (pp x vpp) == 0. With this flag the uneven split
  // (the first L mod (pp x vpp) stages get one more layer) is allowed whenever every stage gets at
  // least one layer.
  bool allow_uneven_layers = false;
  bool allow_tp_beyond_node = false;  // also true when the base job allows it
  std::vector<int> default_mbs = {1, 2, 4, 8};
  // The axes of a per-block FSDP2 framework (torchtitan) instead of Megatron's: sharding fsdp2
  // with every replicate degree that divides DP (HSDP), recompute none / op / every2 / full, and
  // torchtitan's pipeline schedules (1F1B, Interleaved1F1B with 2 stages per rank, ZBVZeroBubble,
  // DualPipeV). Without PP each microbatch is its own accumulation round (torchtitan's gradient
  // accumulation), with PP one flush per iteration.
  bool fsdp2_native = false;
};

// Legality rules: the job builder's one rule set (job/rules.h), in its checking order; a candidate
// is reported under the first it breaks. The sweep checks them in search mode (RuleFacts::search),
// which also rejects layouts that only duplicate another candidate.
using Rule = LayoutRule;
inline constexpr int kNumRules = kNumLayoutRules;
using projector::explanation;
using projector::to_string;

// The first rule `c` breaks for `base` on `nodes` nodes (0: base's), or kLegal.
Rule check_legality(const JobSpec& base, const Candidate& c, const SpaceOptions& options);

struct Enumeration {
  std::vector<Candidate> legal;  // in enumeration order (dp / expert_dp filled)
  std::size_t enumerated = 0;    // every combination of the axes
  std::array<std::size_t, kNumRules> illegal_by_rule{};
  bool stopped = false;  // `stop` was set: the enumeration is incomplete
  std::size_t illegal() const;
};
// Grids past these are refused (InputError key "--grid") before anything is evaluated: the
// combinations a grid spans, and the legal candidates kept.
inline constexpr std::size_t kMaxEnumerated = std::size_t{1} << 28;
inline constexpr std::size_t kMaxLegalCandidates = std::size_t{1} << 22;
// `stop` (a cancellation token, e.g. set by the CLI's SIGINT handler) is polled as it goes.
Enumeration enumerate(const JobSpec& base, const Grid& grid, const SpaceOptions& options,
                      const std::atomic<bool>* stop = nullptr);

// Rewrites `job` (a copy of the base job) into candidate `c` on `nodes` nodes: parallel sizes,
// DP, balanced stages, SP, sharding, bucket, MBS, schedule and recompute policy. Reuses the job's
// storage, so a worker can keep one JobSpec for all its candidates.
void apply_candidate(const Candidate& c, int nodes, JobSpec& job);
JobSpec make_job(const JobSpec& base, const Candidate& c, int nodes);

// ------------------------------------------------------------------------------------- running

struct Progress {
  std::size_t done = 0;   // candidates evaluated (memory, and performance if it fit)
  std::size_t total = 0;  // legal candidates
  double elapsed_s = 0.0;
};

struct Options {
  Objective objective = Objective::kTokensPerSPerGpu;
  double memory_limit = 0.9;  // fraction of HBM a candidate's peak may use: finite, in (0, 1.5]
  // Prune on the point estimate (default: the calibrated projection, what `projector memory`
  // reports as the peak) or on the upper bound (worst-case fragmentation and MoE imbalance).
  bool prune_on_upper_bound = false;
  int threads = 0;  // 0: std::thread::hardware_concurrency()
  // Set (e.g. by a SIGINT handler) to stop early; candidates not yet evaluated are skipped.
  const std::atomic<bool>* stop = nullptr;
  // Called on the calling thread about every progress_interval_s while workers run.
  std::function<void(const Progress&)> progress;
  double progress_interval_s = 0.25;
  // The residuals behind each layout's calibrated 80 % range (interval/interval.h); null: none.
  const ResidualTable* residuals = nullptr;
  // --train-tokens / --gpu-hour-cost: each layout's time to train and cost (sweep::entry_plan).
  PlanInputs plan;
};

struct Entry {
  Candidate candidate;
  std::size_t index = 0;  // position in Enumeration::legal (the tie-breaker)
  int num_microbatches = 0;
  bool sequence_parallel = false;  // as the framework's profile decides it for this layout
  double peak_point_bytes = 0.0;
  double peak_upper_bytes = 0.0;
  double peak_bytes = 0.0;  // the one pruned on (point or upper bound)
  double iteration_s = 0.0;
  double tokens_per_s_per_gpu = 0.0;
  // The calibrated 80 % range of tokens/s/GPU (0 / 0 without residuals for the regime).
  double tokens_lo = 0.0;
  double tokens_hi = 0.0;
  double mfu = 0.0;
  double bubble_fraction = 0.0;
  double busy_fraction = 0.0;  // PerfReport::busy_fraction (the energy figure's)
  ExposedComm exposed;
  bool pareto = false;  // on the throughput / peak-memory Pareto front
  double exposed_total_s() const {
    return exposed.tp_s + exposed.cp_s + exposed.ep_s + exposed.pp_s + exposed.dp_s;
  }
};

// The memory-pruned candidate that missed the limit by the least.
struct Overshoot {
  bool any = false;
  Candidate candidate;
  double peak_bytes = 0.0;
  double over_bytes = 0.0;  // peak - limit
  bool sequence_parallel = false;
};

struct Result {
  Objective objective = Objective::kTokensPerSPerGpu;
  PlanInputs plan;  // Options::plan
  int nodes = 0;
  int world = 0;
  double hbm_bytes = 0.0;
  double limit_bytes = 0.0;  // memory_limit x HBM (0: HBM unknown, nothing pruned)
  bool pruned_on_upper_bound = false;
  std::size_t enumerated = 0;
  std::array<std::size_t, kNumRules> illegal_by_rule{};
  std::size_t illegal = 0;
  std::size_t oom = 0;
  std::size_t projected = 0;
  std::size_t failed = 0;         // the projection itself rejected a legal candidate (a bug)
  std::size_t not_evaluated = 0;  // skipped after a stop request
  bool stopped = false;
  std::vector<std::string> failures;  // first few messages of failed candidates
  std::vector<Entry> ranked;          // every projected candidate, best first
  std::vector<std::size_t> pareto;    // indices into `ranked`, by ascending peak memory
  Overshoot smallest_overshoot;
  double elapsed_s = 0.0;
  double memory_s = 0.0;       // CPU time of the memory projections, summed over workers
  double performance_s = 0.0;  // CPU time of the performance projections, summed over workers
};

// Enumerates, prunes and projects.
Result run_sweep(const JobSpec& base, const Grid& grid, const SpaceOptions& space,
                 const Options& options);
// The same for an explicit candidate list (already legal; dp filled or not).
Result run_candidates(const JobSpec& base, const std::vector<Candidate>& candidates, int nodes,
                      const Options& options);

// Objective value of an entry, larger is better (iteration time is negated).
double score(const Entry& e, Objective o);

// An entry's time to train, GPU-hours, cost and energy for Result::plan (empty plan: zeros).
TrainingPlan entry_plan(const Entry& e, const Result& r, const JobSpec& base);

// "No layout fits in 72.0 GiB (0.90 x 80.0 GiB HBM) ...; the closest is <candidate> at 75.3 GiB,
// 3.3 GiB over". Empty when something fits or nothing was pruned for memory.
std::string nowhere_fits_message(const Result& r);

// Every projected candidate, ranked, one row each.
void write_csv(std::ostream& out, const Result& r);
std::string to_json(const Result& r, const JobSpec& base);

}  // namespace projector::sweep
