// In-flight microbatches of a schedule table: what each pipeline rank holds at every point of its
// action list, in the simulator's accounting (simulator.h): an F adds one (chunk, microbatch)
// pair, a split B turns it into a W-only pair (only the weight-gradient inputs stay), a W or a BW
// retires it; the two actions of an overlapped pair apply in table order. The memory model reads
// its activation peak from these states, so memory and the simulator count the same schedule.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "projector/schedule/schedule.h"

namespace projector::schedule {

// The actions of `rank` in the order their memory effects apply: the table's order, except that
// combined 1F1B (Megatron overlap_moe_expert_parallel_comm) runs a paired F and B layer by layer,
// the forward's layer i beside the backward's layer L - 1 - i (MG9 combined_1f1b.py,
// schedule_chunk_1f1b): the backward frees a layer as the forward saves one, so the pair holds
// one microbatch, not two; it is counted as the B before its partner F. `scratch` holds the
// reordered copy when one is needed.
std::span<const Action> memory_order(const ScheduleTable& table, int rank,
                                     std::vector<Action>& scratch);

// Per rank, the states it passes through that no other state of the rank covers (holds at least as
// many of every kind on every chunk), in order of first appearance. The activation peak for any
// per-chunk sizes (all >= 0) is reached at one of them. A state is `full` (per chunk: microbatches
// whose F ran and whose B has not: all saved activations) and `w_only` (per chunk: microbatches
// whose split B ran and whose W has not: the weight-gradient inputs).
class InFlightProfile {
 public:
  explicit InFlightProfile(const ScheduleTable& table);

  int ranks() const { return static_cast<int>(peak_.size()); }
  int chunks() const { return chunks_; }
  // Largest number of pairs held at once: SimulationResult::ranks[rank].peak_inflight.
  int peak(int rank) const { return peak_[static_cast<std::size_t>(rank)]; }
  int num_states(int rank) const;
  std::span<const int> full(int rank, int state) const;
  std::span<const int> w_only(int rank, int state) const;
  int total(int rank, int state) const;
  // The first state of `rank` that holds peak(rank) pairs.
  int peak_state(int rank) const;

 private:
  const int* state_data(int rank, int state) const;
  int chunks_ = 1;
  std::vector<int> peak_;     // per rank
  std::vector<int> offsets_;  // per rank + 1: first state of each rank
  std::vector<int> states_;   // 2 x chunks ints per state: full counts, then W-only counts
};

// A memo of InFlightProfile(build_schedule(request)) for callers that project many jobs with the
// same schedule shape (the sweep keeps one per worker, like its CostCache). Not thread-safe: one
// per thread. Most tables take microseconds to build, the greedy ZB-V ones 0.1-0.5 ms.
class InFlightCache {
 public:
  const InFlightProfile& get(const ScheduleRequest& request);
  // The table itself (the memory projection's allocation timeline walks it).
  const ScheduleTable& table(const ScheduleRequest& request);
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    ScheduleTable table;
    InFlightProfile profile;
  };
  Entry& entry(const ScheduleRequest& request);
  using Key = std::tuple<ScheduleKind, int, int, int, bool, int, bool>;
  std::map<Key, Entry> entries_;
};

}  // namespace projector::schedule
