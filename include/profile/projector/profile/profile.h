// A measured profile: what one or more training steps of a real trace spent on the GPU, by op
// class and phase, per step, per layer and microbatch; the kernels it could not attribute; the
// achieved GEMM throughput; collective sizes; the caching allocator's peak. With a job
// (`projector profile --config`), each class is also compared with the cost models on the same
// ops, which gives the measured/model ratios the benchmark-anchored projection uses. Versioned
// JSON: docs/json-schema.md, "profile --json".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "projector/cost/measured.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/profile/kernel_class.h"
#include "projector/profile/trace.h"

namespace projector::profile {

enum class Phase : std::uint8_t { kForward, kBackward, kOptimizer, kUnknown };
inline constexpr int kNumPhases = 4;
std::string_view to_string(Phase p);

// One op class, averaged per step.
struct ClassTime {
  double kernel_ms = 0.0;  // sum of kernel durations
  double wall_ms = 0.0;    // wall time it held the GPU (compute first, launch gaps included)
  double kernels = 0.0;    // kernels per step
  std::array<double, kNumPhases> phase_ms{};  // kernel_ms by phase
};

struct StepInfo {
  std::string name;                // "ProfilerStep#3", or "block 2" (repeating structure)
  double cpu_ms = 0.0;             // the annotation's duration (0: none)
  double gpu_annotation_ms = 0.0;  // gpu_user_annotation duration (0: none)
  double gpu_start_us = 0.0, gpu_end_us = 0.0;  // first kernel start, last kernel end
  int kernels = 0;
};

// The transformer layers of one phase of a step: counted by their attention kernel (one per
// layer and microbatch), else by an exactly repeating block of kernels.
struct LayerStructure {
  bool found = false;
  int period_kernels = 0;  // kernels per layer
  int repeats = 0;         // layers seen in one step (all microbatches)
  double coverage = 0.0;   // fraction of the phase's kernels inside the layers
  std::string method;      // "attention kernels" or "repeating kernel block"
  double layer_ms = 0.0;   // kernel time of one layer
  std::array<double, kNumKernelClasses> layer_class_ms{};
};

struct GemmStat {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  Dtype dtype = Dtype::kBf16;
  int count = 0;
  double measured_us = 0.0;  // mean kernel time
  double model_us = 0.0;     // kernel model for the same shape (with a job; 0 otherwise)
  double flops() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
};

struct CollectiveStat {
  KernelClass cls = KernelClass::kAllReduce;
  int group_size = -1;          // from the kernel's arguments (-1: not recorded)
  double message_bytes = -1.0;  // per call (-1: not recorded)
  double calls = 0.0;           // per step
  double kernel_ms = 0.0;       // per step
};

struct MemoryPeak {
  bool present = false;
  int samples = 0;
  double allocated_bytes = 0.0;  // max "Total Allocated" on the GPU
  double reserved_bytes = 0.0;   // max "Total Reserved"
};

// The bench layout the trace was taken with (the job given to `projector profile`).
struct BenchLayout {
  std::string config;
  std::string accelerator;
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 1;
  int nodes = 1, gpus_per_node = 1, world = 1;
  int mbs = 1, seq = 0, gbs = 1, num_layers = 0, hidden = 0, num_experts = 0;
  int pp_rank = 0;  // the pipeline rank the trace shows
  int layers_on_rank = 0;
  int microbatches = 1;                 // per iteration and DP rank
  std::vector<std::string> reductions;  // what --benchmark-gpus reduced (PP flattened, EP, TP)
};

struct CollectiveRatio {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CommGroup group;
  double measured_ms = 0.0, model_ms = 0.0, ratio = 0.0;  // per step
};

// A fitted calibration value implied by the trace (accelerator file key, current and fitted).
struct FittedValue {
  std::string key;  // e.g. "calibration.gemm_peak_fraction.bf16"
  double current = 0.0, fitted = 0.0;
  std::string source;
};

// The range a measured / modelled time ratio may take; further out is a broken trace or profile,
// not a kernel's efficiency (such a class is kept as modelled; a profile file holding one is
// refused).
inline constexpr double kMinMeasuredRatio = 0.01;
inline constexpr double kMaxMeasuredRatio = 100.0;

// Measured against the cost models on the bench job's ops (present only with a job).
struct ModelComparison {
  bool present = false;
  BenchLayout bench;
  int microbatches_in_step = 1;                    // microbatches the traced step runs on this rank
  bool has_embedding = false, has_output = false;  // blocks the trace shows
  std::array<double, kNumCostClasses> measured_ms{}, model_ms{}, ratio{};  // per step
  std::array<double, kNumCostClasses> measured_kernel_ms{};  // kernel time only (no launch gaps)
  std::vector<CollectiveRatio> collectives;
  double unmapped_ms = 0.0;            // per step: kernels no modelled op stands for (copies, ...)
  double host_idle_ms = 0.0;           // per step: GPU idle longer than a launch gap
  double model_step_ms = 0.0;          // the model's time for the same blocks and phases
  double model_allocated_bytes = 0.0;  // memory model at the bench: allocator-held bytes
  double model_fragmentation_bytes = 0.0;  // and its reserved-minus-allocated part
  std::vector<FittedValue> fitted;
  std::vector<std::string> warnings;
};

struct MeasuredProfile {
  static constexpr int kSchemaVersion = 1;
  std::string trace;  // the file as given
  std::string device;
  int rank = -1, world_size = -1;
  bool gzip = false;
  double json_mib = 0.0;
  std::string
      step_source;  // "ProfilerStep annotations", "repeating kernel sequence", "whole trace"
  std::vector<StepInfo> steps;     // every step with GPU work
  int steps_used = 0;              // the steady ones averaged below
  double step_ms = 0.0;            // recovered from the GPU timeline
  double reference_step_ms = 0.0;  // the trace's own step duration
  std::string reference;           // which annotation gave it
  double kernel_ms = 0.0;          // per step: sum of kernel times
  double busy_ms = 0.0;            // per step: GPU busy (union of kernels)
  double host_idle_ms = 0.0;       // per step: idle gaps longer than the launch-gap threshold
  double launch_gap_us = 0.0;      // the threshold
  std::array<ClassTime, kNumKernelClasses> classes{};
  double attributed_fraction = 0.0;                              // of kernel time, in known classes
  double residual_ms = 0.0;                                      // per step, class "other"
  std::vector<std::pair<std::string, double>> top_unattributed;  // name, ms per step
  bool has_backward = false, has_optimizer = false;
  std::string phase_source;
  LayerStructure forward_layers, backward_layers;
  std::vector<GemmStat> gemms;
  std::vector<CollectiveStat> collectives;
  MemoryPeak memory;
  ModelComparison model;
  std::vector<std::string> notes;
};

struct AnalyzeOptions {
  double launch_gap_us = 100.0;  // idle gaps up to this belong to the next kernel's class
  std::size_t max_structure_kernels = 20000;  // repeating-structure search window
};

// Steps, classes, phases, layers, GEMMs, collectives and memory of a trace. Throws InputError
// when the trace has no GPU kernels.
MeasuredProfile analyze_trace(const TraceData& trace, const AnalyzeOptions& options = {});

// Blocks of `period` kernels repeated `reps` times from `start` in `seq` (the longest coverage,
// the shortest period among equals); reps == 0 when nothing repeats.
struct Repeat {
  std::size_t start = 0, period = 0, reps = 0;
};
Repeat find_repeat(const std::vector<std::uint32_t>& seq, std::size_t min_period,
                   std::size_t max_period);

}  // namespace projector::profile

