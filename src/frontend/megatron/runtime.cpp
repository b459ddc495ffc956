// Megatron arguments -> the draft's runtime: batches, precision, recompute, attention, MoE token
// dispatch, pipeline schedule, optimizer.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "frontend/megatron/adapter.h"
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
  if (const ConfigValue* fp8 = r.get("fp8")) {
    d.fp8 = fp8->kind == ConfigValue::Kind::kBool ? fp8->b : true;  // hybrid, e4m3, ...
  }
  if (d.fp8 && r.has("fp8_recipe")) {
    const std::string recipe = to_lower(r.string_or("fp8_recipe", "", ""));
    const std::pair<const char*, Fp8Recipe> kRecipes[] = {{"delayed", Fp8Recipe::kDelayed},
                                                          {"tensorwise", Fp8Recipe::kTensorwise},
                                                          {"blockwise", Fp8Recipe::kBlockwise},
                                                          {"mxfp8", Fp8Recipe::kMxfp8}};
    for (const auto& [name, value] : kRecipes) {
      if (recipe == name) d.fp8_recipe = value;
    }
    if (!d.fp8_recipe) {
      r.fail("fp8_recipe",
             fmt::format("unknown recipe '{}' (delayed, tensorwise, blockwise, mxfp8)", recipe));
    }
  }
  prec.fp8_param = r.bool_quiet("fp8_param_gather", false);
  if (prec.fp8_param && !d.fp8) {
    d.warnings.push_back("fp8_param_gather is set without fp8; ignored");
    prec.fp8_param = false;
  }
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
  for (const std::string& name : string_list(r, "recompute_modules")) {
    const std::optional<RecomputeModule> m = parse_recompute_module(name);
    if (!m) {
      r.fail("recompute_modules",
             fmt::format("unknown module '{}' (core_attn, mlp, moe, moe_act, layernorm, "
                         "mla_up_proj, shared_experts)",
                         name));
    }
    rc.modules.add(*m);
  }
  rc.layer_ids = int_list(r, "recompute_layer_ids");
  for (int id : rc.layer_ids) {
    if (id < 0 || id >= model.num_layers()) {
      r.fail("recompute_layer_ids",
             fmt::format("layer {} is outside 0..{}", id, model.num_layers() - 1));
    }
  }
}

// use_flash_attn, and attention_backend: flash = the flash-attn package (FlashAttention-2 class),
// fused = cuDNN through Transformer Engine, unfused = no fused kernel, auto / local = default.
void read_attention(ArgReader& r, JobDraft& d) {
  name_field(r, d, DraftField::kFlashAttention, "use_flash_attn");
  if (r.has("use_flash_attn")) d.flash_attention = r.bool_quiet("use_flash_attn", false);
  if (!r.has("attention_backend")) return;
  const std::string backend = to_lower(r.string_or("attention_backend", "auto", ""));
  if (backend == "flash") {
    d.attention_kernel = AttentionKernel::kFa2;
    d.flash_attention = true;
  } else if (backend == "unfused") {
    d.flash_attention = false;
  } else if (backend == "fused") {
    d.attention_kernel = AttentionKernel::kFused;
    d.flash_attention = true;
  } else if (backend != "auto" && backend != "local") {
    r.fail("attention_backend",
           fmt::format("unknown attention backend '{}' (flash, fused, unfused, local, auto)",
                       backend));
  }
}

void read_moe_dispatch(ArgReader& r, JobDraft& d) {
  RuntimeSpec& rt = d.runtime;
  rt.sync_free_moe_stage = static_cast<int>(r.int_quiet("turbo_sync_free_moe_stage", 0));
  if (rt.sync_free_moe_stage < 0 || rt.sync_free_moe_stage > 3) {
    r.fail("turbo_sync_free_moe_stage", "must be 0..3");
  }
  rt.deepep = r.bool_quiet("use_turbo_deepep", false) || rt.sync_free_moe_stage > 0;
  const bool flex = r.has("moe_token_dispatcher_type") &&
                    to_lower(r.string_or("moe_token_dispatcher_type", "alltoall", "")) == "flex";
  rt.moe_dedup_dispatch = rt.deepep || flex || r.bool_quiet("moe_enable_deepep", false);
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

}  // namespace

std::optional<ScheduleKind> parse_schedule_name(std::string_view text) {
  if (to_lower(text) == "all") return ScheduleKind::kAuto;  // the CLI's "compare every schedule"
  return parse_schedule_kind(text);
}

void read_runtime(ArgReader& r, const ModelSpec& model, JobDraft& d) {
  read_batches(r, d);
  read_precision(r, d);
  read_recompute(r, model, d);
  read_attention(r, d);
  d.runtime.cross_entropy_fusion = r.bool_quiet("cross_entropy_loss_fusion", false);
  read_moe_dispatch(r, d);
  read_schedule(r, d);
  read_optimizer(r, d);
}

}  // namespace projector::frontend_detail
