// The neutral job draft: what a back-end adapter (Megatron, Primus, torchtitan, ...) or the
// validation mapper read from its input, before anything is derived. Whatever the input may leave
// unsaid is optional here; the job builder (job/builder.h) fills it from the framework profile or
// its own rules and records every value it chose.
//
// Every field carries, in `origins`, the adapter's name for it and where it was stated, so a rule
// the job breaks is reported against the adapter's own key, file and line.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projector/job/profile.h"
#include "projector/job/recsys_plan.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/util/error.h"

namespace projector {

enum class DraftField : std::uint8_t {
  kModel,
  kTp,
  kPp,
  kVpp,
  kCp,
  kEp,
  kEtp,
  kLayerSplit,
  kSequenceParallel,
  kDistributedOptimizer,
  kOverlapGradReduce,
  kOverlapParamGather,
  kTpCommOverlap,
  kFsdp,
  kMicroBatchSize,
  kGlobalBatchSize,
  kSeqLength,
  kFlashAttention,
  kFp8Recipe,
  kGradReduceDtype,
  kAttentionDropout,
  kHiddenDropout,
  kVocabPadding,
  kRecompute,
  kRecomputeModules,
  kLossGradInPlace,
  kSchedule,
  kHardware,
  kNodes,
  kGpusPerNode,
  kDp,
  kMesh,
  kKernelGapFraction,
  kMoeOverlap,          // Megatron overlap_moe_expert_parallel_comm (combined 1F1B)
  kHostDispatch,        // the profile's host issue costs (RuntimeSpec::host_dispatch)
  kExpandableSegments,  // PyTorch allocator's expandable_segments (RuntimeSpec::allocator)
  kFp8ParamGather,      // FP8 weights (PrecisionSpec::fp8_param)
  kP2pOverlap,          // pipeline sends beside the compute (ParallelSpec::p2p_overlap)
  kDeferOutputWgrad,    // Megatron defer_embedding_wgrad_compute (RuntimeSpec::defer_output_wgrad)
  kCount
};
inline constexpr int kNumDraftFields = static_cast<int>(DraftField::kCount);
// The neutral name ("tp", "micro_batch_size", ...), used when an adapter names no key.
std::string_view to_string(DraftField f);

// The adapter's key for a field and, when the input stated it, where.
struct FieldOrigin {
  std::string key;
  SourceLocation where;
};

// One virtual stage of a stated layout (Megatron's pipeline_model_parallel_layout).
struct StatedStage {
  int decoder_layers = 0;
  bool embedding = false;
  bool loss = false;
  int mtp_layers = 0;
};

// How the decoder layers are split over the PP x VPP virtual stages.
struct LayerSplit {
  enum class Kind : std::uint8_t {
    kBalanced,   // Megatron's default: the layers must divide (or allow_uneven)
    kFirstLast,  // stated layer counts of the first and / or last pipeline rank (all of its
                 // virtual stages together), the middle ranks balanced
    kStated,     // every stage stated (`stages`); VPP follows from their count when unstated
    // torchtitan: the embedding and the output head count as `first_weight` / `last_weight`
    // decoder layers; layers plus weights are spread evenly over the PP x VPP stages, the first
    // (total mod stages) taking one more, and the first / last stage give up their weight.
    kWeighted,
  };
  Kind kind = Kind::kBalanced;
  // kBalanced: the first L mod (PP x VPP) stages take one more layer instead of failing (the
  // validation mapper: a published run ran, so its framework split the layers somehow).
  bool allow_uneven = false;
  std::optional<int> first_stage_layers, last_stage_layers;  // kFirstLast: per pipeline RANK
  int first_weight = 1, last_weight = 1;                     // kWeighted
  std::vector<StatedStage> stages;                           // kStated
  // kBalanced: the embedding / the loss count as one decoder layer each in the split, so the
  // first (last) virtual stage builds one layer fewer (Megatron's
  // account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split).
  bool embedding_in_split = false;
  bool loss_in_split = false;
  // The framework's keys that state an uneven split (Megatron: decoder_first_pipeline_num_layers,
  // pipeline_model_parallel_layout), named when the layers do not divide; empty: generic words.
  std::string first_stage_key, layout_key;
};

struct JobDraft {
  std::string source;        // config path or "<validation:id>"
  FrameworkProfile profile;  // the framework whose defaults apply
  ModelSpec model;