namespace projector::profile {

struct CompareOptions {
  int pp_rank = 0;       // the pipeline rank the trace was taken on
  std::string data_dir;  // hardware catalogue for naming the trace's device (empty: default)
};

// The job a bench node of `benchmark_gpus` GPUs runs for `target`, reduced the way Primus'
// projection does (PP flattened first, then EP capped with the experts per rank kept, then TP);
// every reduction is appended to `reductions`. Unchanged (bar the world size) when it fits.
JobSpec reduce_to_bench(const JobSpec& target, int benchmark_gpus,
                        std::vector<std::string>& reductions);

// Compares the trace with the cost models on the bench job's ops and fills `profile.model`.
// Throws InputError when the trace cannot be of this job: no transformer layer, a layer count
// the job's layers do not divide, no GEMM of the job's hidden size, or another accelerator.
void compare_with_job(MeasuredProfile& profile, const JobSpec& bench,
                      const CompareOptions& options = {});

}  // namespace projector::profile

namespace projector::profile {

// Versioned JSON (docs/json-schema.md, "profile --json"), and back: read_profile accepts what
// profile_json writes and throws InputError naming the file and key for anything else.
std::string profile_json(const MeasuredProfile& profile, int indent = 2);
MeasuredProfile read_profile(const std::string& path);
MeasuredProfile parse_profile(const std::string& json, const std::string& label);

// The human report of `projector profile`.
std::string profile_text(const MeasuredProfile& profile);
// The fitted efficiencies as an accelerator-file `calibration:` fragment with sources.
std::string fitted_yaml(const MeasuredProfile& profile);

}  // namespace projector::profile
