// Repeating structure (steps without annotations, transformer layers), GEMM shapes, collective
// sizes and the allocator peak.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analyze_detail.h"

namespace projector::profile {

Repeat find_repeat(const std::vector<std::uint32_t>& s, std::size_t min_period,
                   std::size_t max_period) {
  Repeat best;
  const std::size_t n = s.size();
  max_period = std::min(max_period, n / 2);
  for (std::size_t p = std::max<std::size_t>(1, min_period); p <= max_period; ++p) {
    std::size_t run = 0;
    auto close = [&](std::size_t end) {  // matches s[i] == s[i+p] for i in [end - run, end)
      const std::size_t reps = run / p + 1;
      if (reps >= 2 && reps * p > best.period * best.reps) best = {end - run, p, reps};
    };
    for (std::size_t i = 0; i + p < n; ++i) {
      if (s[i] == s[i + p]) {
        ++run;
      } else {
        close(i);
        run = 0;
      }
    }
    close(n - p);
  }
  return best;
}

namespace detail {
namespace {

bool structural(const Event& e) {
  return e.cls != KernelClass::kMemcpy && e.cls != KernelClass::kMemset;
}

double launch_time(const Event& e) {
  return e.launch != nullptr ? e.launch->ts_us : e.gpu->ts_us;
}

// Kernel names of one phase of one step, in launch order.
std::vector<const Event*> phase_events(const Timeline& tl, int step, Phase phase) {
  std::vector<const Event*> v;
  for (const Event& e : tl.events) {
    if (e.step == step && e.phase == phase && structural(e)) v.push_back(&e);
  }
  std::stable_sort(v.begin(), v.end(), [](const Event* a, const Event* b) {
    return launch_time(*a) < launch_time(*b);
  });
  return v;
}

// Per-layer times from anchors: each layer runs its attention core exactly once per direction,
// so the most frequent attention kernel of the phase counts layers x microbatches, and the
// kernels between the first and the last anchor are (count - 1) whole layers. Exact repetition of
// kernel names is too brittle for this (DeepEP, allocator-dependent kernels and per-layer
// variants break it); it is the fallback when there is no attention kernel.
LayerStructure layers_by_anchor(const std::vector<const Event*>& ev) {
  LayerStructure ls;
  std::unordered_map<std::uint32_t, int> count;
  for (const Event* e : ev) {
    if (e->cls == KernelClass::kAttentionFwd || e->cls == KernelClass::kAttentionBwd ||
        e->cls == KernelClass::kSoftmax) {
      ++count[e->gpu->name];
    }
  }
  std::uint32_t anchor = 0;
  int most = 0;
  for (const auto& [name, n] : count) {
    if (n > most || (n == most && name < anchor)) {
      most = n;
      anchor = name;
    }
  }
  if (most < 2) return ls;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]->gpu->name == anchor) at.push_back(i);
  }
  ls.found = true;
  ls.method = "attention kernels";
  ls.repeats = static_cast<int>(at.size());
  const double layers = static_cast<double>(at.size() - 1);
  ls.period_kernels = static_cast<int>(std::lround((at.back() - at.front()) / layers));
  for (std::size_t i = at.front(); i < at.back(); ++i) {
    const double ms = ev[i]->gpu->dur_us / 1e3 / layers;
    ls.layer_class_ms[static_cast<std::size_t>(ev[i]->cls)] += ms;
    ls.layer_ms += ms;
  }
  ls.coverage =
      std::min(1.0, (at.back() - at.front() + ls.period_kernels) / static_cast<double>(ev.size()));
  return ls;
}

LayerStructure layers_of(const std::vector<const Event*>& ev, std::size_t max_kernels) {
  LayerStructure ls = layers_by_anchor(ev);
  if (ls.found) return ls;
  std::vector<std::uint32_t> seq;
  for (std::size_t i = 0; i < ev.size() && i < max_kernels; ++i) seq.push_back(ev[i]->gpu->name);
  const Repeat r = find_repeat(seq, 4, seq.size() / 2);
  if (r.reps < 2) return ls;
  ls.found = true;
  ls.method = "repeating kernel block";
  ls.repeats = static_cast<int>(r.reps);
  ls.period_kernels = static_cast<int>(r.period);
  ls.coverage = static_cast<double>(r.period * r.reps) / static_cast<double>(seq.size());
  for (std::size_t i = r.start; i < r.start + r.period * r.reps; ++i) {
    const double ms = ev[i]->gpu->dur_us / 1e3 / static_cast<double>(r.reps);
    ls.layer_class_ms[static_cast<std::size_t>(ev[i]->cls)] += ms;
    ls.layer_ms += ms;
  }
  return ls;
}

