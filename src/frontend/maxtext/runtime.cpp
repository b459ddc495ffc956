// MaxText runtime keys -> the draft (docs/maxtext.md "Batch", "Precision", "Remat", "MoE").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "frontend/maxtext/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

Dtype dtype_of(MaxTextReader& r, const std::string& key, const std::string& fallback) {
  const std::string name = r.text(key, fallback);
  const std::optional<Dtype> dt = maxtext::parse_dtype_name(name.empty() ? fallback : name);
  if (!dt) r.fail(key, fmt::format("unknown dtype '{}'", name));
  return *dt;
}

void read_batches(MaxTextReader& r, JobDraft& d) {
  const double pdbs = r.number("per_device_batch_size", 12.0);
  if (!(pdbs > 0.0)) r.fail("per_device_batch_size", "must be positive");
  d.per_device_batch = pdbs;
  const std::int64_t ga = r.integer("gradient_accumulation_steps", 1);
  if (ga < 1 || ga > kMaxCount) r.fail("gradient_accumulation_steps", "must be at least 1");
  d.gradient_accumulation = static_cast<int>(ga);
  const std::int64_t seq = r.integer("max_target_length", 2048);
  if (seq < 1 || seq > kMaxCount) r.fail("max_target_length", "must be a positive integer");
  d.seq_length = static_cast<int>(seq);
  // num_vocab_tiling (base.yml:700-705; types.py:586-589): the loss runs over this many tiles of
  // the batch x sequence tokens (utils/vocabulary_tiling.py:136-277: a custom VJP saves only the
  // head's input, and its backward recomputes each tile's logits); decoders.py:1310-1312 skips
  // the full logits. MaxText requires the tiles to divide pdbs x max_target_length
  // (types.py:3999-4002).
  const std::int64_t tiles = r.integer("num_vocab_tiling", 1);
  if (tiles < 1 || tiles > kMaxCount) r.fail("num_vocab_tiling", "must be a positive integer");
  if (std::fmod(pdbs * static_cast<double>(seq), static_cast<double>(tiles)) != 0.0) {
    r.fail(tiles > 1 ? "num_vocab_tiling" : "per_device_batch_size",
           fmt::format("per_device_batch_size x max_target_length = {} x {} is not divisible by "
                       "{} vocab tiles (MaxText types.py:3999-4002)",
                       pdbs, seq, tiles));
  }
  d.runtime.vocab_tiles = static_cast<int>(tiles);
  if (tiles > 1 && r.boolean("vocab_tiling_ag_once", false)) {
    d.warnings.push_back(
        "vocab_tiling_ag_once: gathering the output head once for the tiled loss "
        "(base.yml:706-709) "
        "is not modelled; its gathers and memory are projected as without it");
  }
}

