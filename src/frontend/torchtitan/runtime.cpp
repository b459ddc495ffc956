// torchtitan runtime settings (docs/torchtitan.md cites each rule): activation checkpointing
// (distributed/activation_checkpoint.py: full, selective every N-th block or per-op, memory
// budget), precision (config/job_config.py Training dtypes; FSDP2 MixedPrecisionPolicy), the
// quantization converters (components/quantization/float8.py, mx.py), compile, async TP, the
// attention kernel (SDPA / FlexAttention, Primus-Turbo attention) and the optimizer.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "frontend/torchtitan/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void read_checkpointing(TitanReader& r, bool compile_model, int layers, JobDraft& d) {
  RecomputeSpec& rc = d.runtime.recompute;
  const std::string mode_key = "activation_checkpoint.mode";
  const std::string mode = r.text(mode_key);
  rc = RecomputeSpec{};
  if (mode == "none") return;
  if (mode == "full") {
    rc.granularity = RecomputeGranularity::kFull;
    rc.method = RecomputeMethod::kUniform;
    rc.num_layers = 1;
    return;
  }
  if (mode == "memory_budget") {
    if (!compile_model) r.fail(mode_key, "memory_budget needs compile.enable with 'model'");
    const double budget = r.number("activation_checkpoint.memory_budget");
    if (budget < 0.0 || budget > 1.0) {
      r.fail("activation_checkpoint.memory_budget", "must be between 0 and 1");
    }
    rc.granularity = RecomputeGranularity::kOpPolicy;
    rc.memory_budget = budget;
    d.warnings.push_back(fmt::format(
        "activation_checkpoint.mode memory_budget: the compiler's partitioner chooses what to "
        "save; projected as block inputs + {} x the rest of each block's activations, between "
        "full AC (budget 0) and no AC (budget 1), which the memory report brackets",
        budget));
    return;
  }
  if (mode != "selective") {
    r.fail(mode_key,
           fmt::format("expected none, full, selective or memory_budget, got '{}'", mode));
  }
  const std::string opt_key = "activation_checkpoint.selective_ac_option";
  const std::string option = r.text(opt_key);
  if (option == "op") {
    rc.granularity = RecomputeGranularity::kOpPolicy;
    const std::vector<std::string> forced =
        r.strings("activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns");
    for (const std::string& f : forced) {
      if (f != "moe.router.gate") {
        d.warnings.push_back(fmt::format(
            "per_op_sac_force_recompute_mm_shapes_by_fqns: '{}' is not modelled (only the router "
            "gate's forced recompute is)",
            f));
      }
    }
    return;
  }
  if (option.empty() || !std::all_of(option.begin(), option.end(), ::isdigit)) {
    r.fail(opt_key, fmt::format("expected 'op' or a positive integer, got '{}'", option));
  }
  // Every N-th block (a running count from 1) is fully checkpointed; 0 means every block.
  // Past kMaxLayers no block is checkpointed, whatever the number: read it saturated.
  const std::string_view digits =
      std::string_view(option).substr(std::min(option.find_first_not_of('0'), option.size()));
  int every = 0;
  if (digits.size() > 6) {
    every = 1000000;
  } else {
    std::from_chars(digits.data(), digits.data() + digits.size(), every);
  }
  rc.granularity = RecomputeGranularity::kNone;
  for (int i = 0; i < layers; ++i) {
    if (every <= 1 || (i + 1) % every == 0) rc.layer_ids.push_back(i);
  }
}

// FSDP2 mixed precision: training.dtype is what the sharded parameters, gradients and optimizer
// state are kept in; mixed_precision_param the compute (gathered) copy; _reduce the gradient
// reduction.
void read_precision(TitanReader& r, JobDraft& d) {
  PrecisionSpec& p = d.runtime.precision;
  const std::string dtype = r.text("training.dtype");
  const std::string param = r.text("training.mixed_precision_param");
  const std::string reduce = r.text("training.mixed_precision_reduce");
  auto parse = [&](const std::string& key, const std::string& v) {
    if (v == "bfloat16") return Dtype::kBf16;
    if (v == "float32") return Dtype::kFp32;
    r.fail(key, fmt::format("expected bfloat16 or float32, got '{}'", v));
  };
  const Dtype stored = parse("training.dtype", dtype);
  p.params_dtype = parse("training.mixed_precision_param", param);
  d.main_grads_dtype = parse("training.mixed_precision_reduce", reduce);
  if (stored == Dtype::kBf16) {
    // Pure bf16 training: no fp32 copy anywhere (job_config.py:275-280).
    p.params_dtype = Dtype::kBf16;
    d.runtime.master_weights = false;
    d.main_grads_dtype = Dtype::kBf16;
    d.runtime.exp_avg_dtype = Dtype::kBf16;
    d.runtime.exp_avg_sq_dtype = Dtype::kBf16;
  }
}

