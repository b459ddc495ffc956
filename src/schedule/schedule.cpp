// Schedule-table constructions. Orderings follow the published schedules: Megatron-LM (1F1B and
// interleaved 1F1B, Narayanan et al. 2021), Qi et al. 2023/2024 (ZB-H1, ZB-V, V-Min/V-Half), and
// DeepSeek's DualPipeV. Fixes over the Primus reference (spec 8.6) are noted where they apply.
#include "projector/schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>

#include "projector/util/error.h"

namespace projector::schedule {
namespace {

// Keys are the neutral job-model names (pp, vpp, num_microbatches, schedule): each adapter names
// its own keys when its job builder rejects a layout, so these are reached only by hand-built
// schedules.
[[noreturn]] void bad(const std::string& key, const std::string& message) {
  throw InputError(SourceLocation{}, key, message);
}

void check_common(int pp, int vpp, int m) {
  if (pp < 1) bad("pp", fmt::format("must be >= 1, got {}", pp));
  if (vpp < 1) bad("vpp", fmt::format("must be >= 1, got {}", vpp));
  if (m < 1) bad("num_microbatches", fmt::format("must be >= 1, got {}", m));
}

void check_vshape(std::string_view name, int pp, int m) {
  check_common(pp, 2, m);
  (void)name;
}

// Appends actions rank by rank.
class TableBuilder {
 public:
  TableBuilder(ScheduleKind algorithm, StageLayout layout, int pp, int vpp, int m,
               bool combined = false) {
    table_.algorithm = algorithm;
    table_.combined_forward_backward = combined;
    table_.layout = layout;
    table_.pp = pp;
    table_.vpp = vpp;
    table_.microbatches = m;
    table_.rank_offsets.reserve(static_cast<std::size_t>(pp) + 1);
    table_.rank_offsets.push_back(0);
    // F + BW per (stage, microbatch), or F + B + W where the backward is split.
    table_.actions.reserve(static_cast<std::size_t>(pp) * vpp * m *
                           (splits_backward(algorithm) ? 3 : 2));
  }
  void push(int chunk, int mb, Phase phase, bool overlap_with_next = false) {
    table_.actions.push_back(Action{static_cast<std::int32_t>(mb), static_cast<std::int16_t>(chunk),
                                    phase, overlap_with_next});
  }
  void end_rank() { table_.rank_offsets.push_back(static_cast<int>(table_.actions.size())); }
  ScheduleTable finish() { return std::move(table_); }

 private:
  ScheduleTable table_;
};

}  // namespace

// ------------------------------------------------------------------------------ names, layout

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::kF:
      return "F";
    case Phase::kB:
      return "B";
    case Phase::kW:
      return "W";
    case Phase::kBW:
      return "BW";
  }
  return "?";
}

StageLocation ScheduleTable::location_of(int stage) const {
  if (layout == StageLayout::kVShape) {
    return stage < pp ? StageLocation{stage, 0} : StageLocation{2 * pp - 1 - stage, 1};
  }
  return StageLocation{stage % pp, stage / pp};
}

int ScheduleTable::stage_of(int rank, int chunk) const {
  if (layout == StageLayout::kVShape) return chunk == 0 ? rank : 2 * pp - 1 - rank;
  return chunk * pp + rank;
}

namespace {
int find_action(const ScheduleTable& table, int rank, int chunk,
                std::initializer_list<Phase> phases, bool last) {
  const std::span<const Action> list = table.rank_actions(rank);
  int found = -1;
  for (int i = 0; i < static_cast<int>(list.size()); ++i) {
    const Action& a = list[static_cast<std::size_t>(i)];
    if (a.chunk != chunk) continue;
    if (std::find(phases.begin(), phases.end(), a.phase) == phases.end()) continue;
    found = i;
    if (!last) break;
  }
  return found;
}
}  // namespace

int first_action(const ScheduleTable& table, int rank, int chunk,
                 std::initializer_list<Phase> phases) {
  return find_action(table, rank, chunk, phases, false);
}
int last_action(const ScheduleTable& table, int rank, int chunk,
                std::initializer_list<Phase> phases) {
  return find_action(table, rank, chunk, phases, true);
}

// ---------------------------------------------------------------------------------- selection

ScheduleSelection select_schedule(ScheduleKind requested, int pp, int vpp, bool zero_bubble) {
  check_common(pp, vpp, 1);
  const auto need_vshape = [&](ScheduleKind a) {
    if (vpp != 2) {
      bad("vpp",
          fmt::format("schedule '{}' is a V-shape schedule and needs exactly 2 model chunks per "
                      "rank, got {}",
                      to_string(a), vpp));
    }
    return ScheduleSelection{a, fmt::format("{} requested", to_string(a))};
  };
  switch (requested) {
    case ScheduleKind::kAuto:
      if (vpp > 1) {
        return {ScheduleKind::kInterleaved,
                fmt::format("auto: vpp={} > 1 -> interleaved 1F1B", vpp)};
      }
      if (zero_bubble) {
        return {ScheduleKind::kZeroBubble, "auto: vpp=1 and zero bubble enabled -> ZB-H1"};
      }
      return {ScheduleKind::k1F1B, "auto: vpp=1, zero bubble off -> 1F1B"};
    case ScheduleKind::k1F1B:
    case ScheduleKind::kZeroBubble:
      if (vpp != 1) {
        bad("vpp", fmt::format("schedule '{}' needs 1 model chunk per rank, got {}",
                               to_string(requested), vpp));
      }
      return {requested, fmt::format("{} requested", to_string(requested))};
    case ScheduleKind::kInterleaved:
      if (vpp < 2) {
        bad("vpp",
            fmt::format("schedule 'interleaved' needs >= 2 model chunks per rank, got {}", vpp));
      }
      return {requested, "interleaved requested"};
    case ScheduleKind::kZbvFormatted:
    case ScheduleKind::kZbvGreedyMin:
    case ScheduleKind::kZbvGreedyHalf:
    case ScheduleKind::kDualPipeV:
      return need_vshape(requested);
  }
  bad("schedule", "unhandled schedule");
}

ScheduleTable build_schedule(const ScheduleRequest& request) {
  const ScheduleSelection sel =
      select_schedule(request.algorithm, request.pp, request.vpp, request.zero_bubble);
  const bool combined = request.combined_forward_backward;
  if (combined && sel.algorithm != ScheduleKind::k1F1B &&
      sel.algorithm != ScheduleKind::kInterleaved && sel.algorithm != ScheduleKind::kDualPipeV) {
    bad("pipeline_schedule_algorithm",
        fmt::format("combined forward-backward (overlap_moe_expert_parallel_comm) runs only with "
                    "1f1b, interleaved or dualpipev, not {}",
                    to_string(sel.algorithm)));
  }
  switch (sel.algorithm) {
    case ScheduleKind::k1F1B:
      return build_1f1b(request.pp, request.microbatches, combined);
    case ScheduleKind::kInterleaved:
      return build_interleaved(request.pp, request.vpp, request.microbatches,
                               request.microbatch_group_size, combined);
    case ScheduleKind::kZeroBubble:
      return build_zero_bubble_h1(request.pp, request.microbatches);
    case ScheduleKind::kZbvFormatted:
      return build_zbv_formatted(request.pp, request.microbatches);
    case ScheduleKind::kZbvGreedyMin:
      return build_zbv_greedy(request.pp, request.microbatches, ZbvMemory::kMin);
    case ScheduleKind::kZbvGreedyHalf:
      return build_zbv_greedy(request.pp, request.microbatches, ZbvMemory::kHalf);
    case ScheduleKind::kDualPipeV:
      return build_dualpipev(request.pp, request.microbatches, request.overlapped_pairs);
    case ScheduleKind::kAuto:
      break;
  }
  bad("schedule", "auto did not resolve");
}

// ---------------------------------------------------------------------------------------- 1F1B

