// Megatron arguments -> JobSpec: parallel layout, runtime, cluster; validation.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>

#include "frontend/arg_reader.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/util/text.h"

namespace projector {
namespace {

using frontend_detail::ArgReader;

std::string lower(std::string_view s) {
  return to_lower(s);
}

int positive(ArgReader& r, const std::string& key, std::int64_t v) {
  if (v < 1 || v > (1LL << 30)) r.fail(key, fmt::format("must be a positive integer, got {}", v));
  return static_cast<int>(v);
}

Dtype dtype_arg(ArgReader& r, const std::string& key, Dtype fallback) {
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return fallback;
  const std::optional<Dtype> d = parse_dtype(v->to_text());
  if (!d) r.fail(key, fmt::format("unknown dtype '{}'", v->to_text()));
  return *d;
}

ScheduleKind parse_schedule(ArgReader& r, const std::string& key, const std::string& text) {
  if (lower(text) == "all") return ScheduleKind::kAuto;  // the CLI's "compare every schedule"
  const std::optional<ScheduleKind> s = parse_schedule_kind(text);
  if (!s) {
    r.fail(key, fmt::format("unknown pipeline schedule '{}' ({})", text, schedule_kind_names()));
  }
  return *s;
}

// Parses "0,3,4" or a list of ints.
std::vector<int> int_list(ArgReader& r, const std::string& key) {
  std::vector<int> out;
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return out;
  if (v->is_list()) {
    for (const ConfigValue& item : v->items) out.push_back(static_cast<int>(r.as_int(key, item)));
    return out;
  }
  if (v->kind == ConfigValue::Kind::kInt) return {static_cast<int>(v->i)};
  const std::string text = v->to_text();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma - start);
    part.erase(std::remove_if(part.begin(), part.end(),
                              [](char c) {
                                return std::isspace(static_cast<unsigned char>(c)) || c == '[' ||
                                       c == ']';
                              }),
               part.end());
    if (!part.empty()) {
      char* end = nullptr;
      const long n = std::strtol(part.c_str(), &end, 10);
      if (*end != '\0') r.fail(key, fmt::format("expected integers, got '{}'", part));
      out.push_back(static_cast<int>(n));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> string_list(ArgReader& r, const std::string& key) {
  std::vector<std::string> out;
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return out;
  if (v->is_list()) {
    for (const ConfigValue& item : v->items) out.push_back(item.to_text());
  } else {
    std::string text = v->to_text();
    std::size_t start = 0;
    while (true) {
      const std::size_t sep = text.find_first_of(", ", start);
      std::string part = text.substr(start, sep - start);
      if (!part.empty()) out.push_back(part);
      if (sep == std::string::npos) break;
      start = sep + 1;
    }
  }
  return out;
}

int gcd_lcm(int a, int b) {
  return a / std::gcd(a, b) * b;
}

// Fills ParallelSpec::stages (pp * vpp virtual stages, in virtual order).
void fill_stages(ArgReader& r, const ModelSpec& model, ParallelSpec& p, bool vpp_explicit) {
  const int num_layers = model.num_layers();
  if (const ConfigValue* layout = r.get("pipeline_model_parallel_layout")) {
    const std::string key = "pipeline_model_parallel_layout";
    std::string error;
    const auto stages = parse_pipeline_layout(layout->to_text(), error);
    if (!stages) r.fail(key, error);
    const int count = static_cast<int>(stages->size());
    if (!vpp_explicit && count % p.pp == 0 && count / p.pp > 1) {
      p.vpp = count / p.pp;
      r.note("num_virtual_stages_per_pipeline_rank", fmt::format("{}", p.vpp),
             fmt::format("{} layout stages / PP {}", count, p.pp));
    }
    if (count != p.pp * p.vpp) {
      r.fail(key, fmt::format("layout has {} stages but PP x VPP = {} x {} = {}", count, p.pp,
                              p.vpp, p.pp * p.vpp));
    }
    int total = 0;
    int mtp = 0;
    for (const LayoutStage& s : *stages) {
      VirtualStage v;
      v.first_layer = total;
      v.num_layers = s.decoder_layers;
      v.has_embedding = s.embedding;
      v.has_output = s.loss;
      v.mtp_layers = s.mtp_layers;
      total += s.decoder_layers;
      mtp += s.mtp_layers;
      p.stages.push_back(v);
    }
    if (total != num_layers) {
      r.fail(key, fmt::format("layout places {} decoder layers but num_layers is {}", total,
                              num_layers));
    }
    if (mtp != 0 && mtp != model.mtp_num_layers) {
      r.fail(key, fmt::format("layout places {} MTP layers but mtp_num_layers is {}", mtp,
                              model.mtp_num_layers));
    }
    if (mtp == 0 && model.mtp_num_layers > 0) {
      // Megatron puts MTP layers with the loss when the layout does not place them.
      for (VirtualStage& v : p.stages) {
        if (v.has_output) v.mtp_layers = model.mtp_num_layers;
      }
    }
    return;
  }
  const int z = p.pp * p.vpp;
  std::vector<int> counts(static_cast<std::size_t>(z), 0);
  const bool has_first = r.has("decoder_first_pipeline_num_layers");
  const bool has_last = r.has("decoder_last_pipeline_num_layers");
  if (z == 1) {
    counts[0] = num_layers;
  } else if (has_first || has_last) {
    const int first = static_cast<int>(r.int_quiet("decoder_first_pipeline_num_layers", 0));
    const int last = static_cast<int>(r.int_quiet("decoder_last_pipeline_num_layers", 0));
    const int lo = has_first ? 1 : 0;
    const int hi = has_last ? z - 1 : z;
    const int middle_stages = hi - lo;
    const int rest = num_layers - first - last;
    if (first < 0 || last < 0 || rest < 0 || (middle_stages <= 0 && rest != 0)) {
      r.fail(has_first ? "decoder_first_pipeline_num_layers" : "decoder_last_pipeline_num_layers",
             fmt::format("first {} + last {} layers do not fit {} layers over {} stages", first,
                         last, num_layers, z));
    }
    if (has_first) counts[0] = first;
    if (has_last) counts[z - 1] = last;
    for (int i = 0; i < middle_stages; ++i) {
      counts[lo + i] = rest / middle_stages + (i < rest % middle_stages ? 1 : 0);
    }
  } else {
    if (num_layers % z != 0) {
      r.fail("num_layers", fmt::format("{} layers are not divisible by PP x VPP = {} x {} = {}; "
                                       "set pipeline_model_parallel_layout or "
                                       "decoder_first/last_pipeline_num_layers",
                                       num_layers, p.pp, p.vpp, z));
    }
    std::fill(counts.begin(), counts.end(), num_layers / z);
  }
  int first_layer = 0;
  for (int i = 0; i < z; ++i) {
    VirtualStage v;
    v.first_layer = first_layer;
    v.num_layers = counts[i];
    v.has_embedding = i == 0;
    v.has_output = i == z - 1;
    v.mtp_layers = i == z - 1 ? model.mtp_num_layers : 0;
    first_layer += counts[i];
    p.stages.push_back(v);
  }
}

}  // namespace

JobSpec build_job_spec(const ResolvedConfig& config, const LoadRequest& request) {
  JobSpec job;
  job.source = config.source;
  job.defaults = config.defaults;
  job.warnings = config.warnings;
  ArgReader r(config.args, job.defaults);
  job.model = build_model(config.args, job.defaults, job.warnings);
  if (!config.model_preset_path.empty()) {
    std::string name = config.model_preset_path.substr(config.model_preset_path.rfind('/') + 1);
    if (name.ends_with(".yaml")) name.resize(name.size() - 5);
    job.model.name = name;
  } else {
    job.model.name = "(inline)";
  }
  const ModelSpec& model = job.model;

  // Unknown keys the user wrote: warn with the nearest valid key.
  std::set<std::string> warned;
  for (const std::string& key : config.user_keys) {
    if (is_known_key(key) || !warned.insert(key).second) continue;
    const std::string nearest = nearest_known_key(key);
    const ConfigValue* v = config.args.find(key);
    const SourceLocation where = v != nullptr ? v->where : SourceLocation{};
    std::string loc = where.file.empty() ? "" : fmt::format("{}:{}: ", where.file, where.line);
    job.warnings.push_back(
        nearest.empty()
            ? fmt::format("{}unknown key '{}' (ignored)", loc, key)
            : fmt::format("{}unknown key '{}' (ignored); did you mean '{}'?", loc, key, nearest));
  }

  // ----------------------------------------------------------------------------- parallel
  ParallelSpec& p = job.parallel;
  p.tp = positive(r, "tensor_model_parallel_size",
                  r.int_or("tensor_model_parallel_size", 1, "Megatron default"));
  p.pp = positive(r, "pipeline_model_parallel_size",
                  r.int_or("pipeline_model_parallel_size", 1, "Megatron default"));
  p.cp = positive(r, "context_parallel_size",
                  r.int_or("context_parallel_size", 1, "Megatron default"));
  p.ep = positive(r, "expert_model_parallel_size", r.int_quiet("expert_model_parallel_size", 1));
  if (r.has("expert_tensor_parallel_size")) {
    p.etp =
        positive(r, "expert_tensor_parallel_size", r.require_int("expert_tensor_parallel_size"));
  } else {
    p.etp = p.tp;
    if (model.num_layers() > 0 && std::any_of(model.layers.begin(), model.layers.end(),
                                              [](const LayerSpec& l) { return l.is_moe; })) {
      r.note("expert_tensor_parallel_size", fmt::format("{}", p.tp), "Megatron default: = TP");
    }
  }
  bool vpp_explicit = false;
  if (r.has("num_virtual_stages_per_pipeline_rank")) {
    p.vpp = positive(r, "num_virtual_stages_per_pipeline_rank",
                     r.require_int("num_virtual_stages_per_pipeline_rank"));
    vpp_explicit = true;
  } else if (r.has("virtual_pipeline_model_parallel_size")) {
    p.vpp = positive(r, "virtual_pipeline_model_parallel_size",
                     r.require_int("virtual_pipeline_model_parallel_size"));
    vpp_explicit = true;
  } else if (r.has("num_layers_per_virtual_pipeline_stage")) {
    const int per = positive(r, "num_layers_per_virtual_pipeline_stage",
                             r.require_int("num_layers_per_virtual_pipeline_stage"));
    if (model.num_layers() % (per * p.pp) != 0) {
      r.fail("num_layers_per_virtual_pipeline_stage",
             fmt::format("{} layers are not divisible by {} layers per virtual stage x PP {}",
                         model.num_layers(), per, p.pp));
    }
    p.vpp = model.num_layers() / (per * p.pp);
    vpp_explicit = true;
  }
  if (p.vpp > 1 && p.pp == 1) {
    r.fail("pipeline_model_parallel_size",
           fmt::format("virtual pipeline stages ({}) need PP > 1", p.vpp));
  }
  p.sequence_parallel = r.bool_quiet("sequence_parallel", false);
  if (p.sequence_parallel && p.tp == 1) {
    job.warnings.push_back("sequence_parallel has no effect with TP = 1");
  }
  fill_stages(r, model, p, vpp_explicit);

  p.distributed_optimizer = r.bool_or("use_distributed_optimizer", false, "Megatron default");
  if (r.bool_quiet("use_torch_fsdp2", false)) {
    p.fsdp = FsdpKind::kFsdp2;
  } else if (r.bool_quiet("use_megatron_fsdp", false) || r.bool_quiet("use_custom_fsdp", false)) {
    const std::string strategy =
        r.string_or("data_parallel_sharding_strategy", "no_shard", "Megatron default");
    if (strategy == "optim_grads_params") {
      p.fsdp = FsdpKind::kZero3;
    } else if (strategy == "optim_grads" || strategy == "optim") {
      p.distributed_optimizer = true;
    } else if (strategy != "no_shard") {
      r.fail("data_parallel_sharding_strategy",
             fmt::format("unknown strategy '{}' (no_shard, optim, optim_grads, "
                         "optim_grads_params)",
                         strategy));
    }
  }
  p.overlap_grad_reduce = r.bool_or("overlap_grad_reduce", false, "Megatron default");
  p.overlap_param_gather = r.bool_or("overlap_param_gather", false, "Megatron default");
  p.tp_comm_overlap = r.bool_quiet("tp_comm_overlap", false);
  if (const ConfigValue* cct = r.get("cp_comm_type")) {
    std::string text =
        cct->is_list() && !cct->items.empty() ? cct->items[0].to_text() : cct->to_text();
    if (cct->is_list()) {
      for (const ConfigValue& item : cct->items) {
        if (item.to_text() != text) {
          job.warnings.push_back(fmt::format(
              "cp_comm_type differs per layer; projecting every layer with '{}'", text));
          break;
        }
      }
    }
    text = lower(text);
    if (text == "p2p") {
      p.cp_comm_type = CpCommType::kP2p;
    } else if (text == "all_gather" || text == "allgather") {
      p.cp_comm_type = CpCommType::kAllGather;
    } else if (text == "a2a") {
      p.cp_comm_type = CpCommType::kA2a;
    } else if (text == "a2a+p2p") {
      p.cp_comm_type = CpCommType::kA2aP2p;
    } else {
      r.fail("cp_comm_type", fmt::format("unknown '{}' (p2p, all_gather, a2a, a2a+p2p)", text));
    }
  }
  p.ddp_bucket_size_bytes = r.int_quiet("ddp_bucket_size", 0);
  p.allow_tp_beyond_node =
      request.allow_tp_beyond_node || r.bool_quiet("allow_tp_beyond_node", false);

  // ------------------------------------------------------------------------------ runtime
  RuntimeSpec& rt = job.runtime;
  rt.micro_batch_size =
      positive(r, "micro_batch_size", r.int_or("micro_batch_size", 1, "Megatron default"));
  if (r.has("seq_length")) {
    rt.seq_length = positive(r, "seq_length", r.require_int("seq_length"));
  } else {
    rt.seq_length = 4096;
    r.note("seq_length", "4096", "Primus trainer_base.yaml default");
  }
  if (r.bool_quiet("fp16", false)) {
    rt.precision.params_dtype = Dtype::kFp16;
  } else if (r.has("bf16") || r.has("fp16")) {
    if (!r.bool_quiet("bf16", false)) {
      job.warnings.push_back(
          "neither bf16 nor fp16 is true: Megatron would train in fp32; "
          "projecting bf16 mixed precision");
    }
    rt.precision.params_dtype = Dtype::kBf16;
  } else {
    rt.precision.params_dtype = Dtype::kBf16;
    r.note("bf16", "true", "precision not given; assuming bf16 mixed precision");
  }
  if (const ConfigValue* fp8 = r.get("fp8")) {
    const bool on = fp8->kind == ConfigValue::Kind::kBool ? fp8->b : true;  // hybrid, e4m3...
    if (on) {
      const std::string recipe = lower(r.string_or("fp8_recipe", "delayed", "Megatron default"));
      if (recipe == "delayed") {
        rt.precision.fp8 = Fp8Recipe::kDelayed;
      } else if (recipe == "tensorwise") {
        rt.precision.fp8 = Fp8Recipe::kTensorwise;
      } else if (recipe == "blockwise") {
        rt.precision.fp8 = Fp8Recipe::kBlockwise;
      } else if (recipe == "mxfp8") {
        rt.precision.fp8 = Fp8Recipe::kMxfp8;
      } else {
        r.fail("fp8_recipe",
               fmt::format("unknown recipe '{}' (delayed, tensorwise, blockwise, mxfp8)", recipe));
      }
    }
  }
  rt.precision.fp8_param = r.bool_quiet("fp8_param_gather", false);
  if (rt.precision.fp8_param && rt.precision.fp8 == Fp8Recipe::kNone) {
    job.warnings.push_back("fp8_param_gather is set without fp8; ignored");
    rt.precision.fp8_param = false;
  }

  RecomputeSpec& rc = rt.recompute;
  const std::string gran = lower(r.string_or("recompute_granularity", "none", ""));
  if (gran == "full") {
    rc.granularity = RecomputeGranularity::kFull;
  } else if (gran == "selective") {
    rc.granularity = RecomputeGranularity::kSelective;
  } else if (gran != "none" && gran != "null") {
    r.fail("recompute_granularity", fmt::format("unknown '{}' (full, selective)", gran));
  }
  const std::string method = lower(r.string_or("recompute_method", "uniform", ""));
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
  rc.modules = string_list(r, "recompute_modules");
  if (rc.granularity == RecomputeGranularity::kSelective && rc.modules.empty()) {
    rc.modules = {"core_attn"};
    r.note("recompute_modules", "[core_attn]", "Megatron default for selective recompute");
  }
  rc.layer_ids = int_list(r, "recompute_layer_ids");
  for (int id : rc.layer_ids) {
    if (id < 0 || id >= model.num_layers()) {
      r.fail("recompute_layer_ids",
             fmt::format("layer {} is outside 0..{}", id, model.num_layers() - 1));
    }
  }
  rt.flash_attention = r.bool_or("use_flash_attn", false, "Megatron default");
  // Megatron's attention_backend: flash = the flash-attn package (FlashAttention-2 class), fused =
  // cuDNN through Transformer Engine, unfused = no fused kernel, auto/local = the platform default.
  if (r.has("attention_backend")) {
    const std::string backend = lower(r.string_or("attention_backend", "auto", ""));
    if (backend == "flash") {
      rt.attention_kernel = AttentionKernel::kFa2;
      rt.flash_attention = true;
    } else if (backend == "unfused") {
      rt.flash_attention = false;
    } else if (backend == "fused") {
      rt.flash_attention = true;
    } else if (backend != "auto" && backend != "local") {
      r.fail("attention_backend",
             fmt::format("unknown attention backend '{}' (flash, fused, unfused, local, auto)",
                         backend));
    }
  }
  rt.cross_entropy_fusion = r.bool_quiet("cross_entropy_loss_fusion", false);
  rt.sync_free_moe_stage = static_cast<int>(r.int_quiet("turbo_sync_free_moe_stage", 0));
  if (rt.sync_free_moe_stage < 0 || rt.sync_free_moe_stage > 3) {
    r.fail("turbo_sync_free_moe_stage", "must be 0..3");
  }
  rt.deepep = r.bool_quiet("use_turbo_deepep", false) || rt.sync_free_moe_stage > 0;
  const bool flex = r.has("moe_token_dispatcher_type") &&
                    lower(r.string_or("moe_token_dispatcher_type", "alltoall", "")) == "flex";
  rt.moe_dedup_dispatch = rt.deepep || flex || r.bool_quiet("moe_enable_deepep", false);
  if (r.has("pipeline_schedule_algorithm")) {
    rt.schedule = parse_schedule(r, "pipeline_schedule_algorithm",
                                 r.string_or("pipeline_schedule_algorithm", "auto", ""));
  }
  // Primus' runtime only switches to zero bubble when patch_zero_bubble is also set (its
  // projection ignored that: defect 12.2 #19, fixed here).
  if (rt.schedule == ScheduleKind::kAuto && r.bool_quiet("enable_zero_bubble", false) &&
      r.bool_quiet("patch_zero_bubble", false) && p.pp > 1) {
    rt.schedule = p.vpp > 1 ? ScheduleKind::kZbvFormatted : ScheduleKind::kZeroBubble;
  }
  const std::string opt = lower(r.string_or("optimizer", "adam", "Megatron default"));
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
  rt.main_grads_dtype = dtype_arg(r, "main_grads_dtype", Dtype::kFp32);
  rt.exp_avg_dtype = dtype_arg(r, "exp_avg_dtype", Dtype::kFp32);
  rt.exp_avg_sq_dtype = dtype_arg(r, "exp_avg_sq_dtype", Dtype::kFp32);
  if (!rt.precision_aware_optimizer &&
      (rt.main_grads_dtype != Dtype::kFp32 || rt.exp_avg_dtype != Dtype::kFp32 ||
       rt.exp_avg_sq_dtype != Dtype::kFp32)) {
    job.warnings.push_back(
        "main_grads_dtype / exp_avg_dtype / exp_avg_sq_dtype only apply with "
        "use_precision_aware_optimizer; Megatron keeps fp32 states");
    rt.main_grads_dtype = rt.exp_avg_dtype = rt.exp_avg_sq_dtype = Dtype::kFp32;
  }
  // --grad-reduce-in-bf16: the DDP gradient buffer (accumulation and reduction) is bf16; the
  // optimizer still steps fp32 master weights.
  if (r.bool_quiet("grad_reduce_in_bf16", false)) rt.main_grads_dtype = Dtype::kBf16;

  // ------------------------------------------------------------------------------ cluster
  ClusterSpec& cl = job.cluster;
  const std::string data_dir = request.data_dir.empty() ? default_data_dir() : request.data_dir;
  std::string hw = request.hardware;
  if (hw.empty() && request.env) {
    if (auto arch = request.env("PRIMUS_GPU_ARCH"); arch && !arch->empty()) hw = *arch;
  }
  if (hw.empty()) {
    hw = "mi300x";
    job.defaults.push_back({"hardware", hw, "no --hardware / --gpu-arch / PRIMUS_GPU_ARCH"});
  }
  cl.accelerator = load_accelerator(hw, data_dir);
  if (!request.hardware_config.empty()) {
    cl.network = load_network(request.hardware_config, data_dir);
  } else {
    cl.network = default_network_for(cl.accelerator, data_dir);
  }
  for (const std::string& k : cl.network.unknown_keys) {
    job.warnings.push_back(fmt::format("network: unknown key '{}' (ignored)", k));
  }
  auto env_int = [&](const char* var) -> std::optional<int> {
    if (!request.env) return std::nullopt;
    const auto v = request.env(var);
    if (!v || v->empty()) return std::nullopt;
    const ConfigValue c = resolve_plain_scalar(*v, {});
    if (c.kind != ConfigValue::Kind::kInt || c.i < 1 || c.i > (1 << 20)) {
      throw InputError({fmt::format("environment {}", var), 0, 0}, var,
                       fmt::format("expected a positive integer, got '{}'", *v));
    }
    return static_cast<int>(c.i);
  };
  if (request.cli.gpus_per_node) {
    cl.gpus_per_node = *request.cli.gpus_per_node;
    if (cl.gpus_per_node < 1) {
      throw InputError({"--gpus-per-node", 0, 0}, "gpus_per_node", "must be positive");
    }
  } else if (auto g = env_int("GPUS_PER_NODE")) {
    cl.gpus_per_node = *g;
  } else {
    cl.gpus_per_node =
        cl.accelerator.default_gpus_per_node > 0 ? cl.accelerator.default_gpus_per_node : 8;
    job.defaults.push_back({"gpus_per_node", fmt::format("{}", cl.gpus_per_node),
                            fmt::format("{} default", cl.accelerator.name)});
  }
  const int dense_group = p.tp * p.pp * p.cp;
  const int expert_group = p.etp * p.ep * p.pp;
  const int min_world = gcd_lcm(dense_group, expert_group);
  int min_nodes = 1;
  while ((min_nodes * cl.gpus_per_node) % min_world != 0) {
    if (++min_nodes > (1 << 16)) break;
  }
  if (request.cli.nodes) {
    cl.nodes = *request.cli.nodes;
    if (cl.nodes < 1) throw InputError({"--nodes", 0, 0}, "nodes", "must be positive");
  } else if (auto n = env_int("NNODES")) {
    cl.nodes = *n;
    if (cl.nodes < min_nodes) {
      job.warnings.push_back(fmt::format(
          "NNODES={} is fewer than the {} node(s) the parallelism needs; projecting {} node(s) "
          "(use --nodes to choose)",
          *n, min_nodes, min_nodes));
      cl.nodes = min_nodes;
    }
  } else {
    cl.nodes = min_nodes;
    job.defaults.push_back({"nodes", fmt::format("{}", min_nodes),
                            "minimum nodes for TP x PP x CP and ETP x EP x PP"});
  }

  // ---------------------------------------------------------------------------- validation
  const int world = cl.world_size();
  if (p.tp > cl.gpus_per_node && !p.allow_tp_beyond_node) {
    r.fail("tensor_model_parallel_size",
           fmt::format("TP {} spans more than one node of {} GPUs (pass --allow-tp-beyond-node "
                       "to project it anyway)",
                       p.tp, cl.gpus_per_node));
  }
  for (const LayerSpec& layer : model.layers) {
    if (layer.attention.num_heads % p.tp != 0) {
      r.fail("tensor_model_parallel_size",
             fmt::format("{} attention heads are not divisible by TP {}", layer.attention.num_heads,
                         p.tp));
    }
    if (layer.attention.kind == AttentionKind::kStandard &&
        layer.attention.num_query_groups % p.tp != 0) {
      r.fail("tensor_model_parallel_size",
             fmt::format("{} KV heads (num_query_groups) are not divisible by TP {}",
                         layer.attention.num_query_groups, p.tp));
    }
    if (layer.is_moe && layer.moe.num_experts % p.ep != 0) {
      r.fail("expert_model_parallel_size",
             fmt::format("{} experts are not divisible by EP {}", layer.moe.num_experts, p.ep));
    }
    break;  // every layer shares the attention shape and expert count
  }
  if (world % dense_group != 0) {
    r.fail("tensor_model_parallel_size",
           fmt::format("world size {} ({} nodes x {} GPUs) is not divisible by TP x PP x CP = "
                       "{} x {} x {} = {}",
                       world, cl.nodes, cl.gpus_per_node, p.tp, p.pp, p.cp, dense_group));
  }
  p.dp = world / dense_group;
  const bool has_moe = std::any_of(model.layers.begin(), model.layers.end(),
                                   [](const LayerSpec& l) { return l.is_moe; });
  if (has_moe && world % expert_group != 0) {
    r.fail("expert_model_parallel_size",
           fmt::format("world size {} is not divisible by ETP x EP x PP = {} x {} x {} = {}", world,
                       p.etp, p.ep, p.pp, expert_group));
  }
  p.expert_dp = world % expert_group == 0 ? world / expert_group : 1;
  if (!has_moe && (p.ep > 1 || r.has("expert_tensor_parallel_size"))) {
    if (p.ep > 1)
      job.warnings.push_back("expert_model_parallel_size > 1 on a dense model: ignored");
  }
  if (has_moe && p.tp > 1 && !p.sequence_parallel) {
    job.warnings.push_back("Megatron requires sequence_parallel with MoE and TP > 1");
  }
  if (p.cp > 1 && rt.seq_length % (2 * p.cp) != 0) {
    r.fail("seq_length", fmt::format("seq_length {} is not divisible by 2 x CP = {} (Megatron's "
                                     "load-balanced context parallelism)",
                                     rt.seq_length, 2 * p.cp));
  }
  if (r.has("global_batch_size")) {
    rt.global_batch_size = positive(r, "global_batch_size", r.require_int("global_batch_size"));
  } else {
    rt.global_batch_size = rt.micro_batch_size * p.dp;
    r.note("global_batch_size", fmt::format("{}", rt.global_batch_size),
           "Megatron default: micro_batch_size x DP");
  }
  if (rt.global_batch_size % (rt.micro_batch_size * p.dp) != 0) {
    r.fail(
        "global_batch_size",
        fmt::format("{} is not divisible by micro_batch_size x DP = {} x {} = {}",
                    rt.global_batch_size, rt.micro_batch_size, p.dp, rt.micro_batch_size * p.dp));
  }
  if (p.vpp > 1 && rt.schedule == ScheduleKind::kAuto && job.num_microbatches() % p.pp != 0) {
    job.warnings.push_back(fmt::format(
        "{} microbatches are not a multiple of PP {}: Megatron's interleaved schedule requires it",
        job.num_microbatches(), p.pp));
  }
  return job;
}

}  // namespace projector