struct Quantization {
  bool linear_float8 = false, linear_mx = false, grouped_float8 = false, grouped_mx = false;
};

void read_float8(TitanReader& r, JobDraft& d, std::vector<std::string>& filters) {
  const std::string recipe = r.text("quantize.linear.float8.recipe_name");
  d.fp8 = true;
  if (recipe.empty() || recipe == "tensorwise") {
    d.fp8_recipe = Fp8Recipe::kTensorwise;
  } else if (recipe == "rowwise") {
    d.fp8_recipe = Fp8Recipe::kRowwise;
  } else if (recipe == "rowwise_with_gw_hp") {
    d.fp8_recipe = Fp8Recipe::kRowwiseHpWgrad;
  } else {
    r.fail("quantize.linear.float8.recipe_name",
           fmt::format("expected tensorwise, rowwise or rowwise_with_gw_hp, got '{}'", recipe));
  }
  if (recipe.empty())
    r.note("quantize.linear.float8.recipe_name", "tensorwise",
           "no recipe: Float8LinearConfig's tensorwise scaling (float8.py:84-99)");
  // float8 all-gather: tensorwise only, and only with FSDP sharding (float8.py:65-92).
  const bool all_gather = r.boolean("quantize.linear.float8.enable_fsdp_float8_all_gather");
  if (all_gather && !recipe.empty()) {
    r.fail("quantize.linear.float8.enable_fsdp_float8_all_gather",
           "not supported together with recipe_name (float8.py:65-69)");
  }
  d.fp8_param = all_gather;
  // The shard stays in its dtype; only the gathered weights are fp8 (PrecisionSpec).
  d.runtime.precision.fp8_gather_only = all_gather;
  filters = r.strings("quantize.linear.float8.filter_fqns");
}

void read_converters(TitanReader& r, const TitanModelFacts& facts, JobDraft& d) {
  const std::vector<std::string> conv = r.strings("model.converters");
  Quantization q;
  for (const std::string& c : conv) {
    if (c == "quantize.linear.float8")
      q.linear_float8 = true;
    else if (c == "quantize.linear.mx")
      q.linear_mx = true;
    else if (c == "quantize.grouped_mm.float8")
      q.grouped_float8 = true;
    else if (c == "quantize.grouped_mm.mx")
      q.grouped_mx = true;
    else if (c != "primus_turbo") {
      d.warnings.push_back(fmt::format("model.converters: '{}' is not modelled (ignored)", c));
    }
  }
  if (q.linear_float8 && q.linear_mx) {
    r.fail("model.converters", "float8 and mx linear converters cannot both apply");
  }
  PrecisionSpec& p = d.runtime.precision;
  std::vector<std::string> filters;
  if (q.linear_float8) read_float8(r, d, filters);
  if (q.linear_mx) {
    d.fp8 = true;
    d.fp8_recipe = Fp8Recipe::kMxfp8;
    filters = r.strings("quantize.linear.mx.filter_fqns");
  }
  p.fp8_dense = q.linear_float8 || q.linear_mx;
  p.fp8_output = p.fp8_dense && !contains(filters, "output");
  for (const std::string& f : filters) {
    if (f != "output" && f != "router.gate" && f != "auto_filter_small_kn") {
      d.warnings.push_back(fmt::format(
          "filter_fqns: keeping '{}' in high precision is not modelled (projected in low "
          "precision with the other linears)",
          f));
    }
  }
  // Routed experts: quantized only by a grouped-GEMM converter naming them (float8.py:177-233,
  // mx.py:103-170), or by Primus-Turbo's grouped GEMM with use_moe_fp8.
  const bool turbo =
      r.stated("primus_turbo") != nullptr && r.boolean("primus_turbo.enable_primus_turbo");
  const bool turbo_moe_fp8 = turbo && contains(conv, "primus_turbo") &&
                             r.stated("primus_turbo.use_turbo_grouped_mm") != nullptr &&
                             r.boolean("primus_turbo.use_turbo_grouped_mm") &&
                             r.boolean("primus_turbo.use_moe_fp8");
  const bool grouped_float8 =
      q.grouped_float8 && contains(r.strings("quantize.grouped_mm.float8.fqns"), "experts");
  const bool grouped_mx =
      q.grouped_mx && contains(r.strings("quantize.grouped_mm.mx.fqns"), "experts");
  p.fp8_experts = facts.moe && (grouped_float8 || grouped_mx || turbo_moe_fp8);
  if (p.fp8_experts && !d.fp8) {
    d.fp8 = true;
    d.fp8_recipe = grouped_mx ? Fp8Recipe::kMxfp8 : Fp8Recipe::kRowwise;
  }
  if ((q.grouped_float8 || q.grouped_mx) && !facts.moe) {
    d.warnings.push_back("grouped-GEMM quantization has no effect on a dense model");
  }
}

