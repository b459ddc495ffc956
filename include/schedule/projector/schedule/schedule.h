// Pipeline schedule tables: for `pp` ranks holding `vpp` model chunks each and `m` microbatches,
// the ordered list of compute actions every rank executes. The tables are pure data (no timing);
// simulator.h runs any table against per-chunk durations.
//
// Virtual stages. A microbatch passes through S = pp * vpp virtual stages. Two layouts exist:
//   kInterleaved (1F1B, interleaved 1F1B, ZB-H1): stage z lives on rank z % pp, chunk z / pp.
//   kVShape (ZBV, DualPipeV; vpp == 2): chunk 0 goes down the ranks (stage z < pp on rank z) and
//     chunk 1 comes back up (stage z >= pp on rank 2*pp-1-z), so rank 0 holds the first and the
//     last stage and rank pp-1 hands chunk 0 to its own chunk 1.
// ScheduleTable::location_of / stage_of expose the mapping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "projector/util/schedule_kind.h"

namespace projector::schedule {

// F: forward. B: backward w.r.t. inputs only (zero-bubble split). W: weight-gradient backward of
// an earlier B. BW: the combined backward (B and W back to back, not split).
enum class Phase : std::uint8_t { kF, kB, kW, kBW };

struct Action {
  std::int32_t microbatch = 0;
  std::int16_t chunk = 0;
  Phase phase = Phase::kF;
  // This action and the next one on the same rank run as one overlapped unit (DualPipe's
  // overlapped forward&backward of two different microbatches); see simulator.h for the timing.
  bool overlap_with_next = false;

  friend bool operator==(const Action&, const Action&) = default;
};

std::string_view to_string(Phase phase);

enum class StageLayout { kInterleaved, kVShape };
struct StageLocation {
  int rank = 0;
  int chunk = 0;
};

struct ScheduleTable {
  ScheduleKind algorithm = ScheduleKind::k1F1B;
  StageLayout layout = StageLayout::kInterleaved;
  int pp = 1;
  int vpp = 1;
  int microbatches = 1;
  bool combined_forward_backward = false;  // see ScheduleRequest
  std::vector<Action> actions;             // all ranks' lists back to back
  std::vector<int> rank_offsets;  // size pp + 1; rank r owns actions[rank_offsets[r], [r+1])

  int num_stages() const { return pp * vpp; }
  std::span<const Action> rank_actions(int rank) const {
    return {actions.data() + rank_offsets[rank],
            static_cast<std::size_t>(rank_offsets[rank + 1] - rank_offsets[rank])};
  }
  StageLocation location_of(int stage) const;
  int stage_of(int rank, int chunk) const;
};

// Index (into rank_actions(rank)) of the first / last action of `chunk` whose phase is in the
// given set; -1 when there is none. Handy for attaching communication tasks, e.g. the DP
// reduce-scatter after the last weight-gradient action of a chunk: last_action(t, r, c, {kW, kBW}).
int first_action(const ScheduleTable& table, int rank, int chunk,
                 std::initializer_list<Phase> phases);
int last_action(const ScheduleTable& table, int rank, int chunk,
                std::initializer_list<Phase> phases);

// ---------------------------------------------------------------------------- selection rule
//
// `auto` resolves as follows (documented rule, deterministic):
//   vpp > 1                 -> interleaved (Megatron's interleaved 1F1B)
//   vpp == 1, zero_bubble   -> zero-bubble (ZB-H1; needs the B/W split, so the caller must not
//                              ask for it together with full recompute)
//   vpp == 1 otherwise      -> 1f1b
// The V-shape schedules (zbv-*, dualpipev) are never chosen automatically: they change how the
// model is split (two chunks per rank in a V), so they must be requested explicitly and need
// vpp == 2. An explicit request that does not fit the shape is an InputError, never a silent
// fallback (Primus falls back to interleaved or asserts).
struct ScheduleSelection {
  ScheduleKind algorithm = ScheduleKind::k1F1B;
  std::string reason;  // one line, for the report
};
ScheduleSelection select_schedule(ScheduleKind requested, int pp, int vpp, bool zero_bubble);

// Which ZBV greedy memory setting (Qi et al. 2024, "Pipeline Parallelism with Controllable
// Memory"): kMin keeps about 1/3 of 1F1B's activation peak, kHalf about 1/2.
enum class ZbvMemory { kMin, kHalf };

// Builders. Each validates its shape and throws projector::InputError with the key of the
// offending setting ("pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
// "num_microbatches", "microbatch_group_size_per_vp_stage") when the schedule cannot be built.
// `combined`: Megatron's combined 1F1B for overlap_moe_expert_parallel_comm (MG9 combined_1f1b.py,
// schedules.py:966-970): one more warm-up forward on every rank, so each steady-state forward is
// independent of the backward after it, and the two run as one overlapped unit (their EP
// communication hides behind each other's compute). With pp == 1: F0, then (F i, BW i-1) pairs.
ScheduleTable build_1f1b(int pp, int microbatches, bool combined = false);
// Megatron's interleaved ordering (microbatch groups of `group_size` consecutive microbatches per
// chunk; 0 = pp, Megatron's default). Follows current Megatron-LM's rule: pp <= group_size <= m,
// and m % group_size must be 0 or >= pp (so with the default group size m must be a multiple of
// pp). Older Megatron required m % pp == 0, which is the default case of the same rule.
ScheduleTable build_interleaved(int pp, int vpp, int microbatches, int group_size = 0,
                                bool combined = false);
ScheduleTable build_zero_bubble_h1(int pp, int microbatches);
ScheduleTable build_zbv_formatted(int pp, int microbatches);
ScheduleTable build_zbv_greedy(int pp, int microbatches, ZbvMemory memory);
// Needs m >= 2 * pp (as DeepSeek's implementation asserts). overlapped_pairs false: the paired
// forward / backward steps run one after the other (no overlap_with_next).
ScheduleTable build_dualpipev(int pp, int microbatches, bool overlapped_pairs = true);

struct ScheduleRequest {
  ScheduleKind algorithm = ScheduleKind::kAuto;
  int pp = 1;
  int vpp = 1;
  int microbatches = 1;
  bool zero_bubble = false;       // only consulted by kAuto
  int microbatch_group_size = 0;  // interleaved only; 0 = pp
  // Combined 1F1B (1F1B and interleaved only; see build_1f1b): steady-state F and B of two
  // microbatches run as one overlapped unit. DualPipeV has such pairs by construction; other
  // schedules refuse it.
  bool combined_forward_backward = false;
  bool overlapped_pairs = true;  // DualPipeV only: see build_dualpipev
};
// Resolves ScheduleKind::kAuto with select_schedule and calls the matching builder.
ScheduleTable build_schedule(const ScheduleRequest& request);

}  // namespace projector::schedule
