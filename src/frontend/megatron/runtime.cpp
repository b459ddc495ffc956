// Megatron arguments -> the draft's runtime: batches, precision, recompute, attention, MoE token
// dispatch, pipeline schedule, optimizer.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "frontend/megatron/adapter.h"
#include "projector/frontend/primus_turbo.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

void name_field(const ArgReader& r, JobDraft& d, DraftField f, const std::string& key) {
  d.set_origin(f, key, r.has(key) ? r.where(key) : SourceLocation{});
}

Dtype dtype_arg(ArgReader& r, const std::string& key, Dtype fallback) {
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return fallback;
  const std::optional<Dtype> d = parse_dtype(v->to_text());
  if (!d) r.fail(key, fmt::format("unknown dtype '{}'", v->to_text()));
  return *d;
}

// "0,3,4" or a list of ints.
std::vector<int> int_list(ArgReader& r, const std::string& key) {
  std::vector<int> out;
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return out;
  if (v->is_list()) {
    for (const ConfigValue& item : v->items) out.push_back(static_cast<int>(r.as_int(key, item)));
    return out;
  }
  if (v->kind == ConfigValue::Kind::kInt) return {static_cast<int>(r.as_int(key, *v))};
  std::string text = v->to_text();
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '[' || c == ']' || c == ','; }, ' ');
  std::size_t start = 0;
  while ((start = text.find_first_not_of(' ', start)) != std::string::npos) {
    const std::size_t end = text.find(' ', start);
    const std::string part = text.substr(start, end - start);
    out.push_back(static_cast<int>(r.as_int(key, resolve_plain_scalar(part, r.where(key)))));
    start = end;
  }
  return out;
}

std::vector<std::string> string_list(ArgReader& r, const std::string& key) {
  std::vector<std::string> out;
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return out;
  if (v->is_list()) {
    for (const ConfigValue& item : v->items) out.push_back(item.to_text());
    return out;
  }
  const std::string text = v->to_text();
  std::size_t start = 0;
  while (true) {
    const std::size_t sep = text.find_first_of(", ", start);
    std::string part = text.substr(start, sep - start);
    if (!part.empty()) out.push_back(part);
    if (sep == std::string::npos) break;
    start = sep + 1;
  }
  return out;
}

void read_batches(ArgReader& r, JobDraft& d) {
  name_field(r, d, DraftField::kMicroBatchSize, "micro_batch_size");
  name_field(r, d, DraftField::kGlobalBatchSize, "global_batch_size");
  name_field(r, d, DraftField::kSeqLength, "seq_length");
  d.micro_batch_size = positive_arg(r, "micro_batch_size");
  d.global_batch_size = positive_arg(r, "global_batch_size");
  d.seq_length = positive_arg(r, "seq_length");
}

// fp8 / fp4: a format name (e4m3, hybrid, e2m1, ...) or true turns it on; false, 0, an empty
// string, none or null leave it off (Primus configs write all of these).
bool low_precision_on(ArgReader& r, const std::string& key) {
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return false;
  if (v->kind == ConfigValue::Kind::kBool) return v->b;
  if (v->kind == ConfigValue::Kind::kInt) return v->i != 0;
  const std::string text = to_lower(v->to_text());
  if (text.empty() || text == "0" || text == "false" || text == "none" || text == "null") {
    return false;
  }
  return true;
}

// fp8 is Megatron's --fp8-format: only e4m3 and hybrid exist (MG2 arguments.py, choices of
// --fp8-format); anything else (e5m2, true, a typo) would otherwise silently turn FP8 on.
bool fp8_on(ArgReader& r) {
  if (!low_precision_on(r, "fp8")) return false;
  const ConfigValue* v = r.get("fp8");
  const std::string text = v->kind == ConfigValue::Kind::kString ? to_lower(v->s) : "";
  if (text != "e4m3" && text != "hybrid") {
    r.fail("fp8", fmt::format("unknown FP8 format '{}' (Megatron's --fp8-format takes e4m3 or "
                              "hybrid; false or null turns FP8 off)",
                              v->to_text()));
  }
  return true;
}

void read_precision(ArgReader& r, JobDraft& d) {
  PrecisionSpec& prec = d.runtime.precision;
  if (r.bool_quiet("fp16", false)) {
    prec.params_dtype = Dtype::kFp16;
  } else if (r.has("bf16") || r.has("fp16")) {
    if (!r.bool_quiet("bf16", false)) {
      d.warnings.push_back(
          "neither bf16 nor fp16 is true: Megatron would train in fp32; "
          "projecting bf16 mixed precision");
    }
    prec.params_dtype = Dtype::kBf16;
  } else {
    prec.params_dtype = Dtype::kBf16;
    r.note("bf16", "true", "precision not given; assuming bf16 mixed precision");
  }
  name_field(r, d, DraftField::kFp8Recipe, "fp8_recipe");
  d.fp8 = fp8_on(r);
  if (d.fp8 && r.has("fp8_recipe")) {
    const std::string recipe = to_lower(r.string_or("fp8_recipe", "", ""));
    const std::pair<const char*, Fp8Recipe> kRecipes[] = {{"delayed", Fp8Recipe::kDelayed},
                                                          {"tensorwise", Fp8Recipe::kTensorwise},
                                                          {"blockwise", Fp8Recipe::kBlockwise},
                                                          {"mxfp8", Fp8Recipe::kMxfp8}};
    for (const auto& [name, value] : kRecipes) {
      if (recipe == name) d.fp8_recipe = value;
    }
    if (recipe == "custom") {
      // A user quantizer factory (MG2 transformer_config.py:594-611): its scaling is unknown here.
      d.fp8_recipe = Fp8Recipe::kTensorwise;
      r.note("fp8_recipe", "tensorwise",
             "custom recipe (a user quantizer factory): projected as per-tensor FP8 GEMMs");
    }
    if (!d.fp8_recipe) {
      r.fail("fp8_recipe",
             fmt::format("unknown recipe '{}' (delayed, tensorwise, blockwise, mxfp8, "
                         "custom)",
                         recipe));
    }
  }
  // Primus' no_fp8_weight_transpose_cache builds every TE linear with ROCm TE's
  // keep_fp8_weight_transpose_cache=False (PR6 te_patches/linear_fp8_cache_patches.py,
  // layernorm_linear_fp8_cache_patches.py): the fp8 weight's transpose is not kept.
  if (r.bool_quiet("no_fp8_weight_transpose_cache", false)) prec.fp8_transpose_cached = false;
  // FP4 (MG2 transformer_config.py:679, MG1 arguments.py:1101: not together with FP8); Primus
  // adds the mxfp4 recipe. Whether the part has an FP4 peak is checked with the hardware.
  if (low_precision_on(r, "fp4")) {
    if (d.fp8) r.fail("fp4", "fp4 and fp8 cannot be used together (Megatron refuses it)");
    const std::string recipe = to_lower(r.string_or("fp4_recipe", "nvfp4", "Megatron default"));
    if (recipe == "nvfp4" || recipe == "custom") {
      prec.fp4 = Fp4Recipe::kNvfp4;
      if (recipe == "custom") {
        r.note("fp4_recipe", "nvfp4", "custom recipe: projected as NVFP4 block-scaled GEMMs");
      }
    } else if (recipe == "mxfp4") {
      prec.fp4 = Fp4Recipe::kMxfp4;
    } else {
      r.fail("fp4_recipe", fmt::format("unknown recipe '{}' (nvfp4, mxfp4, custom)", recipe));
    }
  }

  // Unstated: the profile's recipes (NeMo keeps delayed / tensorwise weights in FP8).
  name_field(r, d, DraftField::kFp8ParamGather, "fp8_param_gather");
  if (r.has("fp8_param_gather")) {
    d.fp8_param = r.bool_quiet("fp8_param_gather", false);
    if (*d.fp8_param && !d.fp8)
      d.warnings.push_back("fp8_param_gather is set without fp8; ignored");
  }
}