// Attention: SDPA (PyTorch's flash backend, FlashAttention-2 class), FlexAttention (compiled
// Triton, priced in the same class) or varlen; Primus-Turbo's attention is the platform's fused
// kernel.
void read_attention(TitanReader& r, const TitanModelFacts& facts,
                    const std::vector<std::string>& conv, JobDraft& d) {
  d.flash_attention = true;
  bool turbo_attention = false;
  if (r.stated("primus_turbo") != nullptr && r.boolean("primus_turbo.enable_primus_turbo") &&
      contains(conv, "primus_turbo")) {
    const ConfigValue* classic = r.stated("primus_turbo.use_classic_attention");
    turbo_attention =
        r.stated("primus_turbo.use_turbo_attention") != nullptr &&
        r.boolean("primus_turbo.use_turbo_attention") &&
        !(classic != nullptr && classic->kind == ConfigValue::Kind::kBool && classic->b);
  }
  d.attention_kernel = turbo_attention ? AttentionKernel::kFused : AttentionKernel::kFa2;
  if (facts.attn_mask_type == "block_causal") {
    d.warnings.push_back(
        "block_causal attention masks documents apart; projected as causal over the whole "
        "sequence (an upper bound on attention work)");
  }
}

void read_optimizer(TitanReader& r, JobDraft& d) {
  const std::string name = to_lower(r.text("optimizer.name"));
  d.runtime.optimizer = OptimizerKind::kAdam;
  if (name != "adamw" && name != "adam") {
    d.warnings.push_back(
        fmt::format("optimizer.name '{}' is not modelled; projected with AdamW's state",
                    r.text("optimizer.name")));
  }
}

// parallelism.pipeline_parallel_expert_parallel_overlap (True; v0.2.2
// config/job_config.py:420-426): with the DualPipeV schedule, PP > 1 and EP > 1
// (distributed/dual_pipe_v.py:32-51 get_dual_pipe_v_flag), torchtitan registers overlap_callback
// for DualPipeV's OVERLAP_F_B steps (distributed/pipeline_parallel.py:216-219;
// dual_pipe_v.py:190-): the forward of one microbatch and the backward of another run layer by
// layer on two threads, each one's EP dispatch / combine under the other's compute, i.e. the
// paired-microbatch overlap (MoeOverlap::kOtherMicrobatch). Activation checkpointing with it raises
// NotImplementedError (dual_pipe_v.py:45-49). Without it (flag off, no EP) DualPipeV's OVERLAP_F_B
// sub-actions run in turn. torchtitan main removed the flag and the callback (commit fe80b63c,
// #2774); this adapter follows v0.2.2.
void read_pp_ep_overlap(TitanReader& r, const TitanModelFacts& facts, JobDraft& d) {
  const std::string key = "parallelism.pipeline_parallel_expert_parallel_overlap";
  const bool dualpipev = d.pp.value_or(1) > 1 && d.schedule == ScheduleKind::kDualPipeV;
  if (!dualpipev && r.stated(key) == nullptr) return;  // its default matters only to DualPipeV
  const bool on = r.boolean(key);
  const bool ep = facts.moe && d.ep.value_or(1) > 1;
  if (on && dualpipev && ep) {
    if (r.text("activation_checkpoint.mode") != "none") {
      r.fail(key,
             "DualPipeV with expert parallelism and this overlap cannot run with activation "
             "checkpointing (torchtitan raises NotImplementedError); set activation_checkpoint."
             "mode = none or turn the overlap off");
    }
    d.runtime.moe_overlap.add(MoeOverlap::kOtherMicrobatch);
    r.note(key, "on", "DualPipeV pairs hide each other's EP all-to-all (dual_pipe_v.py)");
    return;
  }
  if (dualpipev) {
    d.runtime.schedule_overlapped_pairs = false;
    r.note(key, on ? "no effect" : "off",
           "DualPipeV's forward / backward pairs run one after the other (torch pipelining "
           "OVERLAP_F_B without torchtitan's callback)");
  }
  if (on && r.stated(key) != nullptr) {
    d.warnings.push_back(fmt::format(
        "{}:{}: {} has no effect here: it needs the DualPipeV schedule, PP > 1 and EP > "
        "1 (torchtitan dual_pipe_v.py get_dual_pipe_v_flag)",
        r.where(key).file, r.where(key).line, key));
  }
}

}  // namespace

