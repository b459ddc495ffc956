// MaxText semantics (frontend/maxtext.h). Sources: docs/maxtext.md.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "projector/frontend/maxtext.h"
#include "projector/util/text.h"

namespace projector::maxtext {
namespace {

using T = LayerTensor;

// remat_policy presets (MX3 decoders.py get_remat_policy and minimal_policy; MX2 maxtext_utils.py
// get_save_and_offload_names): the checkpoint names each saves on the device / offloads.
struct Preset {
  std::string_view name;
  std::vector<std::string_view> device;
  std::vector<std::string_view> host;
};

const std::vector<std::string_view>& minimal_names() {
  static const std::vector<std::string_view> k = {"query_proj", "value_proj", "key_proj", "kv_proj",
                                                  "qkv_proj",   "out_proj",   "mlpwi_0",  "mlpwi_1",
                                                  "mlpwi",      "mlpwo"};
  return k;
}

std::vector<std::string_view> with(std::vector<std::string_view> v, std::string_view extra) {
  v.push_back(extra);
  return v;
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> k = {
      {"full", {}, {}},
      {"none", {}, {}},  // same policy (None: nothing saveable) in get_remat_policy
      {"minimal", minimal_names(), {}},
      {"minimal_with_context", with(minimal_names(), "context"), {}},
      {"minimal_flash", with(minimal_names(), "context"), {}},
      {"minimal_with_quantization", minimal_names(), {}},
      {"minimal_with_context_and_quantization", with(minimal_names(), "context"), {}},
      {"save_dot_with_context_except_mlp",
       {"query_proj", "value_proj", "key_proj", "kv_proj", "qkv_proj", "context", "out_proj"},
       {}},
      {"save_dot_except_mlpwi",
       {"query_proj", "value_proj", "key_proj", "kv_proj", "qkv_proj", "out_proj", "mlpwo"},
       {}},
      {"save_dot_except_mlp",
       {"query_proj", "value_proj", "key_proj", "kv_proj", "qkv_proj", "out_proj"},
       {}},
      {"save_qkv_proj", {"query_proj", "value_proj", "key_proj", "kv_proj", "qkv_proj"}, {}},
      {"qkv_proj_offloaded", {}, {"query_proj", "value_proj", "key_proj", "kv_proj"}},
      {"minimal_offloaded", {}, minimal_names()},
      {"save_out_proj", {"out_proj"}, {}},
  };
  return k;
}

void place(TensorPolicy& p, std::string_view name, TensorPlacement where) {
  for (const LayerTensor t : remat_tensor_names(name)) p.set(t, where);
}

}  // namespace

const std::vector<MeshAxisName>& mesh_axis_names() {
  static const std::vector<MeshAxisName> k = {
      {"diloco", "diloco", MeshRole::kOther},
      {"data", "data", MeshRole::kData},
      {"stage", "pipeline", MeshRole::kStage},
      {"fsdp", "fsdp", MeshRole::kFsdp},
      {"fsdp_transpose", "fsdp_transpose", MeshRole::kFsdpTranspose},
      {"sequence", "sequence", MeshRole::kContext},
      {"context", "context", MeshRole::kContext},
      {"context_usp_ulysses", "context_usp_ulysses", MeshRole::kContext},
      {"context_autoregressive", "context_autoregressive", MeshRole::kOther},
      {"tensor", "tensor", MeshRole::kTensor},
      {"tensor_transpose", "tensor_transpose", MeshRole::kTensor},
      {"tensor_sequence", "tensor_sequence", MeshRole::kTensorSequence},
      {"expert", "expert", MeshRole::kExpert},
      {"autoregressive", "autoregressive", MeshRole::kOther},
  };
  return k;
}

std::optional<MeshKey> parse_mesh_key(std::string_view key) {
  constexpr std::string_view kSuffix = "_parallelism";
  MeshKey out;
  if (key.starts_with("ici_")) {
    key.remove_prefix(4);
  } else if (key.starts_with("dcn_")) {
    key.remove_prefix(4);
    out.dcn = true;
  } else {
    return std::nullopt;
  }
  if (!key.ends_with(kSuffix)) return std::nullopt;
  key.remove_suffix(kSuffix.size());
  for (const MeshAxisName& a : mesh_axis_names()) {
    if (a.key == key) {
      out.axis = &a;
      return out;
    }
  }
  return std::nullopt;
}

std::vector<LayerTensor> remat_tensor_names(std::string_view n) {
  if (n == "decoder_layer_input") return {T::kLayerInput};
  if (n == "query_proj") return {T::kQuery};
  if (n == "key_proj") return {T::kKey};
  if (n == "value_proj") return {T::kValue};
  if (n == "kv_proj") return {T::kKey, T::kValue};
  if (n == "qkv_proj") return {T::kQuery, T::kKey, T::kValue};
  if (n == "context" || n == "attention_out") return {T::kContext};
  if (n == "out_proj") return {T::kAttentionOut};
  if (n == "query_wa_proj" || n == "mla_q") return {T::kQueryLatent};
  if (n == "kv_wa_proj" || n == "mla_kv") return {T::kKvLatent};
  if (n == "mlpwi") return {T::kMlpGate, T::kMlpUp};
  // moe.py tags the routed experts' first GEMM output and second GEMM output with the dense names
  // too (mlpwi_0, mlpwo), but not the up projection of the sparse path (moe.py:1958-1959).
  if (n == "mlpwi_0") return {T::kMlpGate, T::kMoeGate};
  if (n == "mlpwi_1") return {T::kMlpUp};
  if (n == "mlpwo") return {T::kMlpOut, T::kMoeOut};
  if (n == "moe_mlpwi_0") return {T::kMoeGate};
  if (n == "moe_mlpwi_1") return {T::kMoeUp};
  if (n == "moe_mlpwo") return {T::kMoeOut};
  return {};
}

const std::vector<std::string_view>& remat_tensor_keys() {
  static const std::vector<std::string_view> k = {"decoder_layer_input",
                                                  "context",
                                                  "mlpwi",
                                                  "moe_mlpwi_0",
                                                  "moe_mlpwi_1",
                                                  "moe_mlpwo",
                                                  "mlpwi_0",
                                                  "mlpwi_1",
                                                  "mlpwo",
                                                  "query_proj",
                                                  "key_proj",
                                                  "value_proj",
                                                  "kv_proj",
                                                  "query_wa_proj",
                                                  "kv_wa_proj",
                                                  "mla_kv",
                                                  "mla_q",
                                                  "qkv_proj",
                                                  "attention_out",
                                                  "out_proj"};
  return k;
}

std::optional<TensorPolicy> remat_policy(std::string_view name, const PlacementLookup& placement) {
  TensorPolicy p;  // the layer input on the device, everything else rematerialised
  if (name == "custom") {
    for (const std::string_view key : remat_tensor_keys()) {
      const std::optional<std::string> v = placement ? placement(key) : std::nullopt;
      const std::string where =
          to_lower(v.value_or(key == "decoder_layer_input" ? "device" : "remat"));
      if (where == "device") {
        place(p, key, TensorPlacement::kDevice);
      } else if (where == "offload") {
        place(p, key, TensorPlacement::kHost);
      } else if (where == "remat") {
        if (key == "decoder_layer_input") place(p, key, TensorPlacement::kDevice);  // always kept
      } else {
        return std::nullopt;
      }
    }
    return p;
  }
  for (const Preset& preset : presets()) {
    if (preset.name != name) continue;
    for (const std::string_view n : preset.device) place(p, n, TensorPlacement::kDevice);
    for (const std::string_view n : preset.host) place(p, n, TensorPlacement::kHost);
    return p;
  }
  return std::nullopt;
}

const std::vector<std::string_view>& remat_policy_names() {
  static const std::vector<std::string_view> k = [] {
    std::vector<std::string_view> v;
    for (const Preset& p : presets()) v.push_back(p.name);
    v.push_back("custom");
    return v;
  }();
  return k;
}

std::span<const NamedTensorPolicy> named_remat_policies() {
  static const std::vector<NamedTensorPolicy> k = [] {
    std::vector<NamedTensorPolicy> v;
    for (const Preset& p : presets()) {
      const std::string_view n = p.name;
      const bool searched =
          n != "none" && n != "minimal_flash" && n.find("quantization") == std::string_view::npos;
      v.push_back({n, remat_policy(n, nullptr).value_or(TensorPolicy{}), searched});
    }
    return v;
  }();
  return k;
}

double static_recv_factor(bool deepep, int ep, int experts, int topk, double ragged_buffer_factor,
                          bool ragged_sort) {
  if (ep <= 1 || ragged_sort) return 0.0;
  if (deepep) return ep;
  if (ragged_buffer_factor > 0.0) return ragged_buffer_factor;
  return std::min(static_cast<double>(ep), static_cast<double>(experts) / std::max(1, topk));
}

std::optional<Dtype> parse_dtype_name(std::string_view name) {
  const std::string n = to_lower(name);
  if (n == "float32" || n == "fp32" || n == "f32") return Dtype::kFp32;
  if (n == "bfloat16" || n == "bf16") return Dtype::kBf16;
  if (n == "float16" || n == "fp16" || n == "f16" || n == "half") return Dtype::kFp16;
  if (n == "fp8" || n == "float8_e4m3fn" || n == "float8_e4m3fnuz" || n == "float8_e5m2") {
    return Dtype::kFp8;
  }
  return std::nullopt;
}

std::optional<Quantization> parse_quantization(std::string_view name) {
  const std::string n = to_lower(name);
  Quantization q;
  if (n.empty() || n == "none") return q;
  q.quantized = true;
  if (n == "int8" || n == "intmp" || n == "int4w" || n == "int8w") {
    q.int8 = true;
    q.recipe = Fp8Recipe::kTensorwise;
    return q;
  }
  if (n == "fp8" || n == "nanoo_fp8" || n == "te_fp8_delayedscaling") {
    q.recipe = Fp8Recipe::kDelayed;
    return q;
  }
  if (n == "fp8_full" || n == "fp8_gpu" || n == "te_fp8_currentscaling" || n == "fp8_nanoo") {
    q.recipe = Fp8Recipe::kTensorwise;
    return q;
  }
  if (n == "te_mxfp8" || n == "mxfp8") {
    q.recipe = Fp8Recipe::kMxfp8;
    return q;
  }
  if (n == "te_fp8_blockscaling" || n == "te_fp8_blockwise") {
    q.recipe = Fp8Recipe::kBlockwise;
    return q;
  }
  return std::nullopt;
}

std::optional<Topology> parse_compile_topology(std::string_view text) {
  const std::string t = to_lower(text);
  const std::size_t dash = t.rfind('-');
  if (dash == std::string::npos || dash + 1 >= t.size()) return std::nullopt;
  int n = 0;
  const char* first = t.data() + dash + 1;
  const auto [ptr, ec] = std::from_chars(first, t.data() + t.size(), n);
  if (ec != std::errc() || ptr != t.data() + t.size() || n < 1) return std::nullopt;
  const std::string gen = t.substr(0, dash);
  if (gen == "v4") return Topology{"tpu_v4", n / 2 > 0 ? n / 2 : 1};  // megacore: 1 device/chip
  if (gen == "v5p") return Topology{"tpu_v5p", n / 2 > 0 ? n / 2 : 1};
  if (gen == "v5e" || gen == "v5litepod") return Topology{"tpu_v5e", n};
  if (gen == "v6e") return Topology{"tpu_v6e", n};
  if (gen == "tpu7x" || gen == "v7x") return Topology{"tpu7x", n};  // n TensorCores = devices
  return std::nullopt;
}

}  // namespace projector::maxtext