// The fp8 recipe the job will run: the stated one, else the profile's default (the builder's
// rule, builder_defaults.cpp), else Megatron's delayed.
Fp8Recipe expected_fp8_recipe(const JobDraft& d) {
  return d.fp8_recipe.value_or(d.profile.fp8_recipe.value.value_or(Fp8Recipe::kDelayed));
}

// Primus' use_fsdp2_fp8_all_gather (PR19 torch_fully_sharded_data_parallel.py:152-296): with
// torch FSDP2 and FP8, the GEMM weights all-gather in fp8 and the GEMMs take them as gathered; the
// shard keeps its dtype. Primus refuses it with delayed scaling; without FSDP2 or FP8 it does
// nothing.
void read_fsdp2_fp8_all_gather(ArgReader& r, JobDraft& d) {
  const std::string key = "use_fsdp2_fp8_all_gather";
  if (!r.bool_quiet(key, false)) return;
  if (!d.fp8 || d.fsdp != FsdpKind::kFsdp2) {
    const SourceLocation w = r.where(key);
    d.warnings.push_back(fmt::format("{}:{}: {}: set without {}; no effect", w.file, w.line, key,
                                     d.fp8 ? "use_torch_fsdp2" : "fp8"));
    return;
  }
  if (expected_fp8_recipe(d) == Fp8Recipe::kDelayed) {
    r.fail(key, "is incompatible with delayed FP8 scaling (Primus refuses it): use tensorwise");
  }
  d.fp8_param = true;
  d.runtime.precision.fp8_gather_only = true;
}

// fp8_wgrad false (MG1 --no-fp8-wgrad) changes only delayed scaling: MG21 builds that recipe with
// override_linear_precision=(False, False, not fp8_wgrad) and the others without it.
void read_fp8_wgrad(ArgReader& r, JobDraft& d) {
  if (!d.fp8 || r.bool_quiet("fp8_wgrad", true)) return;
  if (expected_fp8_recipe(d) == Fp8Recipe::kDelayed) d.runtime.precision.fp8_wgrad = false;
}

// fp8_dot_product_attention (MG26): Megatron hands fp8_dpa to Transformer Engine's delayed,
// tensorwise and mxfp8 recipes (cuDNN's FP8 / MXFP8 attention), not to blockwise; the builder
// checks the recipe it settles on. Under the NVFP4 recipe the attention's format is not modelled;
// without fp8 there is no recipe for it to act in.
void read_fp8_attention(ArgReader& r, JobDraft& d) {
  const std::string key = "fp8_dot_product_attention";
  if (!r.bool_quiet(key, false)) return;
  const SourceLocation at = r.where(key);
  const std::string where = at.file.empty() ? "" : fmt::format("{}:{}: ", at.file, at.line);
  if (d.runtime.precision.fp4 != Fp4Recipe::kNone) {
    d.warnings.push_back(fmt::format(
        "{}{} under the fp4 recipe is not modelled: the attention is projected in BF16 (its time "
        "an upper bound)",
        where, key));
    return;
  }
  if (!d.fp8) {
    d.warnings.push_back(
        fmt::format("{}{} has no effect without fp8 (no recipe to run it)", where, key));
    return;
  }
  d.runtime.precision.fp8_attention = true;
}

// first_last_layers_bf16 (MG2 first_last_layers_bf16,
// num_layers_at_start_in_bf16 / _end_in_bf16, both 1 by default): the first and last decoder
// layers by global index run outside the fp8 / fp4 recipe (MG21 is_first_last_bf16_layer).
// Megatron refuses it with delayed scaling and counts beyond one pipeline stage's layers
// (transformer_config.py __post_init__); so does this.
void read_bf16_layers(ArgReader& r, const ModelSpec& model, JobDraft& d) {
  const std::string key = "first_last_layers_bf16";
  PrecisionSpec& prec = d.runtime.precision;
  if (!r.bool_quiet(key, false) || (!d.fp8 && prec.fp4 == Fp4Recipe::kNone)) return;
  if (d.fp8) {
    if (expected_fp8_recipe(d) == Fp8Recipe::kDelayed) {
      r.fail(key,
             "delayed scaling does not support first / last layers in BF16 (Megatron "
             "refuses it)");
    }
  }
  const std::int64_t per_stage = model.num_layers() / std::max(1, d.pp.value_or(1));
  const auto count = [&](const std::string& k) {
    const std::int64_t n = r.int_or(k, 1, "Megatron default (with first_last_layers_bf16)");
    if (n < 0 || n > per_stage) {
      r.fail(k, fmt::format("{} must be between 0 and the layers per pipeline stage ({})", n,
                            per_stage));
    }
    return static_cast<int>(n);
  };
  prec.bf16_layers_at_start = count("num_layers_at_start_in_bf16");
  prec.bf16_layers_at_end = count("num_layers_at_end_in_bf16");
}

