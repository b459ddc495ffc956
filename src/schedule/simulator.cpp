// Discrete-event simulation of a schedule table; see simulator.h for the model.
//
// Implementation: every rank's compute stream is a cursor into its action list. Ranks are swept
// round-robin; each advances while its next action's inputs exist (the producing action already
// ran, so its end time is known). Because an action's start depends only on already-simulated
// actions of the same or other ranks, the sweep order does not change any time: the result is
// the exact earliest-start schedule of the table. A sweep without progress means a dependency
// cycle (deadlock) and ends the simulation with an error. All state lives in flat arrays sized
// once per call (class Simulation, one method per stage of the run); the hot loop does not
// allocate.
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

namespace {

// ---- input checks

void check_input(const ScheduleTable& table, const SimulationInput& in) {
  const int P = table.pp;
  const int V = table.vpp;
  const int S = table.num_stages();
  const int A = static_cast<int>(table.actions.size());
  if (P < 1 || V < 1 || table.microbatches < 1) fail("schedule table has an empty shape");
  if (static_cast<int>(table.rank_offsets.size()) != P + 1 || table.rank_offsets[P] != A) {
    fail("schedule table rank offsets do not cover its actions");
  }
  if (static_cast<int>(in.costs.size()) != P * V) {
    fail(fmt::format("simulation needs {} chunk costs (pp * vpp), got {}", P * V, in.costs.size()));
  }
  for (const ChunkCost& c : in.costs) {
    if (!(c.f_s >= 0 && c.b_s >= 0 && c.w_s >= 0 && c.f_comm_s >= 0 && c.b_comm_s >= 0 &&
          c.f_comm_s <= c.f_s && c.b_comm_s <= c.b_s && c.w_serial_s >= 0 &&
          c.w_serial_s <= c.w_s)) {
      fail("chunk costs must be finite, >= 0, and comm parts no larger than their durations");
    }
  }
  if (!(in.interference >= 0.0) || !(in.p2p_s >= 0.0)) fail("interference and p2p_s must be >= 0");
  if (!(in.pair_comm_compute_share >= 0.0 && in.pair_comm_compute_share <= 1.0)) {
    fail("pair_comm_compute_share must be in [0, 1]");
  }
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
  if (!in.tail_s.empty() && static_cast<int>(in.tail_s.size()) != P) {
    fail(fmt::format("tail_s needs one entry per rank ({}), got {}", P, in.tail_s.size()));
  }
  for (const double x : in.tail_s) {
    if (!(x >= 0.0)) fail("tail_s entries must be >= 0");
  }
}

// Stage of each (rank, chunk) and the transfer time of each edge z (z -> z+1 forward, z+1 -> z
// backward); a hand-off between two stages on the same rank is free.
struct StageMap {
  std::vector<int> stage_rc;  // [rank * vpp + chunk]
  std::vector<double> p2p_f, p2p_b;
};

StageMap stage_map(const ScheduleTable& table, const SimulationInput& in) {
  const int P = table.pp;
  const int V = table.vpp;
  const int S = table.num_stages();
  StageMap m;
  m.stage_rc.resize(static_cast<std::size_t>(P * V));
  std::vector<int> rank_of_stage(static_cast<std::size_t>(S));
  for (int r = 0; r < P; ++r) {
    for (int c = 0; c < V; ++c) {
      const int z = table.stage_of(r, c);
      m.stage_rc[static_cast<std::size_t>(r * V + c)] = z;
      rank_of_stage[static_cast<std::size_t>(z)] = r;
    }
  }
  m.p2p_f.resize(static_cast<std::size_t>(std::max(S - 1, 0)));
  m.p2p_b.resize(m.p2p_f.size());
  for (int e = 0; e + 1 < S; ++e) {
    const bool local = rank_of_stage[e] == rank_of_stage[e + 1];
    const double f = in.p2p_forward_s.empty() ? in.p2p_s : in.p2p_forward_s[e];
    const double b = in.p2p_backward_s.empty() ? f : in.p2p_backward_s[e];
    m.p2p_f[e] = local ? 0.0 : f;
    m.p2p_b[e] = local ? 0.0 : b;
  }
  return m;
}

// Every (stage, microbatch) has one F and either one BW or B + W; pairs are well formed.
void check_table(const ScheduleTable& table, const std::vector<int>& stage_rc) {
  const int V = table.vpp;
  const int M = table.microbatches;
  std::vector<std::uint8_t> count(static_cast<std::size_t>(table.num_stages()) * M * 4, 0);
  for (int r = 0; r < table.pp; ++r) {
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
  for (int z = 0; z < table.num_stages(); ++z) {
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

// ---- communication tasks: stream ids and, per action, the tasks it launches or waits for (CSR).

struct CommIndex {
  std::vector<int> stream;                         // per task, 1-based stream id (0 is compute)
  std::vector<int> start_off, end_off, block_off;  // per action + 1
  std::vector<int> start_list, end_list, block_list;
};

void check_task(const ScheduleTable& table, const CommTask& task, int k) {
  if (task.rank < 0 || task.rank >= table.pp) fail(fmt::format("comm task {}: bad rank", k));
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
}

CommIndex index_comm(const ScheduleTable& table, const SimulationInput& in,
                     std::vector<std::string>& stream_names) {
  const int A = static_cast<int>(table.actions.size());
  const int K = static_cast<int>(in.comm.size());
  CommIndex ix;
  ix.stream.resize(static_cast<std::size_t>(K));
  ix.start_off.assign(static_cast<std::size_t>(A) + 1, 0);
  ix.end_off = ix.start_off;
  ix.block_off = ix.start_off;
  for (int k = 0; k < K; ++k) {
    const CommTask& task = in.comm[k];
    check_task(table, task, k);
    auto it = std::find(stream_names.begin(), stream_names.end(), task.stream);
    if (it == stream_names.end()) it = stream_names.insert(it, task.stream);
    ix.stream[k] = static_cast<int>(it - stream_names.begin());
    const int base = table.rank_offsets[task.rank];
    if (task.trigger == CommTrigger::kActionStart) ++ix.start_off[base + task.trigger_action + 1];
    if (task.trigger == CommTrigger::kActionEnd) ++ix.end_off[base + task.trigger_action + 1];
    if (task.blocks_action >= 0) ++ix.block_off[base + task.blocks_action + 1];
  }
  if (K == 0) return ix;
  for (int g = 0; g < A; ++g) {
    ix.start_off[g + 1] += ix.start_off[g];
    ix.end_off[g + 1] += ix.end_off[g];
    ix.block_off[g + 1] += ix.block_off[g];
  }
  ix.start_list.resize(static_cast<std::size_t>(ix.start_off[A]));
  ix.end_list.resize(static_cast<std::size_t>(ix.end_off[A]));
  ix.block_list.resize(static_cast<std::size_t>(ix.block_off[A]));
  std::vector<int> fill_s(ix.start_off.begin(), ix.start_off.end() - 1),
      fill_e(ix.end_off.begin(), ix.end_off.end() - 1),
      fill_b(ix.block_off.begin(), ix.block_off.end() - 1);
  for (int k = 0; k < K; ++k) {
    const CommTask& task = in.comm[k];
    const int base = table.rank_offsets[task.rank];
    if (task.trigger == CommTrigger::kActionStart) {
      ix.start_list[fill_s[base + task.trigger_action]++] = k;
    }
    if (task.trigger == CommTrigger::kActionEnd) {
      ix.end_list[fill_e[base + task.trigger_action]++] = k;
    }
    if (task.blocks_action >= 0) ix.block_list[fill_b[base + task.blocks_action]++] = k;
  }
  return ix;
}

// ---- the event loop

class Simulation {
 public:
  Simulation(const ScheduleTable& table, const SimulationInput& in, SimulationResult& res)
      : table_(table),
        in_(in),
        res_(res),
        P_(table.pp),
        V_(table.vpp),
        S_(table.num_stages()),
        M_(table.microbatches),
        A_(static_cast<int>(table.actions.size())),
        K_(static_cast<int>(in.comm.size())),
        SM_(static_cast<std::size_t>(S_) * M_),
        map_(stage_map(table, in)) {
    check_table(table, map_.stage_rc);
    res.stream_names.push_back("compute");
    ix_ = index_comm(table, in, res.stream_names);
    NS_ = static_cast<int>(res.stream_names.size());
    init_state();
  }

  void run();
  void summarise();
  void stream_exposure();
  void critical_path();
  void timeline();

 private:
  void init_state();
  void launch(int k, double t, int trigger_pred);
  void wake(std::size_t key);
  long ready(int r, int g, double& t, int& pred) const;
  double nominal(int r, const Action& a, double& comm_part, double& serial_part) const;
  double send_hold_s(int r, int g, int n) const;
  void finish(int r, int g, double start, double end, int pred);
  void advance(int r);

  const ScheduleTable& table_;
  const SimulationInput& in_;
  SimulationResult& res_;
  const int P_, V_, S_, M_, A_, K_;
  const std::size_t SM_;
  StageMap map_;
  CommIndex ix_;
  int NS_ = 1;
  std::vector<CommState> comm_;
  std::vector<double> stream_free_;
  std::vector<int> stream_last_;
  std::vector<std::vector<Interval>> comm_iv_;
  std::vector<Interval> scratch_;
  // Per (stage, microbatch): when its F / B (or BW) ended and which action that was.
  std::vector<double> f_end_, b_end_;
  std::vector<int> f_by_, b_by_;
  // Per action: start, end and the binding predecessor (critical path).
  std::vector<double> a_start_, a_end_;
  std::vector<int> a_pred_;
  std::vector<int> pos_;  // per rank: next action (global index)
  std::vector<double> clock_;
  std::vector<double> tail_start_, tail_end_;  // per rank; equal when it has no tail
  std::vector<int> last_;
  std::vector<double> act_now_;
  std::vector<int> inflight_now_;
  // Wait lists: a blocked rank waits on exactly one missing product (key: F of (stage, mb) in
  // [0, SM), B in [SM, 2SM), launch of comm task k at 2SM + k) and is woken when it appears, so
  // the sweep does O(actions) work instead of polling blocked ranks.
  std::vector<int> wait_head_, wait_next_, work_;
  int done_ = 0;
};

void Simulation::init_state() {
  comm_.resize(static_cast<std::size_t>(K_));
  for (int k = 0; k < K_; ++k) comm_[k].stream = ix_.stream[k];
  stream_free_.assign(static_cast<std::size_t>(P_) * NS_, 0.0);
  stream_last_.assign(static_cast<std::size_t>(P_) * NS_, kNone);
  comm_iv_.resize(static_cast<std::size_t>(P_));
  scratch_.reserve(static_cast<std::size_t>(K_));
  for (int k = 0; k < K_; ++k) {
    if (in_.comm[k].trigger == CommTrigger::kIterationStart) launch(k, 0.0, kNone);
  }
  f_end_.assign(SM_, -1.0);
  b_end_.assign(SM_, -1.0);
  f_by_.assign(SM_, kNone);
  b_by_.assign(SM_, kNone);
  a_start_.resize(static_cast<std::size_t>(A_));
  a_end_.resize(static_cast<std::size_t>(A_));
  a_pred_.assign(static_cast<std::size_t>(A_), kNone);
  pos_.assign(table_.rank_offsets.begin(), table_.rank_offsets.end() - 1);
  clock_.assign(static_cast<std::size_t>(P_), 0.0);
  tail_start_.assign(static_cast<std::size_t>(P_), 0.0);
  tail_end_.assign(static_cast<std::size_t>(P_), 0.0);
  last_.assign(static_cast<std::size_t>(P_), kNone);
  res_.ranks.assign(static_cast<std::size_t>(P_), RankStats{});
  act_now_.assign(static_cast<std::size_t>(P_), 0.0);
  inflight_now_.assign(static_cast<std::size_t>(P_), 0);
  wait_head_.assign(2 * SM_ + static_cast<std::size_t>(K_), kNone);
  wait_next_.assign(static_cast<std::size_t>(P_), kNone);
  work_.reserve(static_cast<std::size_t>(P_) * 2);
  for (int r = P_ - 1; r >= 0; --r) work_.push_back(r);
}

void Simulation::launch(int k, double t, int trigger_pred) {
  CommState& c = comm_[k];
  const int r = in_.comm[k].rank;
  const std::size_t slot = static_cast<std::size_t>(r) * NS_ + c.stream;
  c.start = std::max(t, stream_free_[slot]);
  c.pred = stream_free_[slot] > t ? encode_comm(stream_last_[slot]) : trigger_pred;
  c.end = c.start + in_.comm[k].duration_s;
  stream_free_[slot] = c.end;
  stream_last_[slot] = k;
  if (in_.comm[k].duration_s > 0.0) comm_iv_[r].push_back({c.start, c.end});
}

void Simulation::wake(std::size_t key) {
  for (int r = wait_head_[key]; r != kNone;) {
    const int next = wait_next_[r];
    work_.push_back(r);
    r = next;
  }
  wait_head_[key] = kNone;
}

// Time the inputs of action g exist (deps + blocking comm). Returns -1 when ready, else the key of
// the first missing product.
long Simulation::ready(int r, int g, double& t, int& pred) const {
  const Action& a = table_.actions[g];
  const int z = map_.stage_rc[r * V_ + a.chunk];
  const std::size_t idx = static_cast<std::size_t>(z) * M_ + a.microbatch;
  t = 0.0;
  pred = kNone;
  switch (a.phase) {
    case Phase::kF:
      if (z > 0) {
        const std::size_t k = idx - M_;
        if (f_end_[k] < 0.0) return static_cast<long>(k);
        t = f_end_[k] + map_.p2p_f[z - 1];
        pred = f_by_[k];
      }
      break;
    case Phase::kB:
    case Phase::kBW:
      if (f_end_[idx] < 0.0) return static_cast<long>(idx);
      if (z + 1 < S_) {
        const std::size_t k = idx + M_;
        if (b_end_[k] < 0.0) return static_cast<long>(SM_ + k);
        t = b_end_[k] + map_.p2p_b[z];
        pred = b_by_[k];
      } else {
        t = f_end_[idx];
        pred = f_by_[idx];
      }
      break;
    case Phase::kW:
      if (b_end_[idx] < 0.0) return static_cast<long>(SM_ + idx);
      t = b_end_[idx];
      pred = b_by_[idx];
      break;
  }
  if (K_ == 0) return -1;
  for (int j = ix_.block_off[g]; j < ix_.block_off[g + 1]; ++j) {
    const int k = ix_.block_list[j];
    if (comm_[k].end < 0.0) return static_cast<long>(2 * SM_) + k;  // not launched yet
    if (comm_[k].end > t) {
      t = comm_[k].end;
      pred = encode_comm(k);
    }
  }
  return -1;
}

double Simulation::nominal(int r, const Action& a, double& comm_part, double& serial_part) const {
  const ChunkCost& c = in_.costs[r * V_ + a.chunk];
  serial_part = 0.0;
  switch (a.phase) {
    case Phase::kF:
      comm_part = c.f_comm_s;
      return c.f_s;
    case Phase::kB:
      comm_part = c.b_comm_s;
      return c.b_s;
    case Phase::kW:
      comm_part = 0.0;
      serial_part = c.w_serial_s;
      return c.w_s;
    case Phase::kBW:
      comm_part = c.b_comm_s;
      serial_part = c.w_serial_s;
      return c.b_s + c.w_s;
  }
  return 0.0;
}

// Records action g's times and its effect on the rank's activation memory and in-flight count.
void Simulation::finish(int r, int g, double start, double end, int pred) {
  const Action& a = table_.actions[g];
  a_start_[g] = start;
  a_end_[g] = end;
  a_pred_[g] = pred;
  const int z = map_.stage_rc[r * V_ + a.chunk];
  const std::size_t idx = static_cast<std::size_t>(z) * M_ + a.microbatch;
  const ChunkCost& c = in_.costs[r * V_ + a.chunk];
  RankStats& st = res_.ranks[r];
  switch (a.phase) {
    case Phase::kF:
      f_end_[idx] = end;
      f_by_[idx] = g;
      wake(idx);
      act_now_[r] += c.activation;
      ++inflight_now_[r];
      st.peak_activation = std::max(st.peak_activation, act_now_[r]);
      st.peak_inflight = std::max(st.peak_inflight, inflight_now_[r]);
      break;
    case Phase::kB:
      b_end_[idx] = end;
      b_by_[idx] = g;
      wake(SM_ + idx);
      act_now_[r] -= c.activation * c.b_release_fraction;
      break;
    case Phase::kBW:
      b_end_[idx] = end;
      b_by_[idx] = g;
      wake(SM_ + idx);
      act_now_[r] -= c.activation;
      --inflight_now_[r];
      break;
    case Phase::kW:
      act_now_[r] -= c.activation * (1.0 - c.b_release_fraction);
      --inflight_now_[r];
      break;
  }
}

// Blocking P2P: how long the sender waits after actions g .. g+n-1 for its own sends (an F to the
// next stage, a B / BW to the previous one; a hand-off on the same rank is free, edges are 0).
// Sends of one step leave together (Megatron batches them), so a pair waits for the longer.
double Simulation::send_hold_s(int r, int g, int n) const {
  double held = 0.0;
  for (int h = g; h < g + n; ++h) {
    const Action& a = table_.actions[h];
    const int z = map_.stage_rc[r * V_ + a.chunk];
    if (a.phase == Phase::kF && z + 1 < S_) held = std::max(held, map_.p2p_f[z]);
    if ((a.phase == Phase::kB || a.phase == Phase::kBW) && z > 0) {
      held = std::max(held, map_.p2p_b[z - 1]);
    }
  }
  return held;
}

// Runs rank r's actions while their inputs exist; parks it on the first missing one.
void Simulation::advance(int r) {
  const int hi = table_.rank_offsets[r + 1];
  while (pos_[r] < hi) {
    const int g = pos_[r];
    const bool pair = table_.actions[g].overlap_with_next;
    double t1 = 0.0, t2 = 0.0;
    int p1 = kNone, p2 = kNone;
    long missing = ready(r, g, t1, p1);
    if (missing < 0 && pair) missing = ready(r, g + 1, t2, p2);
    if (missing >= 0) {
      wait_next_[r] = wait_head_[missing];
      wait_head_[missing] = r;
      return;
    }
    double start = clock_[r];
    int pred = last_[r];
    if (p1 != kNone && t1 >= start) {
      start = t1;
      pred = p1;
    }
    if (p2 != kNone && t2 >= start) {
      start = t2;
      pred = p2;
    }
    const int n = pair ? 2 : 1;
    if (K_ > 0) {
      for (int h = g; h < g + n; ++h) {
        for (int j = ix_.start_off[h]; j < ix_.start_off[h + 1]; ++j) {
          launch(ix_.start_list[j], start, h);
        }
      }
    }
    double comm1 = 0.0, comm2 = 0.0, serial1 = 0.0, serial2 = 0.0;
    double work_s = nominal(r, table_.actions[g], comm1, serial1);
    double pair_hidden = 0.0;
    if (pair) {
      const double work2 = nominal(r, table_.actions[g + 1], comm2, serial2);
      const double compute = work_s - comm1 - serial1 + work2 - comm2 - serial2;
      const double comm = comm1 + comm2;
      pair_hidden = std::min(compute, comm);
      work_s = std::max(compute + in_.pair_comm_compute_share * comm, comm) + serial1 + serial2;
    }
    const double end = stretched_end(start, work_s, in_.interference, comm_iv_[r], scratch_);
    // Combined 1F1B frees the backward's layers as the forward saves its own (in_flight.cpp): the
    // partner's release is counted first.
    if (pair && table_.combined_forward_backward) {
      finish(r, g + 1, start, end, pred);
      finish(r, g, start, end, pred);
    } else {
      for (int h = g; h < g + n; ++h) finish(r, h, start, end, pred);
    }
    RankStats& st = res_.ranks[r];
    st.busy_s += end - start;
    st.ideal_compute_s += work_s;
    st.pair_hidden_comm_s += pair_hidden;
    const double held_s = in_.blocking_p2p ? send_hold_s(r, g, n) : 0.0;
    st.p2p_blocked_s += held_s;
    clock_[r] = end + held_s;
    const bool last = pos_[r] + n == hi;
    const double tail = last && !in_.tail_s.empty() ? in_.tail_s[r] : 0.0;
    double trigger_end = end;
    if (last) {
      tail_start_[r] = clock_[r];
      tail_end_[r] = clock_[r];
    }
    if (tail > 0.0) {
      // The drain runs once the sends left; what the last action triggers waits for it.
      tail_end_[r] = stretched_end(clock_[r], tail, in_.interference, comm_iv_[r], scratch_);
      st.busy_s += tail_end_[r] - clock_[r];
      st.ideal_compute_s += tail;
      clock_[r] = tail_end_[r];
      trigger_end = tail_end_[r];
    }
    if (K_ > 0) {
      for (int h = g; h < g + n; ++h) {
        for (int j = ix_.end_off[h]; j < ix_.end_off[h + 1]; ++j) {
          launch(ix_.end_list[j], trigger_end, g + n - 1);
        }
      }
    }
    last_[r] = g + n - 1;
    pos_[r] += n;
    done_ += n;
  }
}

void Simulation::run() {
  while (!work_.empty()) {
    const int r = work_.back();
    work_.pop_back();
    advance(r);
  }
  if (done_ < A_) {  // every rank left waits on something no rank can produce: a cycle
    std::string stuck;
    for (int r = 0; r < P_; ++r) {
      if (pos_[r] < table_.rank_offsets[r + 1]) {
        stuck +=
            fmt::format(" rank {} waits at action {} ({});", r, pos_[r] - table_.rank_offsets[r],
                        action_label(table_.actions[pos_[r]]));
      }
    }
    fail("schedule deadlock (dependency cycle in the table):" + stuck);
  }
}

// Makespan, per-rank busy / idle and bubble.
void Simulation::summarise() {
  double comm_end = 0.0;
  for (const CommState& c : comm_) comm_end = std::max(comm_end, c.end);
  for (int r = 0; r < P_; ++r) {
    res_.ranks[r].compute_end_s = clock_[r];
    res_.compute_makespan_s = std::max(res_.compute_makespan_s, clock_[r]);
  }
  res_.makespan_s = std::max(res_.compute_makespan_s, comm_end);
  double ideal_max = 0.0;
  for (RankStats& st : res_.ranks) {
    st.idle_s = std::max(0.0, res_.makespan_s - st.busy_s);
    st.bubble_fraction = res_.makespan_s > 0.0 ? st.idle_s / res_.makespan_s : 0.0;
    res_.max_bubble_fraction = std::max(res_.max_bubble_fraction, st.bubble_fraction);
    ideal_max = std::max(ideal_max, st.ideal_compute_s);
  }
  res_.bubble_over_ideal = ideal_max > 0.0 ? (res_.makespan_s - ideal_max) / ideal_max : 0.0;
}

// Per-stream busy and exposed (busy while the rank's compute stream is idle).
void Simulation::stream_exposure() {
  if (NS_ <= 1) return;
  res_.streams.resize(static_cast<std::size_t>(NS_ - 1));
  for (int s = 1; s < NS_; ++s) {
    res_.streams[s - 1].name = res_.stream_names[s];
    res_.streams[s - 1].busy_s.assign(static_cast<std::size_t>(P_), 0.0);
    res_.streams[s - 1].exposed_s.assign(static_cast<std::size_t>(P_), 0.0);
  }
  std::vector<Interval> compute_iv;
  compute_iv.reserve(static_cast<std::size_t>(A_));
  for (int r = 0; r < P_; ++r) {
    compute_iv.clear();
    for (int g = table_.rank_offsets[r]; g < table_.rank_offsets[r + 1]; ++g) {
      if (a_end_[g] <= a_start_[g]) continue;
      if (!compute_iv.empty() && a_start_[g] < compute_iv.back().end) continue;  // pair partner
      compute_iv.push_back({a_start_[g], a_end_[g]});
    }
    for (int k = 0; k < K_; ++k) {
      if (in_.comm[k].rank != r) continue;
      StreamStats& ss = res_.streams[comm_[k].stream - 1];
      const double len = comm_[k].end - comm_[k].start;
      ss.busy_s[r] += len;
      ss.exposed_s[r] += len - covered(comm_[k].start, comm_[k].end, compute_iv);
    }
  }
  for (StreamStats& ss : res_.streams) {
    for (const double e : ss.exposed_s) ss.max_exposed_s = std::max(ss.max_exposed_s, e);
  }
}

// Walks the binding predecessors back from whatever ends last.
void Simulation::critical_path() {
  int cur = kNone;
  double best = -1.0;
  for (int g = 0; g < A_; ++g) {
    if (a_end_[g] > best) {
      best = a_end_[g];
      cur = g;
    }
  }
  for (int k = 0; k < K_; ++k) {
    if (comm_[k].end > best) {
      best = comm_[k].end;
      cur = encode_comm(k);
    }
  }
  // A rank's tail that ends last: the path runs through the rank's last action into it.
  int tail_rank = -1;
  for (int r = 0; r < P_; ++r) {
    if (tail_end_[r] > tail_start_[r] && tail_end_[r] > best) {
      best = tail_end_[r];
      tail_rank = r;
    }
  }
  if (tail_rank >= 0) {
    res_.critical_path.push_back(
        {CriticalStep::Kind::kTail, tail_rank, -1, tail_start_[tail_rank], tail_end_[tail_rank]});
    cur = table_.rank_offsets[tail_rank + 1] - 1;
  }
  while (cur != kNone) {
    CriticalStep step;
    if (cur >= 0) {
      const auto it = std::upper_bound(table_.rank_offsets.begin(), table_.rank_offsets.end(), cur);
      const int r = static_cast<int>(it - table_.rank_offsets.begin()) - 1;
      step = {CriticalStep::Kind::kCompute, r, cur - table_.rank_offsets[r], a_start_[cur],
              a_end_[cur]};
      cur = a_pred_[cur];
    } else {
      const int k = decode_comm(cur);
      step = {CriticalStep::Kind::kComm, in_.comm[k].rank, k, comm_[k].start, comm_[k].end};
      cur = comm_[k].pred;
    }
    res_.critical_path.push_back(step);
  }
  std::reverse(res_.critical_path.begin(), res_.critical_path.end());
}

void Simulation::timeline() {
  res_.timeline.reserve(static_cast<std::size_t>(A_ + K_));
  for (int r = 0; r < P_; ++r) {
    const std::size_t first = res_.timeline.size();
    for (int g = table_.rank_offsets[r]; g < table_.rank_offsets[r + 1]; ++g) {
      const Action& a = table_.actions[g];
      res_.timeline.push_back({r, 0, action_label(a), a_start_[g], a_end_[g], a.chunk, a.phase});
    }
    if (tail_end_[r] > tail_start_[r]) {
      res_.timeline.push_back({r, 0, "deferred weight gradients", tail_start_[r], tail_end_[r]});
    }
    for (int k = 0; k < K_; ++k) {
      if (in_.comm[k].rank != r) continue;
      res_.timeline.push_back({r, comm_[k].stream,
                               in_.comm[k].label.empty() ? in_.comm[k].stream : in_.comm[k].label,
                               comm_[k].start, comm_[k].end});
    }
    std::stable_sort(
        res_.timeline.begin() + static_cast<std::ptrdiff_t>(first), res_.timeline.end(),
        [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_s < b.start_s; });
  }
}

}  // namespace

SimulationResult simulate(const ScheduleTable& table, const SimulationInput& in) {
  check_input(table, in);
  SimulationResult res;
  Simulation sim(table, in, res);
  sim.run();
  sim.summarise();
  sim.stream_exposure();
  sim.critical_path();
  if (in.record_timeline) sim.timeline();
  return res;
}

}  // namespace projector::schedule