  // Parallel sizes. Unset: 1 (TP, PP, CP, EP), the profile's choice (ETP), or derived (VPP: from
  // layers_per_virtual_stage, a stated layout, or the schedule).
  std::optional<int> tp, pp, vpp, cp, ep, etp;
  std::optional<int> layers_per_virtual_stage;
  // A stated data-parallel size (torchtitan's dp_replicate x dp_shard): the world is then
  // TP x PP x CP x DP, unstated nodes follow from it, and any other world breaks a rule.
  std::optional<int> dp;
  LayerSplit layer_split;

  // Behaviour the framework profile decides when the input does not.
  std::optional<bool> sequence_parallel, distributed_optimizer;
  std::optional<bool> overlap_grad_reduce, overlap_param_gather, tp_comm_overlap;
  std::optional<bool> p2p_overlap;  // stated false: blocking sends; else the profile's rule
  std::optional<FsdpKind> fsdp;
  std::optional<bool> flash_attention;
  std::optional<AttentionKernel> attention_kernel;
  std::optional<Fp8Recipe> fp8_recipe;  // read only when `fp8` is set
  bool fp8 = false;
  // Weights kept in FP8 (Megatron fp8_param_gather, torchtitan's float8 all-gather); unset: the
  // profile's recipes (FrameworkProfile::fp8_param_gather).
  std::optional<bool> fp8_param;
  std::optional<Dtype> main_grads_dtype;
  std::optional<double> attention_dropout, hidden_dropout;
  std::optional<int> vocab_padding;  // make_vocab_size_divisible_by
  std::optional<bool> loss_grad_in_place;
  std::optional<bool> expandable_segments;  // PYTORCH_*_ALLOC_CONF / --alloc-conf

  // Batches: unset MBS / sequence from the profile; unset GBS is the replica batch x DP when
  // stated (torchtitan's local_batch_size, MaxText's per-device batch), else MBS x DP (one
  // microbatch, the profile's microbatch rule).
  std::optional<int> micro_batch_size, global_batch_size, seq_length;
  std::optional<int> replica_batch_size;
  // Samples per data-parallel replica in one flush of the pipeline schedule (torchtitan's
  // local_batch_size): the iteration runs GBS / (flush batch x DP) flushes back to back
  // (RuntimeSpec::accumulation_rounds). Unset: one flush.
  std::optional<int> flush_batch_size;
  // With a flush batch and PP > 1, the microbatch size (torchtitan's
  // pipeline_parallel_microbatch_size, default 1); without PP the flush batch is one microbatch.
  // A stated micro_batch_size wins.
  std::optional<int> pipeline_micro_batch_size;
  // Instead, a count of pipeline microbatches the flush batch splits into (torchtitan before
  // #1073: pipeline_parallel_microbatches); 0: the total number of virtual stages (PP x VPP) of
  // the final layout, so that a PP set later (--pp, PRIMUS_PP) gets the count it would.
  std::optional<int> pipeline_microbatch_count;

  // kAuto: the schedule module's selection rule; prefer_zero_bubble asks for the zero-bubble
  // schedules when they are legal (Primus enable_zero_bubble + patch_zero_bubble).
  ScheduleKind schedule = ScheduleKind::kAuto;
  bool prefer_zero_bubble = false;

  // Everything else is taken as is: parallel (cp_comm_type, ddp bucket, allow_tp_beyond_node),
  // runtime (precision, optimizer, recompute with possibly empty selective modules, MoE dispatch,
  // ...). Their fields listed above are overwritten.
  ParallelSpec parallel;
  RuntimeSpec runtime;
  RecsysDraft recsys;  // recommendation family: what the config states (job/recsys_plan.h)

