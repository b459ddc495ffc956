// `projector sweep`: every legal layout of the config's model on N nodes, pruned by memory,
// ranked by the full performance projection.
#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "commands.h"
#include "job_options.h"
#include "projector/frontend/adapter.h"
#include "projector/hardware/catalog.h"
#include "projector/job/spec.h"
#include "projector/report/html_report.h"
#include "projector/report/job_report.h"
#include "projector/sweep/recsys_sweep.h"
#include "projector/sweep/sweep.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

// Set by the SIGINT handler; the sweep polls it. A signal handler can only reach a global.
std::atomic<bool> g_sweep_stop{false};  // NOLINT: signal-handler state
extern "C" void on_sigint(int) {
  g_sweep_stop.store(true);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct SweepCliOptions {
  JobOptions job;
  std::string grid;
  std::string objective = "tokens_per_s_per_gpu";
  double memory_limit = 0.9;
  int top = 10;
  std::string csv_path;
  std::string json_path;
  std::string html_path;
  int threads = 0;
  bool include_vshape = false;
  bool allow_uneven_layers = false;
  bool prune_upper = false;
  std::string train_tokens;
  double gpu_hour_cost_usd = 0.0;
};

void pin(std::vector<int>& axis, std::int64_t flag) {
  if (flag > 0 && axis.empty()) axis = {static_cast<int>(flag)};  // range-checked on parse
}

std::string exposed_text(const sweep::Entry& e) {
  return fmt::format("{:.0f}/{:.0f}/{:.0f}/{:.0f}/{:.0f}", e.exposed.tp_s * 1e3,
                     e.exposed.cp_s * 1e3, e.exposed.ep_s * 1e3, e.exposed.pp_s * 1e3,
                     e.exposed.dp_s * 1e3);
}

// The width of the layout cells, from the rows a table prints (layouts differ in length with
// the axes a model has: ETP, recompute sets, schedules); the exposed-time cell comes last.
struct RowWidths {
  std::size_t layout = 6;
};
constexpr std::string_view kExposedHeader = "exposed ms TP/CP/EP/PP/DP";

RowWidths widths_of(const std::vector<const sweep::Entry*>& rows) {
  RowWidths w;
  for (const sweep::Entry* e : rows) {
    w.layout = std::max(w.layout, sweep::describe(e->candidate).size());
  }
  return w;
}

void print_header_row(std::FILE* out, const RowWidths& w) {
  fmt::print(out, "  {:>4}  {:<{}} {:>9} {:>17} {:>8} {:>6} {:>8} {:>8} {:>7}  {}\n", "#", "layout",
             w.layout, "tok/s/GPU", "80 % range", "iter s", "MFU %", "peak GiB", "upper", "bubble%",
             kExposedHeader);
}

void print_row(std::FILE* out, std::size_t rank, const sweep::Entry& e, const RowWidths& w) {
  const std::string range =
      e.tokens_lo > 0.0 ? fmt::format("{:.0f}-{:.0f}", e.tokens_lo, e.tokens_hi) : "-";
  fmt::print(out,
             "  {:>4}  {:<{}} {:>9.1f} {:>17} {:>8.3f} {:>6.1f} {:>8.2f} {:>8.2f} {:>7.1f}  {}\n",
             rank, sweep::describe(e.candidate), w.layout, e.tokens_per_s_per_gpu, range,
             e.iteration_s, e.mfu * 100.0, e.peak_point_bytes / kGiB, e.peak_upper_bytes / kGiB,
             e.bubble_fraction * 100.0, exposed_text(e));
}

void print_progress(const sweep::Progress& p) {
  const double rate = p.elapsed_s > 0 ? static_cast<double>(p.done) / p.elapsed_s : 0.0;
  const double eta = rate > 0 ? static_cast<double>(p.total - p.done) / rate : 0.0;
  fmt::print(stderr, "\r  sweep: {}/{} ({:.1f}%)  elapsed {:.1f} s  {:.0f}/s  ETA {:.0f} s   ",
             p.done, p.total, p.total > 0 ? 100.0 * p.done / p.total : 100.0, p.elapsed_s, rate,
             eta);
}

void write_html(const SweepCliOptions& o, const CLI::App& cmd, const JobSpec& base,
                const std::string& doc) {
  HtmlReportInput in;
  in.kind = "sweep";
  in.title = "projector sweep: " + base.model.name;
  in.command = command_line(cmd);
  in.input_path = base.source;
  in.input_text = read_input_text(base.source);
  in.job_json = job_json(base);
  in.sweep_json = doc;
  in.top_k = std::max(o.top, 1);
  write_output(o.html_path, html_report(in), "--html");
}

// Recommendation models: embedding sharding choices x per-GPU batch sizes.
int run_recsys(const SweepCliOptions& o, const JobSpec& base) {
  const sweep::RecsysGrid grid =
      o.grid.empty() ? sweep::RecsysGrid{} : sweep::parse_recsys_grid(o.grid);
  const sweep::RecsysResult r = sweep::run_recsys_sweep(base, grid, o.memory_limit);
  std::FILE* const text_out = o.json_path == "-" ? stderr : stdout;
  fmt::print(text_out,
             "Sweep: {} on {} GPUs ({}); {} candidates in {:.3f} s; memory limit {:.1f} GiB\n",
             base.model.name, r.world, base.cluster.accelerator.name, r.entries.size(), r.elapsed_s,
             r.limit_bytes / kGiB);
  fmt::print(text_out, "  {:>4}  {:<16} {:>8} {:>10} {:>12} {:>14} {:>9}  {}\n", "#", "sharding",
             "batch", "step ms", "samples/s", "samples/s/GPU", "peak GiB", "bound");
  const std::size_t top =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(o.top, 1)), r.entries.size());
  for (std::size_t i = 0; i < top; ++i) {
    const sweep::RecsysEntry& e = r.entries[i];
    const std::string name = e.sharding == EmbeddingSharding::kAuto
                                 ? std::string("planner")
                                 : std::string(to_string(e.sharding));
    if (!e.fits) {
      fmt::print(text_out, "  {:>4}  {:<16} {:>8} {:>10} {:>12} {:>14} {:>9.2f}  {}\n", i + 1, name,
                 e.batch, "-", "-", "-", e.peak_bytes / kGiB,
                 e.planned ? "does not fit" : "no plan fits the planner's budget");
      continue;
    }
    fmt::print(text_out, "  {:>4}  {:<16} {:>8} {:>10.2f} {:>12.0f} {:>14.0f} {:>9.2f}  {}\n",
               i + 1, name, e.batch, e.step_s * 1e3, e.samples_per_s, e.samples_per_s_per_gpu,
               e.peak_bytes / kGiB, e.bound);
  }
  if (!o.json_path.empty()) write_output(o.json_path, sweep::recsys_sweep_json(r, base), "--json");
  return r.entries.empty() || !r.entries.front().fits ? kExitFailure : kExitOk;
}

