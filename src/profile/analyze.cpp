// Trace -> measured profile: device, phases, steps, wall-time attribution, class totals.
// Layer structure, GEMM shapes, collectives and memory are in structure.cpp.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "analyze_detail.h"
#include "projector/util/error.h"

namespace projector::profile {

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "F";
    case Phase::kBackward:
      return "B";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kUnknown:
      break;
  }
  return "?";
}

namespace detail {
namespace {

// Spans sorted by start, with the running maximum end: "is t inside any span" in O(log n), and
// the latest span starting at or before t.
class SpanIndex {
 public:
  explicit SpanIndex(std::vector<Span> spans) : spans_(std::move(spans)) {
    std::sort(spans_.begin(), spans_.end(),
              [](const Span& a, const Span& b) { return a.ts_us < b.ts_us; });
    max_end_.reserve(spans_.size());
    double m = -1e300;
    for (const Span& s : spans_) max_end_.push_back(m = std::max(m, s.end_us()));
  }
  bool empty() const { return spans_.empty(); }
  bool covers(double t) const {
    const std::size_t i = upper(t);
    return i > 0 && max_end_[i - 1] >= t;
  }
  const Span* latest(double t) const {
    const std::size_t i = upper(t);
    if (i == 0 || spans_[i - 1].end_us() < t) return nullptr;
    return &spans_[i - 1];
  }

