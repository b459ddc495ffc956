// MaxText semantics shared by the MaxText back-end adapter (frontend/maxtext/) and the validation
// mapper: mesh axes, rematerialisation policies, dtypes, quantization recipes, accelerator names.
// Each rule cites MaxText's source in docs/maxtext.md.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "projector/model/job.h"

namespace projector::maxtext {

// One MaxText mesh axis: its name in mesh_axes, the ici_* / dcn_* key suffix, its role.
struct MeshAxisName {
  std::string_view axis;  // "fsdp"
  std::string_view key;   // "fsdp" -> ici_fsdp_parallelism / dcn_fsdp_parallelism
  MeshRole role;
};
// MaxText's mesh_axes in order (base.yml:531), plus the legacy sequence axis (a context role).
const std::vector<MeshAxisName>& mesh_axis_names();
// "ici_fsdp_parallelism" -> ("fsdp", ICI); "dcn_pipeline_parallelism" -> ("stage", DCN).
struct MeshKey {
  const MeshAxisName* axis = nullptr;
  bool dcn = false;
};
std::optional<MeshKey> parse_mesh_key(std::string_view key);

// Per-tensor placement keys of remat_policy: custom (decoder_layer_input, query_proj, ...) and the
// vocabulary tensors each names. Unknown names: empty.
std::vector<LayerTensor> remat_tensor_names(std::string_view maxtext_name);
// All of them, in types.py order.
const std::vector<std::string_view>& remat_tensor_keys();

// The tensor policy of a named remat_policy (decoders.py get_remat_policy); `custom` reads the
// placement of each per-tensor key through `placement` ("remat", "device" or "offload"; nullopt:
// the key's base.yml default). nullopt for an unknown policy name.
using PlacementLookup = std::function<std::optional<std::string>(std::string_view key)>;
std::optional<TensorPolicy> remat_policy(std::string_view name, const PlacementLookup& placement);
// The policy names MaxText accepts.
const std::vector<std::string_view>& remat_policy_names();
// The named policies as a re-layout may choose them (RuntimeSpec::tensor_policies; not `custom`,
// which needs per-tensor keys). Searched: each a distinct memory / recompute trade; not `none`
// (the sweep's own no-remat option), `minimal_flash` (the flash kernel's own residuals) or the
// quantization-specific policies, which repeat others.
std::span<const NamedTensorPolicy> named_remat_policies();

// "float32", "bfloat16", "float16", "fp8", ... (jnp dtype names) -> Dtype.
std::optional<Dtype> parse_dtype_name(std::string_view name);

// A quantization recipe: "" (none), int8, fp8, nanoo_fp8, fp8_full, te_fp8_delayedscaling,
// te_fp8_currentscaling, te_mxfp8, ... -> the GEMM format and fp8 recipe; nullopt when unknown.
struct Quantization {
  bool quantized = false;
  Fp8Recipe recipe = Fp8Recipe::kNone;
  bool int8 = false;  // int8 GEMMs: priced as 8-bit (fp8) GEMMs, flagged
};
std::optional<Quantization> parse_quantization(std::string_view name);

// The receive-buffer factor of dropless expert-parallel dispatch (RuntimeSpec::
// moe_static_recv_factor): moe.py get_ragged_buffer_size, ragged_buffer_factor when > 0, else
// the worst case min(EP, experts / top-k); DeepEP through the FFI (Primus-Turbo's JAX
// moe_dispatch): num_worst_tokens = tokens x EP. 0 without expert parallelism or when the
// sort runs over the routed rows only (use_ragged_sort).
double static_recv_factor(bool deepep, int ep, int experts, int topk,
                          double ragged_buffer_factor = -1.0, bool ragged_sort = false);

// compile_topology ("v5p-256", "v6e-256", "v4-128", "tpu7x-128", "v5litepod-16"): the catalogue
// accelerator and the devices of one slice (v4 / v5p / TPU7x suffixes count TensorCores = JAX
// devices; v5e / v6e suffixes count chips, one device each). nullopt when unrecognised.
struct Topology {
  std::string accelerator;
  int devices = 0;
};
std::optional<Topology> parse_compile_topology(std::string_view text);

// The architecture of MaxText's model config `model_name` over base.yml (the bundled
// transcription in data/frameworks/maxtext, or the checkout named by `maxtext_path`), read as the
// adapter reads it. Throws InputError when no such config exists.
ModelSpec model_from_config(const std::string& model_name, const std::string& data_dir,
                            const std::string& maxtext_path = "");

}  // namespace projector::maxtext