// dtype (activations, GEMM inputs), weight_dtype (stored weights, no master copy: optax updates
// them in place), grad_dtype, the optimizer and its first-moment dtype (mu_dtype, default the
// weights'; optax keeps the second moment in the weights' dtype).
void read_precision(MaxTextReader& r, JobDraft& d) {
  PrecisionSpec& p = d.runtime.precision;
  p.params_dtype = dtype_of(r, "dtype", "bfloat16");
  const Dtype weights = dtype_of(r, "weight_dtype", "float32");
  if (weights != p.params_dtype) p.weights_storage = weights;
  d.main_grads_dtype = dtype_of(r, "grad_dtype", "float32");
  d.runtime.master_weights = false;
  const std::string opt = to_lower(r.text("opt_type", "adamw"));
  if (opt == "adamw" || opt == "adam_pax" || opt == "adam") {
    d.runtime.optimizer = OptimizerKind::kAdam;
  } else if (opt == "sgd") {
    d.runtime.optimizer = OptimizerKind::kSgd;
  } else if (opt == "muon") {
    d.runtime.optimizer = OptimizerKind::kMuon;
  } else {
    r.fail("opt_type", fmt::format("unknown optimizer '{}' (adamw, adam_pax, sgd, muon)", opt));
  }
  const std::string mu = r.text("mu_dtype", "");
  d.runtime.exp_avg_dtype = mu.empty() ? weights : dtype_of(r, "mu_dtype", "float32");
  d.runtime.exp_avg_sq_dtype = weights;
  d.runtime.optimizer_host_offload = r.boolean("optimizer_memory_host_offload", false);
  if (r.boolean("parameter_memory_host_offload", false)) {
    d.warnings.push_back(
        "parameter_memory_host_offload: weights kept in host memory are not modelled; the "
        "memory projection counts them on the device");
  }
  const std::string q = r.text("quantization", "");
  const std::optional<maxtext::Quantization> quant = maxtext::parse_quantization(q);
  if (!quant) r.fail("quantization", fmt::format("unknown quantization '{}'", q));
  if (quant->quantized) {
    d.fp8 = true;
    d.fp8_recipe = quant->recipe;
    if (quant->int8) {
      d.warnings.push_back(fmt::format(
          "quantization {}: int8 GEMMs are priced as 8-bit (fp8) GEMMs, at the bf16 rate on an "
          "accelerator without an fp8 peak",
          q));
    }
  }
}

void read_remat(MaxTextReader& r, JobDraft& d) {
  const std::string name = to_lower(r.text("remat_policy", "full"));
  const std::optional<TensorPolicy> policy =
      maxtext::remat_policy(name, [&r](std::string_view key) -> std::optional<std::string> {
        const std::string k(key);
        if (r.base_value(k) == nullptr && !r.stated(k)) return std::nullopt;
        return r.text(k, "remat");
      });
  if (!policy) {
    r.fail("remat_policy", fmt::format("unknown remat policy '{}' ({}; custom tensors take remat, "
                                       "device or offload)",
                                       name, fmt::join(maxtext::remat_policy_names(), ", ")));
  }
  RecomputeSpec& rc = d.runtime.recompute;
  rc = RecomputeSpec{};
  rc.granularity = RecomputeGranularity::kTensors;
  rc.tensors = *policy;
  // The named policies, for a re-layout that picks one (the sweep, the memory remedies).
  d.runtime.tensor_policies = maxtext::named_remat_policies();
}

// shard_exp_on_fsdp (MX1 base.yml; fsdp_shard_on_exp before its 2026-01-05 rename): moe.py (MX6)
// gives the routed experts' wi / wo kernels their expert dimension on the FSDP axes ("embed_moe" /
// "embed_no_exp") and leaves their embed dimension whole. Each device holds num_experts / FSDP
// whole experts instead of 1 / FSDP of every expert: the same bytes, gathered the same way, when
// the FSDP shards divide the experts (the builder warns otherwise). MaxText refuses it beside
// expert or tensor parallelism (its configuration check raises a ValueError, MX4).
void read_expert_sharding(MaxTextReader& r, JobDraft& d) {
  const bool modern = r.stated("shard_exp_on_fsdp");
  const bool legacy = r.stated("fsdp_shard_on_exp");
  if (modern && legacy &&
      r.boolean("shard_exp_on_fsdp", false) != r.boolean("fsdp_shard_on_exp", false)) {
    r.fail("fsdp_shard_on_exp", "contradicts shard_exp_on_fsdp (its name since 2026-01-05)");
  }
  const std::string key = modern || !legacy ? "shard_exp_on_fsdp" : "fsdp_shard_on_exp";
  if (!r.boolean(key, false)) return;
  for (const char* axis :
       {"ici_expert_parallelism", "ici_tensor_parallelism", "ici_tensor_transpose_parallelism"}) {
    if (r.integer(axis, 1) > 1) {  // -1 (auto) may resolve to 1: left to MaxText
      r.fail(key, fmt::format("MaxText requires ici_expert_parallelism = 1 and "
                              "ici_tensor_parallelism / ici_tensor_transpose_parallelism = 1 "
                              "with it ({} is {})",
                              axis, r.integer(axis, 1)));
    }
  }
  d.experts_on_fsdp_key = key;
  d.experts_on_fsdp_where = r.where(key);
}

