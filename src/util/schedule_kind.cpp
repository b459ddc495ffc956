#include "projector/util/schedule_kind.h"

#include "projector/util/text.h"

namespace projector {

std::string_view to_string(ScheduleKind s) {
  switch (s) {
    case ScheduleKind::kAuto:
      return "auto";
    case ScheduleKind::k1F1B:
      return "1f1b";
    case ScheduleKind::kInterleaved:
      return "interleaved";
    case ScheduleKind::kZeroBubble:
      return "zero-bubble";
    case ScheduleKind::kZbvFormatted:
      return "zbv-formatted";
    case ScheduleKind::kZbvGreedyMin:
      return "zbv-greedy-min";
    case ScheduleKind::kZbvGreedyHalf:
      return "zbv-greedy-half";
    case ScheduleKind::kDualPipeV:
      return "dualpipev";
  }
  return "?";
}

std::optional<ScheduleKind> parse_schedule_kind(std::string_view name) {
  const std::string s = to_lower(name);
  if (s == "auto") return ScheduleKind::kAuto;
  for (const ScheduleKind k : kAllSchedules) {
    if (to_string(k) == s) return k;
  }
  // Other spellings: Megatron's "interleaved 1F1B", Primus' zero-bubble patch names
  // ("zerobubble", "zbv", "zerobubble-heuristic"), the papers' "ZB-H1" / "DualPipe-V".
  if (s == "1f1b-interleaved" || s == "interleaved-1f1b" || s == "interleaved_1f1b") {
    return ScheduleKind::kInterleaved;
  }
  if (s == "zerobubble" || s == "zb" || s == "zb-h1" || s == "zerobubble-heuristic") {
    return ScheduleKind::kZeroBubble;
  }
  if (s == "zbv") return ScheduleKind::kZbvFormatted;
  if (s == "dualpipe-v") return ScheduleKind::kDualPipeV;
  return std::nullopt;
}

std::string_view schedule_kind_names() {
  return "auto, 1f1b, interleaved, zero-bubble, zbv-formatted, zbv-greedy-min, zbv-greedy-half, "
         "dualpipev";
}

}  // namespace projector