 private:
  std::size_t upper(double t) const {
    return static_cast<std::size_t>(
        std::upper_bound(spans_.begin(), spans_.end(), t,
                         [](double v, const Span& s) { return v < s.ts_us; }) -
        spans_.begin());
  }
  std::vector<Span> spans_;
  std::vector<double> max_end_;
};

int pick_device(const TraceData& t) {
  std::unordered_map<int, double> busy;
  for (const GpuEvent& g : t.gpu) busy[g.device] += g.dur_us;
  int best = -1;
  double most = -1.0;
  for (const auto& [d, us] : busy) {
    if (us > most || (us == most && d < best)) {
      most = us;
      best = d;
    }
  }
  return best;
}

std::int64_t main_thread(const TraceData& t) {
  if (!t.cpu_steps.empty()) return t.cpu_steps.front().tid;
  std::unordered_map<std::int64_t, int> n;
  for (const Launch& l : t.launches) ++n[l.tid];
  std::int64_t best = 0;
  int most = -1;
  for (const auto& [tid, c] : n) {
    if (c > most) {
      most = c;
      best = tid;
    }
  }
  return best;
}

Phase phase_suffix(const std::string& name) {
  return name.size() >= 3 && name.compare(name.size() - 3, 3, "(F)") == 0 ? Phase::kForward
                                                                          : Phase::kBackward;
}

}  // namespace

void assign_phases(const TraceData& t, Timeline& tl, MeasuredProfile& p) {
  const SpanIndex optimizer(t.optimizer_spans);
  const SpanIndex annotated(t.phase_spans);
  std::unordered_map<std::int64_t, std::vector<Span>> bwd_by_tid;
  for (const Span& s : t.backward_spans) bwd_by_tid[s.tid].push_back(s);
  std::unordered_map<std::int64_t, SpanIndex> backward;
  for (auto& [tid, v] : bwd_by_tid) backward.emplace(tid, SpanIndex(std::move(v)));
  const std::int64_t main_tid = main_thread(t);
  p.phase_source = !annotated.empty()  ? "phase annotations (F)/(B)/(W)"
                   : !backward.empty() ? "autograd engine functions and threads"
                                       : "none (every kernel counted as forward)";
  for (Event& e : tl.events) {
    if (e.launch == nullptr) {
      e.phase = Phase::kUnknown;
      continue;
    }
    const double ts = e.launch->ts_us;
    if (optimizer.covers(ts)) {
      e.phase = Phase::kOptimizer;
      if (!is_collective(e.cls)) e.cls = KernelClass::kOptimizer;
    } else if (const Span* s = annotated.latest(ts)) {
      e.phase = phase_suffix(t.name(s->name));
    } else if (auto it = backward.find(e.launch->tid);
               it != backward.end() && (it->first != main_tid || it->second.covers(ts))) {
      e.phase = Phase::kBackward;
    } else {
      e.phase = Phase::kForward;
    }
    if (e.cls == KernelClass::kOptimizer && e.phase != Phase::kOptimizer) {
      e.phase = Phase::kOptimizer;  // fused optimizer kernels outside an annotated step
    }
  }
  for (const Event& e : tl.events) {
    p.has_backward = p.has_backward || e.phase == Phase::kBackward;
    p.has_optimizer = p.has_optimizer || e.phase == Phase::kOptimizer;
  }
}

Timeline build_timeline(const TraceData& t) {
  Timeline tl;
  tl.device = pick_device(t);
  std::unordered_map<std::int64_t, const Launch*> launch_of;
  launch_of.reserve(t.launches.size());
  for (const Launch& l : t.launches) launch_of.emplace(l.correlation, &l);
  std::vector<KernelClass> by_name(t.names.size(), KernelClass::kCount);
  for (const GpuEvent& g : t.gpu) {
    if (g.device != tl.device) continue;
    Event e;
    e.gpu = &g;
    if (g.activity == GpuActivity::kMemcpy) {
      e.cls = KernelClass::kMemcpy;
    } else if (g.activity == GpuActivity::kMemset) {
      e.cls = KernelClass::kMemset;
    } else if (g.collective_name != 0) {
      e.cls = classify_kernel(t.name(g.name), t.name(g.collective_name));
    } else {
      KernelClass& c = by_name[g.name];
      if (c == KernelClass::kCount) c = classify_kernel(t.name(g.name));
      e.cls = c;
    }
    if (auto it = launch_of.find(g.correlation); g.correlation >= 0 && it != launch_of.end()) {
      e.launch = it->second;
    }
    tl.events.push_back(e);
  }
  std::sort(tl.events.begin(), tl.events.end(),
            [](const Event& a, const Event& b) { return a.gpu->ts_us < b.gpu->ts_us; });
  return tl;
}

// Step of every event: ProfilerStep annotations (by launch time, else by GPU time), else the
// repeating kernel sequence, else the whole trace.
void assign_steps(const TraceData& t, Timeline& tl, MeasuredProfile& p, const AnalyzeOptions& o) {
  std::vector<Span> cpu = t.cpu_steps, gpu = t.gpu_steps;
  auto by_ts = [](const Span& a, const Span& b) { return a.ts_us < b.ts_us; };
  std::sort(cpu.begin(), cpu.end(), by_ts);
  std::sort(gpu.begin(), gpu.end(), by_ts);
  auto find = [](const std::vector<Span>& v, double ts) -> int {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (ts >= v[i].ts_us && ts < v[i].end_us()) return static_cast<int>(i);
    }
    return -1;
  };
  const std::vector<Span>& spans = !cpu.empty() ? cpu : gpu;
  if (!spans.empty()) {
    p.step_source = !cpu.empty() ? "ProfilerStep annotations" : "ProfilerStep GPU annotations";
    for (Event& e : tl.events) {
      if (!cpu.empty() && e.launch != nullptr) {
        e.step = find(cpu, e.launch->ts_us);
      } else if (!gpu.empty()) {
        e.step = find(gpu, e.gpu->ts_us);
      } else {
        e.step = find(cpu, e.gpu->ts_us);
      }
    }
    tl.step_names.clear();
    for (const Span& s : spans) {
      StepInfo si;
      si.name = t.name(s.name);
      si.cpu_ms = !cpu.empty() ? s.dur_us / 1e3 : 0.0;
      for (const Span& g : gpu) {
        if (t.name(g.name) == si.name) si.gpu_annotation_ms = g.dur_us / 1e3;
      }
      tl.steps.push_back(si);
    }
    return;
  }
  assign_steps_by_structure(t, tl, p, o);
}

// Compute first, then copies, then collectives: an interval where a compute kernel runs belongs
// to compute; a collective only owns the time nothing else covers (its exposed part).
int priority(KernelClass c) {
  if (is_collective(c)) return 2;
  if (c == KernelClass::kMemcpy || c == KernelClass::kMemset) return 1;
  return 0;
}

