// Internals shared by the analysis translation units (not installed).
#pragma once

#include <vector>

#include "projector/profile/profile.h"

namespace projector::profile::detail {

struct Event {
  const GpuEvent* gpu = nullptr;
  const Launch* launch = nullptr;  // the CPU launch (nullptr when the trace has none)
  KernelClass cls = KernelClass::kOther;
  Phase phase = Phase::kUnknown;
  int step = -1;         // index into Timeline::steps, -1: outside every step
  double wall_us = 0.0;  // attributed wall time
};

struct Timeline {
  int device = -1;
  std::vector<Event> events;  // the chosen device's activities by GPU start time
  std::vector<StepInfo> steps;
  std::vector<std::string> step_names;
  std::vector<int> used;             // steps averaged (the steady ones)
  std::vector<double> host_idle_us;  // per step
};

Timeline build_timeline(const TraceData& t);
void assign_phases(const TraceData& t, Timeline& tl, MeasuredProfile& p);
void assign_steps(const TraceData& t, Timeline& tl, MeasuredProfile& p, const AnalyzeOptions& o);
void assign_steps_by_structure(const TraceData& t, Timeline& tl, MeasuredProfile& p,
                               const AnalyzeOptions& o);
void attribute_wall(Timeline& tl, MeasuredProfile& p, double launch_gap_us);
void measure_steps(Timeline& tl, MeasuredProfile& p);
void sum_classes(const TraceData& t, const Timeline& tl, MeasuredProfile& p);
void find_layers(const TraceData& t, const Timeline& tl, MeasuredProfile& p,
                 const AnalyzeOptions& o);
void collect_gemms(const TraceData& t, const Timeline& tl, MeasuredProfile& p);
void collect_collectives(const Timeline& tl, MeasuredProfile& p);
void collect_memory(const TraceData& t, MeasuredProfile& p);
int priority(KernelClass c);

}  // namespace projector::profile::detail
