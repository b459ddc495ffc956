#include "projector/report/perf_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "json_common.h"
#include "projector/job/spec.h"
#include "recsys_report.h"

namespace projector {
namespace {

using nlohmann::ordered_json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double ms(double s) {
  return s * 1e3;
}
// The longest any pipeline rank's compute waited for its own sends (blocking P2P), seconds.
double max_p2p_blocked_s(const PerfReport& rep) {
  double t = 0.0;
  for (const schedule::RankStats& r : rep.simulation.ranks) t = std::max(t, r.p2p_blocked_s);
  return t;
}
double us(double s) {
  return s * 1e6;
}

std::string human_count(double v) {
  const double a = std::fabs(v);
  if (a >= 1e15) return fmt::format("{:.2f}P", v / 1e15);
  if (a >= 1e12) return fmt::format("{:.2f}T", v / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (a >= 1e3) return fmt::format("{:.2f}K", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string precision_text(const RuntimeSpec& r) {
  std::string s{to_string(r.precision.params_dtype)};
  if (r.precision.fp4 != Fp4Recipe::kNone) {
    s += fmt::format(" + fp4 ({})", to_string(r.precision.fp4));
  } else if (r.precision.fp8 != Fp8Recipe::kNone) {
    s += fmt::format(" + fp8 ({})", to_string(r.precision.fp8));
  }
  return s;
}

std::string recompute_text(const RecomputeSpec& r) {
  std::string s{to_string(r.granularity)};
  if (r.granularity == RecomputeGranularity::kFull) {
    s += r.method == RecomputeMethod::kUniform ? " uniform" : " block";
    if (r.num_layers > 0) s += fmt::format(" {}", r.num_layers);
  }
  if (r.granularity == RecomputeGranularity::kSelective && !r.modules.empty()) {
    s += fmt::format(" ({})", fmt::join(r.modules.names(), ","));
  }
  if (!r.layer_ids.empty()) s += fmt::format(" + {} listed layers", r.layer_ids.size());
  return s;
}

// What the reader must know about the accelerator's numbers: an announced part's figures are
// vendor targets, and a derived entry's efficiencies were measured on another part.
std::string hardware_note(const AcceleratorSpec& acc) {
  std::string note;
  if (acc.status == "announced") note = acc.name + " is announced: vendor figures, not measured";
  if (!acc.calibration_note().empty()) {
    note += (note.empty() ? "" : "; ") + acc.calibration_note();
  }
  return note;
}

// "  (80 %: lo - hi; regime KEY, N runs)" after a figure with a calibrated range, else "".
// Without a range the reason is given once, on the tokens/s/GPU line (`why`).
std::string range_note(const PerfReport& rep, double lo, double hi, double scale,
                       bool why = false) {
  if (!rep.range && !rep.range_refusal.empty()) {
    if (!why) return "  (80 %: none)";
    return fmt::format("  (80 %: none; regime {}: {})", rep.unranged_regime, rep.range_refusal);
  }
  if (!rep.range) return "";
  const CalibratedRange& c = *rep.range;
  return fmt::format("  (80 %: {:.1f} - {:.1f}; regime {}{}, {} runs)", lo * scale, hi * scale,
                     c.level, c.level == c.regime ? "" : " pooled from " + c.regime, c.runs);
}

// "  (80 %: 70.1 - 86.3 GiB; regime all, 6 runs)" after a memory figure; "" without a range.
std::string memory_range_note(const MemoryReport& m) {
  if (!m.range) return "";
  const MemoryRange& r = *m.range;
  return fmt::format("  (80 %: {:.1f} - {:.1f} GiB; regime {}{}, {} runs with a published peak)",
                     r.peak_lo_bytes / kGiB, r.peak_hi_bytes / kGiB, r.level,
                     r.level == r.regime ? "" : " pooled from " + r.regime, r.runs);
}

std::string figure_range(const TrainingPlan& p, const PlanFigure& f, const char* fmt_spec) {
  if (!p.has_range) return "";
  return fmt::format(fmt::runtime(std::string("  (80 %: ") + fmt_spec + " - " + fmt_spec + ")"),
                     f.lo, f.hi);
}

// 15T, 300B, 2.5M: the way token budgets are written.
std::string token_count_text(double v) {
  if (v >= 1e12) return fmt::format("{:.4g}T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.4g}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.4g}M", v / 1e6);
  return fmt::format("{:.0f}", v);
}

std::string plan_text(const TrainingPlan& p) {
  std::string out;
  out += fmt::format("  Time to train           {:>12.1f} days for {} tokens on {} GPUs{}\n",
                     p.days.value, token_count_text(p.train_tokens), p.gpus,
                     figure_range(p, p.days, "{:.1f}"));
  out += fmt::format("  GPU-hours               {:>12.0f}{}\n", p.gpu_hours.value,
                     figure_range(p, p.gpu_hours, "{:.0f}"));
  if (p.gpu_hour_cost_usd > 0.0) {
    out +=
        fmt::format("  Cost                    {:>12.0f} USD at {:g} USD per GPU-hour{}\n",
                    p.cost_usd.value, p.gpu_hour_cost_usd, figure_range(p, p.cost_usd, "{:.0f}"));
  }
  if (p.board_power_w > 0.0 && p.idle_power_w > 0.0) {
    out += fmt::format(
        "  Energy (GPU boards)     {:>12.1f} MWh{}: {:g} W per GPU while computing ({:.0f} % of "
        "the "
        "time; {}), {:g} W while waiting ({}); hosts, network and cooling not included\n",
        p.energy_mwh.value, figure_range(p, p.energy_mwh, "{:.1f}"), p.board_power_w,
        100.0 * p.busy_fraction, p.power_source, p.idle_power_w, p.idle_power_source);
  } else if (p.board_power_w > 0.0) {
    out += fmt::format(
        "  Energy (GPU boards)     {:>12.1f} MWh at {:g} W per GPU ({}){}, an upper end (no "
        "measured idle power in the catalogue); hosts, network and cooling not included\n",
        p.energy_mwh.value, p.board_power_w, p.power_source,
        figure_range(p, p.energy_mwh, "{:.1f}"));
  } else {
    out +=
        "  Energy                  not projected: the catalogue has no board power for this "
        "accelerator\n";
  }
  return out;
}

// The largest per-microbatch host wait (F + B + W over its chunks) of any pipeline rank, when it
// is at least 1 % of that rank's microbatch time (below that it is the chunk's first issue).
double host_wait_per_microbatch_ms(const PerfReport& rep) {
  std::vector<double> wait_s, total_s;
  for (const ChunkTiming& c : rep.chunks) {
    const auto r = static_cast<std::size_t>(c.pp_rank);
    if (r >= wait_s.size()) {
      wait_s.resize(r + 1);
      total_s.resize(r + 1);
    }
    wait_s[r] += c.host_idle_s[0] + c.host_idle_s[1] + c.host_idle_s[2];
    total_s[r] += c.f_s + c.b_s + c.w_s;
  }
  double worst = 0.0;
  for (std::size_t r = 0; r < wait_s.size(); ++r) {
    if (wait_s[r] >= 0.01 * total_s[r]) worst = std::max(worst, wait_s[r]);
  }
  return worst * 1e3;
}

}  // namespace

std::string describe_op_shape(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm:
      return fmt::format("{}x{}x{} {}", op.gemm.m, op.gemm.n, op.gemm.k, to_string(op.gemm.dtype));
    case OpKind::kGroupedGemm:
      return fmt::format("{}x({}x{}x{}) {}", op.gemm.batch, op.gemm.m, op.gemm.n, op.gemm.k,
                         to_string(op.gemm.dtype));
    case OpKind::kAttention: {
      const AttentionShape& a = op.attention;
      return fmt::format("b{} h{}/{} s{}x{} d{}/{}{}", a.batch, a.q_heads, a.kv_heads, a.seq_q,
                         a.seq_kv, a.head_dim_qk, a.head_dim_v, a.causal ? " causal" : "");
    }
    case OpKind::kMemoryBound:
      return fmt::format("{} {}B", to_string(op.mem_class), human_count(op.bytes));
    case OpKind::kCollective:
      return fmt::format("{} {} n={} {}B{}", to_string(op.collective), to_string(op.group),
                         op.group_size, human_count(op.bytes),
                         op.steps > 1 ? fmt::format(" x{}", op.steps) : "");
    case OpKind::kHostTransfer:
      return fmt::format("host copy {}B", human_count(op.bytes));
  }
  return "";
}

std::string perf_summary_text(const JobSpec& job, const PerfReport& rep) {
  if (rep.has_recsys) return report_detail::recsys_perf_text(job, rep);
  const ParallelSpec& p = job.parallel;
  std::string out;
  out += "==================== Performance projection ====================\n";
  out += fmt::format("Model        {} ({} layers, hidden {})\n",
                     job.model.name.empty() ? "(inline)" : job.model.name, job.model.num_layers(),
                     job.model.hidden_size);
  out += fmt::format("Cluster      {} node(s) x {} {} = {} GPUs\n", job.cluster.nodes,
                     job.cluster.gpus_per_node, job.cluster.accelerator.name, rep.world_size);
  out += fmt::format(
      "Accelerator  {} ({:.0f} GiB HBM) from {}\n",
      job.cluster.accelerator.display_name.empty() ? job.cluster.accelerator.name
                                                   : job.cluster.accelerator.display_name,
      job.cluster.accelerator.hbm_bytes / kGiB,
      job.cluster.accelerator_origin.empty() ? "the job" : job.cluster.accelerator_origin);
  if (const std::string hw = hardware_note(job.cluster.accelerator); !hw.empty()) {
    out += fmt::format("Hardware     {}\n", hw);
  }
  out += fmt::format("Parallelism  TP {} PP {} VPP {} CP {} EP {} ETP {} DP {}{}{}{}\n", p.tp, p.pp,
                     p.vpp, p.cp, p.ep, p.etp, job.dp(), p.sequence_parallel ? ", SP" : "",
                     p.distributed_optimizer ? ", distributed optimizer" : "",
                     p.fsdp != FsdpKind::kNone ? fmt::format(", {}", to_string(p.fsdp)) : "");
  out += fmt::format("Batch        MBS {} GBS {} seq {} -> {} microbatches per DP rank\n",
                     job.runtime.micro_batch_size, job.runtime.global_batch_size,
                     job.runtime.seq_length, rep.num_microbatches);
  out += fmt::format("Precision    {}; recompute {}\n", precision_text(job.runtime),
                     recompute_text(job.runtime.recompute));
  out += fmt::format("Schedule     {} ({})\n", to_string(rep.schedule), rep.schedule_reason);
  out += "\n-- Per-microbatch chunk times (ms) --\n";
  out += fmt::format("  {:>4} {:>5} {:>5} {:>10} {:>10} {:>10}\n", "rank", "chunk", "stage", "F",
                     "B", "W");
  for (const ChunkTiming& c : rep.chunks) {
    out += fmt::format("  {:>4} {:>5} {:>5} {:>10.3f} {:>10.3f} {:>10.3f}\n", c.pp_rank, c.chunk,
                       c.stage, ms(c.f_s), ms(c.b_s), ms(c.w_s));
  }
  out += "\n-- Iteration --\n";
  out += fmt::format("  Iteration time          {:>12.1f} ms{}\n", ms(rep.iteration_s),
                     range_note(rep, rep.range ? rep.range->iteration_s_lo : 0.0,
                                rep.range ? rep.range->iteration_s_hi : 0.0, 1e3));
  out += fmt::format("    pipeline (simulated)  {:>12.1f} ms\n", ms(rep.pipeline_s));
  out += fmt::format("    optimizer step        {:>12.1f} ms\n", ms(rep.optimizer_s));
  if (rep.param_gather_exposed_s > 0) {
    out += fmt::format("    param all-gather      {:>12.1f} ms (not overlapped)\n",
                       ms(rep.param_gather_exposed_s));
  }
  out += fmt::format(
      "  Pipeline idle           {:>12.1f} % of the pipeline time on the busiest rank ({:.1f} % "
      "over ideal compute)\n",
      100.0 * rep.bubble_fraction, 100.0 * rep.bubble_over_ideal);
  out += fmt::format(
      "  Exposed comm (ms)       TP {:.1f}  CP {:.1f}  EP {:.1f}  PP {:.1f}  DP {:.1f}\n",
      ms(rep.exposed.tp_s), ms(rep.exposed.cp_s), ms(rep.exposed.ep_s), ms(rep.exposed.pp_s),
      ms(rep.exposed.dp_s));
  if (rep.exposed.offload_s > 0.0) {
    out += fmt::format("  Exposed host offload    {:>12.1f} ms\n", ms(rep.exposed.offload_s));
  }
  double ep_total = 0.0, ep_shared = 0.0, ep_paired = 0.0, ep_exposed = -1.0;
  int ep_rank = 0;
  for (const EpCommSplit& s : rep.ep_comm) {  // the rank with the most exposed EP time
    if (s.exposed_s <= ep_exposed) continue;
    ep_rank = s.pp_rank;
    ep_total = s.total_s;
    ep_shared = s.hidden_shared_experts_s;
    ep_paired = s.hidden_paired_microbatch_s;
    ep_exposed = s.exposed_s;
  }
  if (ep_total > 0.0) {
    out += fmt::format(
        "  EP dispatch/combine     {:>12.1f} ms: hidden by shared experts {:.1f}, by a paired "
        "microbatch {:.1f}{}, exposed {:.1f} (pipeline rank {})\n",
        ms(ep_total), ms(ep_shared), ms(ep_paired),
        rep.ep_pair_mechanism.empty() ? "" : " (" + rep.ep_pair_mechanism + ")", ms(ep_exposed),
        ep_rank);
  }
  if (const double wait_ms = host_wait_per_microbatch_ms(rep); wait_ms > 0.0) {
    out += fmt::format(
        "  Host issue waits        {:>12.2f} ms per microbatch on the busiest rank (the device "
        "waiting for the host to issue ops, docs/host.md)\n",
        wait_ms);
  }
  if (rep.routing_skew.applies) {
    out += fmt::format(
        "  Skewed routing          {:>12.1f} ms iteration, {:.1f} tokens/s/GPU if the busiest EP "
        "rank gets {:.2f}x the mean routed tokens (expert-load CV {:.2f}); above: balanced\n",
        ms(rep.routing_skew.iteration_s), rep.routing_skew.tokens_per_s_per_gpu,
        rep.routing_skew.load_factor, rep.routing_skew.expert_load_cv);
  }
  out += fmt::format("  Tokens/s                {:>12.0f}\n", rep.tokens_per_s);
  out += fmt::format("  Tokens/s/GPU            {:>12.1f}{}\n", rep.tokens_per_s_per_gpu,
                     range_note(rep, rep.range ? rep.range->tokens_per_s_per_gpu_lo : 0.0,
                                rep.range ? rep.range->tokens_per_s_per_gpu_hi : 0.0, 1.0, true));
  out += fmt::format("  Model TFLOP/s/GPU       {:>12.1f}\n", rep.model_tflops_per_gpu);
  if (rep.logged_tflops_per_gpu > 0.0) {
    out +=
        fmt::format("  MaxText TFLOP/s/device  {:>12.1f} (calculate_tflops_training_per_device)\n",
                    rep.logged_tflops_per_gpu);
  }
  out += fmt::format("  Hardware TFLOP/s/GPU    {:>12.1f} (incl. recompute)\n",
                     rep.hardware_tflops_per_gpu);
  out += fmt::format("  MFU                     {:>12.1f} % of {} dense peak ({:.0f} TFLOP/s)\n",
                     100.0 * rep.mfu, to_string(rep.mfu_dtype),
                     job.cluster.accelerator.peak_tflops[static_cast<int>(rep.mfu_dtype)]);
  out += fmt::format(
      "  6N+attention TFLOP/s/GPU {:>11.1f} (PaLM convention, as torchtitan logs; MFU {:.1f} %)\n",
      rep.palm_tflops_per_gpu, 100.0 * rep.palm_mfu);
  if (rep.has_memory) {
    out +=
        fmt::format("  Peak memory             {:>12.2f} GiB (upper {:.2f}) of {:.0f} GiB: {}{}\n",
                    rep.memory.peak_point_bytes / kGiB, rep.memory.peak_upper_bytes / kGiB,
                    rep.memory.capacity_bytes / kGiB, to_string(rep.memory.verdict),
                    memory_range_note(rep.memory));
  }
  if (rep.plan) out += plan_text(*rep.plan);
  return out;
}

// "measured: trace.json.gz" when the cost provider named its source, else the provenance alone.
static std::string provenance_text(const PricedOp& po) {
  std::string s(to_string(po.provenance));
  if (!po.detail.empty()) s += ": " + po.detail;
  return s;
}

std::string op_table_text(const JobSpec& job, const PerfReport& rep) {
  (void)job;
  std::string out;
  for (const ChunkTiming& c : rep.chunks) {
    out += fmt::format(
        "\n== pipeline rank {} chunk {} (stage {}): F {:.3f} ms  B {:.3f} ms  W {:.3f} ms ==\n",
        c.pp_rank, c.chunk, c.stage, ms(c.f_s), ms(c.b_s), ms(c.w_s));
    out += fmt::format("  {:<30} {:<28} {:<2} {:<40} {:>10} {:>10} {:>10} {:>10}  {}\n", "block",
                       "op", "ph", "shape", "FLOPs", "bytes", "time us", "exposed", "provenance");
    for (const PricedOp& po : c.ops) {
      out += fmt::format("  {:<30} {:<28} {:<2} {:<40} {:>10} {:>10} {:>10.1f} {:>10.1f}  {}\n",
                         po.block.substr(0, 30), po.op.name.substr(0, 28), to_string(po.op.phase),
                         describe_op_shape(po.op).substr(0, 40), human_count(po.op.flops),
                         human_count(po.op.bytes), us(po.time_s), us(po.exposed_s),
                         provenance_text(po));
    }
  }
  return out;
}

namespace {

ordered_json job_json(const JobSpec& job, const PerfReport& rep) {
  ordered_json jj;
  jj["source"] = job.source;
  jj["model"] = job.model.name;
  jj["num_layers"] = job.model.num_layers();
  jj["accelerator"] = job.cluster.accelerator.name;
  jj["accelerator_origin"] = job.cluster.accelerator_origin;
  jj["accelerator_status"] = job.cluster.accelerator.status;
  jj["calibration_derived_from"] = job.cluster.accelerator.derived_from.empty()
                                       ? ordered_json()
                                       : ordered_json(job.cluster.accelerator.derived_from);
  jj["calibration_note"] = job.cluster.accelerator.calibration_note();
  jj["network"] = job.cluster.network.name;
  jj["nodes"] = job.cluster.nodes;
  jj["gpus_per_node"] = job.cluster.gpus_per_node;
  jj["world_size"] = rep.world_size;
  jj["parallel"] = report_detail::parallel_json(job);
  jj["runtime"] = {{"micro_batch_size", job.runtime.micro_batch_size},
                   {"global_batch_size", job.runtime.global_batch_size},
                   {"seq_length", job.runtime.seq_length},
                   {"precision", precision_text(job.runtime)},
                   {"recompute", recompute_text(job.runtime.recompute)},
                   {"num_microbatches", rep.num_microbatches}};
  jj["schedule"] = {{"algorithm", std::string(to_string(rep.schedule))},
                    {"reason", rep.schedule_reason}};
  return jj;
}

ordered_json figure_json(const TrainingPlan& p, const PlanFigure& f, const char* name) {
  ordered_json j;
  j[name] = f.value;
  j[std::string(name) + "_interval"] =
      p.has_range ? ordered_json::array({f.lo, f.hi}) : ordered_json();
  return j;
}

ordered_json plan_json(const TrainingPlan& p) {
  ordered_json j;
  j["train_tokens"] = p.train_tokens;
  j["gpus"] = p.gpus;
  j.update(figure_json(p, p.days, "days"));
  j.update(figure_json(p, p.gpu_hours, "gpu_hours"));
  j["gpu_hour_cost_usd"] = p.gpu_hour_cost_usd > 0.0 ? ordered_json(p.gpu_hour_cost_usd) : nullptr;
  if (p.gpu_hour_cost_usd > 0.0) {
    j.update(figure_json(p, p.cost_usd, "cost_usd"));
  } else {
    j["cost_usd"] = nullptr;
    j["cost_usd_interval"] = nullptr;
  }
  j["board_power_w"] = p.board_power_w > 0.0 ? ordered_json(p.board_power_w) : nullptr;
  j["board_power_source"] = p.power_source;
  j["idle_power_w"] = p.idle_power_w > 0.0 ? ordered_json(p.idle_power_w) : nullptr;
  j["idle_power_source"] = p.idle_power_source;
  j["busy_fraction"] = p.busy_fraction;
  if (p.board_power_w > 0.0) {
    j.update(figure_json(p, p.energy_mwh, "energy_mwh"));
  } else {
    j["energy_mwh"] = nullptr;
    j["energy_mwh_interval"] = nullptr;
  }
  return j;
}

ordered_json results_json(const PerfReport& rep) {
  ordered_json j;
  j = {{"iteration_time_ms", ms(rep.iteration_s)},
       {"pipeline_time_ms", ms(rep.pipeline_s)},
       {"optimizer_time_ms", ms(rep.optimizer_s)},
       {"param_gather_exposed_ms", ms(rep.param_gather_exposed_s)},
       {"tokens_per_s", rep.tokens_per_s},
       {"tokens_per_s_per_gpu", rep.tokens_per_s_per_gpu},
       {"model_flops_per_iteration", rep.flops.model_flops},
       {"hardware_flops_per_iteration", rep.flops.hardware_flops},
       {"model_tflops_per_gpu", rep.model_tflops_per_gpu},
       {"hardware_tflops_per_gpu", rep.hardware_tflops_per_gpu},
       {"logged_tflops_per_gpu", rep.logged_tflops_per_gpu},
       {"mfu_pct", 100.0 * rep.mfu},
       {"mfu_dtype", std::string(to_string(rep.mfu_dtype))},
       {"palm_tflops_per_gpu", rep.palm_tflops_per_gpu},
       {"palm_mfu_pct", 100.0 * rep.palm_mfu},
       {"bubble_fraction", rep.bubble_fraction},
       {"bubble_over_ideal", rep.bubble_over_ideal},
       {"p2p_ms", ms(rep.p2p_s)},
       {"p2p_blocked_ms", ms(max_p2p_blocked_s(rep))},
       {"comm_compute_interference", rep.interference}};
  if (rep.range) {
    const CalibratedRange& c = *rep.range;
    j["tokens_per_s_per_gpu_interval"] = {c.tokens_per_s_per_gpu_lo, c.tokens_per_s_per_gpu_hi};
    j["iteration_time_ms_interval"] = {ms(c.iteration_s_lo), ms(c.iteration_s_hi)};
    j["mfu_pct_interval"] = {100.0 * c.mfu_lo, 100.0 * c.mfu_hi};
    if (c.memory_runs > 0) {
      j["peak_memory_gib_interval"] = {c.peak_memory_gib_lo, c.peak_memory_gib_hi};
    }
    j["regime"] = {{"key", c.regime},
                   {"level", c.level},
                   {"runs", c.runs},
                   {"memory_level", c.memory_level},
                   {"memory_runs", c.memory_runs}};
  }
  if (!rep.range && !rep.range_refusal.empty()) {
    j["regime"] = {{"key", rep.unranged_regime}, {"runs", 0}, {"uncalibrated", rep.range_refusal}};
  }
  if (rep.plan) j["time_to_train"] = plan_json(*rep.plan);
  return j;
}

// Per pipeline rank: the EP dispatch / combine time, what hid it and what stayed exposed.
ordered_json ep_comm_json(const PerfReport& rep) {
  ordered_json ep = ordered_json::array();
  for (const EpCommSplit& s : rep.ep_comm) {
    ordered_json hidden = ordered_json::object();
    hidden["shared_experts"] = ms(s.hidden_shared_experts_s);
    hidden["paired_microbatch"] = ms(s.hidden_paired_microbatch_s);
    ep.push_back({{"pp_rank", s.pp_rank},
                  {"total_ms", ms(s.total_s)},
                  {"exposed_ms", ms(s.exposed_s)},
                  {"hidden_ms", hidden},
                  {"paired_by", rep.ep_pair_mechanism}});
  }
  return ep;
}

ordered_json chunks_json(const PerfReport& rep) {
  ordered_json chunks = ordered_json::array();
  for (const ChunkTiming& c : rep.chunks) {
    ordered_json jc;
    jc["pp_rank"] = c.pp_rank;
    jc["chunk"] = c.chunk;
    jc["stage"] = c.stage;
    jc["f_ms"] = ms(c.f_s);
    jc["b_ms"] = ms(c.b_s);
    jc["w_ms"] = ms(c.w_s);
    jc["host_wait_ms"] = {ms(c.host_idle_s[0]), ms(c.host_idle_s[1]), ms(c.host_idle_s[2])};
    jc["deferred_wgrad_ms"] = ms(c.deferred_wgrad_s);
    ordered_json ops = ordered_json::array();
    for (const PricedOp& po : c.ops) {
      ops.push_back({{"block", po.block},
                     {"op", po.op.name},
                     {"phase", std::string(to_string(po.op.phase))},
                     {"kind", std::string(to_string(po.op.kind))},
                     {"shape", describe_op_shape(po.op)},
                     {"flops", po.op.flops},
                     {"bytes", po.op.bytes},
                     {"time_us", us(po.time_s)},
                     {"exposed_us", us(po.exposed_s)},
                     {"recompute", po.op.recompute},
                     {"layers", po.repeat},
                     {"provenance", provenance_text(po)}});
    }
    jc["ops"] = ops;
    chunks.push_back(jc);
  }
  return chunks;
}

// Per pipeline rank statistics and the simulated critical path.
void ranks_json(const PerfReport& rep, ordered_json& j) {
  ordered_json ranks = ordered_json::array();
  for (std::size_t r = 0; r < rep.simulation.ranks.size(); ++r) {
    const schedule::RankStats& s = rep.simulation.ranks[r];
    ranks.push_back({{"pp_rank", r},
                     {"busy_ms", ms(s.busy_s)},
                     {"ideal_compute_ms", ms(s.ideal_compute_s)},
                     {"idle_ms", ms(s.idle_s)},
                     {"bubble_fraction", s.bubble_fraction},
                     {"peak_inflight_microbatches", s.peak_inflight},
                     {"optimizer_ms", ms(rep.optimizer_s_per_rank[r])}});
  }
  j["ranks"] = ranks;
  ordered_json crit = ordered_json::array();
  for (const schedule::CriticalStep& s : rep.simulation.critical_path) {
    std::string label;
    const char* kind = "comm";
    if (s.kind == schedule::CriticalStep::Kind::kCompute) {
      label =
          schedule::action_label(rep.table.rank_actions(s.rank)[static_cast<std::size_t>(s.index)]);
      kind = "compute";
    } else if (s.kind == schedule::CriticalStep::Kind::kTail) {
      label = "deferred output-layer weight gradients";
      kind = "tail";
    } else {
      label = "comm";
    }
    crit.push_back({{"rank", s.rank},
                    {"kind", kind},
                    {"label", label},
                    {"start_ms", ms(s.start_s)},
                    {"end_ms", ms(s.end_s)}});
  }
  j["critical_path"] = crit;
}

}  // namespace

std::string perf_json(const JobSpec& job, const PerfReport& rep, int indent) {
  ordered_json j;
  j["schema_version"] = kPerfJsonSchemaVersion;
  j["kind"] = "performance";
  j["job"] = job_json(job, rep);
  j["defaults"] = report_detail::defaults_json(job);
  j["warnings"] = job.warnings;
  j["results"] = results_json(rep);
  j["exposed_comm_ms"] = {{"tp", ms(rep.exposed.tp_s)}, {"cp", ms(rep.exposed.cp_s)},
                          {"ep", ms(rep.exposed.ep_s)}, {"pp", ms(rep.exposed.pp_s)},
                          {"dp", ms(rep.exposed.dp_s)}, {"offload", ms(rep.exposed.offload_s)}};
  j["ep_comm"] = ep_comm_json(rep);
  if (rep.routing_skew.applies) {
    j["routing_skew"] = {{"load_factor", rep.routing_skew.load_factor},
                         {"expert_load_cv", rep.routing_skew.expert_load_cv},
                         {"iteration_ms", ms(rep.routing_skew.iteration_s)},
                         {"tokens_per_s_per_gpu", rep.routing_skew.tokens_per_s_per_gpu}};
  } else {
    j["routing_skew"] = nullptr;
  }
  j["chunks"] = chunks_json(rep);
  ranks_json(rep, j);
  if (rep.has_memory) {
    // A summary in the units of the memory document (bytes); `both` embeds the full document.
    j["memory"] = {{"peak_point_bytes", rep.memory.peak_point_bytes},
                   {"peak_upper_bytes", rep.memory.peak_upper_bytes},
                   {"capacity_bytes", rep.memory.capacity_bytes},
                   {"peak_rank", rep.memory.peak_rank},
                   {"verdict", std::string(to_string(rep.memory.verdict))}};
    if (rep.memory.range) {
      j["memory"]["peak_memory_gib_interval"] = {rep.memory.range->peak_lo_bytes / kGiB,
                                                 rep.memory.range->peak_hi_bytes / kGiB};
    }
  }
  if (rep.has_recsys) j["recsys"] = report_detail::recsys_perf_json(job, rep);
  j["notes"] = rep.notes;
  if (const std::string hw = hardware_note(job.cluster.accelerator); !hw.empty()) {
    j["notes"].push_back(hw);
  }
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string scaling_json(const std::vector<ScalingPoint>& points, int indent) {
  ordered_json out = ordered_json::array();
  const ScalingPoint* first = nullptr;
  for (const ScalingPoint& p : points) {
    ordered_json j;
    j["nodes"] = p.nodes;
    if (!p.error.empty()) {
      j["error"] = p.error;
      out.push_back(std::move(j));
      continue;
    }
    if (first == nullptr) first = &p;
    j["world_size"] = p.world_size;
    j["dp"] = p.dp;
    j["num_microbatches"] = p.num_microbatches;
    j["iteration_time_ms"] = ms(p.iteration_s);
    j["tokens_per_s"] = p.tokens_per_s;
    j["tokens_per_s_per_gpu"] = p.tokens_per_s_per_gpu;
    j["mfu_pct"] = 100.0 * p.mfu;
    j["tokens_per_s_per_gpu_interval"] =
        p.tokens_per_s_per_gpu_lo > 0.0
            ? ordered_json::array({p.tokens_per_s_per_gpu_lo, p.tokens_per_s_per_gpu_hi})
            : ordered_json();
    j["speedup"] = p.tokens_per_s / first->tokens_per_s;
    out.push_back(std::move(j));
  }
  return out.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string chrome_trace_json(const PerfReport& rep) {
  ordered_json events = ordered_json::array();
  const auto& names = rep.simulation.stream_names;
  for (std::size_t r = 0; r < rep.simulation.ranks.size(); ++r) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", r},
                      {"args", {{"name", fmt::format("pipeline rank {}", r)}}}});
    for (std::size_t s = 0; s < names.size(); ++s) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", r},
                        {"tid", s},
                        {"args", {{"name", names[s]}}}});
    }
  }
  // Expert-parallel dispatch / combine on their own track: each F / B action's priced EP
  // collectives from its start (what the shared experts or a paired microbatch hide runs beside
  // compute; docs/moe.md section 5).
  const std::size_t ep_tid = names.size();
  if (!rep.ep_comm.empty()) {
    for (std::size_t r = 0; r < rep.simulation.ranks.size(); ++r) {
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", r},
                        {"tid", ep_tid},
                        {"args", {{"name", "ep dispatch/combine"}}}});
    }
  }
  for (const schedule::TimelineEvent& e : rep.simulation.timeline) {
    events.push_back({{"ph", "X"},
                      {"name", e.label},
                      {"pid", e.rank},
                      {"tid", e.stream},
                      {"ts", us(e.start_s)},
                      {"dur", us(e.end_s - e.start_s)}});
    if (rep.ep_comm.empty() || e.stream != 0 || e.chunk < 0 || e.phase == schedule::Phase::kW) {
      continue;
    }
    const ChunkTiming& ct =
        rep.chunks[static_cast<std::size_t>(rep.table.stage_of(e.rank, e.chunk))];
    const double ep_s = e.phase == schedule::Phase::kF ? ct.ep_f_s : ct.ep_total_s - ct.ep_f_s;
    if (ep_s <= 0.0) continue;
    events.push_back({{"ph", "X"},
                      {"name", "moe dispatch/combine (" + e.label + ")"},
                      {"pid", e.rank},
                      {"tid", ep_tid},
                      {"ts", us(e.start_s)},
                      {"dur", us(ep_s)}});
  }
  // The optimizer step closes the iteration on every rank, after the simulated pipeline.
  for (std::size_t r = 0; r < rep.optimizer_s_per_rank.size(); ++r) {
    events.push_back({{"ph", "X"},
                      {"name", "optimizer.step"},
                      {"pid", r},
                      {"tid", 0},
                      {"ts", us(rep.pipeline_s)},
                      {"dur", us(rep.optimizer_s_per_rank[r])}});
  }
  ordered_json j;
  j["traceEvents"] = events;
  j["displayTimeUnit"] = "ms";
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector
