#include "projector/schedule/in_flight.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace projector::schedule {
namespace {

bool covers(const int* a, const int* b, std::size_t width) {
  for (std::size_t k = 0; k < width; ++k) {
    if (a[k] < b[k]) return false;
  }
  return true;
}

// Appends `s` to the states [first, end) of `states` unless one covers it; drops those it covers.
void offer(std::vector<int>& states, std::size_t first, const int* s, std::size_t width) {
  const std::size_t end = states.size();
  for (std::size_t i = first; i < end; i += width) {
    if (covers(&states[i], s, width)) return;
  }
  std::size_t kept = first;
  for (std::size_t i = first; i < end; i += width) {
    if (covers(s, &states[i], width)) continue;
    if (kept != i) std::copy_n(&states[i], width, &states[kept]);
    kept += width;
  }
  states.resize(kept);
  states.insert(states.end(), s, s + width);
}

// States a rank has already offered, for up to two chunks (four counts below 2^16 packed in one
// word): steady phases repeat the same few states hundreds of times, and a repeat is dropped with
// one hash probe instead of a pass over the frontier. Wider states go straight to offer().
class SeenStates {
 public:
  explicit SeenStates(std::size_t width) : enabled_(width <= 4) {}
  void clear() {
    std::fill(slots_.begin(), slots_.end(), 0);
    used_ = 0;
  }
  // False when `s` was offered before (only ever for packable states).
  bool first_time(const int* s, std::size_t width) {
    if (!enabled_) return true;
    std::uint64_t key = 1;  // never 0: 0 marks an empty slot
    for (std::size_t k = 0; k < width; ++k) {
      if (s[k] < 0 || s[k] > 0xffff) return true;
      key = (key << 16) | static_cast<std::uint64_t>(s[k]);
    }
    if (2 * (used_ + 1) > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t h = (key * 0x9E3779B97F4A7C15ull) >> 40 & mask;; h = (h + 1) & mask) {
      if (slots_[h] == key) return false;
      if (slots_[h] == 0) {
        slots_[h] = key;
        ++used_;
        return true;
      }
    }
  }

 private:
  void grow() {
    std::vector<std::uint64_t> old(std::max<std::size_t>(64, 2 * slots_.size()), 0);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const std::uint64_t key : old) {
      if (key == 0) continue;
      std::size_t h = (key * 0x9E3779B97F4A7C15ull) >> 40 & mask;
      while (slots_[h] != 0) h = (h + 1) & mask;
      slots_[h] = key;
    }
  }
  bool enabled_;
  std::size_t used_ = 0;
  std::vector<std::uint64_t> slots_;
};

}  // namespace

std::span<const Action> memory_order(const ScheduleTable& table, int rank,
                                     std::vector<Action>& scratch) {
  const std::span<const Action> list = table.rank_actions(rank);
  if (!table.combined_forward_backward) return list;
  scratch.assign(list.begin(), list.end());
  for (std::size_t i = 0; i + 1 < scratch.size(); ++i) {
    if (scratch[i].overlap_with_next && scratch[i].phase == Phase::kF &&
        scratch[i + 1].phase != Phase::kF) {
      std::swap(scratch[i], scratch[i + 1]);
      ++i;
    }
  }
  return scratch;
}

InFlightProfile::InFlightProfile(const ScheduleTable& table) : chunks_(table.vpp) {
  const std::size_t v = static_cast<std::size_t>(table.vpp);
  const std::size_t width = 2 * v;
  peak_.assign(static_cast<std::size_t>(table.pp), 0);
  offsets_.reserve(static_cast<std::size_t>(table.pp) + 1);
  states_.reserve(width * static_cast<std::size_t>(table.pp) * 4);
  // Per phase (F, B, W, BW): change of the full count, of the W-only count and of the total.
  static constexpr int kFull[4] = {1, -1, 0, -1};
  static constexpr int kWOnly[4] = {0, 1, -1, 0};
  static constexpr int kTotal[4] = {1, 0, -1, -1};
  std::vector<int> cur(width);
  SeenStates seen(width);
  for (int r = 0; r < table.pp; ++r) {
    seen.clear();
    const std::size_t first = states_.size();
    offsets_.push_back(static_cast<int>(first / width));
    std::fill(cur.begin(), cur.end(), 0);
    int* const full = cur.data();
    int* const w_only = full + v;
    int total = 0;
    int peak = 0;
    std::vector<Action> paired;
    const std::span<const Action> list = memory_order(table, r, paired);
    const Action* const end = list.data() + list.size();
    // Only F and B can raise a count, and only an F adds without taking away, so a state is kept
    // when an F or B is followed by something other than an F (or ends the list).
    const auto keep = [&](const Action* a, int ph) {
      return ph <= static_cast<int>(Phase::kB) && (a + 1 == end || a[1].phase != Phase::kF);
    };
    if (v == 1) {  // one chunk (1F1B, ZB-H1): the counts stay in registers
      int f = 0, w = 0;
      int last_f = -1, last_w = -1;  // the state kept last (1F1B's steady state repeats it)
      for (const Action* a = list.data(); a != end; ++a) {
        const int ph = static_cast<int>(a->phase);
        f += kFull[ph];
        w += kWOnly[ph];
        peak = std::max(peak, f + w);
        if (keep(a, ph) && (f != last_f || w != last_w)) {
          full[0] = last_f = f;
          w_only[0] = last_w = w;
          if (seen.first_time(full, width)) offer(states_, first, full, width);
        }
      }
    } else {
      for (const Action* a = list.data(); a != end; ++a) {
        const int ph = static_cast<int>(a->phase);
        full[a->chunk] += kFull[ph];
        w_only[a->chunk] += kWOnly[ph];
        total += kTotal[ph];
        peak = std::max(peak, total);
        if (keep(a, ph) && seen.first_time(full, width)) offer(states_, first, full, width);
      }
    }
    if (states_.size() == first) states_.resize(first + width, 0);  // an empty rank
    peak_[static_cast<std::size_t>(r)] = peak;
  }
  offsets_.push_back(static_cast<int>(states_.size() / width));
}

int InFlightProfile::num_states(int rank) const {
  return offsets_[static_cast<std::size_t>(rank) + 1] - offsets_[static_cast<std::size_t>(rank)];
}

const int* InFlightProfile::state_data(int rank, int state) const {
  const std::size_t i = static_cast<std::size_t>(offsets_[static_cast<std::size_t>(rank)] + state);
  return states_.data() + i * 2 * static_cast<std::size_t>(chunks_);
}

std::span<const int> InFlightProfile::full(int rank, int state) const {
  return {state_data(rank, state), static_cast<std::size_t>(chunks_)};
}

std::span<const int> InFlightProfile::w_only(int rank, int state) const {
  return {state_data(rank, state) + chunks_, static_cast<std::size_t>(chunks_)};
}

int InFlightProfile::total(int rank, int state) const {
  const int* s = state_data(rank, state);
  int n = 0;
  for (int k = 0; k < 2 * chunks_; ++k) n += s[k];
  return n;
}

int InFlightProfile::peak_state(int rank) const {
  for (int i = 0; i < num_states(rank); ++i) {
    if (total(rank, i) == peak(rank)) return i;
  }
  return 0;  // unreachable: a state holding the peak is never covered by a smaller one
}

InFlightCache::Entry& InFlightCache::entry(const ScheduleRequest& request) {
  const Key key{request.algorithm,
                request.pp,
                request.vpp,
                request.microbatches,
                request.zero_bubble,
                request.microbatch_group_size,
                request.combined_forward_backward};
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= 4096) entries_.clear();  // bound the memo; sweeps use far fewer shapes
    ScheduleTable t = build_schedule(request);
    InFlightProfile p(t);
    it = entries_.emplace(key, Entry{std::move(t), std::move(p)}).first;
  }
  return it->second;
}

const InFlightProfile& InFlightCache::get(const ScheduleRequest& request) {
  return entry(request).profile;
}

const ScheduleTable& InFlightCache::table(const ScheduleRequest& request) {
  return entry(request).table;
}

}  // namespace projector::schedule