  // A named device mesh (MaxText ici_* / dcn_* axes, job/mesh.h). An ici or dcn size may be -1:
  // the one axis of its group that takes the devices (slices) the others leave. When set, the
  // builder derives TP, PP, CP, EP and DP from it (the draft's tp ... ep must then be unset),
  // places it on the slice's torus, shards weights over its FSDP axes (replicated over its data
  // axes) and sequence-shards the residual stream over its tensor axes.
  std::vector<MeshAxis> mesh;
  // A framework-specific placement of the mesh on the torus (MaxText custom_mesh, job/mesh.h
  // place_mesh); empty: JAX's mesh_utils placement.
  std::string mesh_placement;
  // The routed experts' weights sharded on their expert dimension over the mesh's FSDP axes
  // instead of their embed dimension (MaxText shard_exp_on_fsdp): the key as stated (empty: off).
  // The builder warns when the FSDP shards do not divide the experts (GSPMD pads the dimension).
  std::string experts_on_fsdp_key;
  SourceLocation experts_on_fsdp_where;
  // Sequences per device per accumulation step, counting every device (tensor, context and stage
  // ranks too; MaxText per_device_batch_size, may be fractional): the global batch is
  // per_device_batch x devices x gradient_accumulation.
  std::optional<double> per_device_batch;
  int gradient_accumulation = 1;
  int pipeline_microbatches = 0;  // per accumulation step with PP; 0: one per stage

  // Where the job runs when the configuration itself says so (MaxText compile_topology and
  // compile_topology_num_slices, hardware: tpu); command-line and environment values win.
  std::string hardware;
  std::string hardware_reason;
  std::optional<std::int64_t> devices;
  std::optional<int> slices;
  std::vector<int> slice_shape;

  std::vector<AppliedDefault> defaults;
  std::vector<std::string> warnings;
  std::array<FieldOrigin, kNumDraftFields> origins;
  // Where the input stated a model field, looked up by the field's Megatron-LM argument name
  // (ModelSpec's naming: hidden_size, num_experts, moe_ffn_hidden_size, ...): the adapter's key
  // and location, nullopt when not stated. Unset: every model value is reported against the
  // input file. The job builder's range checks (model/bounds.h) use it to name the line.
  std::function<std::optional<FieldOrigin>(std::string_view model_key)> model_origin;

  // Names `f` in the adapter's vocabulary and, optionally, where the input stated it.
  void set_origin(DraftField f, std::string key, SourceLocation where = {}) {
    origins[static_cast<std::size_t>(f)] = {std::move(key), std::move(where)};
  }
  const FieldOrigin& origin(DraftField f) const { return origins[static_cast<std::size_t>(f)]; }
  // The adapter's key for `f`, else the neutral name.
  std::string key(DraftField f) const;
};

// Where the job runs.
struct ClusterRequest {
  std::string data_dir;  // catalogue; empty: default_data_dir()
  // Accelerator name, alias or file; empty: default_hardware (recorded with its reason).
  std::string hardware;
  std::string default_hardware = "mi300x";
  std::string default_hardware_reason = "no hardware given";
  std::string network;           // network file or name; empty: the accelerator's default network
  SourceLocation network_where;  // where `network` was given (a flag, a file), for errors
  // Already loaded hardware (the sweep, tests): used instead of the catalogue when set.
  std::optional<AcceleratorSpec> accelerator;
  std::optional<NetworkSpec> loaded_network;
  // Stated GPUs per node (else the accelerator's default) and nodes (else the minimum the
  // parallel groups need). With nodes_at_least_minimum, fewer nodes than that minimum are raised
  // to it with a warning (Primus' NNODES); otherwise they break a rule.
  std::optional<std::int64_t> gpus_per_node;
  std::optional<std::int64_t> nodes;
  bool nodes_at_least_minimum = false;
  // gpus_per_node counts chips (a published run's hardware block): with devices_per_chip > 1
  // (TPU7x) the builder multiplies it by that many devices.
  bool per_chip_counts = false;
  // TPU: the torus shape of one slice in chips and the slices (DCN); unset: the draft's, else the
  // job's mesh, else one slice of the usual shape (job/mesh.h default_slice_shape).
  std::vector<int> slice_shape;
  std::optional<int> slices;
};

}  // namespace projector
