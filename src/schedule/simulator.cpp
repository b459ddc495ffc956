// Discrete-event simulation of a schedule table; see simulator.h for the model.
//
// Implementation: every rank's compute stream is a cursor into its action list. Ranks are swept
// round-robin; each advances while its next action's inputs exist (the producing action already
// ran, so its end time is known). Because an action's start depends only on already-simulated
// actions of the same or other ranks, the sweep order does not change any time: the result is
// the exact earliest-start schedule of the table. A sweep without progress means a dependency
// cycle (deadlock) and ends the simulation with an error. All state lives in flat arrays sized
// once per call; the hot loop does not allocate.
#include "projector/schedule/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace projector::schedule {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw ScheduleError(message);
}

constexpr int kNone = -1;
// Predecessor encoding: >= 0 an action (global index), <= -2 a communication task.
constexpr int encode_comm(int k) {
  return -2 - k;
}
constexpr int decode_comm(int p) {
  return -2 - p;
}

struct Interval {
  double start;
  double end;
};

struct CommState {
  int stream = 0;  // 1-based stream id (0 is compute)
  double start = -1.0;
  double end = -1.0;
  int pred = kNone;
};

// Compute of nominal length `work` starting at `t` on a rank whose communication intervals are
// `iv`: slowed by (1 + k) wherever at least one interval is active.
double stretched_end(double t, double work, double k, const std::vector<Interval>& iv,
                     std::vector<Interval>& scratch) {
  if (k <= 0.0 || work <= 0.0 || iv.empty()) return t + work;
  scratch.clear();
  for (const Interval& x : iv) {
    if (x.end > t) scratch.push_back(x);
  }
  if (scratch.empty()) return t + work;
  std::sort(scratch.begin(), scratch.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  double cur = t;
  double left = work;
  std::size_t i = 0;
  while (i < scratch.size()) {
    // Merge overlapping intervals into one busy span [a, b].
    double a = scratch[i].start;
    double b = scratch[i].end;
    ++i;
    while (i < scratch.size() && scratch[i].start <= b) b = std::max(b, scratch[i++].end);
    if (b <= cur) continue;
    if (a > cur) {
      if (left <= a - cur) return cur + left;
      left -= a - cur;
      cur = a;
    }
    const double capacity = (b - cur) / (1.0 + k);
    if (left <= capacity) return cur + left * (1.0 + k);
    left -= capacity;
    cur = b;
  }
  return cur + left;
}

// Length of [s, e] covered by the sorted, disjoint intervals `iv`.
double covered(double s, double e, const std::vector<Interval>& iv) {
  auto it = std::lower_bound(iv.begin(), iv.end(), s,
                             [](const Interval& x, double v) { return x.end <= v; });
  double total = 0.0;
  for (; it != iv.end() && it->start < e; ++it) {
    total += std::max(0.0, std::min(e, it->end) - std::max(s, it->start));
  }
  return total;
}

}  // namespace

std::string action_label(const Action& action) {
  return fmt::format("{} c{} mb{}", to_string(action.phase), action.chunk, action.microbatch);
}