// The header lines: job, memory limit, candidate counts, illegal ones by rule.
void print_summary(std::FILE* text_out, const SweepCliOptions& o, const sweep::Result& r,
                   const JobSpec& base, sweep::Objective objective) {
  const int threads =
      o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  fmt::print(text_out, "Sweep: {} on {} node(s) x {} {} = {} GPUs; GBS {}, seq {}; objective {}\n",
             base.model.name, r.nodes, base.cluster.gpus_per_node, base.cluster.accelerator.name,
             r.world, base.runtime.global_batch_size, base.runtime.seq_length,
             sweep::to_string(objective));
  if (r.limit_bytes > 0) {
    fmt::print(text_out, "Memory limit: {:.1f} GiB ({:.2f} x {:.1f} GiB HBM), pruned on the {}\n",
               r.limit_bytes / kGiB, o.memory_limit, r.hbm_bytes / kGiB,
               r.pruned_on_upper_bound ? "upper bound" : "point estimate");
  } else {
    fmt::print(text_out, "Memory limit: none (the accelerator's HBM size is unknown)\n");
  }
  fmt::print(
      text_out,
      "Candidates: {} enumerated, {} illegal, {} out of memory, {} projected{}{} in {:.3f} s "
      "({} thread(s); memory {:.2f} s, performance {:.2f} s CPU)\n",
      r.enumerated, r.illegal, r.oom, r.projected,
      r.failed > 0 ? fmt::format(", {} failed", r.failed) : "",
      r.not_evaluated > 0 ? fmt::format(", {} not evaluated", r.not_evaluated) : "", r.elapsed_s,
      threads, r.memory_s, r.performance_s);
  if (r.illegal > 0) {
    std::string rules;
    for (int i = 1; i < sweep::kNumRules; ++i) {
      const std::size_t n = r.illegal_by_rule[static_cast<std::size_t>(i)];
      if (n == 0) continue;
      rules += fmt::format("{}{} {}", rules.empty() ? "" : ", ",
                           sweep::to_string(static_cast<sweep::Rule>(i)), n);
    }
    fmt::print(text_out, "Illegal by rule: {}\n", rules);
  }
  for (const std::string& f : r.failures) fmt::print(stderr, "projector: warning: {}\n", f);
  if (r.stopped) {
    fmt::print(text_out,
               "Stopped by interrupt after {} of {} legal candidates; best found so far:\n",
               r.oom + r.projected + r.failed, r.oom + r.projected + r.failed + r.not_evaluated);
  }
}

