// The schedule's in-flight microbatches as the memory projection reads them (memory.h,
// memory_detail.h).
#include <algorithm>
#include <span>

#include "memory/memory_detail.h"
#include "projector/job/spec.h"

namespace projector::memory_detail {

InFlight to_in_flight(const schedule::InFlightProfile& profile, int rank, int state) {
  InFlight f;
  const std::span<const int> full = profile.full(rank, state);
  const std::span<const int> w_only = profile.w_only(rank, state);
  f.per_chunk.assign(full.begin(), full.end());
  f.w_only_per_chunk.assign(w_only.begin(), w_only.end());
  for (const double w : f.w_only_per_chunk) f.w_only += w;
  return f;
}

// Schedule (resolved as the performance projection resolves it), stage layout, microbatches and
// the in-flight states of every rank, with the notes they need.
void resolve_pipeline(Context& cx, MemoryReport& report) {
  const ParallelSpec& par = cx.job.parallel;
  const RuntimeSpec& rt = cx.job.runtime;
  cx.pp = std::max(1, par.pp);
  // Every stated chunk, as the performance projection runs them (the builder bounds PP x VPP).
  cx.vpp = std::max(1, par.vpp);
  const schedule::ScheduleSelection sel =
      schedule::select_schedule(rt.schedule, cx.pp, cx.vpp, false);
  cx.schedule = sel.algorithm;
  report.schedule = sel.algorithm;
  if (rt.schedule == ScheduleKind::kAuto) {
    report.notes.push_back(std::string("schedule auto -> ") + std::string(to_string(cx.schedule)));
  }
  cx.stages = &par.stages;  // check_job_invariants: pp x vpp contiguous stages
  // Each accumulation round is its own flush of the schedule (model/job.h).
  const int m = cx.job.microbatches_per_flush();
  report.num_microbatches = cx.job.num_microbatches();
  schedule::ScheduleRequest request{cx.schedule, cx.pp, cx.vpp, m};
  request.combined_forward_backward = combined_forward_backward(cx.job);
  cx.request = request;
  const schedule::ScheduleTable* given = cx.options.table;
  if (given != nullptr && given->algorithm == cx.schedule && given->pp == cx.pp &&
      given->vpp == cx.vpp && given->microbatches == m &&
      given->combined_forward_backward == request.combined_forward_backward) {
    cx.own_in_flight.emplace(*given);
    cx.in_flight = &*cx.own_in_flight;
    cx.table = given;
  } else if (cx.options.in_flight_cache != nullptr) {
    cx.in_flight = &cx.options.in_flight_cache->get(request);
    cx.table = &cx.options.in_flight_cache->table(request);
  } else {
    cx.own_table.emplace(schedule::build_schedule(request));
    cx.own_in_flight.emplace(*cx.own_table);
    cx.in_flight = &*cx.own_in_flight;
    cx.table = &*cx.own_table;
  }
}

void resolve_replay_table(Context& cx) {
  const int cap = (cx.vpp + 2) * cx.pp;
  if (cx.request.microbatches <= cap) {
    cx.replay_table = cx.table;
    return;
  }
  schedule::ScheduleRequest shorter = cx.request;
  shorter.microbatches = cap;
  if (cx.options.in_flight_cache != nullptr) {
    cx.replay_table = &cx.options.in_flight_cache->table(shorter);
  } else {
    cx.own_replay_table.emplace(schedule::build_schedule(shorter));
    cx.replay_table = &*cx.own_replay_table;
  }
}

// The activation peak of `rank`: the largest of its uncovered in-flight states under the
// per-chunk sizes `full` and `w_only`. Sets `which` to the state that reaches it.
double activation_peak(const schedule::InFlightProfile& profile, int rank,
                       const std::vector<double>& full, const std::vector<double>& w_only,
                       int* which) {
  double best = 0.0;
  for (int i = 0; i < profile.num_states(rank); ++i) {
    const std::span<const int> nf = profile.full(rank, i);
    const std::span<const int> nw = profile.w_only(rank, i);
    double b = 0.0;
    for (std::size_t c = 0; c < full.size(); ++c) b += nf[c] * full[c] + nw[c] * w_only[c];
    if (i == 0 || b > best) {
      best = b;
      if (which != nullptr) *which = i;
    }
  }
  return best;
}

}  // namespace projector::memory_detail

namespace projector {

double InFlight::total_chunk_microbatches() const {
  double s = 0.0;
  for (double c : per_chunk) s += c;
  for (double c : w_only_per_chunk) s += c;
  return s;
}

int virtual_stage_index(ScheduleKind schedule, int pp, int pp_rank, int chunk) {
  if (is_v_shape(schedule)) return chunk == 0 ? pp_rank : 2 * pp - 1 - pp_rank;
  return chunk * pp + pp_rank;
}

InFlight in_flight_microbatches(ScheduleKind schedule, int pp, int vpp, int pp_rank,
                                int num_microbatches, schedule::InFlightCache* cache) {
  const schedule::ScheduleSelection sel = schedule::select_schedule(schedule, pp, vpp, false);
  const schedule::ScheduleRequest request{sel.algorithm, pp, vpp, num_microbatches};
  if (cache != nullptr) {
    const schedule::InFlightProfile& p = cache->get(request);
    return memory_detail::to_in_flight(p, pp_rank, p.peak_state(pp_rank));
  }
  const schedule::InFlightProfile p(schedule::build_schedule(request));
  return memory_detail::to_in_flight(p, pp_rank, p.peak_state(pp_rank));
}

}  // namespace projector
