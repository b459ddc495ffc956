// Time to train, GPU-hours, cost and energy from a projection (interval/training_plan.h).
#include "projector/interval/training_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "projector/job/spec.h"
#include "projector/util/error.h"

namespace projector {

namespace {

[[noreturn]] void bad_count(std::string_view text, std::string_view key) {
  throw InputError(
      {"", 0, 0}, std::string(key),
      fmt::format("'{}' is not a positive token count (e.g. 15T, 300B, 2.5e12)", text));
}

double suffix_scale(char c) {
  switch (std::tolower(static_cast<unsigned char>(c))) {
    case 'k':
      return 1e3;
    case 'm':
      return 1e6;
    case 'b':
    case 'g':
      return 1e9;
    case 't':
      return 1e12;
    default:
      return 0.0;
  }
}

// A throughput-derived figure: value at the point, lo at the fast end of the range, hi at the
// slow end (time, GPU-hours, cost and energy all scale with 1 / throughput).
PlanFigure scaled(double per_token, const TrainingPlan& p, double tps, double tps_lo,
                  double tps_hi) {
  return {per_token * p.train_tokens / tps, per_token * p.train_tokens / tps_hi,
          per_token * p.train_tokens / tps_lo};
}

}  // namespace

double parse_token_count(std::string_view text, std::string_view key) {
  std::string digits;
  for (char c : text) {
    if (c != ',' && c != '_' && c != ' ') digits += c;
  }
  if (digits.empty()) bad_count(text, key);
  double scale = 1.0;
  if (std::isalpha(static_cast<unsigned char>(digits.back())) != 0) {
    scale = suffix_scale(digits.back());
    if (scale == 0.0) bad_count(text, key);
    digits.pop_back();
  }
  double v = 0.0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) bad_count(text, key);
  v *= scale;
  // Above 10^18 tokens is beyond any corpus; the bound keeps every later product finite.
  if (!std::isfinite(v) || v <= 0.0 || v > 1e18) bad_count(text, key);
  return v;
}

PlanInputs make_plan_inputs(std::string_view train_tokens_text, double gpu_hour_cost_usd) {
  PlanInputs in;
  if (!train_tokens_text.empty()) {
    in.train_tokens = parse_token_count(train_tokens_text, "--train-tokens");
  }
  if (!(gpu_hour_cost_usd >= 0.0 && gpu_hour_cost_usd <= 1e9)) {
    throw InputError(
        {"", 0, 0}, "--gpu-hour-cost",
        fmt::format("{} is not a price per GPU-hour in (0, 1e9] USD", gpu_hour_cost_usd));
  }
  if (gpu_hour_cost_usd > 0.0 && in.train_tokens == 0.0) {
    throw InputError({"", 0, 0}, "--gpu-hour-cost", "needs --train-tokens (the run it prices)");
  }
  in.gpu_hour_cost_usd = gpu_hour_cost_usd;
  return in;
}

TrainingPlan plan_from_rate(const JobSpec& job, int world_size, double tokens_per_s_per_gpu,
                            double tokens_lo, double tokens_hi, const PlanInputs& in,
                            double busy_fraction) {
  TrainingPlan p;
  p.train_tokens = in.train_tokens;
  // GPU-hours and prices count chips (a TPU7x chip is two framework devices).
  const int chips = world_size / std::max(1, job.cluster.devices_per_chip);
  p.gpus = chips;
  p.gpu_hour_cost_usd = in.gpu_hour_cost_usd;
  const double tps = tokens_per_s_per_gpu * world_size;
  if (!(tps > 0.0) || !(in.train_tokens > 0.0)) return p;
  double lo = tps;
  double hi = tps;
  if (tokens_lo > 0.0 && tokens_hi >= tokens_lo) {
    lo = tokens_lo * world_size;
    hi = tokens_hi * world_size;
    p.has_range = true;
  }
  constexpr double kDay_s = 86400.0;
  p.days = scaled(1.0 / kDay_s, p, tps, lo, hi);
  p.gpu_hours = scaled(chips / 3600.0, p, tps, lo, hi);
  if (in.gpu_hour_cost_usd > 0.0) {
    p.cost_usd = scaled(chips * in.gpu_hour_cost_usd / 3600.0, p, tps, lo, hi);
  }
  const AcceleratorSpec& acc = job.cluster.accelerator;
  p.board_power_w = acc.board_power_w;
  for (const AcceleratorSpec::FieldSource& s : acc.sources) {
    if (s.field == "board_power_w") p.power_source = s.source;
    if (s.field == "idle_power_w") p.idle_power_source = s.source;
  }
  if (p.board_power_w > 0.0) {
    // Board power while computing, the measured idle power while waiting (docs/hardware.md
    // "Power"); without either, board power throughout (the upper end).
    double watts = p.board_power_w;
    if (acc.idle_power_w > 0.0 && busy_fraction > 0.0) {
      p.idle_power_w = acc.idle_power_w;
      p.busy_fraction = std::min(1.0, busy_fraction);
      watts = p.idle_power_w + (p.board_power_w - p.idle_power_w) * p.busy_fraction;
    } else {
      p.idle_power_source.clear();
    }
    // Per-device watts x devices x s = J; 1 MWh = 3.6e9 J.
    p.energy_mwh = scaled(world_size * watts / 3.6e9, p, tps, lo, hi);
  }
  return p;
}

TrainingPlan plan_training(const JobSpec& job, const PerfReport& rep, const PlanInputs& in) {
  const bool ranged = rep.range && rep.range->tokens_per_s_per_gpu_lo > 0.0;
  // rep.tokens_per_s over the world, not tokens_per_s_per_gpu: the same number unrounded.
  return plan_from_rate(job, rep.world_size,
                        rep.world_size > 0 ? rep.tokens_per_s / rep.world_size : 0.0,
                        ranged ? rep.range->tokens_per_s_per_gpu_lo : 0.0,
                        ranged ? rep.range->tokens_per_s_per_gpu_hi : 0.0, in, rep.busy_fraction);
}

}  // namespace projector