void write_outputs(const SweepCliOptions& o, const CLI::App& cmd, const sweep::Result& r,
                   const JobSpec& base) {
  if (!o.csv_path.empty()) {
    std::ostringstream csv;
    sweep::write_csv(csv, r);
    write_output(o.csv_path, csv.str(), "--csv");
  }
  if (!o.json_path.empty() || !o.html_path.empty()) {
    const std::string doc = sweep::to_json(r, base);
    if (!o.json_path.empty()) write_output(o.json_path, doc, "--json");
    if (!o.html_path.empty()) write_html(o, cmd, base, doc);
  }
}

// --train-tokens: the top layouts' time to train, GPU-hours and cost, with their 80 % ranges.
void print_plans(std::FILE* out, const SweepCliOptions& o, const sweep::Result& r,
                 const JobSpec& base, std::size_t top) {
  fmt::print(out, "\nTraining {} tokens, top {}:\n", o.train_tokens, top);
  fmt::print(out, "  {:>4}  {:>9} {:>17} {:>12} {:>14} {:>25}\n", "#", "days", "80 % range",
             "GPU-hours", "cost USD", "80 % range");
  for (std::size_t i = 0; i < top; ++i) {
    const TrainingPlan p = sweep::entry_plan(r.ranked[i], r, base);
    const bool cost = p.gpu_hour_cost_usd > 0.0;
    fmt::print(
        out, "  {:>4}  {:>9.1f} {:>17} {:>12.0f} {:>14} {:>25}\n", i + 1, p.days.value,
        p.has_range ? fmt::format("{:.1f}-{:.1f}", p.days.lo, p.days.hi) : "-", p.gpu_hours.value,
        cost ? fmt::format("{:.0f}", p.cost_usd.value) : "-",
        cost && p.has_range ? fmt::format("{:.0f}-{:.0f}", p.cost_usd.lo, p.cost_usd.hi) : "-");
  }
}

// The ranked layouts and the Pareto front; the exit code.
int print_results(std::FILE* text_out, const SweepCliOptions& o, const sweep::Result& r,
                  sweep::Objective objective, const JobSpec& base) {
  if (r.ranked.empty()) {
    const std::string msg = sweep::nowhere_fits_message(r);
    if (!msg.empty()) {
      fmt::print(stderr, "projector: {}\n", msg);
    } else if (!r.stopped) {
      fmt::print(stderr, "projector: no legal layout to project (see the rule counts above)\n");
    }
    return r.stopped ? kExitInterrupted : kExitFailure;
  }
  const std::size_t top =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(o.top, 1)), r.ranked.size());
  // The front's fastest `top` layouts (lightest first); --json / --csv / --html keep the whole
  // front. Both tables share one set of column widths.
  const std::size_t shown = std::min(top, r.pareto.size());
  std::vector<const sweep::Entry*> printed;
  for (std::size_t i = 0; i < top; ++i) printed.push_back(&r.ranked[i]);
  for (std::size_t k = r.pareto.size() - shown; k < r.pareto.size(); ++k) {
    printed.push_back(&r.ranked[r.pareto[k]]);
  }
  const RowWidths w = widths_of(printed);
  fmt::print(text_out, "\nTop {} by {}:\n", top, sweep::to_string(objective));
  print_header_row(text_out, w);
  for (std::size_t i = 0; i < top; ++i) print_row(text_out, i + 1, r.ranked[i], w);
  if (r.plan.train_tokens > 0.0) print_plans(text_out, o, r, base, top);
  fmt::print(
      text_out, "\nPareto front, throughput vs peak memory ({} layouts{}, lightest first):\n",
      r.pareto.size(), shown < r.pareto.size() ? fmt::format("; the {} fastest", shown) : "");
  print_header_row(text_out, w);
  for (std::size_t k = r.pareto.size() - shown; k < r.pareto.size(); ++k) {
    print_row(text_out, r.pareto[k] + 1, r.ranked[r.pareto[k]], w);
  }
  if (shown < r.pareto.size()) {
    fmt::print(text_out, "  ... {} lighter, slower layouts on the front (--top, --json, --csv)\n",
               r.pareto.size() - shown);
  }
  return r.stopped ? kExitInterrupted : kExitOk;  // interrupted: the best found so far, exit 130
}
// The base job of a sweep, as the config describes it. A stated layout the rules refuse (e.g. 43
// layers on PP 8, which Megatron asserts against) does not stop a search that replaces the layout
// anyway: the base is then loaded with every parallel size at 1 and the refusal printed as a
// warning. Anything else that is refused (a bad key, a model not modelled) stays an error.
JobSpec load_sweep_base(const JobOptions& load, const ResolvedConfig& resolved,
                        const LoadRequest& request) {
  try {
    return build_job_spec(resolved, request);
  } catch (const InputError& refused) {
    JobOptions neutral = load;
    neutral.tp = neutral.pp = neutral.vpp = neutral.cp = neutral.ep = neutral.etp = 1;
    const LoadRequest plain = to_load_request(neutral);
    JobSpec base;
    try {
      base = build_job_spec(resolve_config(plain), plain);
    } catch (const InputError&) {
      throw refused;
    }
    fmt::print(stderr,
               "projector: warning: the config's own layout is refused ({}); the sweep starts from "
               "TP, PP, VPP, CP, EP 1 and searches every legal layout\n",
               refused.what());
    return base;
  }
}

int run(const SweepCliOptions& o, const CLI::App& cmd) {
  if (!(o.memory_limit > 0.0 && o.memory_limit <= 1.5)) {  // NaN fails too
    throw InputError({"--memory-limit", 0, 0}, "--memory-limit",
                     fmt::format("{} is not a fraction of HBM in (0, 1.5]", o.memory_limit));
  }
  sweep::Grid grid = o.grid.empty() ? sweep::Grid{} : sweep::parse_grid(o.grid);
  const sweep::Objective objective = sweep::parse_objective(o.objective);
  const PlanInputs plan = make_plan_inputs(o.train_tokens, o.gpu_hour_cost_usd);
  if (objective == sweep::Objective::kCost && plan.train_tokens == 0.0) {
    throw InputError({}, "--rank-by", "cost needs --train-tokens (and --gpu-hour-cost for USD)");
  }
  // Layout flags pin their axis; the base job is loaded as the config describes it.
  pin(grid.tp, o.job.tp);
  pin(grid.pp, o.job.pp);
  pin(grid.vpp, o.job.vpp);
  pin(grid.cp, o.job.cp);
  pin(grid.ep, o.job.ep);
  pin(grid.etp, o.job.etp);
  pin(grid.mbs, o.job.mbs);
  JobOptions load = o.job;
  load.tp = load.pp = load.vpp = load.cp = load.ep = load.etp = load.mbs = 0;
  load.nodes = 0;
  const LoadRequest request = to_load_request(load);
  const ResolvedConfig resolved = resolve_config(request);
  const JobSpec base = load_sweep_base(load, resolved, request);
  // Before a sweep that may run for minutes: an output that would overwrite an input is refused.
  check_output(o.json_path, "--json");
  check_output(o.csv_path, "--csv");
  check_output(o.html_path, "--html");
  // Recommendation models sweep their own axes on the job as stated (flags included); the family
  // is read from the base so that a stated layout the sweep would replace refuses nothing.
  if (base.model.family == ModelFamily::kRecommendation) return run_recsys(o, build_job(o.job));
  for (const std::string& w : base.warnings) fmt::print(stderr, "projector: warning: {}\n", w);

  sweep::SpaceOptions space;
  space.nodes = o.job.nodes > 0 ? static_cast<int>(o.job.nodes) : base.cluster.nodes;
  space.include_vshape = o.include_vshape;
  space.allow_uneven_layers = o.allow_uneven_layers;
  space.allow_tp_beyond_node = o.job.allow_tp_beyond_node;
  // A back-end with its own FSDP2 layout space (torchtitan: FSDP2 / HSDP, its schedules, its AC
  // modes) says so; the others sweep Megatron's.
  const AdapterRegistry& adapters = request.adapters ? *request.adapters : builtin_adapters();
  const BackendAdapter* adapter = adapters.find(resolved.framework);
  space.fsdp2_native = adapter != nullptr && adapter->sweeps_fsdp2_layouts();
  sweep::Options opts;
  opts.objective = objective;
  opts.plan = plan;
  // Each layout's calibrated 80 % range (docs/validation.md); --rank-by p10 ranks by its low end.
  const ResidualTable residuals =
      load_residuals(o.job.data_dir.empty() ? default_data_dir() : o.job.data_dir);
  opts.residuals = &residuals;
  opts.memory_limit = o.memory_limit;
  opts.prune_on_upper_bound = o.prune_upper;
  opts.threads = o.threads;
  opts.stop = &g_sweep_stop;
  // A progress line on a terminal, once the sweep has run a second; erased when it ends (the
  // summary states the time).
  bool progress_shown = false;
  if (isatty(STDERR_FILENO) != 0) {
    opts.progress = [&progress_shown](const sweep::Progress& p) {
      if (p.elapsed_s < 1.0) return;
      print_progress(p);
      progress_shown = true;
    };
  }

  g_sweep_stop.store(false);
  using Handler = void (*)(int);
  const Handler previous = std::signal(SIGINT, on_sigint);
  const sweep::Result r = sweep::run_sweep(base, grid, space, opts);
  std::signal(SIGINT, previous == SIG_ERR ? SIG_DFL : previous);
  if (progress_shown) fmt::print(stderr, "\r\033[K");

  // With --json - the JSON owns stdout; the human report goes to stderr.
  std::FILE* const text_out = o.json_path == "-" ? stderr : stdout;
  print_summary(text_out, o, r, base, objective);
  write_outputs(o, cmd, r, base);
  return print_results(text_out, o, r, objective, base);
}

}  // namespace

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<SweepCliOptions>();
  auto* cmd = app.add_subcommand(
      "sweep", "fastest legal layout (TP/PP/VPP/CP/EP/MBS/schedule/recompute) that fits");
  add_job_options(cmd, opts->job);
  cmd->add_option("--grid", opts->grid,
                  "axes to sweep, e.g. 'tp=1,2,4,8; pp=1,2,4; mbs=1,2; recompute=none,full; "
                  "schedule=1f1b,interleaved; vpp=2,4; sharding=distopt,fsdp; bucket_mb=40' "
                  "(missing axes: every legal value)");
  cmd->add_option("--objective", opts->objective,
                  "tokens_per_s_per_gpu, iteration_time, mfu, p10 (the low end of the 80 % "
                  "range) or cost (of --train-tokens)");
  cmd->add_option("--rank-by", opts->objective,
                  "the same as --objective (e.g. --rank-by p10, --rank-by cost)");
  cmd->add_option("--train-tokens", opts->train_tokens,
                  "tokens to train on (e.g. 15T): each layout's time to train and GPU-hours");
  cmd->add_option("--gpu-hour-cost", opts->gpu_hour_cost_usd,
                  "USD per GPU-hour: each layout's cost of --train-tokens")
      ->check(CLI::Range(1e-9, 1e9));
  cmd->add_option("--memory-limit", opts->memory_limit,
                  "fraction of HBM a layout's peak may use (default 0.9)");
  cmd->add_option("--top", opts->top, "layouts to print (default 10)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--csv", opts->csv_path, "write every projected layout as CSV to FILE");
  cmd->add_option("--json", opts->json_path, "write the sweep as JSON to FILE ('-': stdout)");
  cmd->add_option(
      "--html", opts->html_path,
      "write a self-contained offline HTML report (Pareto scatter, top-K table) to FILE");
  cmd->add_option("-j,--threads", opts->threads, "worker threads (default: all cores)")
      ->check(CLI::Range(0, 4096));
  cmd->add_flag("--include-vshape", opts->include_vshape,
                "also sweep the V-shape schedules (zbv-*, dualpipev)");
  cmd->add_flag("--allow-uneven-layers", opts->allow_uneven_layers,
                "allow PP x VPP that does not divide the layers (first stages get one more)");
  cmd->add_flag("--prune-upper-bound", opts->prune_upper,
                "prune on the memory upper bound instead of the point estimate");
  cmd->callback([opts, cmd, &exit_code] { exit_code = run(*opts, *cmd); });
}

}  // namespace projector::cli