// recompute_modules against Megatron's set (MG2 transformer_config.py:1940-2010): every name must
// be one Megatron accepts; those for layers this model does not have are refused as Megatron
// refuses them (moe_act needs grouped GEMM, mla_up_proj MLA, the gdn / gdp / mhc ones their
// GatedDeltaNet / GatedDeltaProduct / hyper-connection layers, which are not modelled).
void read_recompute_modules(ArgReader& r, const ModelSpec& model, RecomputeSpec& rc) {
  const std::string key = "recompute_modules";
  bool mla = false, grouped = false, shared = false;
  for (const LayerSpec& l : model.layers) {
    mla = mla || l.attention.kind == AttentionKind::kMla;
    grouped = grouped || (l.is_moe && l.moe.grouped_gemm);
    shared = shared || (l.is_moe && l.moe.shared_expert_ffn_hidden_size > 0);
  }
  for (const std::string& name : string_list(r, key)) {
    const std::optional<RecomputeModule> m = parse_recompute_module(name);
    if (!m) {
      const bool megatron =
          name == "gdn_norm_out" || name == "gdp_in_proj" || name == "gdp_qkv" || name == "mhc";
      r.fail(key, megatron
                      ? fmt::format("'{}' recomputes a GatedDeltaNet / GatedDeltaProduct / "
                                    "hyper-connection module, which this model does not have",
                                    name)
                      : fmt::format("unknown module '{}' (Megatron's set: core_attn, mlp, moe, "
                                    "moe_act, layernorm, mla_up_proj, shared_experts, "
                                    "gdn_norm_out, gdp_in_proj, gdp_qkv, mhc)",
                                    name));
    }
    if (*m == RecomputeModule::kMoeAct && !grouped) {
      r.fail(key, "moe_act is only supported with moe_grouped_gemm (Megatron refuses it)");
    }
    if (*m == RecomputeModule::kMlaUpProj && !mla) {
      r.fail(key, "mla_up_proj needs multi-latent attention (Megatron refuses it)");
    }
    if (*m == RecomputeModule::kSharedExperts && shared &&
        r.bool_quiet("moe_shared_expert_overlap", false)) {
      r.fail(key, "shared_experts cannot be recomputed with moe_shared_expert_overlap");
    }
    rc.modules.add(*m);
  }
}

// distribute_saved_activations (MG22 CheckpointFunction: the checkpoint's
// first input is split into 1 / tp chunks in the forward and gathered in the backward). Megatron
// asserts TP > 1, full granularity and a recompute method (MG1 arguments.py), and no sequence
// parallelism (transformer_config.py); so does this.
void read_distributed_checkpoints(ArgReader& r, JobDraft& d) {
  const std::string key = "distribute_saved_activations";
  if (!r.bool_quiet(key, false)) return;
  if (d.tp.value_or(1) <= 1) r.fail(key, "needs tensor_model_parallel_size > 1");
  if (d.runtime.recompute.granularity != RecomputeGranularity::kFull) {
    r.fail(key, "only applies to recompute_granularity full");
  }
  if (!r.has("recompute_method")) r.fail(key, "needs a recompute_method");
  // Unstated, sequence parallelism follows the profile (Primus turns it on with TP).
  const std::optional<WhenRule> sp_rule = d.profile.sequence_parallel.value;
  const bool sp = d.sequence_parallel.value_or(
      sp_rule && (*sp_rule == WhenRule::kAlways || *sp_rule == WhenRule::kWithTp));
  if (sp) {
    r.fail(key, d.sequence_parallel
                    ? "must be false with sequence parallelism (Megatron refuses it)"
                    : "must be false with sequence parallelism, which the "
                      "framework turns on with TP unless sequence_parallel: false "
                      "is stated (Megatron refuses both)");
  }
  d.runtime.recompute.distribute_saved = true;
}

void read_recompute(ArgReader& r, const ModelSpec& model, JobDraft& d) {
  RecomputeSpec& rc = d.runtime.recompute;
  name_field(r, d, DraftField::kRecompute, "recompute_granularity");
  name_field(r, d, DraftField::kRecomputeModules, "recompute_modules");
  const std::string gran = to_lower(r.string_or("recompute_granularity", "none", ""));
  if (gran == "full") {
    rc.granularity = RecomputeGranularity::kFull;
  } else if (gran == "selective") {
    rc.granularity = RecomputeGranularity::kSelective;
  } else if (gran != "none" && gran != "null") {
    r.fail("recompute_granularity", fmt::format("unknown '{}' (full, selective)", gran));
  }
  const std::string method = to_lower(r.string_or("recompute_method", "uniform", ""));
  if (method == "block") {
    rc.method = RecomputeMethod::kBlock;
  } else if (method != "uniform" && method != "none" && method != "null") {
    r.fail("recompute_method", fmt::format("unknown '{}' (uniform, block)", method));
  }
  rc.num_layers = static_cast<int>(r.int_quiet("recompute_num_layers", 0));
  if (rc.granularity == RecomputeGranularity::kFull && !r.has("recompute_num_layers") &&
      !r.has("recompute_layer_ids")) {
    rc.num_layers = 1;
    r.note("recompute_num_layers", "1", "Megatron default with full recompute");
  }
  read_recompute_modules(r, model, rc);
  // moe_layer_recompute (deprecated) = selective recompute of the MoE block (MG2
  // transformer_config.py:2012-2024); Megatron refuses it with full recompute.
  if (r.bool_quiet("moe_layer_recompute", false)) {
    if (rc.granularity == RecomputeGranularity::kFull) {
      r.fail("moe_layer_recompute", "cannot be combined with full recompute (Megatron refuses it)");
    }
    rc.granularity = RecomputeGranularity::kSelective;
    rc.modules.add(RecomputeModule::kMoe);
  }
  // --recompute-activations (deprecated) means selective recompute (MG1 arguments.py).
  if (rc.granularity == RecomputeGranularity::kNone &&
      r.bool_quiet("recompute_activations", false)) {
    rc.granularity = RecomputeGranularity::kSelective;
  }
  read_distributed_checkpoints(r, d);
  rc.layer_ids = int_list(r, "recompute_layer_ids");
  for (int id : rc.layer_ids) {
    if (id < 0 || id >= model.num_layers()) {
      r.fail("recompute_layer_ids",
             fmt::format("layer {} is outside 0..{}", id, model.num_layers() - 1));
    }
  }
}