Dtype dtype_of(const std::vector<std::string>& types) {
  const std::string t = types.empty() ? std::string() : types.front();
  if (t.find("BFloat16") != std::string::npos) return Dtype::kBf16;
  if (t.find("Half") != std::string::npos) return Dtype::kFp16;
  if (t.find("Float8") != std::string::npos) return Dtype::kFp8;
  if (t == "float") return Dtype::kFp32;
  return Dtype::kBf16;
}

std::int64_t prod_leading(const std::vector<std::int64_t>& d) {
  std::int64_t m = 1;
  for (std::size_t i = 0; i + 1 < d.size(); ++i) m *= d[i];
  return m;
}

// (m, n, k, batch) of a GEMM operator from its input shapes; false when they do not fit.
bool gemm_dims(const std::string& op, const OperatorShapes& s, GemmStat& g) {
  const auto& d = s.dims;
  auto two = [&](std::size_t a, std::size_t b) {
    if (d.size() <= b || d[a].size() < 2 || d[b].size() < 2) return false;
    const auto& x = d[a];
    const auto& w = d[b];
    g.batch = x.size() == 3 && w.size() == 3 ? x[0] : 1;
    g.m = x.size() == 3 && w.size() == 3 ? x[1] : prod_leading(x);
    g.k = x.back();
    g.n = w.back();
    return true;
  };
  if (op == "aten::mm" || op == "aten::bmm" || op == "aten::_scaled_mm" || op == "aten::matmul") {
    return two(0, 1);
  }
  if (op == "aten::addmm" || op == "aten::baddbmm") return two(1, 2);
  if (op == "aten::linear" && d.size() >= 2 && !d[0].empty() && d[1].size() == 2) {
    g.m = prod_leading(d[0]);
    g.k = d[0].back();
    g.n = d[1][0];
    return true;
  }
  return false;
}

}  // namespace

void assign_steps_by_structure(const TraceData& t, Timeline& tl, MeasuredProfile& p,
                               const AnalyzeOptions& o) {
  (void)t;
  std::vector<std::size_t> idx;
  std::vector<std::uint32_t> seq;
  for (std::size_t i = 0; i < tl.events.size() && seq.size() < o.max_structure_kernels; ++i) {
    if (!structural(tl.events[i])) continue;
    idx.push_back(i);
    seq.push_back(tl.events[i].gpu->name);
  }
  const Repeat r = find_repeat(seq, 8, seq.size() / 2);
  if (r.reps >= 2 && r.period * r.reps * 2 >= seq.size()) {
    p.step_source = "repeating kernel sequence";
    for (std::size_t k = 0; k < r.reps; ++k) tl.steps.push_back({"block " + std::to_string(k)});
    const double first = tl.events[idx[r.start]].gpu->ts_us;
    std::vector<double> starts;
    for (std::size_t k = 0; k < r.reps; ++k) {
      starts.push_back(tl.events[idx[r.start + k * r.period]].gpu->ts_us);
    }
    const std::size_t last_i = r.start + r.period * r.reps - 1;
    const double end = tl.events[idx[last_i]].gpu->ts_us + tl.events[idx[last_i]].gpu->dur_us;
    for (Event& e : tl.events) {
      const double ts = e.gpu->ts_us;
      if (ts < first || ts >= end) continue;
      const auto it = std::upper_bound(starts.begin(), starts.end(), ts);
      e.step = static_cast<int>(it - starts.begin()) - 1;
    }
    return;
  }
  p.step_source = "whole trace (no ProfilerStep annotation, no repeating structure)";
  tl.steps.push_back({"whole trace"});
  for (Event& e : tl.events) e.step = 0;
}

