// A published MaxText run -> the draft, read with MaxText's semantics (frontend/maxtext.h): the
// mesh its training.parallelism states as ici_* / dcn_* axes (else MaxText's default: the FSDP
// axis takes every device of a slice, the data axis every slice), the per-device batch and the
// gradient accumulation that makes up the stated global batch, the remat policy, the dtypes, the
// MoE dispatch, and the architecture of the MaxText model config named by its arch_source.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "projector/frontend/maxtext.h"
#include "projector/job/mesh.h"
#include "projector/util/bounds.h"
#include "projector/util/text.h"
#include "validate/mapper.h"

namespace projector::validate_detail {
namespace {

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// "ici_fsdp_parallelism=64", "dcn_data=-1", "ici_fsdp_parallelism = -1 (512)" -> sizes by key.
std::vector<std::pair<maxtext::MeshKey, int>> mesh_settings(const std::string& text) {
  std::vector<std::pair<maxtext::MeshKey, int>> out;
  const std::string t = to_lower(text);
  for (std::size_t i = 0; i + 4 < t.size(); ++i) {
    if ((t.compare(i, 4, "ici_") != 0 && t.compare(i, 4, "dcn_") != 0) ||
        (i > 0 && is_word(t[i - 1]))) {
      continue;
    }
    std::size_t j = i;
    while (j < t.size() && is_word(t[j])) ++j;
    std::string key = t.substr(i, j - i);
    if (!key.ends_with("_parallelism")) key += "_parallelism";
    while (j < t.size() && t[j] == ' ') ++j;
    if (j >= t.size() || t[j] != '=') continue;
    ++j;
    while (j < t.size() && t[j] == ' ') ++j;
    const char* start = t.c_str() + j;
    char* end = nullptr;
    const long v = std::strtol(start, &end, 10);
    const std::optional<maxtext::MeshKey> mk = maxtext::parse_mesh_key(key);
    // Past the largest world a size is kept one above it (never narrowed), for the builder to
    // refuse.
    const long size = v < -1 ? 0 : std::min<long>(v, kMaxWorldSize + 1);
    if (end != start && mk) out.push_back({*mk, static_cast<int>(size)});
  }
  return out;
}

// The mesh: stated axes, MaxText's defaults for the rest (ici_fsdp -1, dcn_data -1), and the
// tensor / expert / context sizes of the entry's training block when the text does not name them.
void map_mesh(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  std::vector<MeshAxis> mesh;
  for (const maxtext::MeshAxisName& a : maxtext::mesh_axis_names()) {
    MeshAxis x;
    x.role = a.role;
    x.name = std::string(a.axis);
    x.ici = a.axis == "fsdp" ? -1 : 1;
    x.dcn = a.axis == "data" ? -1 : 1;
    mesh.push_back(x);
  }
  auto axis = [&](std::string_view name) -> MeshAxis& {
    return *std::find_if(mesh.begin(), mesh.end(),
                         [&](const MeshAxis& x) { return x.name == name; });
  };
  const auto stated = mesh_settings(t.parallelism);
  bool named[2][16] = {};
  for (const auto& [key, v] : stated) {
    MeshAxis& x = axis(key.axis->axis);
    (key.dcn ? x.dcn : x.ici) = v;
    named[key.dcn ? 1 : 0][&x - mesh.data()] = true;
  }
  const std::pair<const std::optional<int>*, std::string_view> sizes[] = {
      {&t.tp, "tensor"}, {&t.ep, "expert"}, {&t.cp, "context"}, {&t.pp, "stage"}};
  for (const auto& [v, name] : sizes) {
    MeshAxis& x = axis(name);
    const bool any = named[0][&x - mesh.data()] || named[1][&x - mesh.data()];
    if (v->has_value() && **v > 1 && !any) {
      x.ici = **v;
      m.note(fmt::format("training.{}: {} read as ici_{}_parallelism",
                         name == "stage"    ? "pp"
                         : name == "tensor" ? "tp"
                         : name == "expert" ? "ep"
                                            : "cp",
                         **v, name == "stage" ? "pipeline" : name));
    }
  }
  if (stated.empty()) {
    m.assume("training.parallelism", "ici_fsdp_parallelism=-1, dcn_data_parallelism=-1",
             "no ici_* / dcn_* axes stated; MaxText base.yml defaults (FSDP within a slice, data "
             "parallelism across slices)");
  }
  mesh.erase(std::remove_if(mesh.begin(), mesh.end(),
                            [](const MeshAxis& x) { return x.ici == 1 && x.dcn == 1; }),
             mesh.end());
  m.d_.mesh = std::move(mesh);
  m.d_.parallel.fsdp_per_layer = true;
  const std::string text = to_lower(t.parallelism);
  for (const char* custom : {"hybrid_ring_64x4", "hybrid_ring_32x8"}) {
    if (text.find(custom) != std::string::npos) m.d_.mesh_placement = custom;
  }
  if (const std::size_t p = text.find("topology"); p != std::string::npos) {
    std::size_t i = p + 8;
    while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t j = i;
    while (j < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == 'x')) {
      ++j;
    }
    m.d_.slice_shape = parse_slice_shape(text.substr(i, j - i));
    if (!m.d_.slice_shape.empty()) {
      m.note("training.parallelism: slice topology " + to_string(m.d_.slice_shape));
    }
  }
}

// remat_policy=<name>; for custom, the tensors the text names, offloaded when it says so.
void map_remat(Mapper& m) {
  const std::string text = to_lower(m.e_.training.recompute);
  std::string name = "full";
  if (const std::size_t p = text.find("remat_policy"); p != std::string::npos) {
    std::size_t i = p + 12;
    while (i < text.size() && !is_word(text[i])) ++i;
    std::size_t j = i;
    while (j < text.size() && is_word(text[j])) ++j;
    if (j > i) name = text.substr(i, j - i);
  } else {
    m.assume("training.recompute", "remat_policy=full",
             text.empty() ? "not stated; MaxText base.yml default"
                          : "no remat_policy named in '" + m.e_.training.recompute + "'");
  }
  // Each named tensor where its clause's verb puts it: "decoder_layer_input offloaded" on the
  // host, "q/k/v_proj rematerialized" recomputed, "out_proj saved" on the device (phrases.h).
  const std::string& stated = m.e_.training.recompute;
  const std::optional<TensorPolicy> policy =
      maxtext::remat_policy(name, [&](std::string_view key) -> std::optional<std::string> {
        return stated_placement(stated, std::string(key));
      });
  if (!policy) return m.fail("training.recompute: unknown remat policy '" + name + "'");
  RecomputeSpec& rc = m.d_.runtime.recompute;
  rc = RecomputeSpec{};
  rc.granularity = RecomputeGranularity::kTensors;
  rc.tensors = *policy;
  m.d_.runtime.tensor_policies = maxtext::named_remat_policies();
  std::string kept;
  for (int i = 0; i < kNumLayerTensors; ++i) {
    const auto lt = static_cast<LayerTensor>(i);
    if (policy->kept(lt)) {
      kept += fmt::format("{}{}{}", kept.empty() ? "" : ", ", to_string(lt),
                          policy->on_host(lt) ? " (host)" : "");
    }
  }
  m.note(fmt::format("training.recompute: remat_policy {} keeps {}", name, kept));
}

std::optional<double> number_after(const std::string& text, const char* key) {
  const std::size_t p = text.find(key);
  if (p == std::string::npos) return std::nullopt;
  std::size_t i = p + std::string(key).size();
  while (i < text.size() && (text[i] == ' ' || text[i] == '=' || text[i] == ':')) ++i;
  char* end = nullptr;
  const double v = std::strtod(text.c_str() + i, &end);
  if (end == text.c_str() + i || !std::isfinite(v)) return std::nullopt;
  return v;
}

// dtype / weight_dtype / mu_dtype / grad_dtype / quantization as the precision text states them;
// MaxText's defaults (fp32 weights, mu and grads in the weights' dtype) otherwise.
void map_precision(Mapper& m) {
  read_precision(m, m.e_.training.precision);
  const std::string t = to_lower(m.e_.training.precision);
  RuntimeSpec& rt = m.d_.runtime;
  Dtype weights = Dtype::kFp32;
  if (has(t, "weight_dtype=bfloat16") || has(t, "weight_dtype bfloat16") ||
      has(t, "weights/optimizer mu in bf16") || has(t, "bf16 master") || has(t, "bf16 weights") ||
      has(t, "weight_dtype=bf16")) {
    weights = Dtype::kBf16;
  } else if (!has(t, "fp32 weights") && !has(t, "weight_dtype=float32") && !has(t, "fp32 master")) {
    m.assume("training.weight_dtype", "float32", "not stated; MaxText base.yml default");
  }
  rt.precision.weights_storage =
      weights != rt.precision.params_dtype ? std::optional<Dtype>(weights) : std::nullopt;
  rt.master_weights = false;
  rt.exp_avg_dtype = has(t, "mu_dtype=bfloat16") ? Dtype::kBf16 : weights;
  rt.exp_avg_sq_dtype = weights;
  m.d_.main_grads_dtype = has(t, "grad_dtype=bfloat16") ? Dtype::kBf16 : Dtype::kFp32;
  // The quantization the text names (`quantization=<name>`, or a bare fp8_full), read as the
  // MaxText adapter reads the config key (frontend/maxtext.h parse_quantization): one reading.
  std::string name;
  if (const std::size_t at = t.find("quantization="); at != std::string::npos) {
    for (std::size_t i = at + 13;
         i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_'); ++i) {
      name.push_back(t[i]);
    }
  } else if (has(t, "fp8_full")) {
    name = "fp8_full";
  }
  if (name.empty()) return;
  const std::optional<maxtext::Quantization> q = maxtext::parse_quantization(name);
  if (!q) {
    m.fail(fmt::format("training.precision: quantization '{}' is not modelled", name));
    return;
  }
  if (!q->quantized) return;
  m.d_.fp8 = true;
  m.d_.fp8_recipe = q->recipe;
  if (q->int8) m.note("int8 GEMMs priced as 8-bit (fp8) GEMMs, as the MaxText adapter does");
}

// sparse_matmul / megablox / tokamax / ragged: permute + grouped GEMM; dense_matmul: capacity
// buffers (or every expert on every token without a capacity factor); DeepEP dispatch.
void map_moe(Mapper& m) {
  if (!m.out_.moe) return;
  const std::string t = to_lower(m.e_.training.moe_dispatcher);
  RuntimeSpec& rt = m.d_.runtime;
  const std::optional<double> cf = number_after(t, "capacity_factor")
                                       ? number_after(t, "capacity_factor")
                                       : number_after(t, "cf");
  const bool dropping = m.e_.training.token_dropping.value_or(false);
  if (has(t, "dense_matmul")) {
    rt.moe_dispatch =
        cf && *cf > 0.0 ? MoeDispatchKind::kDenseCapacity : MoeDispatchKind::kDenseAll;
  } else {
    rt.moe_dispatch = MoeDispatchKind::kPermute;
  }
  if (has(t, "deepep")) rt.deepep = rt.moe_dedup_dispatch = true;
  if (rt.moe_dispatch == MoeDispatchKind::kPermute) {
    int ep = 1;
    for (const MeshAxis& a : m.d_.mesh) {
      if (a.role == MeshRole::kExpert) ep = std::max(1, a.ici) * std::max(1, a.dcn);
    }
    int experts = 0, topk = 1;
    for (const LayerSpec& l : m.d_.model.layers) {
      if (l.is_moe) experts = l.moe.num_experts, topk = l.moe.topk;
    }
    rt.moe_static_recv_factor = maxtext::static_recv_factor(rt.deepep, ep, experts, topk);
    if (rt.moe_static_recv_factor > 0.0) {
      m.note(
          fmt::format("static receive buffer {} x the routed rows per expert rank (dropless "
                      "dispatch in static shapes)",
                      rt.moe_static_recv_factor));
    }
  }
  const double factor = cf && *cf > 0.0 && (dropping || has(t, "dense_matmul")) ? *cf : 0.0;
  for (LayerSpec& l : m.d_.model.layers) {
    if (l.is_moe) l.moe.capacity_factor = factor;
  }
  m.note(fmt::format("training.moe_dispatcher: {} dispatch{}", to_string(rt.moe_dispatch),
                     factor > 0.0 ? fmt::format(", capacity factor {}", factor) : ", dropless"));
}

// The architecture of the MaxText model config arch_source names (".../configs/models/<n>.yml"),
// when it matches the entry's layers and hidden size.
void map_architecture(Mapper& m) {
  const std::string src = m.e_.model.arch_source;
  const std::size_t p = src.find("configs/models/");
  if (p == std::string::npos) return;
  const std::size_t b = p + 15;
  const std::size_t e = src.find(".yml", b);
  if (e == std::string::npos) return;
  const std::string name = src.substr(b, e - b);
  ModelSpec model;
  try {
    model = maxtext::model_from_config(name, m.data_dir);
  } catch (const InputError& ex) {
    m.note("model.arch_source: MaxText model config '" + name +
           "' not bundled; the model block "
           "is used (" +
           ex.message() + ")");
    return;
  }
  const RunEntry::Model& em = m.e_.model;
  if ((em.num_layers && *em.num_layers != model.num_layers()) ||
      (em.hidden_size && *em.hidden_size != model.hidden_size)) {
    m.note("model.arch_source: MaxText model config '" + name +
           "' disagrees with the model block; the model block is used");
    return;
  }
  model.name = m.d_.model.name.empty() ? name : m.d_.model.name;
  m.d_.model = std::move(model);
  m.d_.attention_dropout = m.d_.hidden_dropout = 0.0;
  m.d_.vocab_padding = 1;
  m.note("model: the architecture of MaxText's model config '" + name +
         "' (data/frameworks/maxtext/models), as arch_source names it");
}

// per_device_batch_size, and the accumulation steps the stated global batch implies.
void map_batch(Mapper& m, const ClusterSpec& cl) {
  RunEntry::Training t = m.e_.training;
  const std::int64_t devices = static_cast<std::int64_t>(m.e_.hardware.count.value_or(0)) *
                               std::max(1, cl.accelerator.devices_per_chip);
  if (!t.per_device_batch_size) {
    // A run that states only its global batch: MaxText's batch is per device, so the global
    // batch over the devices without accumulation (the smallest per-device batch that trains it).
    if (!t.global_batch_size || devices <= 0) {
      m.fail("training.per_device_batch_size not stated, nor a global batch to derive it from");
      return;
    }
    t.per_device_batch_size = static_cast<double>(*t.global_batch_size) / devices;
    m.assume("training.per_device_batch_size", fmt::format("{:g}", *t.per_device_batch_size),
             fmt::format("not stated; global batch {} over {} devices, no gradient accumulation",
                         *t.global_batch_size, devices));
  }
  m.d_.per_device_batch = *t.per_device_batch_size;
  // MaxText trains on int(devices x per_device_batch_size) per step (types.py:3458-3466).
  const auto per_step =
      static_cast<std::int64_t>(*t.per_device_batch_size * static_cast<double>(devices));
  if (t.global_batch_size && per_step > 0 && *t.global_batch_size % per_step == 0 &&
      *t.global_batch_size / per_step > 1) {
    m.d_.gradient_accumulation = static_cast<int>(*t.global_batch_size / per_step);
    m.note(fmt::format(
        "training.global_batch_size {} = per_device_batch_size {} x {} devices x "
        "{} accumulation steps",
        *t.global_batch_size, *t.per_device_batch_size, devices, m.d_.gradient_accumulation));
  } else if (t.global_batch_size && *t.global_batch_size != per_step) {
    m.note(
        fmt::format("training.global_batch_size {} differs from per_device_batch_size x {} "
                    "devices = {}; the per-device batch is used",
                    *t.global_batch_size, devices, per_step));
  }
}

}  // namespace

void map_maxtext_training(Mapper& m, const ClusterSpec& cl) {
  map_architecture(m);
  map_mesh(m);
  map_batch(m, cl);
  map_remat(m);
  map_precision(m);
  map_moe(m);
  m.d_.flash_attention = m.e_.training.flash_attention.value_or(true);
  m.d_.attention_kernel = AttentionKernel::kFused;
  m.d_.runtime.cross_entropy_fusion = true;  // XLA fuses the loss (as the adapter reads MaxText)
  m.d_.runtime.whole_step_compiled = true;
  m.d_.runtime.logged_flops = RuntimeSpec::LoggedFlops::kMaxText;
  m.d_.layer_split.allow_uneven = true;
  m.d_.parallel.allow_tp_beyond_node = true;
}

}  // namespace projector::validate_detail