// Which attention kernel Megatron runs. Megatron-Core (use_legacy_models false) decides it by
// transformer_impl and attention_backend alone (MG2 transformer_config.py:151 attention_backend
// auto, :1314 transformer_impl transformer_engine; MG5 language_module.py:108-150 turns auto into
// "Transformer Engine picks flash or fused", local into no TE kernel): --use-flash-attn is read
// by nothing on that path (a dead flag). transformer_impl local builds the local layer spec,
// whose DotProductAttention is unfused (MG6 gpt_layer_specs.py get_gpt_layer_local_spec). Legacy
// models still read use_flash_attn (MG1 arguments.py:2910).
void read_attention(ArgReader& r, JobDraft& d) {
  if (r.bool_quiet("use_legacy_models", false)) {
    name_field(r, d, DraftField::kFlashAttention, "use_flash_attn");
    if (r.has("use_flash_attn")) d.flash_attention = r.bool_quiet("use_flash_attn", false);
    return;
  }
  const std::string impl =
      to_lower(r.string_or("transformer_impl", "transformer_engine",
                           "Megatron-Core default (MG2 transformer_config.py:1314)"));
  if (impl != "transformer_engine" && impl != "local" && impl != "inference_optimized") {
    r.fail("transformer_impl",
           fmt::format("unknown '{}' (transformer_engine, local, inference_optimized)", impl));
  }
  const std::string backend = to_lower(r.string_or(
      "attention_backend", "auto", "Megatron-Core default (MG2 transformer_config.py:151)"));
  name_field(r, d, DraftField::kFlashAttention,
             impl == "local" ? "transformer_impl" : "attention_backend");
  if (impl == "local" || backend == "local" || backend == "unfused") {
    d.flash_attention = false;  // Megatron's DotProductAttention / TE's unfused path
  } else if (backend == "flash") {
    d.flash_attention = true;  // TE with only the flash-attn package enabled
    d.attention_kernel = AttentionKernel::kFa2;
  } else if (backend == "fused" || backend == "auto") {
    d.flash_attention = true;  // TE's fused (cuDNN / CK / AITER) kernel, or its own pick
    d.attention_kernel = AttentionKernel::kFused;
  } else {
    r.fail("attention_backend",
           fmt::format("unknown attention backend '{}' (flash, fused, unfused, local, auto)",
                       backend));
  }
}

bool has_experts(const ArgReader& r) {
  return r.has("num_experts") && r.as_int("num_experts", *r.get("num_experts")) > 0;
}

// What hides the EP communication (MG2 model_parallel_config.py:343-349, transformer_config.py
// :2999-3095, :1817-1826): overlap_moe_expert_parallel_comm runs F and B of two microbatches as
// one unit (combined 1F1B: MG9 combined_1f1b.py, schedules.py:966-970 adds one warm-up
// microbatch); it needs EP > 1, the alltoall or flex dispatcher, no full recompute, no "moe" in
// recompute_modules, no moe_shared_expert_overlap, and VPP when PP > 1. delay_wgrad_compute
// needs it. moe_shared_expert_overlap runs the shared experts beside dispatch / combine (alltoall
// or flex only).
void read_moe_overlap(ArgReader& r, JobDraft& d) {
  RuntimeSpec& rt = d.runtime;
  const bool a2a_or_flex = rt.moe_dispatcher != MoeDispatcher::kAllGather;
  if (r.bool_quiet("moe_shared_expert_overlap", false)) {
    if (!a2a_or_flex) {
      r.fail("moe_shared_expert_overlap", "only works with the alltoall or flex dispatcher");
    }
    if (rt.deepep && rt.moe_dispatch_kernel == MoeDispatchKernel::kTurboDeepEp) {
      r.fail("moe_shared_expert_overlap", "Primus Turbo DeepEP does not support it");
    }
    rt.moe_overlap.add(MoeOverlap::kSharedExperts);
  }
  const bool other = r.bool_quiet("overlap_moe_expert_parallel_comm", false);
  name_field(r, d, DraftField::kMoeOverlap, "overlap_moe_expert_parallel_comm");
  if (other) {
    // The dispatcher is checked by the job builder, after the command line's --enable-deepep.
    const std::string key = "overlap_moe_expert_parallel_comm";
    if (rt.moe_overlap.has(MoeOverlap::kSharedExperts)) {
      r.fail(key, "cannot be combined with moe_shared_expert_overlap (Megatron asserts it)");
    }
    if (rt.recompute.granularity == RecomputeGranularity::kFull ||
        rt.recompute.modules.has(RecomputeModule::kMoe)) {
      r.fail(key, "cannot be combined with full recompute or 'moe' in recompute_modules");
    }
    rt.moe_overlap.add(MoeOverlap::kOtherMicrobatch);
  }
  if (r.bool_quiet("delay_wgrad_compute", false)) {
    if (!other) {
      r.fail("delay_wgrad_compute", "needs overlap_moe_expert_parallel_comm (Megatron asserts it)");
    }
    rt.moe_overlap.add(MoeOverlap::kDelayedWgrad);
  }
}