// Megatron non-interleaved: warm-up min(pp - r - 1, m) forwards, then F(i), BW(i - warm-up) pairs,
// then the remaining backwards. The min() fixes the reference's M < PP - 1 case (spec 8.6), which
// scheduled microbatches that do not exist.
ScheduleTable build_1f1b(int pp, int m, bool combined) {
  check_common(pp, 1, m);
  TableBuilder b(ScheduleKind::k1F1B, StageLayout::kInterleaved, pp, 1, m, combined);
  for (int r = 0; r < pp; ++r) {
    const int warmup = std::min(pp - r - 1 + (combined ? 1 : 0), m);
    for (int i = 0; i < warmup; ++i) b.push(0, i, Phase::kF);
    for (int i = warmup; i < m; ++i) {
      b.push(0, i, Phase::kF, combined);
      b.push(0, i - warmup, Phase::kBW);
    }
    for (int i = m - warmup; i < m; ++i) b.push(0, i, Phase::kBW);
    b.end_rank();
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------- interleaved

ScheduleTable build_interleaved(int pp, int vpp, int m, int group_size, bool combined) {
  check_common(pp, vpp, m);
  if (vpp < 2) {
    bad("vpp", fmt::format("interleaved 1F1B needs >= 2 model chunks per rank, got {}", vpp));
  }
  const int n = group_size == 0 ? pp : group_size;
  if (n < pp || n > m) {
    bad(group_size == 0 ? "num_microbatches" : "microbatch_group",
        fmt::format("interleaved 1F1B needs pp ({}) <= microbatch group size ({}) <= "
                    "num_microbatches ({}) (Megatron-LM rule)",
                    pp, n, m));
  }
  const int tail = m % n;
  if (tail != 0 && tail < pp) {
    bad("num_microbatches",
        fmt::format("interleaved 1F1B: num_microbatches ({}) mod microbatch group size ({}) is {}; "
                    "it must be 0 or >= pp ({}) (Megatron-LM rule; with the default group size "
                    "num_microbatches must be a multiple of pp)",
                    m, n, tail, pp));
  }
  // Megatron's lookup table: groups of n consecutive microbatches per chunk; the last group takes
  // every remaining microbatch.
  const int total = m * vpp;
  std::vector<std::pair<int, int>> order;  // (microbatch, chunk) of the k-th forward
  order.reserve(static_cast<std::size_t>(total));
  for (int lo = 0; lo < m; lo += n) {
    const int hi = lo + n >= m ? m : lo + n;
    for (int c = 0; c < vpp; ++c) {
      for (int i = lo; i < hi; ++i) order.emplace_back(i, c);
    }
    if (hi == m) break;
  }
  TableBuilder b(ScheduleKind::kInterleaved, StageLayout::kInterleaved, pp, vpp, m, combined);
  const auto fwd = [&](int k, bool pair) {
    b.push(order[k].second, order[k].first, Phase::kF, pair);
  };
  const auto bwd = [&](int k) { b.push(vpp - 1 - order[k].second, order[k].first, Phase::kBW); };
  for (int r = 0; r < pp; ++r) {
    const int warmup = std::min((pp - r - 1) * 2 + (vpp - 1) * n + (combined ? 1 : 0), total);
    for (int k = 0; k < warmup; ++k) fwd(k, false);
    for (int k = 0; k < total - warmup; ++k) {
      fwd(k + warmup, combined);
      bwd(k);
    }
    for (int k = total - warmup; k < total; ++k) bwd(k);
    b.end_rank();
  }
  return b.finish();
}

// ---------------------------------------------------------------------------------------- ZB-H1

// Qi et al. 2023 ZB-H1: 1F1B with B and W split; rank r defers its W's by r microbatches so they
// fill the cool-down bubble, which keeps every rank's activation peak at pp microbatches (1F1B's
// stage-0 peak). Written as one rule that also covers m < pp: after each B a W is issued once more
// than r W's are pending; the pending ones are flushed at the end.
ScheduleTable build_zero_bubble_h1(int pp, int m) {
  check_common(pp, 1, m);
  TableBuilder b(ScheduleKind::kZeroBubble, StageLayout::kInterleaved, pp, 1, m);
  for (int r = 0; r < pp; ++r) {
    const int warmup = std::min(pp - r - 1, m);
    int next_w = 0;
    int next_b = 0;
    const auto backward = [&]() {
      b.push(0, next_b++, Phase::kB);
      if (next_b - next_w > r) b.push(0, next_w++, Phase::kW);
    };
    for (int i = 0; i < warmup; ++i) b.push(0, i, Phase::kF);
    for (int i = warmup; i < m; ++i) {
      b.push(0, i, Phase::kF);
      backward();
    }
    while (next_b < m) backward();
    while (next_w < m) b.push(0, next_w++, Phase::kW);
    b.end_rank();
  }
  return b.finish();
}

// ------------------------------------------------------------------------------- ZBV formatted

// ZB-V with its hand-formatted order (Qi et al. 2023, as in the Primus/zero-bubble code): per rank
// r, 2(pp-r)-1 F0; r x (F1, F0); (pp-r) x (F1, B1, W1); then F0, B0, W0, F1, B1, W1 while work
// remains; cool-down r x (B0, B1), (pp-r) x (B0, W0), then the remaining W1 and W0. Every emission
// is clipped to the m microbatches that exist (the reference pads to 2pp-1 microbatches, spec 8.6),
// and whatever clipping left out is appended in dependency order at the end.
ScheduleTable build_zbv_formatted(int pp, int m) {
  check_vshape("zbv-formatted", pp, m);
  TableBuilder tb(ScheduleKind::kZbvFormatted, StageLayout::kVShape, pp, 2, m);
  for (int r = 0; r < pp; ++r) {
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0, w0 = 0, w1 = 0;
    const auto F0 = [&] {
      if (f0 < m) tb.push(0, f0++, Phase::kF);
    };
    const auto F1 = [&] {
      if (f1 < f0) tb.push(1, f1++, Phase::kF);
    };
    const auto B1 = [&] {
      if (b1 < f1) tb.push(1, b1++, Phase::kB);
    };
    const auto W1 = [&] {
      if (w1 < b1) tb.push(1, w1++, Phase::kW);
    };
    const auto B0 = [&] {
      if (b0 < b1) tb.push(0, b0++, Phase::kB);
    };
    const auto W0 = [&] {
      if (w0 < b0) tb.push(0, w0++, Phase::kW);
    };
    for (int i = 0; i < 2 * (pp - r) - 1; ++i) F0();
    for (int i = 0; i < r; ++i) {
      F1();
      F0();
    }
    for (int i = 0; i < pp - r; ++i) {
      F1();
      B1();
      W1();
    }
    while (f1 < f0 || f0 < m) {
      const int before = f0 + f1 + b0 + b1;
      F0();
      B0();
      W0();
      F1();
      B1();
      W1();
      if (f0 + f1 + b0 + b1 == before) break;  // nothing left that this loop can issue
    }
    // Cool-down: r x (B0, B1) hold their W's; (pp-r) x (B0, W0).
    for (int i = 0; i < r; ++i) {
      if (b0 < b1) tb.push(0, b0++, Phase::kB);
      if (b1 < f1) tb.push(1, b1++, Phase::kB);
    }
    for (int i = 0; i < pp - r; ++i) {
      if (b0 < b1) tb.push(0, b0++, Phase::kB);
      if (w0 < b0) tb.push(0, w0++, Phase::kW);
    }
    // Flush whatever the clipped pattern did not issue (only when m < 2pp - 1), in dependency
    // order.
    while (f1 < m || b1 < m || b0 < m) {
      if (f1 < f0) tb.push(1, f1++, Phase::kF);
      if (b1 < f1) tb.push(1, b1++, Phase::kB);
      if (b0 < b1) tb.push(0, b0++, Phase::kB);
    }
    while (w1 < b1) tb.push(1, w1++, Phase::kW);
    while (w0 < b0) tb.push(0, w0++, Phase::kW);
    tb.end_rank();
  }
  return tb.finish();
}

// --------------------------------------------------------------------------------- ZBV greedy

// V-Min / V-Half of "Pipeline Parallelism with Controllable Memory" (Qi et al. 2024), built the
// way the zero-bubble/Primus code does it: a periodic unit-time pattern (period 6 per microbatch)
// for F0, F1, B1, B0; W's fill free slots FIFO after their B; a first greedy pass moves every node
// to the earliest dependency-feasible free slot that keeps the running memory under the pattern's
// peak (F +1, B 0, W -1); a second pass re-packs the cool-down and re-places its W's. The
// resulting per-rank slot order is the table. Slots here are unit time steps; actual durations
// come in only at simulation.
// The greedy zero-bubble V schedule, built on a slot grid per rank in five passes.
class ZbvGreedy {
 public:
  ZbvGreedy(int pp, int m, ZbvMemory memory)
      : pp_(pp),
        m_(m),
        memory_(memory),
        slot_(static_cast<std::size_t>(pp)),
        when_(static_cast<std::size_t>(pp), std::vector<int>(6 * m, 0)),
        tag_(static_cast<std::size_t>(pp), std::vector<std::uint8_t>(6 * m, kWarmup)),
        mem_(static_cast<std::size_t>(pp)) {}

  ScheduleTable build() {
    stable_pattern();
    fill_w();
    squeeze();
    repack_cooldown();
    return table();
  }

 private:
  enum Fn { kFn = 0, kBn = 1, kWn = 2 };
  enum PhaseTag : std::uint8_t { kWarmup, kSteady, kCooldown };

  int node_id(int fn, int chunk, int mb) const { return (fn * 2 + chunk) * m_ + mb; }
  int fn_of(int id) const { return id / (2 * m_); }
  int chunk_of(int id) const { return (id / m_) % 2; }
  static int delta(int fn) { return fn == kFn ? 1 : (fn == kWn ? -1 : 0); }
  static void ensure(std::vector<int>& v, int t, int fill) {
    if (static_cast<int>(v.size()) <= t) v.resize(static_cast<std::size_t>(t) + 1, fill);
  }
  void place(int r, int t, int id) {
    ensure(slot_[r], t, -1);
    slot_[r][t] = id;
    when_[r][id] = t;
  }
  void move(int r, int from, int to, int id) {
    slot_[r][from] = -1;
    slot_[r][to] = id;
    when_[r][id] = to;
  }
  int last_slot() const {
    int max_t = 0;
    for (int r = 0; r < pp_; ++r) max_t = std::max(max_t, static_cast<int>(slot_[r].size()) - 1);
    return max_t;
  }

  // 1. Stable pattern: (fn, chunk, start) per stage; microbatch j adds 6j.
  void stable_pattern() {
    for (int s = 0; s < pp_; ++s) {
      std::array<std::array<int, 3>, 4> pat{};
      if (memory_ == ZbvMemory::kHalf) {
        const int gap = pp_ % 2 == 0 ? 3 : 0;
        pat = {{{kFn, 0, 2 * s},
                {kFn, 1, 3 * pp_ - s - 2},
                {kBn, 1, 3 * pp_ + gap + 2 * s - 1},
                {kBn, 0, 6 * pp_ + gap - s - 2}}};
      } else {
        const int gap = pp_ % 3 == 0 ? 2 : 0;
        pat = {{{kFn, 0, s},
                {kFn, 1, 2 * pp_ - s - 1},
                {kBn, 1, 2 * pp_ + gap + s},
                {kBn, 0, 4 * pp_ + gap - s - 1}}};
      }
      for (int j = 0; j < m_; ++j) {
        for (const auto& [fn, chunk, start] : pat) place(s, start + 6 * j, node_id(fn, chunk, j));
      }
    }
  }

  // 2. W's fill free slots FIFO after their B; phases tagged as in the reference (the B0 of
  // microbatch 0 starts the steady phase, the F1 of the last microbatch the cool-down).
  void fill_w() {
    for (int r = 0; r < pp_; ++r) {
      std::deque<int> queue;
      const int last = static_cast<int>(slot_[r].size()) - 1;
      std::uint8_t phase = kWarmup;
      int cur = 0;
      for (int t = 0; t <= last + 2 || !queue.empty(); ++t) {
        ensure(slot_[r], t, -1);
        const int id = slot_[r][t];
        if (id >= 0) {
          const int fn = fn_of(id);
          const int mb = id % m_;
          tag_[r][id] = phase;
          if (fn == kBn) queue.push_back(id);
          cur += delta(fn);
          if (fn == kBn && chunk_of(id) == 0 && mb == 0) phase = kSteady;
          if (fn == kFn && chunk_of(id) == 1 && mb == m_ - 1) phase = kCooldown;
        } else if (!queue.empty()) {
          const int wid = queue.front() + 2 * m_;  // same chunk and microbatch, kind W
          queue.pop_front();
          tag_[r][wid] = phase;
          place(r, t, wid);
          cur -= 1;
        }
        ensure(mem_[r], t, 0);
        mem_[r][t] = cur;
      }
    }
  }

  // Earliest slot a node may take given its producers' current slots (reference semantics: F/B
  // one step after their producer, W at or after its B; same-kind nodes stay in microbatch order).
  int earliest(int r, int id) const {
    const int fn = fn_of(id);
    const int chunk = chunk_of(id);
    const int mb = id % m_;
    int t = 0;
    if (mb > 0) t = std::max(t, when_[r][id - 1]);
    if (fn == kWn) return std::max(t, when_[r][node_id(kBn, chunk, mb)]);
    // The forward runs chunk 0 down the ranks and chunk 1 back up; the backward the reverse.
    const int down_chunk = fn == kFn ? 0 : 1;
    int prev_rank = -1, prev_chunk = chunk;
    if (chunk == down_chunk) {
      prev_rank = r - 1;
    } else if (r == pp_ - 1) {
      prev_rank = r;
      prev_chunk = down_chunk;
    } else {
      prev_rank = r + 1;
    }
    if (prev_rank >= 0) {
      t = std::max(t, when_[prev_rank][node_id(fn, prev_chunk, mb)]);
    } else if (fn == kBn) {
      t = std::max(t, when_[r][node_id(kFn, chunk, mb)]);
    }
    return t + 1;
  }

  // 3. Squeeze under the memory peak.
  void squeeze() {
    int peak = 0;
    for (int r = 0; r < pp_; ++r) {
      for (const int v : mem_[r]) peak = std::max(peak, v);
    }
    const int max_t = last_slot();
    for (int t = 0; t <= max_t; ++t) {
      for (int r = 0; r < pp_; ++r) {
        if (t >= static_cast<int>(slot_[r].size()) || slot_[r][t] < 0) continue;
        const int id = slot_[r][t];
        const int d = delta(fn_of(id));
        for (int i = earliest(r, id); i < t; ++i) {
          if (slot_[r][i] >= 0) continue;
          bool fits = true;
          for (int j = i; j < t && fits; ++j) fits = mem_[r][j] + d <= peak;
          if (!fits) continue;
          for (int j = i; j < t; ++j) mem_[r][j] += d;
          move(r, t, i, id);
          break;
        }
      }
    }
  }

  // 4. Re-pack the cool-down: its F/B move to the earliest free feasible slot, its W's are taken
  // out and re-placed afterwards at the first free slot after their B.
  void repack_cooldown() {
    const int max_t = last_slot();
    std::vector<std::vector<int>> pending(static_cast<std::size_t>(pp_));
    for (int t = 0; t <= max_t; ++t) {
      for (int r = 0; r < pp_; ++r) {
        if (t >= static_cast<int>(slot_[r].size()) || slot_[r][t] < 0) continue;
        const int id = slot_[r][t];
        if (tag_[r][id] != kCooldown) continue;
        if (fn_of(id) == kWn) {
          pending[r].push_back(id);
          slot_[r][t] = -1;
          continue;
        }
        for (int i = earliest(r, id); i < t; ++i) {
          if (slot_[r][i] < 0) {
            move(r, t, i, id);
            break;
          }
        }
      }
    }
    for (int r = 0; r < pp_; ++r) {
      for (const int id : pending[r]) {
        for (int i = earliest(r, id);; ++i) {
          ensure(slot_[r], i, -1);
          if (slot_[r][i] < 0) {
            place(r, i, id);
            break;
          }
        }
      }
    }
  }

  // 5. Slot order is the table.
  ScheduleTable table() const {
    TableBuilder tb(
        memory_ == ZbvMemory::kMin ? ScheduleKind::kZbvGreedyMin : ScheduleKind::kZbvGreedyHalf,
        StageLayout::kVShape, pp_, 2, m_);
    static constexpr std::array<Phase, 3> kPhase = {Phase::kF, Phase::kB, Phase::kW};
    for (int r = 0; r < pp_; ++r) {
      for (const int id : slot_[r]) {
        if (id < 0) continue;
        tb.push(chunk_of(id), id % m_, kPhase[static_cast<std::size_t>(fn_of(id))]);
      }
      tb.end_rank();
    }
    return tb.finish();
  }

  const int pp_, m_;
  const ZbvMemory memory_;
  // Per rank: slot -> node (-1 free), node -> slot, node -> phase tag, memory after each slot.
  std::vector<std::vector<int>> slot_;
  std::vector<std::vector<int>> when_;
  std::vector<std::vector<std::uint8_t>> tag_;
  std::vector<std::vector<int>> mem_;
};

ScheduleTable build_zbv_greedy(int pp, int m, ZbvMemory memory) {
  check_vshape(memory == ZbvMemory::kMin ? "zbv-greedy-min" : "zbv-greedy-half", pp, m);
  return ZbvGreedy(pp, m, memory).build();
}

// ---------------------------------------------------------------------------------- DualPipeV

// DeepSeek's DualPipeV (the V-shape "cut-in-half" DualPipe) step by step: 1 nF0, 2 nF0F1,
// 3 nB1W1F1 (B/W split), 4 nF0B1F1B0 (forward of one chunk overlapped with the full backward of
// the other), 5 nB1F1B0, 6 nB1B0 (second half split), 7 nWB0, 8 nW. Split W's run FIFO.
ScheduleTable build_dualpipev(int pp, int m, bool overlapped_pairs) {
  check_vshape("dualpipev", pp, m);
  if (m < 2 * pp) {
    bad("num_microbatches",
        fmt::format("dualpipev needs at least 2 * pp = {} microbatches, got {}", 2 * pp, m));
  }
  TableBuilder tb(ScheduleKind::kDualPipeV, StageLayout::kVShape, pp, 2, m);
  for (int r = 0; r < pp; ++r) {
    std::array<int, 2> f{0, 0};
    std::array<int, 2> bk{0, 0};
    std::deque<std::pair<int, int>> wq;  // (chunk, microbatch) of split B's awaiting their W
    const auto F = [&](int c, bool overlap = false) { tb.push(c, f[c]++, Phase::kF, overlap); };
    const auto B = [&](int c, bool split) {
      const int mb = bk[c]++;
      tb.push(c, mb, split ? Phase::kB : Phase::kBW);
      if (split) wq.emplace_back(c, mb);
    };
    const auto W = [&] {
      tb.push(wq.front().first, wq.front().second, Phase::kW);
      wq.pop_front();
    };
    const auto FB = [&](int cf, int cb) {
      F(cf, overlapped_pairs);
      B(cb, false);
    };
    for (int i = 0; i < 2 * (pp - r - 1); ++i) F(0);  // 1
    for (int i = 0; i < r + 1; ++i) {                 // 2
      F(0);
      F(1);
    }
    for (int i = 0; i < pp - r - 1; ++i) {  // 3
      B(1, true);
      W();
      F(1);
    }
    for (int i = 0; i < m - 2 * pp + r + 1; ++i) {  // 4
      if (i == 0 && r == pp - 1) {
        F(0);
        B(1, false);
      } else {
        FB(0, 1);
      }
      FB(1, 0);
    }
    for (int i = 0; i < pp - r - 1; ++i) {  // 5
      B(1, false);
      FB(1, 0);
    }
    bool split = false;  // 6
    for (int i = 0; i < r + 1; ++i) {
      if (i == (r + 1) / 2 && r % 2 == 1) split = true;
      B(1, split);
      if (i == (r + 1) / 2 && r % 2 == 0) split = true;
      B(0, split);
    }
    for (int i = 0; i < pp - r - 1; ++i) {  // 7
      W();
      B(0, true);
    }
    while (!wq.empty()) W();  // 8
    tb.end_rank();
  }
  return tb.finish();
}

}  // namespace projector::schedule