void read_attention_and_moe(MaxTextReader& r, JobDraft& d) {
  const std::string attention = to_lower(r.text("attention", "autoselected"));
  // autoselected picks the flash kernel (splash on TPU, cuDNN / TE on GPU) for training.
  d.flash_attention = attention != "dot_product";
  d.attention_kernel = AttentionKernel::kFused;
  // XLA fuses the log-softmax and the loss into one pass over the logits (and their gradient).
  d.runtime.cross_entropy_fusion = true;
  d.runtime.whole_step_compiled = true;
  d.runtime.logged_flops = RuntimeSpec::LoggedFlops::kMaxText;
  if (r.integer("num_experts", 1) <= 1) return;
  read_expert_sharding(r, d);
  // use_random_routing (base.yml:228; layers/moe.py:721-727): random expert choices, balanced in
  // expectation whatever the data, so no learned-router skew.
  if (r.boolean("use_random_routing", false)) d.runtime.moe_routing = MoeRouting::kForced;
  if (r.boolean("sparse_matmul", true)) {
    d.runtime.moe_dispatch = MoeDispatchKind::kPermute;
    // Primus-Turbo's DeepEP (ROCm MaxText, use_turbo_deepep_dispatch) or MaxText's
    // ragged_all_to_all: a static worst-case receive buffer per expert-parallel rank.
    const bool deepep = r.boolean("use_turbo_deepep_dispatch", false);
    d.runtime.deepep = d.runtime.moe_dedup_dispatch = deepep;
    int ep = 1;
    for (const MeshAxis& a : d.mesh) {
      if (a.role == MeshRole::kExpert) ep = std::max(1, a.ici) * std::max(1, a.dcn);
    }
    d.runtime.moe_static_recv_factor = maxtext::static_recv_factor(
        deepep, ep, static_cast<int>(r.integer("num_experts", 1)),
        static_cast<int>(r.integer("num_experts_per_tok", 1)),
        r.number("ragged_buffer_factor", -1.0), r.boolean("use_ragged_sort", false));
  } else {
    d.runtime.moe_dispatch = r.number("capacity_factor", -1.0) > 0.0
                                 ? MoeDispatchKind::kDenseCapacity
                                 : MoeDispatchKind::kDenseAll;
  }
}

// compile_xla_flags (MX1, MX11: train.py compiles the step with them as options): the XLA
// flags that decide whether MaxText's tensor-parallel all-reduce (the partial sums of a
// row-sharded matmul: activations are replicated over the tensor axis, logical_axis_rules) runs
// asynchronously beside the neighbouring compute. That takes the all-reduce half of
// continuation fusion, MaxText's CF_FOR_ALL_REDUCE set (MX11):
// xla_enable_async_all_reduce, xla_tpu_enable_async_collective_fusion(_fuse_all_reduce) and
// xla_tpu_overlap_compute_collective_tc. The library enables only the all-gather half by default,
// so an unstated set leaves the all-reduce synchronous (the profile's tp_comm_overlap).
struct XlaFlag {
  const char* name;
  bool fallback;  // libtpu's value when unstated (xla_flags_library: CF for all-gather is on)
};
constexpr XlaFlag kAllReduceOverlapFlags[] = {
    {"xla_enable_async_all_reduce", false},
    {"xla_tpu_enable_async_collective_fusion", true},
    {"xla_tpu_enable_async_collective_fusion_fuse_all_reduce", false},
    {"xla_tpu_overlap_compute_collective_tc", true}};

bool flag_bool(MaxTextReader& r, const std::string& name, const std::string& v) {
  const std::string t = to_lower(v);
  if (t.empty() || t == "true" || t == "1") return true;
  if (t == "false" || t == "0") return false;
  r.fail("compile_xla_flags", fmt::format("--{}={}: expected true or false", name, v));
}