// SMs of a flex dispatcher's kernels. Megatron before 2d7060f (MG2 transformer_config.py): one
// knob per backend, moe_deepep_num_sms (20) and moe_hybridep_num_sms (None: HybridEP's own
// default); since then (snapshot d98e8a6, transformer_config.py:964-975, :1792-1810)
// moe_flex_dispatcher_num_sms (None) sets them for every flex backend and takes precedence over
// the deprecated per-backend knobs. Unset, DeepEP runs on 20 SMs (token_dispatcher.py:1287-1291)
// and HybridEP on DeepEP's HybridEpBuffer defaults, 32 SMs for dispatch and for combine (D3:
// deep_ep/hybrid_ep_buffer.py HybridEpBuffer.__init__; Megatron passes None through,
// fused_a2a.py:285-345): the profile's deepep_num_sms / hybridep_num_sms, which the validation
// mapper reads too. Each backend reads its own knob, so Primus configs that set both (as the old
// Megatron allowed) keep their meaning.
int flex_dispatcher_sms(ArgReader& r, const FrameworkProfile& prof, MoeDispatchKernel kernel) {
  const bool deepep = kernel == MoeDispatchKernel::kDeepEp;
  const std::string unified = "moe_flex_dispatcher_num_sms";
  const std::string key =
      r.has(unified) ? unified : (deepep ? "moe_deepep_num_sms" : "moe_hybridep_num_sms");
  const ProfileDefault<int>& def = deepep ? prof.deepep_num_sms : prof.hybridep_num_sms;
  const int sms = static_cast<int>(
      r.int_or(key, def.value.value_or(0),
               def.value ? prof.name + " profile: " + def.source
                         : prof.name + " profile names no budget: no SMs charged"));
  if (sms < 0) r.fail(key, "must not be negative");
  return sms;
}

// The dispatcher's wire format and its share of the compute units. Megatron:
// moe_dispatch_fwd_dtype / moe_combine_bwd_dtype ('bf16' default, 'mxfp8'), accepted only with the
// ncclep flex backend, grouped GEMM and the TE op fuser (MG2 transformer_config.py); DeepEP and
// HybridEP run on flex_dispatcher_sms SMs, Primus Turbo's DeepEP on turbo_deepep_num_cu CUs (32 by
// default, Primus primus_turbo.yaml).
void read_moe_wire(ArgReader& r, JobDraft& d) {
  RuntimeSpec& rt = d.runtime;
  auto mxfp8 = [&r, &rt](const std::string& key) {
    const std::string v = to_lower(r.string_or(key, "bf16", ""));
    if (v != "bf16" && v != "mxfp8")
      r.fail(key, fmt::format("unknown dtype '{}' (bf16, mxfp8)", v));
    if (v == "mxfp8" && (rt.moe_dispatch_kernel != MoeDispatchKernel::kNcclEp ||
                         !r.bool_quiet("moe_grouped_gemm", false) ||
                         !r.bool_quiet("use_transformer_engine_op_fuser", false))) {
      r.fail(key,
             "mxfp8 needs the ncclep flex dispatcher, moe_grouped_gemm and "
             "use_transformer_engine_op_fuser (Megatron asserts it)");
    }
    return v == "mxfp8";
  };
  rt.moe_dispatch_fwd_fp8 = mxfp8("moe_dispatch_fwd_dtype");
  rt.moe_combine_bwd_fp8 = mxfp8("moe_combine_bwd_dtype");
  if (!has_experts(r)) return;
  if (rt.moe_dispatch_kernel == MoeDispatchKernel::kDeepEp ||
      rt.moe_dispatch_kernel == MoeDispatchKernel::kHybridEp) {
    rt.moe_comm_compute_units = flex_dispatcher_sms(r, d.profile, rt.moe_dispatch_kernel);
  } else if (rt.moe_dispatch_kernel == MoeDispatchKernel::kTurboDeepEp) {
    rt.moe_comm_compute_units = static_cast<int>(r.int_or(
        "turbo_deepep_num_cu", kTurboDeepEpDefaultCus, "Primus default (primus_turbo.yaml)"));
    if (rt.moe_comm_compute_units < 0) r.fail("turbo_deepep_num_cu", "must not be negative");
  }
}

