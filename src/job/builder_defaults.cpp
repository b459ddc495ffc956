// Job builder steps (builder_detail.h): the framework profile's parallel, runtime and host-
// dispatch defaults, each recorded.
#include <algorithm>

#include "job/builder_detail.h"
#include "projector/job/spec.h"

namespace projector::job_detail {

// FP8 attention needs a Transformer Engine recipe that carries fp8_dpa (DelayedScaling,
// Float8CurrentScaling, MXFP8BlockScaling; not Float8BlockScaling: MG26), whichever framework
// settled the recipe, and a measured 8-bit attention kernel on the part; without one the core is
// priced in BF16, an upper bound on its time, and the job says so.
void Builder::fp8_attention_check() {
  PrecisionSpec& prec = job_.runtime.precision;
  if (!prec.fp8_attention) return;
  const Fp8Recipe r = prec.fp8;
  if (r != Fp8Recipe::kDelayed && r != Fp8Recipe::kTensorwise && r != Fp8Recipe::kMxfp8) {
    prec.fp8_attention = false;
    job_.warnings.push_back(fmt::format(
        "FP8 attention needs the delayed, tensorwise or mxfp8 recipe, not {}: projected in BF16",
        to_string(r)));
    return;
  }
  const AcceleratorSpec& acc = job_.cluster.accelerator;
  const bool mx = r == Fp8Recipe::kMxfp8;
  const double fwd = mx ? acc.calibration.attention_mxfp8_fwd_fraction.value
                        : acc.calibration.attention_fp8_fwd_fraction.value;
  const double bwd = mx ? acc.calibration.attention_mxfp8_bwd_fraction.value
                        : acc.calibration.attention_fp8_bwd_fraction.value;
  if (fwd <= 0.0 || bwd <= 0.0 || acc.peak_flops(prec.attention_dtype()) <= 0.0) {
    job_.warnings.push_back(fmt::format(
        "{} has no measured {} attention kernel (data/kernels): the FP8 attention core is "
        "priced as the BF16 one, so its time is an upper bound",
        acc.name, mx ? "MXFP8" : "FP8"));
  }
  const bool windowed = std::any_of(
      job_.model.layers.begin(), job_.model.layers.end(),
      [](const LayerSpec& l) { return l.has_attention() && l.attention.sliding_window > 0; });
  if (windowed) {
    job_.warnings.push_back(
        "FP8 attention with a sliding window: cuDNN's 8-bit kernels were measured at 4-5x "
        "(forward) and 8-95x (backward) the window's work (data/kernels open gap); the windowed "
        "layers are priced by the window's work, so their attention time is a lower bound");
  }
}

// Chunked recurrent kernels without a kernel measurement on the job's part are priced as batched
// GEMMs and memory passes at the dense rates, and the job says so: the linear-attention (GDN /
// KDA) chunk kernels always (no fitted rate: data/kernels has forward + backward rows on GB200
// only, an open gap), Mamba-2's SSD scan where the part has no ssd_scan_fraction. On AMD parts the
// held-out Primus runs of such models (data/validation/primus_config_runs.yaml, FLA and mamba_ssm
// Triton kernels on MI300X) ran well below that price, so the warning gives them.
void Builder::recurrent_kernel_check() {
  const auto& layers = job_.model.layers;
  const AcceleratorSpec& acc = job_.cluster.accelerator;
  const bool chunked = std::any_of(layers.begin(), layers.end(), [](const LayerSpec& l) {
    return l.has_linear_attention() && !l.linear.short_conv();
  });
  const bool ssd =
      acc.calibration.ssd_scan_fraction.value <= 0.0 &&
      std::any_of(layers.begin(), layers.end(), [](const LayerSpec& l) { return l.has_mamba(); });
  if (!chunked && !ssd) return;
  std::string w = fmt::format(
      "{} kernels are priced as batched GEMMs and memory passes at the dense rates, with no "
      "kernel measurement on {} behind them (data/kernels)",
      chunked && ssd ? "linear-attention chunk and Mamba-2 SSD scan"
      : chunked      ? "linear-attention chunk"
                     : "Mamba-2 SSD scan",
      acc.name);
  if (acc.vendor == "AMD") {
    w += fmt::format(
        "; on {} read the throughput as an upper bound: Primus' published MI300X runs of GDN, "
        "KDA and Mamba models took longer per step than projected (docs/validation.md, runs "
        "described by their config)",
        acc.name);
  }
  job_.warnings.push_back(std::move(w));
}

void Builder::parallel_defaults() {
  ParallelSpec& p = job_.parallel;
  const FrameworkProfile& prof = d_.profile;
  p.fsdp = decide(DraftField::kFsdp, d_.fsdp ? d_.fsdp : mesh_fsdp_, prof.fsdp, FsdpKind::kNone);
  if (p.fsdp == FsdpKind::kNone || d_.distributed_optimizer) {
    p.distributed_optimizer = decide(DraftField::kDistributedOptimizer, d_.distributed_optimizer,
                                     prof.distributed_optimizer, false);
  }
  p.sequence_parallel =
      decide_when(DraftField::kSequenceParallel,
                  d_.sequence_parallel ? d_.sequence_parallel : mesh_sequence_parallel_,
                  prof.sequence_parallel, p.sequence_parallel_rule);
  if (p.sequence_parallel && p.tp == 1) {
    // Megatron turns it off at TP 1 (MG1 arguments.py:1433-1439): nothing to warn about.
    p.sequence_parallel = false;
    if (d_.sequence_parallel) {
      record(DraftField::kSequenceParallel, "false",
             "stated true, but sequence parallelism has no effect at TP 1 (Megatron disables it)");
    }
  }
  p.overlap_grad_reduce = decide(DraftField::kOverlapGradReduce, d_.overlap_grad_reduce,
                                 prof.overlap_grad_reduce, false);
  p.overlap_param_gather = decide_when(DraftField::kOverlapParamGather, d_.overlap_param_gather,
                                       prof.overlap_param_gather, p.overlap_param_gather_rule);
  p.tp_comm_overlap = decide_when(DraftField::kTpCommOverlap, d_.tp_comm_overlap,
                                  prof.tp_comm_overlap, p.tp_comm_overlap_rule);
  // Pipeline sends: a stated false holds the sender's stream; otherwise the framework's rule
  // (Megatron: beside the compute only with virtual stages), and without one, beside the compute.
  if (d_.p2p_overlap.has_value() && !*d_.p2p_overlap) {
    p.p2p_overlap_rule = WhenRule::kNever;
  } else {
    p.p2p_overlap_rule = prof.p2p_overlap.value.value_or(WhenRule::kAlways);
  }
  p.p2p_overlap = p.applies(p.p2p_overlap_rule);
  if (p.pp > 1 && !d_.p2p_overlap.has_value()) {
    record(DraftField::kP2pOverlap, show(p.p2p_overlap),
           prof.p2p_overlap.value
               ? fmt::format("{} ({})", to_string(*prof.p2p_overlap.value), prof.p2p_overlap.source)
               : fmt::format("{} has no default: sends run beside the compute", d_.profile.name),
           true);
  }
  // FSDP's reshard after forward by the rule the adapter read (torchtitan's default: without PP),
  // decided on the final PP (after --pp and the environment), as a re-layout decides it again.
  p.reshard_after_forward = p.applies(p.reshard_after_forward_rule);
  // The gradient bucket rule, recorded where an overlapped non-FSDP2 reduction uses it.
  p.ddp_bucket_min_params = prof.ddp_bucket_min_params.value.value_or(0);
  p.ddp_bucket_params_per_dp = prof.ddp_bucket_params_per_dp.value.value_or(0);
  if (p.overlap_grad_reduce && p.ddp_bucket_size_bytes == 0 && p.ddp_bucket_size_params == 0 &&
      p.fsdp != FsdpKind::kFsdp2 && p.ddp_bucket_min_params > 0) {
    job_.defaults.push_back({"ddp_bucket_size",
                             fmt::format("max({}, {} x DP) parameters", p.ddp_bucket_min_params,
                                         p.ddp_bucket_params_per_dp),
                             prof.ddp_bucket_min_params.source, d_.profile.name});
  }
  // XLA pads a KV-head axis the tensor axis does not divide (MaxText); recorded where it applies.
  p.kv_heads_padded = prof.kv_heads_padded.value.value_or(false);
  if (p.kv_heads_padded) {
    for (const LayerSpec& l : job_.model.layers) {
      const int kv = l.has_attention() && l.attention.kind == AttentionKind::kStandard
                         ? l.attention.num_query_groups
                         : 0;
      if (kv > 0 && kv % p.tp != 0) {
        job_.defaults.push_back(
            {"kv_heads_padded",
             fmt::format("{} KV heads over TP {}: {} per rank", kv, p.tp, p.kv_heads_per_rank(kv)),
             prof.kv_heads_padded.source, d_.profile.name});
        break;
      }
    }
  }
  if (has_moe(job_.model) && p.tp > 1 && !p.sequence_parallel) {
    job_.warnings.push_back(
        "MoE with TP > 1 needs sequence parallelism (Megatron-Core asserts it)");
  }
}

// The profile's host issue costs (microbenchmarks, data/frameworks), recorded as one default.
void Builder::host_dispatch_defaults() {
  const FrameworkProfile& prof = d_.profile;
  HostDispatch& h = job_.runtime.host_dispatch;
  std::vector<std::string> sources;
  const auto take = [&](const ProfileDefault<double>& d, double& out) {
    if (!d.value) return;
    out = *d.value * 1e-6;
    if (std::find(sources.begin(), sources.end(), d.source) == sources.end()) {
      sources.push_back(d.source);
    }
  };
  take(prof.host_op_us, h.op_s);
  take(prof.host_module_us, h.module_s);
  take(prof.host_launch_us, h.launch_s);
  if (!h.modelled()) {
    // An eager framework without measured host costs (torchtitan, AutoModel): the host's issue
    // time and its device-to-host reads are not modelled; flagged, not silently zero. A compiled
    // step (XLA) issues one program; a recommendation job has its own host step (recsys).
    if (!prof.name.empty() && !job_.runtime.whole_step_compiled &&
        job_.model.family != ModelFamily::kRecommendation) {
      record(DraftField::kHostDispatch, "not modelled",
             fmt::format("{} sets no host issue costs{}; the host is assumed to keep ahead of the "
                         "device (docs/host.md), its gaps only in kernel_gap_fraction",
                         prof.name,
                         prof.host_op_us.source.empty() ? "" : " [" + prof.host_op_us.source + "]"),
             true);
    }
    return;
  }
  // What the host issues per MoE op, counted in the framework's code (its profile's census).
  h.census = prof.host_census;
  if (h.census) sources.push_back("census " + h.census->source);
  record(DraftField::kHostDispatch,
         fmt::format("op {:.1f} us, module {:.1f} us, launch {:.1f} us{}", h.op_s * 1e6,
                     h.module_s * 1e6, h.launch_s * 1e6,
                     h.census ? fmt::format(", MoE census of {} ops", h.census->moe_ops.size())
                              : std::string()),
         fmt::format("{}", fmt::join(sources, "; ")), true);
}

// The device allocator (RuntimeSpec::allocator): XLA's for a whole compiled step, else PyTorch's
// caching allocator, with expandable segments as stated (PYTORCH_*_ALLOC_CONF, --alloc-conf), as
// the framework's launcher sets them, or PyTorch's default (off).
void Builder::allocator_defaults() {
  RuntimeSpec& rt = job_.runtime;
  if (rt.whole_step_compiled) {
    rt.allocator = DeviceAllocatorKind::kXla;
    return;
  }
  bool expandable = false;
  const ProfileDefault<bool>& def = d_.profile.expandable_segments;
  if (d_.expandable_segments) {
    expandable = *d_.expandable_segments;
  } else if (def.value) {
    expandable = *def.value;
    record(DraftField::kExpandableSegments, show(expandable), def.source, true);
  } else {
    record(DraftField::kExpandableSegments, show(false),
           "PyTorch's default: expandable segments stay off unless PYTORCH_CUDA_ALLOC_CONF turns "
           "them on");
  }
  rt.allocator =
      expandable ? DeviceAllocatorKind::kCachingExpandable : DeviceAllocatorKind::kCaching;
}

// FP8 weights: as stated, else on when the profile lists the job's FP8 recipe (NeMo / Megatron-
// Bridge keep delayed- and tensorwise-scaled weights in FP8, not MXFP8 or blockwise ones).
void Builder::fp8_param_default() {
  PrecisionSpec& p = job_.runtime.precision;
  if (p.fp8 == Fp8Recipe::kNone) {
    p.fp8_param = false;
    return;
  }
  if (d_.fp8_param) {
    p.fp8_param = *d_.fp8_param;
    return;
  }
  const ProfileDefault<std::vector<Fp8Recipe>>& def = d_.profile.fp8_param_gather;
  p.fp8_param =
      def.value && std::find(def.value->begin(), def.value->end(), p.fp8) != def.value->end();
  record(DraftField::kFp8ParamGather, show(p.fp8_param),
         def.value ? fmt::format("{} recipe ({})", to_string(p.fp8), def.source)
                   : fmt::format("{} has no default", d_.profile.name),
         true);
}

void Builder::runtime_defaults() {
  RuntimeSpec& rt = job_.runtime;
  ModelSpec& m = job_.model;
  const FrameworkProfile& prof = d_.profile;
  rt.flash_attention =
      decide(DraftField::kFlashAttention, d_.flash_attention, prof.flash_attention, false);
  rt.attention_kernel =
      d_.attention_kernel
          ? *d_.attention_kernel
          : (rt.flash_attention ? prof.attention_kernel.value.value_or(AttentionKernel::kFused)
                                : AttentionKernel::kFused);
  rt.framework = prof.name;
  rt.backend = prof.backend;
  if (prof.kernel_gap_fraction.value) {
    rt.kernel_gap_fraction = decide(DraftField::kKernelGapFraction, std::optional<double>{},
                                    prof.kernel_gap_fraction, 0.0);
  }
  host_dispatch_defaults();
  rt.precision.fp8 =
      d_.fp8 ? decide(DraftField::kFp8Recipe, d_.fp8_recipe, prof.fp8_recipe, Fp8Recipe::kDelayed)
             : Fp8Recipe::kNone;
  fp8_param_default();
  fp8_attention_check();
  recurrent_kernel_check();
  if (rt.defer_output_wgrad && rt.loss_grad_in_forward) {
    job_.warnings.push_back(
        "defer_embedding_wgrad_compute has no effect here: the fused loss computes the output "
        "layer's weight gradient in its forward");
  }
  if (rt.offload.any() && job_.cluster.accelerator.host_bw_bytes_per_s <= 0.0) {
    job_.warnings.push_back(fmt::format(
        "{} has no host_bandwidth in its accelerator file: the activation offload copies "
        "are priced at PCIe Gen4 x16 (32 GB/s, an estimate)",
        job_.cluster.accelerator.name));
  }
  if (rt.precision.fp4 != Fp4Recipe::kNone &&
      job_.cluster.accelerator.peak_flops(Dtype::kFp4) <= 0.0) {
    throw InputError({d_.source, 0, 0}, "fp4",
                     fmt::format("{} has no FP4 peak: FP4 ({}) GEMMs cannot run on it",
                                 job_.cluster.accelerator.name, to_string(rt.precision.fp4)));
  }
  rt.main_grads_dtype = decide(DraftField::kGradReduceDtype, d_.main_grads_dtype,
                               prof.grad_reduce_dtype, Dtype::kFp32);
  rt.loss_grad_in_place =
      decide(DraftField::kLossGradInPlace, d_.loss_grad_in_place, prof.loss_grad_in_place, true);
  allocator_defaults();
  if (has_moe(job_.model)) {
    const ProfileDefault<bool>& placement = prof.moe_probs_in_experts;
    rt.moe_probs_in_experts = placement.value.value_or(false);
    job_.defaults.push_back(
        {"moe_probs_in_experts", show(rt.moe_probs_in_experts),
         placement.value ? placement.source : d_.profile.name + " has no default",
         d_.profile.name});
  }
  RecomputeSpec& rc = rt.recompute;
  if (prof.selective_recompute.value) rt.selective_default = *prof.selective_recompute.value;
  if (rc.granularity == RecomputeGranularity::kSelective && rc.modules.empty()) {
    rc.modules = decide(DraftField::kRecomputeModules, std::optional<RecomputeModules>{},
                        prof.selective_recompute, RecomputeModules{RecomputeModule::kCoreAttn});
  }
  if (m.family != ModelFamily::kDecoderLm) return;
  m.attention_dropout =
      decide(DraftField::kAttentionDropout, d_.attention_dropout, prof.dropout, 0.0);
  m.hidden_dropout = decide(DraftField::kHiddenDropout, d_.hidden_dropout, prof.dropout, 0.0);
  m.make_vocab_size_divisible_by =
      decide(DraftField::kVocabPadding, d_.vocab_padding, prof.vocab_padding, 1);
}

// overlap_moe_expert_parallel_comm needs expert parallelism and, with a pipeline, virtual stages
// (MG2 transformer_config.py:3007-3015).

}  // namespace projector::job_detail
