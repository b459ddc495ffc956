// The pipeline schedule vocabulary: one enum, one parser and one printer, shared by the job model,
// the schedule tables and simulator, the memory model, the front-ends, the validation mapper and
// the sweep. It lives in util so that `model` and `schedule` can both use it without depending on
// each other.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace projector {

enum class ScheduleKind : std::uint8_t {
  kAuto,           // "auto"             resolved by schedule::select_schedule
  k1F1B,           // "1f1b"             PipeDream-flush / Megatron non-interleaved
  kInterleaved,    // "interleaved"      Megatron interleaved 1F1B (vpp >= 2)
  kZeroBubble,     // "zero-bubble"      ZB-H1 (Qi et al. 2023), vpp == 1
  kZbvFormatted,   // "zbv-formatted"    ZB-V hand-formatted V-shape, vpp == 2
  kZbvGreedyMin,   // "zbv-greedy-min"   V-shape, controllable memory "V-Min", vpp == 2
  kZbvGreedyHalf,  // "zbv-greedy-half"  V-shape, controllable memory "V-Half", vpp == 2
  kDualPipeV,      // "dualpipev"        DeepSeek DualPipeV (cut-in-half DualPipe), vpp == 2
};

// Every concrete schedule (everything but kAuto), in declaration order.
inline constexpr std::array<ScheduleKind, 7> kAllSchedules = {
    ScheduleKind::k1F1B,         ScheduleKind::kInterleaved,  ScheduleKind::kZeroBubble,
    ScheduleKind::kZbvFormatted, ScheduleKind::kZbvGreedyMin, ScheduleKind::kZbvGreedyHalf,
    ScheduleKind::kDualPipeV};

// The canonical name (the comment column above).
std::string_view to_string(ScheduleKind s);

// The canonical names plus the spellings Megatron / Primus configs and papers use (zerobubble, zb,
// zb-h1, zbv, interleaved-1f1b, dualpipe-v, ...), case-insensitive. nullopt for anything else; the
// caller reports the error with its own key and location, listing schedule_kind_names().
std::optional<ScheduleKind> parse_schedule_kind(std::string_view name);

// "auto, 1f1b, interleaved, zero-bubble, zbv-formatted, zbv-greedy-min, zbv-greedy-half, dualpipev"
std::string_view schedule_kind_names();

// V-shape schedules: two model chunks per rank, chunk 0 down the ranks and chunk 1 back up.
constexpr bool is_v_shape(ScheduleKind s) {
  return s == ScheduleKind::kZbvFormatted || s == ScheduleKind::kZbvGreedyMin ||
         s == ScheduleKind::kZbvGreedyHalf || s == ScheduleKind::kDualPipeV;
}

// Schedules that run the input-gradient (B) and weight-gradient (W) backward as separate actions
// (the zero-bubble family; DualPipeV splits some of its backwards).
constexpr bool splits_backward(ScheduleKind s) {
  return s == ScheduleKind::kZeroBubble || is_v_shape(s);
}

}  // namespace projector