// The token dispatcher, the kernel that moves the tokens and what hides the expert-parallel
// communication. Megatron: moe_token_dispatcher_type defaults to allgather (MG2
// transformer_config.py:891); moe_enable_deepep (deprecated) means flex with the DeepEP backend,
// flex's backend is moe_flex_dispatcher_backend (deepep by default; :895-898, :1743-1760).
// Primus: use_turbo_deepep with enable_primus_turbo swaps the flex dispatcher for Turbo's DeepEP
// and sets flex (PR4 moe_dispatcher_patches.py); turbo_sync_free_moe_stage 2-3 turns
// use_turbo_deepep on, stage 1 only fuses the router and permutation (PR4
// rocm_arg_validation.py _get_sync_free_moe_options). DeepEP is a kernel, not an overlap switch.
void read_moe_dispatcher(ArgReader& r, JobDraft& d) {
  RuntimeSpec& rt = d.runtime;
  rt.sync_free_moe_stage = static_cast<int>(r.int_quiet("turbo_sync_free_moe_stage", 0));
  if (rt.sync_free_moe_stage < 0 || rt.sync_free_moe_stage > 3) {
    r.fail("turbo_sync_free_moe_stage", "must be 0..3");
  }
  const bool turbo = r.bool_quiet("enable_primus_turbo", false);
  const SyncFreeMoeOptions sync_free = sync_free_moe_options(rt.sync_free_moe_stage);
  rt.moe_host_sync_free = turbo && sync_free.host_sync_free;
  const bool turbo_deepep =
      turbo && (r.bool_quiet("use_turbo_deepep", false) || sync_free.turbo_deepep);
  const std::string type = to_lower(
      r.string_or("moe_token_dispatcher_type", "allgather",
                  has_experts(r) ? "Megatron default (MG2 transformer_config.py:891)" : ""));
  if (type == "allgather") {
    rt.moe_dispatcher = MoeDispatcher::kAllGather;
  } else if (type == "alltoall" || type == "alltoall_seq") {
    rt.moe_dispatcher = MoeDispatcher::kAllToAll;
  } else if (type == "flex") {
    rt.moe_dispatcher = MoeDispatcher::kFlex;
  } else {
    r.fail("moe_token_dispatcher_type",
           fmt::format("unknown dispatcher '{}' (allgather, alltoall, flex)", type));
  }
  const bool enable_deepep = r.bool_quiet("moe_enable_deepep", false);
  if (enable_deepep && rt.moe_dispatcher != MoeDispatcher::kFlex && !turbo_deepep) {
    r.fail("moe_enable_deepep", "needs moe_token_dispatcher_type flex (Megatron asserts it)");
  }
  rt.moe_dispatch_kernel = MoeDispatchKernel::kCollective;
  if (turbo_deepep) {
    rt.moe_dispatcher = MoeDispatcher::kFlex;
    rt.moe_dispatch_kernel = MoeDispatchKernel::kTurboDeepEp;
  } else if (rt.moe_dispatcher == MoeDispatcher::kFlex) {
    const std::string backend = to_lower(r.string_or("moe_flex_dispatcher_backend", "deepep", ""));
    if (enable_deepep || backend == "deepep") {
      rt.moe_dispatch_kernel = MoeDispatchKernel::kDeepEp;
    } else if (backend == "hybridep") {
      rt.moe_dispatch_kernel = MoeDispatchKernel::kHybridEp;
    } else if (backend == "ncclep") {
      rt.moe_dispatch_kernel = MoeDispatchKernel::kNcclEp;
    } else {
      r.fail("moe_flex_dispatcher_backend",
             fmt::format("unknown backend '{}' (deepep, hybridep, ncclep)", backend));
    }
  }
  rt.deepep = rt.moe_dispatch_kernel == MoeDispatchKernel::kDeepEp ||
              rt.moe_dispatch_kernel == MoeDispatchKernel::kTurboDeepEp;
  rt.moe_dedup_dispatch = rt.moe_dispatcher == MoeDispatcher::kFlex;
  rt.moe_probs_fp32 = to_lower(r.string_or("moe_router_dtype", "", "")) == "fp32";
  read_moe_wire(r, d);
  // moe_router_force_load_balancing (MG2 transformer_config.py, default false; the benchmark
  // setting of Megatron's MoE recipes): the router's top-k is replaced by a balanced assignment.
  if (r.bool_quiet("moe_router_force_load_balancing", false)) rt.moe_routing = MoeRouting::kForced;
  // moe_permute_fusion (MG2 transformer_config.py, default false); Primus' sync-free stages fuse
  // the permutation too (PR4 rocm_arg_validation.py _get_sync_free_moe_options).
  rt.moe_permute_fusion = r.bool_quiet("moe_permute_fusion", false) ||
                          (turbo && sync_free_moe_options(rt.sync_free_moe_stage).permute_fusion);
  read_moe_overlap(r, d);
}

// Primus' own pipeline scheduler (patch_primus_pipeline, primus_pipeline.yaml pp_algorithm):
// 1f1b, 1f1b-interleaved, zero-bubble, zero-bubble-heuristic, zbv-formatted, and the V-shape
// schedules with controllable memory v-half / v-min (ZB-V at half / the least of 1F1B's
// activation memory: the greedy ZB-V schedules of the same budget).
void read_primus_pipeline_schedule(ArgReader& r, JobDraft& d) {
  const std::string text = to_lower(r.string_or("pp_algorithm", "1f1b-interleaved", ""));
  std::optional<ScheduleKind> s = parse_schedule_name(text);
  if (text == "zero-bubble-heuristic") s = ScheduleKind::kZeroBubble;
  if (text == "v-half") s = ScheduleKind::kZbvGreedyHalf;
  if (text == "v-min") s = ScheduleKind::kZbvGreedyMin;
  if (!s) {
    r.fail("pp_algorithm", fmt::format("unknown Primus pipeline algorithm '{}' (1f1b, "
                                       "1f1b-interleaved, zero-bubble, zero-bubble-heuristic, "
                                       "zbv-formatted, v-half, v-min)",
                                       text));
  }
  name_field(r, d, DraftField::kSchedule, "pp_algorithm");
  d.schedule = *s;
}

void read_schedule(ArgReader& r, JobDraft& d) {
  name_field(r, d, DraftField::kSchedule, "pipeline_schedule_algorithm");
  if (r.has("pipeline_schedule_algorithm")) {
    const std::string text = r.string_or("pipeline_schedule_algorithm", "auto", "");
    const std::optional<ScheduleKind> s = parse_schedule_name(text);
    if (!s) {
      r.fail("pipeline_schedule_algorithm",
             fmt::format("unknown pipeline schedule '{}' ({})", text, schedule_kind_names()));
    }
    d.schedule = *s;
  } else if (r.bool_quiet("patch_primus_pipeline", false) && r.has("pp_algorithm")) {
    read_primus_pipeline_schedule(r, d);
  }
  // Primus' runtime only switches to zero bubble when patch_zero_bubble is also set (its
  // projection ignored that: defect 12.2 #19, fixed here).
  d.prefer_zero_bubble =
      r.bool_quiet("enable_zero_bubble", false) && r.bool_quiet("patch_zero_bubble", false);
}