void read_torchtitan_runtime(TitanReader& r, const TitanModelFacts& facts, JobDraft& d) {
  const bool compile = r.boolean("compile.enable");
  const std::vector<std::string> parts = r.strings("compile.components");
  const bool compile_model = compile && contains(parts, "model");
  read_checkpointing(r, compile_model, d.model.num_layers(), d);
  read_precision(r, d);
  read_converters(r, facts, d);
  const std::vector<std::string> conv = r.strings("model.converters");
  read_attention(r, facts, conv, d);
  read_optimizer(r, d);
  // Async TP needs the compiled model (distributed/tensor_parallel.py:16-23); without TP it is
  // never applied.
  const bool async_tp = r.boolean("parallelism.enable_async_tensor_parallel");
  if (async_tp && !compile_model && d.tp.value_or(1) > 1) {
    r.fail("parallelism.enable_async_tensor_parallel",
           "async TP requires compile.enable with 'model' in compile.components");
  }
  d.tp_comm_overlap = async_tp && d.tp.value_or(1) > 1;
  // Without a compiled model the blocks run PyTorch's eager decompositions.
  d.runtime.fused_elementwise = compile_model;
  // A compiled loss fuses the fp32 up-cast, log-softmax and gradient of the cross entropy.
  d.runtime.cross_entropy_fusion = compile && contains(parts, "loss");
  if (d.runtime.cross_entropy_fusion) d.loss_grad_in_place = true;
  if (r.boolean("training.enable_cpu_offload")) {
    d.warnings.push_back(
        "training.enable_cpu_offload: FSDP CPU offload is not modelled (memory projected on the "
        "GPU, host transfers not priced)");
  }
  if (r.text("parallelism.expert_parallel_comm_backend") == "deepep" && facts.moe) {
    d.runtime.deepep = true;
    d.runtime.moe_dedup_dispatch = true;
    d.runtime.moe_dispatch_kernel = MoeDispatchKernel::kDeepEp;
    // torchtitan keeps DeepEP's own SM budget (the profile's deepep_num_sms).
    const ProfileDefault<int>& sms = d.profile.deepep_num_sms;
    d.runtime.moe_comm_compute_units = sms.value.value_or(0);
    r.note("parallelism.expert_parallel_comm_backend",
           fmt::format("deepep on {} SMs", d.runtime.moe_comm_compute_units),
           sms.value ? sms.source : "the profile names no budget: no SMs charged");
  }
  read_pp_ep_overlap(r, facts, d);
  // debug.moe_force_load_balance (TT1 job_config.py:995, default false; Primus' DeepSeek-V3
  // examples set it): update_from_config hands it to the router as _debug_force_load_balance,
  // which replaces the top-k by a round-robin (models/moe/moe.py:336-341): balanced routing, no
  // group limit.
  if (facts.moe && r.boolean("debug.moe_force_load_balance")) {
    d.runtime.moe_routing = MoeRouting::kForced;
    for (LayerSpec& l : d.model.layers) l.moe.router_num_groups = l.moe.router_group_topk = 0;
  }
}

}  // namespace projector::frontend_detail