SimulationResult simulate(const ScheduleTable& table, const SimulationInput& in) {
  const int P = table.pp;
  const int V = table.vpp;
  const int S = table.num_stages();
  const int M = table.microbatches;
  const int A = static_cast<int>(table.actions.size());
  if (P < 1 || V < 1 || M < 1) fail("schedule table has an empty shape");
  if (static_cast<int>(table.rank_offsets.size()) != P + 1 || table.rank_offsets[P] != A) {
    fail("schedule table rank offsets do not cover its actions");
  }
  if (static_cast<int>(in.costs.size()) != P * V) {
    fail(fmt::format("simulation needs {} chunk costs (pp * vpp), got {}", P * V, in.costs.size()));
  }
  for (const ChunkCost& c : in.costs) {
    if (!(c.f_s >= 0 && c.b_s >= 0 && c.w_s >= 0 && c.f_comm_s >= 0 && c.b_comm_s >= 0 &&
          c.f_comm_s <= c.f_s && c.b_comm_s <= c.b_s)) {
      fail("chunk costs must be finite, >= 0, and comm parts no larger than their durations");
    }
  }
  if (!(in.interference >= 0.0) || !(in.p2p_s >= 0.0)) fail("interference and p2p_s must be >= 0");
  const auto check_edges = [&](const std::vector<double>& v, const char* what) {
    if (!v.empty() && static_cast<int>(v.size()) != S - 1) {
      fail(fmt::format("{} needs num_stages - 1 = {} entries, got {}", what, S - 1, v.size()));
    }
    for (const double x : v) {
      if (!(x >= 0.0)) fail(fmt::format("{} entries must be >= 0", what));
    }
  };
  check_edges(in.p2p_forward_s, "p2p_forward_s");
  check_edges(in.p2p_backward_s, "p2p_backward_s");

  // Stage of (rank, chunk) and rank of each stage.
  std::vector<int> stage_rc(static_cast<std::size_t>(P * V));
  std::vector<int> rank_of_stage(static_cast<std::size_t>(S));
  for (int r = 0; r < P; ++r) {
    for (int c = 0; c < V; ++c) {
      const int z = table.stage_of(r, c);
      stage_rc[static_cast<std::size_t>(r * V + c)] = z;
      rank_of_stage[static_cast<std::size_t>(z)] = r;
    }
  }
  // Transfer time of edge z (z -> z+1 forward, z+1 -> z backward); free on the same rank.
  std::vector<double> p2p_f(static_cast<std::size_t>(std::max(S - 1, 0)));
  std::vector<double> p2p_b(p2p_f.size());
  for (int e = 0; e + 1 < S; ++e) {
    const bool local = rank_of_stage[e] == rank_of_stage[e + 1];
    const double f = in.p2p_forward_s.empty() ? in.p2p_s : in.p2p_forward_s[e];
    const double b = in.p2p_backward_s.empty() ? f : in.p2p_backward_s[e];
    p2p_f[e] = local ? 0.0 : f;
    p2p_b[e] = local ? 0.0 : b;
  }

  // ---- validate the table: every (stage, microbatch) has one F and either one BW or B + W.
  {
    std::vector<std::uint8_t> count(static_cast<std::size_t>(S) * M * 4, 0);
    for (int r = 0; r < P; ++r) {
      const int lo = table.rank_offsets[r], hi = table.rank_offsets[r + 1];
      if (lo > hi) fail("schedule table rank offsets are not increasing");
      for (int g = lo; g < hi; ++g) {
        const Action& a = table.actions[g];
        if (a.chunk < 0 || a.chunk >= V || a.microbatch < 0 || a.microbatch >= M) {
          fail(fmt::format("rank {} action {} ({}) is outside the table's shape", r, g - lo,
                           action_label(a)));
        }
        if (a.overlap_with_next && (g + 1 >= hi || table.actions[g + 1].overlap_with_next)) {
          fail(fmt::format("rank {} action {} ({}) is overlapped with a missing or chained partner",
                           r, g - lo, action_label(a)));
        }
        const int z = stage_rc[r * V + a.chunk];
        std::uint8_t& n =
            count[(static_cast<std::size_t>(z) * M + a.microbatch) * 4 + static_cast<int>(a.phase)];
        if (++n > 1) fail(fmt::format("rank {}: {} appears twice", r, action_label(a)));
      }
    }
    for (int z = 0; z < S; ++z) {
      for (int i = 0; i < M; ++i) {
        const std::uint8_t* n = &count[(static_cast<std::size_t>(z) * M + i) * 4];
        const bool ok = n[0] == 1 && ((n[3] == 1 && n[1] == 0 && n[2] == 0) ||
                                      (n[3] == 0 && n[1] == 1 && n[2] == 1));
        if (!ok) {
          const StageLocation loc = table.location_of(z);
          fail(fmt::format("rank {} chunk {} microbatch {}: needs one F and one BW or one B + W",
                           loc.rank, loc.chunk, i));
        }
      }
    }
  }

  // ---- communication tasks: stream ids and per-action trigger lists (CSR).
  SimulationResult res;
  res.stream_names.push_back("compute");
  const int K = static_cast<int>(in.comm.size());
  std::vector<CommState> comm(static_cast<std::size_t>(K));
  std::vector<int> start_off(static_cast<std::size_t>(A) + 1, 0), end_off(start_off),
      block_off(start_off);
  std::vector<int> start_list, end_list, block_list;
  for (int k = 0; k < K; ++k) {
    const CommTask& task = in.comm[k];
    if (task.rank < 0 || task.rank >= P) fail(fmt::format("comm task {}: bad rank", k));
    if (!(task.duration_s >= 0.0)) fail(fmt::format("comm task {}: duration must be >= 0", k));
    if (task.stream.empty() || task.stream == "compute") {
      fail(fmt::format("comm task {}: stream name must be set and not 'compute'", k));
    }
    const int n = table.rank_offsets[task.rank + 1] - table.rank_offsets[task.rank];
    if (task.trigger != CommTrigger::kIterationStart &&
        (task.trigger_action < 0 || task.trigger_action >= n)) {
      fail(fmt::format("comm task {}: trigger action {} is not on rank {}", k, task.trigger_action,
                       task.rank));
    }
    if (task.blocks_action >= n) fail(fmt::format("comm task {}: blocked action out of range", k));
    auto it = std::find(res.stream_names.begin(), res.stream_names.end(), task.stream);
    if (it == res.stream_names.end()) it = res.stream_names.insert(it, task.stream);
    comm[k].stream = static_cast<int>(it - res.stream_names.begin());
    const int base = table.rank_offsets[task.rank];
    if (task.trigger == CommTrigger::kActionStart) ++start_off[base + task.trigger_action + 1];
    if (task.trigger == CommTrigger::kActionEnd) ++end_off[base + task.trigger_action + 1];
    if (task.blocks_action >= 0) ++block_off[base + task.blocks_action + 1];
  }
  const int NS = static_cast<int>(res.stream_names.size());
  if (K > 0) {
    for (int g = 0; g < A; ++g) {
      start_off[g + 1] += start_off[g];
      end_off[g + 1] += end_off[g];
      block_off[g + 1] += block_off[g];
    }
    start_list.resize(static_cast<std::size_t>(start_off[A]));
    end_list.resize(static_cast<std::size_t>(end_off[A]));
    block_list.resize(static_cast<std::size_t>(block_off[A]));
    std::vector<int> fill_s(start_off.begin(), start_off.end() - 1),
        fill_e(end_off.begin(), end_off.end() - 1), fill_b(block_off.begin(), block_off.end() - 1);
    for (int k = 0; k < K; ++k) {
      const CommTask& task = in.comm[k];
      const int base = table.rank_offsets[task.rank];
      if (task.trigger == CommTrigger::kActionStart)
        start_list[fill_s[base + task.trigger_action]++] = k;
      if (task.trigger == CommTrigger::kActionEnd)
        end_list[fill_e[base + task.trigger_action]++] = k;
      if (task.blocks_action >= 0) block_list[fill_b[base + task.blocks_action]++] = k;
    }
  }
  std::vector<double> stream_free(static_cast<std::size_t>(P) * NS, 0.0);
  std::vector<int> stream_last(static_cast<std::size_t>(P) * NS, kNone);
  std::vector<std::vector<Interval>> comm_iv(static_cast<std::size_t>(P));
  std::vector<Interval> scratch;
  scratch.reserve(static_cast<std::size_t>(K));
  const auto launch = [&](int k, double t, int trigger_pred) {
    CommState& c = comm[k];
    const int r = in.comm[k].rank;
    const std::size_t slot = static_cast<std::size_t>(r) * NS + c.stream;
    c.start = std::max(t, stream_free[slot]);
    c.pred = stream_free[slot] > t ? encode_comm(stream_last[slot]) : trigger_pred;
    c.end = c.start + in.comm[k].duration_s;
    stream_free[slot] = c.end;
    stream_last[slot] = k;
    if (in.comm[k].duration_s > 0.0) comm_iv[r].push_back({c.start, c.end});
  };
  for (int k = 0; k < K; ++k) {
    if (in.comm[k].trigger == CommTrigger::kIterationStart) launch(k, 0.0, kNone);
  }

  // ---- simulation state.
  const std::size_t SM = static_cast<std::size_t>(S) * M;
  std::vector<double> f_end_v(SM, -1.0), b_end_v(SM, -1.0);
  std::vector<int> f_by_v(SM, kNone), b_by_v(SM, kNone);
  std::vector<double> a_start_v(static_cast<std::size_t>(A)), a_end_v(static_cast<std::size_t>(A));
  std::vector<int> a_pred_v(static_cast<std::size_t>(A), kNone);
  // Raw views for the hot loop (the closures below would otherwise reload vector internals).
  double* const f_end = f_end_v.data();
  double* const b_end = b_end_v.data();
  int* const f_by = f_by_v.data();
  int* const b_by = b_by_v.data();
  double* const a_start = a_start_v.data();
  double* const a_end = a_end_v.data();
  int* const a_pred = a_pred_v.data();
  const int* const stage_of_rc = stage_rc.data();
  const Action* const actions = table.actions.data();
  const ChunkCost* const costs = in.costs.data();
  std::vector<int> pos(table.rank_offsets.begin(), table.rank_offsets.end() - 1);
  std::vector<double> clock(static_cast<std::size_t>(P), 0.0);
  std::vector<int> last(static_cast<std::size_t>(P), kNone);
  res.ranks.assign(static_cast<std::size_t>(P), RankStats{});
  std::vector<double> act_now(static_cast<std::size_t>(P), 0.0);
  std::vector<int> inflight_now(static_cast<std::size_t>(P), 0);

  // Wait lists: a blocked rank waits on exactly one missing product (key: F of (stage, mb) in
  // [0, SM), B in [SM, 2SM), launch of comm task k at 2SM + k) and is woken when it appears, so
  // the sweep does O(actions) work instead of polling blocked ranks.
  std::vector<int> wait_head(2 * SM + static_cast<std::size_t>(K), kNone);
  std::vector<int> wait_next(static_cast<std::size_t>(P), kNone);
  std::vector<int> work;
  work.reserve(static_cast<std::size_t>(P) * 2);
  for (int r = P - 1; r >= 0; --r) work.push_back(r);
  const auto wake = [&](std::size_t key) {
    for (int r = wait_head[key]; r != kNone;) {
      const int next = wait_next[r];
      work.push_back(r);
      r = next;
    }
    wait_head[key] = kNone;
  };

  // Time the inputs of action g exist (deps + blocking comm). Returns -1 when ready, else the key
  // of the first missing product.
  const auto ready = [&](int r, int g, double& t, int& pred) -> long {
    const Action& a = actions[g];
    const int z = stage_of_rc[r * V + a.chunk];
    const std::size_t idx = static_cast<std::size_t>(z) * M + a.microbatch;
    t = 0.0;
    pred = kNone;
    switch (a.phase) {
      case Phase::kF:
        if (z > 0) {
          const std::size_t k = idx - M;
          if (f_end[k] < 0.0) return static_cast<long>(k);
          t = f_end[k] + p2p_f[z - 1];
          pred = f_by[k];
        }
        break;
      case Phase::kB:
      case Phase::kBW:
        if (f_end[idx] < 0.0) return static_cast<long>(idx);
        if (z + 1 < S) {
          const std::size_t k = idx + M;
          if (b_end[k] < 0.0) return static_cast<long>(SM + k);
          t = b_end[k] + p2p_b[z];
          pred = b_by[k];
        } else {
          t = f_end[idx];
          pred = f_by[idx];
        }
        break;
      case Phase::kW:
        if (b_end[idx] < 0.0) return static_cast<long>(SM + idx);
        t = b_end[idx];
        pred = b_by[idx];
        break;
    }
    if (K == 0) return -1;
    for (int j = block_off[g]; j < block_off[g + 1]; ++j) {
      const int k = block_list[j];
      if (comm[k].end < 0.0) return static_cast<long>(2 * SM) + k;  // not launched yet
      if (comm[k].end > t) {
        t = comm[k].end;
        pred = encode_comm(k);
      }
    }
    return -1;
  };
  const auto nominal = [&](int r, const Action& a, double& comm_part) {
    const ChunkCost& c = costs[r * V + a.chunk];
    switch (a.phase) {
      case Phase::kF:
        comm_part = c.f_comm_s;
        return c.f_s;
      case Phase::kB:
        comm_part = c.b_comm_s;
        return c.b_s;
      case Phase::kW:
        comm_part = 0.0;
        return c.w_s;
      case Phase::kBW:
        comm_part = c.b_comm_s;
        return c.b_s + c.w_s;
    }
    return 0.0;
  };
  const auto finish = [&](int r, int g, double start, double end, int pred) {
    const Action& a = actions[g];
    a_start[g] = start;
    a_end[g] = end;
    a_pred[g] = pred;
    const int z = stage_of_rc[r * V + a.chunk];
    const std::size_t idx = static_cast<std::size_t>(z) * M + a.microbatch;
    const ChunkCost& c = costs[r * V + a.chunk];
    RankStats& st = res.ranks[r];
    switch (a.phase) {
      case Phase::kF:
        f_end[idx] = end;
        f_by[idx] = g;
        wake(idx);
        act_now[r] += c.activation;
        ++inflight_now[r];
        st.peak_activation = std::max(st.peak_activation, act_now[r]);
        st.peak_inflight = std::max(st.peak_inflight, inflight_now[r]);
        break;
      case Phase::kB:
        b_end[idx] = end;
        b_by[idx] = g;
        wake(SM + idx);
        act_now[r] -= c.activation * c.b_release_fraction;
        break;
      case Phase::kBW:
        b_end[idx] = end;
        b_by[idx] = g;
        wake(SM + idx);
        act_now[r] -= c.activation;
        --inflight_now[r];
        break;
      case Phase::kW:
        act_now[r] -= c.activation * (1.0 - c.b_release_fraction);
        --inflight_now[r];
        break;
    }
  };

  int done = 0;
  while (!work.empty()) {
    const int r = work.back();
    work.pop_back();
    {
      const int hi = table.rank_offsets[r + 1];
      while (pos[r] < hi) {
        const int g = pos[r];
        const bool pair = actions[g].overlap_with_next;
        double t1 = 0.0, t2 = 0.0;
        int p1 = kNone, p2 = kNone;
        long missing = ready(r, g, t1, p1);
        if (missing < 0 && pair) missing = ready(r, g + 1, t2, p2);
        if (missing >= 0) {
          wait_next[r] = wait_head[missing];
          wait_head[missing] = r;
          break;
        }
        double start = clock[r];
        int pred = last[r];
        if (p1 != kNone && t1 >= start) {
          start = t1;
          pred = p1;
        }
        if (p2 != kNone && t2 >= start) {
          start = t2;
          pred = p2;
        }
        const int n = pair ? 2 : 1;
        if (K > 0) {
          for (int h = g; h < g + n; ++h) {
            for (int j = start_off[h]; j < start_off[h + 1]; ++j) launch(start_list[j], start, h);
          }
        }
        double comm1 = 0.0, comm2 = 0.0;
        double work_s = nominal(r, actions[g], comm1);
        if (pair) {
          const double work2 = nominal(r, actions[g + 1], comm2);
          work_s = std::max(work_s - comm1 + work2 - comm2, comm1 + comm2);
        }
        const double end = stretched_end(start, work_s, in.interference, comm_iv[r], scratch);
        for (int h = g; h < g + n; ++h) finish(r, h, start, end, pred);
        RankStats& st = res.ranks[r];
        st.busy_s += end - start;
        st.ideal_compute_s += work_s;
        if (K > 0) {
          for (int h = g; h < g + n; ++h) {
            for (int j = end_off[h]; j < end_off[h + 1]; ++j) launch(end_list[j], end, g + n - 1);
          }
        }
        clock[r] = end;
        last[r] = g + n - 1;
        pos[r] += n;
        done += n;
      }
    }
  }
  if (done < A) {  // every rank left waits on something no rank can produce: a cycle
    std::string stuck;
    for (int r = 0; r < P; ++r) {
      if (pos[r] < table.rank_offsets[r + 1]) {
        stuck += fmt::format(" rank {} waits at action {} ({});", r, pos[r] - table.rank_offsets[r],
                             action_label(actions[pos[r]]));
      }
    }
    fail("schedule deadlock (dependency cycle in the table):" + stuck);
  }

  // ---- results.
  double comm_end = 0.0;
  for (const CommState& c : comm) comm_end = std::max(comm_end, c.end);
  for (int r = 0; r < P; ++r) {
    res.ranks[r].compute_end_s = clock[r];
    res.compute_makespan_s = std::max(res.compute_makespan_s, clock[r]);
  }
  res.makespan_s = std::max(res.compute_makespan_s, comm_end);
  double ideal_max = 0.0;
  for (RankStats& st : res.ranks) {
    st.idle_s = std::max(0.0, res.makespan_s - st.busy_s);
    st.bubble_fraction = res.makespan_s > 0.0 ? st.idle_s / res.makespan_s : 0.0;
    res.max_bubble_fraction = std::max(res.max_bubble_fraction, st.bubble_fraction);
    ideal_max = std::max(ideal_max, st.ideal_compute_s);
  }
  res.bubble_over_ideal = ideal_max > 0.0 ? (res.makespan_s - ideal_max) / ideal_max : 0.0;

  // Per-stream busy and exposed (busy while the rank's compute stream is idle).
  if (NS > 1) {
    res.streams.resize(static_cast<std::size_t>(NS - 1));
    for (int s = 1; s < NS; ++s) {
      res.streams[s - 1].name = res.stream_names[s];
      res.streams[s - 1].busy_s.assign(static_cast<std::size_t>(P), 0.0);
      res.streams[s - 1].exposed_s.assign(static_cast<std::size_t>(P), 0.0);
    }
    std::vector<Interval> compute_iv;
    compute_iv.reserve(static_cast<std::size_t>(A));
    for (int r = 0; r < P; ++r) {
      compute_iv.clear();
      for (int g = table.rank_offsets[r]; g < table.rank_offsets[r + 1]; ++g) {
        if (a_end[g] <= a_start[g]) continue;
        if (!compute_iv.empty() && a_start[g] < compute_iv.back().end) continue;  // pair partner
        compute_iv.push_back({a_start[g], a_end[g]});
      }
      for (int k = 0; k < K; ++k) {
        if (in.comm[k].rank != r) continue;
        StreamStats& ss = res.streams[comm[k].stream - 1];
        const double len = comm[k].end - comm[k].start;
        ss.busy_s[r] += len;
        ss.exposed_s[r] += len - covered(comm[k].start, comm[k].end, compute_iv);
      }
    }
    for (StreamStats& ss : res.streams) {
      for (const double e : ss.exposed_s) ss.max_exposed_s = std::max(ss.max_exposed_s, e);
    }
  }

  // Critical path: walk the binding predecessors back from whatever ends last.
  {
    int cur = kNone;
    double best = -1.0;
    for (int g = 0; g < A; ++g) {
      if (a_end[g] > best) {
        best = a_end[g];
        cur = g;
      }
    }
    for (int k = 0; k < K; ++k) {
      if (comm[k].end > best) {
        best = comm[k].end;
        cur = encode_comm(k);
      }
    }
    while (cur != kNone) {
      CriticalStep step;
      if (cur >= 0) {
        const int r = static_cast<int>(std::upper_bound(table.rank_offsets.begin(),
                                                        table.rank_offsets.end(), cur) -
                                       table.rank_offsets.begin()) -
                      1;
        step = {CriticalStep::Kind::kCompute, r, cur - table.rank_offsets[r], a_start[cur],
                a_end[cur]};
        cur = a_pred[cur];
      } else {
        const int k = decode_comm(cur);
        step = {CriticalStep::Kind::kComm, in.comm[k].rank, k, comm[k].start, comm[k].end};
        cur = comm[k].pred;
      }
      res.critical_path.push_back(step);
    }
    std::reverse(res.critical_path.begin(), res.critical_path.end());
  }

  if (in.record_timeline) {
    res.timeline.reserve(static_cast<std::size_t>(A + K));
    for (int r = 0; r < P; ++r) {
      const std::size_t first = res.timeline.size();
      for (int g = table.rank_offsets[r]; g < table.rank_offsets[r + 1]; ++g) {
        res.timeline.push_back({r, 0, action_label(actions[g]), a_start[g], a_end[g]});
      }
      for (int k = 0; k < K; ++k) {
        if (in.comm[k].rank != r) continue;
        res.timeline.push_back({r, comm[k].stream,
                                in.comm[k].label.empty() ? in.comm[k].stream : in.comm[k].label,
                                comm[k].start, comm[k].end});
      }
      std::stable_sort(
          res.timeline.begin() + static_cast<std::ptrdiff_t>(first), res.timeline.end(),
          [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_s < b.start_s; });
    }
  }
  return res;
}

}  // namespace projector::schedule