void read_optimizer(ArgReader& r, JobDraft& d) {
  RuntimeSpec& rt = d.runtime;
  const std::string opt = to_lower(r.string_or("optimizer", "adam", "Megatron default"));
  if (opt == "adam" || opt == "adamw" || opt == "hybridadam") {
    rt.optimizer = OptimizerKind::kAdam;
  } else if (opt == "sgd") {
    rt.optimizer = OptimizerKind::kSgd;
  } else if (opt == "muon") {
    rt.optimizer = OptimizerKind::kMuon;
  } else {
    r.fail("optimizer", fmt::format("unknown optimizer '{}' (adam, sgd, muon)", opt));
  }
  rt.precision_aware_optimizer = r.bool_quiet("use_precision_aware_optimizer", false);
  rt.exp_avg_dtype = dtype_arg(r, "exp_avg_dtype", Dtype::kFp32);
  rt.exp_avg_sq_dtype = dtype_arg(r, "exp_avg_sq_dtype", Dtype::kFp32);
  name_field(r, d, DraftField::kGradReduceDtype, "main_grads_dtype");
  if (r.has("main_grads_dtype")) {
    name_field(r, d, DraftField::kGradReduceDtype, "main_grads_dtype");
    d.main_grads_dtype = dtype_arg(r, "main_grads_dtype", Dtype::kFp32);
  }
  if (!rt.precision_aware_optimizer &&
      (d.main_grads_dtype.value_or(Dtype::kFp32) != Dtype::kFp32 ||
       rt.exp_avg_dtype != Dtype::kFp32 || rt.exp_avg_sq_dtype != Dtype::kFp32)) {
    d.warnings.push_back(
        "main_grads_dtype / exp_avg_dtype / exp_avg_sq_dtype only apply with "
        "use_precision_aware_optimizer; Megatron keeps fp32 states");
    d.main_grads_dtype.reset();
    rt.exp_avg_dtype = rt.exp_avg_sq_dtype = Dtype::kFp32;
  }
  // --use-torch-fsdp2 casts the model to bf16 / fp16 (Float16Module) before fully_shard with no
  // mixed-precision policy (MG14 torch_fully_sharded_data_parallel.py:80-133, training
  // dist_utils.py:190-197): shards and reduce-scattered gradients are in the params dtype, and
  // Float16OptimizerWithFloat16Params keeps the fp32 master (MG15 optimizer.py:1092-1105).
  // Primus' use_fsdp2_fp32_param_optimizer instead keeps fp32 shards as the optimizer's own
  // parameters under a bf16 MixedPrecisionPolicy (PR7 torch_fully_sharded_data_parallel.py:145-165,
  // fsdp2_fp32_optimizer.py), torchtitan's layout; use_fsdp2_bf16_master_weight_optimizer is the
  // default layout with a bf16 reduce.
  if (r.bool_quiet("use_torch_fsdp2", false) &&
      !r.bool_quiet("use_fsdp2_fp32_param_optimizer", false)) {
    rt.fsdp_param_is_master = false;
    if (!rt.precision_aware_optimizer) {  // main_grads_dtype only applies with one
      d.main_grads_dtype = r.bool_quiet("fp16", false) ? Dtype::kFp16 : Dtype::kBf16;
    }
  }
  // --grad-reduce-in-bf16: the DDP gradient buffer (accumulation and reduction) is bf16; the
  // optimizer still steps fp32 master weights.
  if (r.has("grad_reduce_in_bf16")) {
    name_field(r, d, DraftField::kGradReduceDtype, "grad_reduce_in_bf16");
    if (r.bool_quiet("grad_reduce_in_bf16", false)) {
      d.main_grads_dtype = Dtype::kBf16;
    } else if (!d.main_grads_dtype) {
      d.main_grads_dtype = Dtype::kFp32;
    }
  }
}

// Activation offloading to host memory. Layer level: cpu_offloading with
// cpu_offloading_num_layers in [0, num_layers), no pipeline, no recompute (MG2
// transformer_config.py:1884-1899; model_parallel_config.py:458-475). Module level:
// fine_grained_activation_offloading with offload_modules (MG2 transformer_config.py:1323-1361,
// :2127-2190): not with cpu_offloading, at least one module, attn_proj only with core_attn.
void read_offload(ArgReader& r, const ModelSpec& model, JobDraft& d) {
  OffloadSpec& off = d.runtime.offload;
  const bool layer_level = r.bool_quiet("cpu_offloading", false);
  if (layer_level && r.bool_quiet("cpu_offloading_activations", true)) {
    const std::int64_t n = r.int_quiet("cpu_offloading_num_layers", 0);
    if (n < 0 || n >= model.num_layers()) {
      r.fail("cpu_offloading_num_layers",
             fmt::format("must be in 0..{} (Megatron refuses others)", model.num_layers() - 1));
    }
    if (d.pp.value_or(1) > 1) {
      r.fail("cpu_offloading",
             "Megatron does not support CPU offloading with pipeline parallelism");
    }
    if (d.runtime.recompute.granularity != RecomputeGranularity::kNone) {
      r.fail("cpu_offloading", "Megatron refuses CPU offloading with activation recomputation");
    }
    off.layers = static_cast<int>(n);
  }
  if (!r.bool_quiet("fine_grained_activation_offloading", false)) return;
  const std::string key = "offload_modules";
  if (layer_level) {
    r.fail("fine_grained_activation_offloading", "cannot be combined with cpu_offloading");
  }
  for (const std::string& name : string_list(r, key)) {
    std::optional<OffloadModule> m = parse_offload_module(name);
    if (name == "fused_group_mlp") m = OffloadModule::kExpertFc1;  // the grouped MLP's input
    if (!m) {
      r.fail(key, name == "gdp_qkv"
                      ? "'gdp_qkv' offloads a GatedDeltaProduct input; this model has none"
                      : fmt::format("unknown module '{}' (attn_norm, qkv_linear, core_attn, "
                                    "attn_proj, mlp_norm, expert_fc1, moe_act, fused_group_mlp, "
                                    "gdp_qkv)",
                                    name));
    }
    off.add(*m);
  }
  if (off.modules == 0) r.fail(key, "fine-grained offloading needs at least one module");
  if (off.has(OffloadModule::kAttnProj) && !off.has(OffloadModule::kCoreAttn)) {
    r.fail(key, "attn_proj cannot be offloaded without core_attn (Megatron refuses it)");
  }
  off.fraction = r.float_or("activation_offload_fraction", 1.0, "");
  if (off.fraction < 0.0 || off.fraction > 1.0) {
    r.fail("activation_offload_fraction", "must be in [0, 1]");
  }
}