void attribute_wall(Timeline& tl, MeasuredProfile& p, double launch_gap_us) {
  struct Point {
    double t;
    int idx;
    bool start;
  };
  // Times relative to the first kernel: at epoch-scale timestamps (1.7e15 us) a double's step is
  // 0.25 us, so ts + dur of a short kernel would round back to ts.
  double origin_us = 0.0;
  for (const Event& e : tl.events) {
    if (std::isfinite(e.gpu->ts_us)) {
      origin_us = e.gpu->ts_us;  // the earliest: events are sorted by start
      break;
    }
  }
  std::vector<Point> pts;
  pts.reserve(tl.events.size() * 2);
  for (std::size_t i = 0; i < tl.events.size(); ++i) {
    const GpuEvent& g = *tl.events[i].gpu;
    const double start_us = g.ts_us - origin_us;
    const double end_us = start_us + g.dur_us;
    // Zero-length records hold no time; an end that still rounds to its start (or a non-finite
    // time) holds none we can place, and its end must never sort before its start.
    if (!(g.dur_us > 0.0) || !std::isfinite(end_us) || !(end_us > start_us)) continue;
    pts.push_back({start_us, static_cast<int>(i), true});
    pts.push_back({end_us, static_cast<int>(i), false});
  }
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
    return a.t != b.t ? a.t < b.t : (!a.start && b.start);
  });
  tl.host_idle_us.assign(tl.steps.size(), 0.0);
  std::vector<int> active;
  double prev = pts.empty() ? 0.0 : pts.front().t;
  int last_ended = -1;
  for (const Point& pt : pts) {
    const double dt = pt.t - prev;
    if (dt > 0.0 && active.empty() && pt.start && last_ended >= 0) {
      const int s_prev = tl.events[static_cast<std::size_t>(last_ended)].step;
      const int s_next = tl.events[static_cast<std::size_t>(pt.idx)].step;
      if (dt <= launch_gap_us && s_prev == s_next) {
        tl.events[static_cast<std::size_t>(pt.idx)].wall_us += dt;  // launch latency
      } else if (s_prev >= 0) {
        tl.host_idle_us[static_cast<std::size_t>(s_prev)] += dt;
      }
    } else if (dt > 0.0 && !active.empty()) {
      int best = 3;
      for (int a : active)
        best = std::min(best, priority(tl.events[static_cast<std::size_t>(a)].cls));
      int n = 0;
      for (int a : active) n += priority(tl.events[static_cast<std::size_t>(a)].cls) == best;
      for (int a : active) {
        if (priority(tl.events[static_cast<std::size_t>(a)].cls) == best) {
          tl.events[static_cast<std::size_t>(a)].wall_us += dt / n;
        }
      }
    }
    if (pt.start) {
      active.push_back(pt.idx);
    } else {
      if (auto it = std::find(active.begin(), active.end(), pt.idx); it != active.end()) {
        active.erase(it);
      }
      last_ended = pt.idx;
    }
    prev = pt.t;
  }
  p.launch_gap_us = launch_gap_us;
}

// Step windows from the GPU timeline: start-to-start periods when steps follow each other (the
// steady state), the first-start-to-last-end span for the last or only step.
void measure_steps(Timeline& tl, MeasuredProfile& p) {
  for (const Event& e : tl.events) {
    if (e.step < 0) continue;
    StepInfo& s = tl.steps[static_cast<std::size_t>(e.step)];
    const double end = e.gpu->ts_us + e.gpu->dur_us;
    if (s.kernels == 0 || e.gpu->ts_us < s.gpu_start_us) s.gpu_start_us = e.gpu->ts_us;
    if (s.kernels == 0 || end > s.gpu_end_us) s.gpu_end_us = end;
    ++s.kernels;
  }
  std::vector<int> with_work;
  for (std::size_t i = 0; i < tl.steps.size(); ++i) {
    if (tl.steps[i].kernels > 0) with_work.push_back(static_cast<int>(i));
  }
  std::sort(with_work.begin(), with_work.end(), [&](int a, int b) {
    return tl.steps[static_cast<std::size_t>(a)].gpu_start_us <
           tl.steps[static_cast<std::size_t>(b)].gpu_start_us;
  });
  tl.used.clear();
  double window = 0.0, cpu = 0.0, gpu_ann = 0.0;
  if (with_work.size() >= 2) {
    for (std::size_t i = 0; i + 1 < with_work.size(); ++i) {
      const StepInfo& a = tl.steps[static_cast<std::size_t>(with_work[i])];
      const StepInfo& b = tl.steps[static_cast<std::size_t>(with_work[i + 1])];
      window += b.gpu_start_us - a.gpu_start_us;
      cpu += a.cpu_ms;
      tl.used.push_back(with_work[i]);
    }
  } else if (with_work.size() == 1) {
    const StepInfo& a = tl.steps[static_cast<std::size_t>(with_work[0])];
    window = a.gpu_end_us - a.gpu_start_us;
    cpu = a.cpu_ms;
    gpu_ann = a.gpu_annotation_ms;
    tl.used.push_back(with_work[0]);
  }
  const double n = std::max<std::size_t>(1, tl.used.size());
  p.steps_used = static_cast<int>(tl.used.size());
  p.step_ms = window / n / 1e3;
  if (gpu_ann > 0.0) {
    p.reference_step_ms = gpu_ann;
    p.reference = "gpu_user_annotation ProfilerStep duration";
  } else if (cpu > 0.0) {
    p.reference_step_ms = cpu / n;
    p.reference = with_work.size() >= 2 ? "ProfilerStep durations (steady steps)"
                                        : "ProfilerStep duration (CPU side)";
  } else {
    p.reference = "none (no step annotation)";
  }
  for (int i : with_work) p.steps.push_back(tl.steps[static_cast<std::size_t>(i)]);
}