void find_layers(const TraceData& t, const Timeline& tl, MeasuredProfile& p,
                 const AnalyzeOptions& o) {
  (void)t;
  if (tl.used.empty()) return;
  const int step = tl.used.front();
  const bool phased = p.has_backward;
  p.forward_layers = layers_of(phase_events(tl, step, Phase::kForward), o.max_structure_kernels);
  if (!p.forward_layers.found) {
    // No phase information (or none launched from a known thread): all kernels of the step.
    std::vector<const Event*> all;
    for (const Event& e : tl.events) {
      if (e.step == step && structural(e)) all.push_back(&e);
    }
    p.forward_layers = layers_of(all, o.max_structure_kernels);
  }
  if (phased) {
    p.backward_layers =
        layers_of(phase_events(tl, step, Phase::kBackward), o.max_structure_kernels);
  }
}

void collect_gemms(const TraceData& t, const Timeline& tl, MeasuredProfile& p) {
  std::unordered_map<std::int64_t, const OperatorShapes*> by_id;
  for (const OperatorShapes& s : t.shapes) {
    const std::string& n = t.name(s.name);
    auto [it, fresh] = by_id.emplace(s.external_id, &s);
    // Prefer the innermost GEMM (mm / addmm / bmm) over linear / matmul wrappers.
    if (!fresh && (n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm")) it->second = &s;
  }
  std::vector<char> used(tl.steps.size(), 0);
  for (int s : tl.used) used[static_cast<std::size_t>(s)] = 1;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int>, GemmStat> agg;
  for (const Event& e : tl.events) {
    if (e.cls != KernelClass::kGemm || e.step < 0 || !used[static_cast<std::size_t>(e.step)])
      continue;
    auto it = by_id.find(e.gpu->external_id);
    if (it == by_id.end()) continue;
    GemmStat g;
    if (!gemm_dims(t.name(it->second->name), *it->second, g)) continue;
    g.dtype = dtype_of(it->second->types);
    GemmStat& a = agg[{g.m, g.n, g.k, g.batch, static_cast<int>(g.dtype)}];
    if (a.count == 0) a = g;
    a.measured_us += e.gpu->dur_us;
    ++a.count;
  }
  for (auto& [key, g] : agg) {
    g.measured_us /= g.count;
    p.gemms.push_back(g);
  }
  std::sort(p.gemms.begin(), p.gemms.end(), [](const GemmStat& a, const GemmStat& b) {
    return a.measured_us * a.count > b.measured_us * b.count;
  });
}

void collect_collectives(const Timeline& tl, MeasuredProfile& p) {
  std::vector<char> used(tl.steps.size(), 0);
  for (int s : tl.used) used[static_cast<std::size_t>(s)] = 1;
  const double n = std::max(1, p.steps_used);
  std::map<std::tuple<int, int, double>, CollectiveStat> agg;
  for (const Event& e : tl.events) {
    if (!is_collective(e.cls) || e.step < 0 || !used[static_cast<std::size_t>(e.step)]) continue;
    CollectiveStat& c = agg[{static_cast<int>(e.cls), e.gpu->group_size, e.gpu->message_bytes}];
    c.cls = e.cls;
    c.group_size = e.gpu->group_size;
    c.message_bytes = e.gpu->message_bytes;
    c.calls += 1.0 / n;
    c.kernel_ms += e.gpu->dur_us / 1e3 / n;
  }
  for (auto& [k, c] : agg) p.collectives.push_back(c);
  std::sort(
      p.collectives.begin(), p.collectives.end(),
      [](const CollectiveStat& a, const CollectiveStat& b) { return a.kernel_ms > b.kernel_ms; });
}

void collect_memory(const TraceData& t, MeasuredProfile& p) {
  for (const MemorySample& m : t.memory) {
    if (m.device_type == 0) continue;  // host allocations
    p.memory.present = true;
    ++p.memory.samples;
    p.memory.allocated_bytes = std::max(p.memory.allocated_bytes, m.allocated_bytes);
    p.memory.reserved_bytes = std::max(p.memory.reserved_bytes, m.reserved_bytes);
  }
}

}  // namespace detail
}  // namespace projector::profile