// CUDA graphs (MG1 arguments.py: --cuda-graph-impl none | local | transformer_engine |
// full_iteration; the deprecated --enable-cuda-graph / --external-cuda-graph mean local /
// transformer_engine; --cuda-graph-modules, or the deprecated --cuda-graph-scope, names the
// captured parts of each layer, none meaning the whole layer; scope full_iteration is the old
// spelling of the full-iteration implementation).
void read_cuda_graphs(ArgReader& r, JobDraft& d) {
  std::string impl = to_lower(r.string_or("cuda_graph_impl", "none", ""));
  if (impl == "none" && r.bool_quiet("enable_cuda_graph", false)) impl = "local";
  if (impl == "none" && r.bool_quiet("external_cuda_graph", false)) impl = "transformer_engine";
  if (impl != "none" && impl != "local" && impl != "transformer_engine" &&
      impl != "full_iteration") {
    r.fail("cuda_graph_impl",
           fmt::format("unknown '{}' (none, local, transformer_engine, full_iteration)", impl));
  }
  const std::string key = r.get("cuda_graph_modules") ? "cuda_graph_modules" : "cuda_graph_scope";
  CudaGraphs& g = d.runtime.cuda_graphs;
  g = CudaGraphs{};
  for (const std::string& raw : string_list(r, key)) {
    const std::string name = to_lower(raw);
    if (name == "full_iteration") {
      impl = "full_iteration";
      continue;
    }
    const std::optional<CudaGraphModule> m = parse_cuda_graph_module(name);
    if (!m) {
      r.fail(key, fmt::format("unknown module '{}' (attn, mlp, moe, moe_router, moe_preprocess, "
                              "mamba, full_iteration)",
                              raw));
    }
    g.add(*m);
  }
  if (impl == "none") {
    g = CudaGraphs{};
    return;
  }
  if (impl == "full_iteration") {
    g = CudaGraphs{};
    g.full_iteration = true;
  } else if (g.modules == 0) {
    g.add(CudaGraphModule::kLayer);
  }
  g.impl = impl == "transformer_engine" ? CudaGraphImpl::kTransformerEngine : CudaGraphImpl::kLocal;
  // Time is modelled (captured ops cost the host nothing, docs/host.md), and so are TE's static
  // input buffers (docs/memory.md "CUDA graphs"). The full-iteration graph's pool is not: the
  // optimizer step runs outside it and cannot reuse its memory. Flagged, not silently zero.
  if (!g.full_iteration) return;
  const char* on = r.get("cuda_graph_impl") != nullptr       ? "cuda_graph_impl"
                   : r.get("enable_cuda_graph") != nullptr   ? "enable_cuda_graph"
                   : r.get("external_cuda_graph") != nullptr ? "external_cuda_graph"
                                                             : key.c_str();
  const SourceLocation w = r.where(on);
  d.warnings.push_back(fmt::format(
      "{}{}: CUDA graphs ({}): the graph's private memory pool is not modelled (the optimizer "
      "step, outside the graph, cannot reuse it); the projected peak counts one shared pool",
      w.file.empty() ? "" : fmt::format("{}:{}: ", w.file, w.line), on, impl));
}

// defer_embedding_wgrad_compute / wgrad_deferral_limit (MG28 model_parallel_config.py:410-418,
// 545-558): Megatron refuses the deferral without gradient_accumulation_fusion (the drain
// accumulates into main_grad with the fused kernel) and a negative limit; the job builder refuses
// it without pipeline parallelism, whoever sets PP.
void read_deferred_output_wgrad(ArgReader& r, JobDraft& d) {
  const std::string key = "defer_embedding_wgrad_compute";
  name_field(r, d, DraftField::kDeferOutputWgrad, key);
  if (!r.bool_quiet(key, false)) return;
  if (!r.bool_quiet("gradient_accumulation_fusion", true) ||
      r.bool_quiet("no_gradient_accumulation_fusion", false)) {
    r.fail(key, "needs gradient_accumulation_fusion (Megatron refuses the deferral without it)");
  }
  const std::int64_t limit = r.int_quiet("wgrad_deferral_limit", 0);
  if (limit < 0) {
    r.fail("wgrad_deferral_limit", "must be 0 (defer every microbatch) or more");
  }
  d.runtime.defer_output_wgrad = true;
  d.runtime.output_wgrad_deferral_limit =
      static_cast<int>(std::min<std::int64_t>(limit, std::numeric_limits<int>::max()));
}

}  // namespace

std::optional<ScheduleKind> parse_schedule_name(std::string_view text) {
  if (to_lower(text) == "all") return ScheduleKind::kAuto;  // the CLI's "compare every schedule"
  return parse_schedule_kind(text);
}

void read_runtime(ArgReader& r, const ModelSpec& model, JobDraft& d) {
  read_batches(r, d);
  read_precision(r, d);
  read_fsdp2_fp8_all_gather(r, d);
  read_fp8_wgrad(r, d);
  read_fp8_attention(r, d);
  read_bf16_layers(r, model, d);
  read_recompute(r, model, d);
  read_attention(r, d);
  // TE's parallel_cross_entropy computes the gradient in its one forward kernel and keeps the
  // logits in their own dtype; Megatron's native fused loss runs the eager steps through
  // torch.compile and saves the fp32 softmax as the eager one does (MG29, MG10). Current Megatron
  // refuses te with the fusion (MG1 arguments.py:1697); the Megatron Primus pins accepts it.
  const bool fusion = r.bool_quiet("cross_entropy_loss_fusion", false);
  const std::string ce = to_lower(r.string_or("cross_entropy_fusion_impl", "native", ""));
  if (ce != "native" && ce != "te") {
    r.fail("cross_entropy_fusion_impl", fmt::format("unknown '{}' (native, te)", ce));
  }
  d.runtime.cross_entropy_fusion = fusion && ce == "te";
  d.runtime.cross_entropy_compiled = fusion && ce == "native";
  read_moe_dispatcher(r, d);
  read_cuda_graphs(r, d);
  read_offload(r, model, d);
  read_schedule(r, d);
  read_optimizer(r, d);
  read_deferred_output_wgrad(r, d);
}

}  // namespace projector::frontend_detail
