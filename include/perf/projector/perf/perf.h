// Performance projection: prices the workload with the cost providers, runs the pipeline schedule
// through the event simulator (one compute stream and one stream per communicator on each
// rank), and derives iteration time, throughput, FLOP rates and MFU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projector/cost/cost_cache.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/model/job.h"
#include "projector/perf/recsys_perf.h"
#include "projector/schedule/simulator.h"
#include "projector/workload/workload.h"

namespace projector {

struct PerfOptions {
  bool record_timeline = false;  // keep the simulated timeline (for --trace)
  bool keep_op_table = true;     // keep the per-op price table (the `workload` view)
  bool with_memory = true;       // also run the memory projection
  // Dropless MoE with expert parallelism and balanced routing assumed: also project the job with
  // the busiest EP rank receiving MemoryOptions::moe_dropless_imbalance_upper times the mean
  // routed tokens (PerfReport::routing_skew), the bound the memory projection's upper uses.
  bool routing_skew_bracket = false;
};

// One priced op.
struct PricedOp {
  std::string block;  // "layer 3 (dense_layer)", "embedding", ...
  Op op;
  double time_s = 0.0;     // its own duration (collectives: on their stream)
  double exposed_s = 0.0;  // what it adds to the compute stream
  Provenance provenance = Provenance::kRoofline;
  std::string detail;  // algorithm / kernel notes
  int repeat = 1;      // identical consecutive layers the op stands for (times are per layer)
};

struct ChunkTiming {
  int pp_rank = 0;
  int chunk = 0;
  int stage = 0;  // virtual stage index (pp * chunk + rank in the interleaved layout)
  double f_s = 0.0, b_s = 0.0, w_s = 0.0;  // compute + exposed in-layer communication
  double f_comm_s = 0.0, b_comm_s = 0.0;   // exposed EP all-to-all a partner can hide (DualPipe)
  double w_serial_s = 0.0;  // expert weight gradients a partner cannot use as cover (no deferral)
  // The output layer's weight gradients moved out of this chunk's backwards into the rank's
  // drain after its last backward, per iteration (RuntimeSpec::defer_output_wgrad); w_s holds
  // the per-microbatch average of what stays.
  double deferred_wgrad_s = 0.0;
  double ep_total_s = 0.0;          // EP dispatch / combine of one microbatch, F + B + W, priced
  double ep_f_s = 0.0;              // the forward's part of it
  double ep_shared_hidden_s = 0.0;  // the part of it the shared experts hide
  // Device time per phase (F, B, W) spent waiting for the host to issue the next op (eager
  // frameworks: Python, dispatcher and launch costs after a device-to-host sync; perf/host.h).
  // Included in f_s / b_s / w_s.
  double host_idle_s[3] = {0.0, 0.0, 0.0};
  std::vector<PricedOp> ops;
};

// Exposed (not hidden by compute) communication time per iteration on the critical rank.
struct ExposedComm {
  double tp_s = 0.0, cp_s = 0.0, ep_s = 0.0, pp_s = 0.0, dp_s = 0.0;
  double offload_s = 0.0;  // device <-> host copies (activation offload) not hidden by compute
};

// Expert-parallel dispatch / combine of one pipeline rank per iteration: all of it, what hid it
// and what stayed on the critical path.
struct EpCommSplit {
  int pp_rank = 0;
  double total_s = 0.0;                     // every EP collective, priced
  double hidden_shared_experts_s = 0.0;     // behind the shared experts (moe_shared_expert_overlap)
  double hidden_paired_microbatch_s = 0.0;  // behind another microbatch (combined 1F1B, DualPipeV)
  double exposed_s = 0.0;                   // total minus both
};

// The same job under skewed routing: what a learned router on real text (early in training, or
// without load balancing) can cost a dropless expert-parallel job that the balanced projection
// does not price. Empty (applies = false) for other jobs or when a load CV was given.
struct RoutingSkew {
  bool applies = false;
  double load_factor = 1.0;     // the busiest EP rank's routed tokens over the mean
  double expert_load_cv = 0.0;  // the per-expert CV that gives it (moe_rank_load_factor)
  double iteration_s = 0.0;
  double tokens_per_s_per_gpu = 0.0;
};

// The calibrated 80 % range of what a run of this job would measure, from the residuals of the
// published runs of its regime (interval/interval.h, data/validation/residuals.json): empirical
// 10th and 90th percentiles of the leave-one-family-out errors, not a normal assumption.
struct CalibratedRange {
  std::string regime;  // the job's regime key
  std::string level;   // the pooled regime the residuals came from (the finest with enough runs)
  int runs = 0;        // residuals behind the range
  double tokens_per_s_per_gpu_lo = 0.0, tokens_per_s_per_gpu_hi = 0.0;
  double iteration_s_lo = 0.0, iteration_s_hi = 0.0;
  double mfu_lo = 0.0, mfu_hi = 0.0;
  // Peak memory (present when memory was projected and memory residuals exist).
  std::string memory_level;
  int memory_runs = 0;
  double peak_memory_gib_lo = 0.0, peak_memory_gib_hi = 0.0;
};

// What a training run of `train_tokens` would take at the projected throughput
// (interval/training_plan.h): wall time, GPU-hours, cost and board energy, each with the range
// the calibrated throughput range gives (lo = the fast end; equal to the point without a range).
struct PlanFigure {
  double value = 0.0;
  double lo = 0.0;
  double hi = 0.0;
};
struct TrainingPlan {
  double train_tokens = 0.0;  // samples for a recommendation model
  int gpus = 0;               // GPUs (chips: a TPU7x chip is two devices) of the job
  PlanFigure days;
  PlanFigure gpu_hours;
  double gpu_hour_cost_usd = 0.0;  // 0: no cost figure
  PlanFigure cost_usd;
  double board_power_w = 0.0;  // per device; 0: unpublished, no energy figure
  std::string power_source;    // the catalogue's source for it
  double idle_power_w = 0.0;   // per device; 0: unpublished (board power throughout)
  std::string idle_power_source;
  // The share of the run the devices compute (PerfReport::busy_fraction; 1 when not simulated):
  // energy = devices x time x (idle + (board - idle) x busy).
  double busy_fraction = 1.0;
  PlanFigure energy_mwh;
  bool has_range = false;  // lo / hi come from the calibrated range
};

struct PerfReport {
  static constexpr int kSchemaVersion = 4;
  // Inputs, resolved.
  int world_size = 0;
  int num_microbatches = 0;
  ScheduleKind schedule = ScheduleKind::k1F1B;  // resolved
  std::string schedule_reason;
  // Results.
  double iteration_s = 0.0;
  double pipeline_s = 0.0;  // simulated pipeline makespan incl. overlapped gradient sync
  double optimizer_s = 0.0;
  double param_gather_exposed_s = 0.0;
  double tokens_per_s = 0.0;
  double tokens_per_s_per_gpu = 0.0;
  ModelFlops flops;  // per iteration (model and hardware)
  double model_tflops_per_gpu = 0.0;
  double hardware_tflops_per_gpu = 0.0;
  // The framework's own TFLOP/s count (RuntimeSpec::logged_flops; 0 when none), so a projection
  // reads like the framework's logs.
  double logged_tflops_per_gpu = 0.0;
  double mfu = 0.0;  // model FLOP/s per GPU over the dense peak of mfu_dtype
  Dtype mfu_dtype = Dtype::kBf16;
  // The same throughput in the PaLM convention torchtitan logs (palm_flops_per_token).
  double palm_tflops_per_gpu = 0.0;
  double palm_mfu = 0.0;
  std::optional<CalibratedRange> range;  // filled by the caller (interval/interval.h)
  // No range although residuals exist: the job's regime key and why (interval.h range_refusal).
  std::string unranged_regime, range_refusal;
  std::optional<TrainingPlan> plan;  // filled by the caller (interval/training_plan.h)
  double bubble_fraction = 0.0;      // idle / makespan on the busiest rank
  // Mean over pipeline ranks of the time the compute stream runs kernels (its chunks, exposed
  // in-layer communication included, and the optimizer step) over the iteration: the share of
  // the run a device draws compute power (TrainingPlan::energy_mwh). 0: not simulated.
  double busy_fraction = 0.0;
  double bubble_over_ideal = 0.0;  // (makespan - ideal) / ideal
  ExposedComm exposed;
  std::vector<EpCommSplit> ep_comm;  // one per pipeline rank (empty without EP collectives)
  std::string ep_pair_mechanism;     // what pairs microbatches ("" when nothing does)
  double p2p_s = 0.0;                // one activation transfer between neighbouring stages
  double interference = 0.0;
  std::vector<ChunkTiming> chunks;  // one per (pp rank, chunk), rank-major
  std::vector<double> optimizer_s_per_rank;
  schedule::SimulationResult simulation;
  schedule::ScheduleTable table;
  Workload workload;
  MemoryReport memory;
  bool has_memory = false;
  // Recommendation family: iteration_s is the train pipeline's step, tokens are samples.
  RecsysStep recsys;
  bool has_recsys = false;
  RoutingSkew routing_skew;  // PerfOptions::routing_skew_bracket
  std::vector<std::string> notes;
};

// `cache` must have been built for job.cluster's accelerator and network; reuse it across calls
// (sweeps) to skip re-pricing shapes seen before.
PerfReport project_performance(const JobSpec& job, CostCache& cache,
                               const PerfOptions& options = {});
// Convenience: builds a private cache.
PerfReport project_performance(const JobSpec& job, const PerfOptions& options = {});

}  // namespace projector