void sum_classes(const TraceData& t, const Timeline& tl, MeasuredProfile& p) {
  std::vector<char> used(tl.steps.size(), 0);
  for (int s : tl.used) used[static_cast<std::size_t>(s)] = 1;
  const double n = std::max(1, p.steps_used);
  std::unordered_map<std::uint32_t, double> other;
  double total = 0.0, busy = 0.0;
  for (const Event& e : tl.events) {
    if (e.step < 0 || !used[static_cast<std::size_t>(e.step)]) continue;
    ClassTime& c = p.classes[static_cast<std::size_t>(e.cls)];
    c.kernel_ms += e.gpu->dur_us / 1e3 / n;
    c.wall_ms += e.wall_us / 1e3 / n;
    c.kernels += 1.0 / n;
    c.phase_ms[static_cast<std::size_t>(e.phase)] += e.gpu->dur_us / 1e3 / n;
    total += e.gpu->dur_us;
    busy += e.wall_us;
    if (e.cls == KernelClass::kOther) other[e.gpu->name] += e.gpu->dur_us / 1e3 / n;
  }
  double idle = 0.0;
  for (int s : tl.used) idle += tl.host_idle_us[static_cast<std::size_t>(s)];
  p.host_idle_ms = idle / 1e3 / n;
  p.kernel_ms = total / 1e3 / n;
  p.busy_ms = busy / 1e3 / n;
  p.residual_ms = p.classes[static_cast<std::size_t>(KernelClass::kOther)].kernel_ms;
  p.attributed_fraction = p.kernel_ms > 0.0 ? 1.0 - p.residual_ms / p.kernel_ms : 0.0;
  std::vector<std::pair<std::string, double>> top;
  for (const auto& [name, ms] : other) top.emplace_back(t.name(name).substr(0, 160), ms);
  std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.second > b.second; });
  if (top.size() > 8) top.resize(8);
  p.top_unattributed = std::move(top);
}

}  // namespace detail

MeasuredProfile analyze_trace(const TraceData& t, const AnalyzeOptions& o) {
  MeasuredProfile p;
  p.trace = t.path;
  p.gzip = t.gzip;
  p.json_mib = static_cast<double>(t.json_bytes) / (1 << 20);
  p.rank = t.rank;
  p.world_size = t.world_size;
  detail::Timeline tl = detail::build_timeline(t);
  std::size_t kernels = 0;
  for (const detail::Event& e : tl.events) kernels += e.gpu->activity == GpuActivity::kKernel;
  if (kernels == 0) {
    throw InputError({t.path, 0, 0}, "traceEvents",
                     "the trace has no GPU kernels (a CPU-only trace? record it with "
                     "torch.profiler activities CPU and CUDA)");
  }
  if (!t.devices.empty()) {
    const std::size_t d = tl.device >= 0 && static_cast<std::size_t>(tl.device) < t.devices.size()
                              ? static_cast<std::size_t>(tl.device)
                              : 0;
    p.device = t.devices[d];
  }
  detail::assign_phases(t, tl, p);
  detail::assign_steps(t, tl, p, o);
  detail::attribute_wall(tl, p, o.launch_gap_us);
  detail::measure_steps(tl, p);
  detail::sum_classes(t, tl, p);
  detail::find_layers(t, tl, p, o);
  detail::collect_gemms(t, tl, p);
  detail::collect_collectives(tl, p);
  detail::collect_memory(t, p);
  return p;
}

}  // namespace projector::profile