void read_xla_flags(MaxTextReader& r, JobDraft& d) {
  const std::string text = r.text("compile_xla_flags", "");
  if (text.empty()) return;
  std::map<std::string, bool> stated;
  std::vector<std::string> other;
  std::istringstream tokens(text);
  for (std::string token; tokens >> token;) {
    if (!token.starts_with("--")) {
      r.fail("compile_xla_flags", fmt::format("'{}' is not an --xla flag", token));
    }
    const std::size_t eq = token.find('=');
    const std::string name = token.substr(2, eq == std::string::npos ? eq : eq - 2);
    const std::string value = eq == std::string::npos ? "" : token.substr(eq + 1);
    const bool known =
        std::any_of(std::begin(kAllReduceOverlapFlags), std::end(kAllReduceOverlapFlags),
                    [&name](const XlaFlag& f) { return name == f.name; });
    if (known) {
      stated[name] = flag_bool(r, name, value);
    } else {
      other.push_back(name);
    }
  }
  if (!other.empty()) {
    d.warnings.push_back(fmt::format(
        "compile_xla_flags: {} flag(s) without a modelled effect, priced as libtpu's defaults: {}",
        other.size(), fmt::join(other, ", ")));
  }
  if (stated.empty()) return;
  // The set is libtpu's: a GPU job (hardware gpu / gpu_multiprocess) compiles without it.
  if (!to_lower(r.text("hardware", "tpu")).starts_with("tpu")) {
    d.warnings.push_back(
        "compile_xla_flags: the async all-reduce flags are libtpu's; a GPU job (hardware) keeps "
        "its tensor-parallel all-reduce synchronous");
    return;
  }
  bool on = true;
  for (const XlaFlag& f : kAllReduceOverlapFlags) {
    const auto it = stated.find(f.name);
    on = on && (it != stated.end() ? it->second : f.fallback);
  }
  d.tp_comm_overlap = on;
  d.set_origin(DraftField::kTpCommOverlap, "compile_xla_flags", r.where("compile_xla_flags"));
}

// hardware and compile_topology (AOT compilation target): what accelerator and how many devices.
void read_target(MaxTextReader& r, JobDraft& d) {
  const std::string hw = to_lower(r.text("hardware", "tpu"));
  const std::string topology = r.text("compile_topology", "");
  if (!topology.empty()) {
    const std::optional<maxtext::Topology> t = maxtext::parse_compile_topology(topology);
    if (!t) {
      r.fail("compile_topology",
             fmt::format("unknown topology '{}' (v4-N, v5p-N, v5e-N, v6e-N, tpu7x-N)", topology));
    }
    const std::int64_t slices =
        std::max<std::int64_t>(1, r.integer("compile_topology_num_slices", 1));
    d.hardware = t->accelerator;
    d.hardware_reason = "compile_topology " + topology;
    d.devices = t->devices * slices;
    d.slices = static_cast<int>(slices);
    return;
  }
  if (hw == "tpu") {
    const ProfileDefault<std::string>& acc = d.profile.accelerator;
    if (!acc.value) {
      r.fail("hardware", "names no TPU generation: give compile_topology or --hardware");
    }
    d.hardware = *acc.value;
    d.hardware_reason =
        fmt::format("hardware: tpu without --hardware or compile_topology: {} ({}: {})", *acc.value,
                    d.profile.name, acc.source);
  } else if (hw == "cpu") {
    r.fail("hardware", "CPU training is not modelled");
  }
}

}  // namespace

void read_maxtext_runtime(MaxTextReader& r, JobDraft& d) {
  read_batches(r, d);
  read_precision(r, d);
  read_remat(r, d);
  read_attention_and_moe(r, d);
  read_target(r, d);
  read_xla_flags(r, d);
}

}  // namespace projector::frontend_detail
