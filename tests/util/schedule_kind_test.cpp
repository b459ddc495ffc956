// The one schedule vocabulary: names round-trip, the spellings configs use map to the same kind,
// and the shape predicates match the schedules' definitions (schedule.h).
#include "projector/util/schedule_kind.h"

#include <gtest/gtest.h>

#include <string>

namespace projector {
namespace {

TEST(ScheduleKind, CanonicalNamesRoundTrip) {
  for (const ScheduleKind k : kAllSchedules) {
    EXPECT_EQ(parse_schedule_kind(to_string(k)), k) << to_string(k);
    // Every canonical name is listed in the error-message list.
    EXPECT_NE(std::string(schedule_kind_names()).find(to_string(k)), std::string::npos);
  }
  EXPECT_EQ(parse_schedule_kind("auto"), ScheduleKind::kAuto);
  EXPECT_EQ(kAllSchedules.size(), 7u);  // every kind but kAuto
}

// The spellings the front-end, the sweep and the validation mapper used to accept separately.
TEST(ScheduleKind, AliasesAndCase) {
  EXPECT_EQ(parse_schedule_kind("1F1B"), ScheduleKind::k1F1B);
  EXPECT_EQ(parse_schedule_kind("Interleaved"), ScheduleKind::kInterleaved);
  for (const char* s : {"1f1b-interleaved", "interleaved-1f1b", "interleaved_1f1b"}) {
    EXPECT_EQ(parse_schedule_kind(s), ScheduleKind::kInterleaved) << s;
  }
  for (const char* s : {"zerobubble", "ZB", "zb-h1", "zerobubble-heuristic", "zero-bubble"}) {
    EXPECT_EQ(parse_schedule_kind(s), ScheduleKind::kZeroBubble) << s;
  }
  EXPECT_EQ(parse_schedule_kind("zbv"), ScheduleKind::kZbvFormatted);
  EXPECT_EQ(parse_schedule_kind("DualPipe-V"), ScheduleKind::kDualPipeV);
}

TEST(ScheduleKind, UnknownNamesAreRejected) {
  for (const char* s : {"", "all", "zb-h2", "gpipe", "dualpipe", "1f1b interleaved"}) {
    EXPECT_FALSE(parse_schedule_kind(s).has_value()) << s;
  }
}

TEST(ScheduleKind, ShapePredicates) {
  int v_shape = 0;
  for (const ScheduleKind k : kAllSchedules) v_shape += is_v_shape(k) ? 1 : 0;
  EXPECT_EQ(v_shape, 4);  // zbv-formatted, zbv-greedy-min, zbv-greedy-half, dualpipev
  EXPECT_FALSE(is_v_shape(ScheduleKind::kInterleaved));
  EXPECT_TRUE(splits_backward(ScheduleKind::kZeroBubble));
  EXPECT_TRUE(splits_backward(ScheduleKind::kDualPipeV));
  EXPECT_FALSE(splits_backward(ScheduleKind::k1F1B));
  EXPECT_FALSE(splits_backward(ScheduleKind::kAuto));
}

}  // namespace
}  // namespace projector
