// Which layers a Megatron / Primus model builds: GPT (attention + MLP / MoE in every layer), a
// Mamba or hybrid stack (one sublayer per layer: Mamba-2, attention, MLP, MoE), or a model this
// tool does not model, which is refused by name ("model type X is not supported") rather than
// projected as a GPT.
#include <fmt/format.h>

#include <cmath>

#include "frontend/megatron/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

[[noreturn]] void not_supported(ArgReader& r, const std::string& key, const std::string& type,
                                const std::string& why) {
  r.fail(key, fmt::format("model type '{}' is not supported: {}", type, why));
}

// Megatron's pattern_from_ratios (MG12 hybrid_layer_allocation.py:74-125): attention layers
// evenly spaced between Mamba runs, then MLP layers evenly among the remaining Mamba layers.
std::string pattern_from_ratios(int num_layers, double attention_ratio, double mlp_ratio) {
  const int attention = static_cast<int>(std::lround(num_layers * attention_ratio));
  int mamba = num_layers - attention;
  const double section = static_cast<double>(mamba) / (attention + 1);
  std::string types(static_cast<std::size_t>(num_layers), 'M');
  double x = section;
  for (int i = 0; i < num_layers; ++i) {
    if (x < 0.5) {
      types[static_cast<std::size_t>(i)] = '*';
      x += section;
    } else {
      x -= 1.0;
    }
  }
  const int mlp = static_cast<int>(std::lround(num_layers * mlp_ratio));
  if (mlp > 0) {
    mamba -= mlp;
    const double ratio = static_cast<double>(mamba) / mlp;
    x = ratio;
    for (int i = 0; i < num_layers; ++i) {
      if (types[static_cast<std::size_t>(i)] != 'M') continue;
      if (x < 0.5) {
        types[static_cast<std::size_t>(i)] = '-';
        x += ratio;
      } else {
        x -= 1.0;
      }
    }
  }
  return types;
}

// Primus' HybridStack.allocate_layers (PR5 hybrid_block.py:219-244): num_layers / 2 mixers, each
// followed by an MLP; a share of the mixers are attention, spread in blocks.
std::string primus_hybrid_pattern(int num_layers, double attention_ratio) {
  const int mixers = num_layers / 2;
  const int attention = static_cast<int>(mixers * attention_ratio);
  const int mamba = mixers - attention;
  std::string out;
  if (attention == 0) {
    for (int i = 0; i < mixers; ++i) out += "M-";
    return out;
  }
  if (attention_ratio <= 0.5) {
    const int per = mamba / attention;
    for (int a = 0; a < attention; ++a) {
      out += "*-";
      for (int i = 0; i < per; ++i) out += "M-";
    }
    for (int i = 0; i < mamba % attention; ++i) out += "M-";
  } else {
    for (int i = 0; i < attention - mamba; ++i) out += "*-";
    for (int i = 0; i < mamba; ++i) out += "*-M-";
  }
  return out;
}

// `spec: [module, name]`: the layer-spec module and the spec's name in it.
std::string spec_part(ArgReader& r, bool name) {
  const ConfigValue* spec = r.get("spec");
  if (spec == nullptr) return "";
  if (!spec->is_list()) return name ? spec->to_text() : "";
  if (spec->items.empty()) return "";
  return name ? spec->items.back().to_text() : spec->items.front().to_text();
}
std::string spec_name(ArgReader& r) {
  return spec_part(r, true);
}

// Primus' GDN / KDA HybridStack specs (PR5 hybrid_mamba_mla_layer_specs.py:189-470): the
// HybridStack with a GatedDeltaNetLayer / KimiDeltaAttentionLayer in its mamba_layer slot.
bool primus_linear_stack(ArgReader& r, const std::string& name) {
  const std::string spec = spec_name(r);
  return spec_part(r, false).find("primus") != std::string::npos &&
         (spec == name || spec == name + "_no_te");
}

// Primus' own HybridStack specs (PR5 hybrid_mamba_mla_layer_specs.py), as opposed to
// Megatron's hybrid_stack_spec of the same name, which allocates layers by ratio.
bool primus_hybrid_stack(ArgReader& r) {
  const std::string name = spec_name(r);
  return spec_part(r, false).find("primus") != std::string::npos &&
         (name == "hybrid_stack_spec" || name == "mamba_hybrid_stack_spec_no_te" ||
          primus_linear_stack(r, "gdn_hybrid_stack_spec") ||
          primus_linear_stack(r, "kda_hybrid_stack_spec"));
}

// hybrid_layer_pattern (hybrid_override_pattern, deprecated): one symbol per layer (MG12
// hybrid_layer_allocation.py:14-27). '|' (pipeline segments) and '/' (MTP patterns) and the
// layer kinds not modelled are refused.
std::string stated_pattern(ArgReader& r, const std::string& key, const std::string& type) {
  const std::string text = r.string_or(key, "", "");
  for (const char c : text) {
    switch (c) {
      case 'M':
      case '*':
      case '+':
      case '-':
      case 'E':
        break;
      case 'G':
        not_supported(r, key, type + " with GatedDeltaNet ('G') layers",
                      "GatedDeltaNet linear attention is not modelled");
      case 'D':
        not_supported(r, key, type + " with DeepSeek sparse attention ('D') layers",
                      "DeepSeek sparse attention is not modelled");
      case '|':
      case '/':
        r.fail(key,
               "pipeline segments ('|') and MTP patterns ('/') in a hybrid pattern are not "
               "modelled; state the pattern of the decoder layers only");
      default:
        r.fail(key, fmt::format("unknown layer symbol '{}' (M, *, +, -, E)", c));
    }
  }
  return text;
}

}  // namespace

// Refuses model types and layer kinds that are not modelled; nothing for a plain GPT.
void refuse_unmodelled_models(ArgReader& r) {
  if (is_flux_model(r)) return;  // Primus' Flux (megatron/flux.cpp)
  const std::string type = to_lower(r.string_or("model_type", "gpt", ""));
  // deepseek_v4 / kimi_k3: Primus' V4 and K3 builders (megatron/deepseek_v4.cpp, kimi_k3.cpp).
  if (type != "gpt" && type != "mamba" && type != "deepseek_v4" && type != "kimi_k3") {
    not_supported(r, "model_type", type,
                  type.find("diffusion") != std::string::npos
                      ? "diffusion transformers (DiT) other than Flux are not modelled"
                      : "only GPT (decoder transformer), DeepSeek-V4, Kimi-K3 and Mamba / hybrid "
                        "models are modelled");
  }
  if (r.has("experimental_attention_variant")) {
    const std::string v = to_lower(r.string_or("experimental_attention_variant", "", ""));
    // gated_delta_net is the deprecated spelling of gdn (MG17 experimental_attention_variant_
    // module_specs.py:64); gdn2, DSA and the other variants are not modelled.
    if (!v.empty() && v != "none" && v != "gated_delta_net" && v != "gdn") {
      not_supported(r, "experimental_attention_variant", type + " with " + v + " attention",
                    "only the GatedDeltaNet (gated_delta_net) variant is modelled");
    }
  }
  if (r.bool_quiet("hybrid_attention_enabled", false) && type != "deepseek_v4") {
    not_supported(r, "hybrid_attention_enabled", type,
                  "DeepSeek-V4 hybrid (compressed / sparse) attention is not modelled");
  }
  for (const char* key :
       {"heterogeneous_layers_config_path", "heterogeneous_layers_config_encoded_json"}) {
    if (!r.string_or(key, "", "").empty()) {
      not_supported(r, key, type, "per-layer heterogeneous architectures are not modelled");
    }
  }
}

std::optional<std::string> hybrid_layer_pattern(ArgReader& r, int num_layers) {
  const std::string type = to_lower(r.string_or("model_type", "gpt", ""));
  const bool hybrid = r.bool_quiet("is_hybrid_model", false);
  for (const char* key : {"hybrid_layer_pattern", "hybrid_override_pattern"}) {
    if (!r.string_or(key, "", "").empty()) return stated_pattern(r, key, type);
  }
  if (type != "mamba" && !hybrid) return std::nullopt;
  const std::string spec = spec_name(r);
  const double attention = r.float_or("hybrid_attention_ratio", 0.0, "");
  const double mlp = r.float_or("hybrid_mlp_ratio", 0.0, "");
  if (attention < 0.0 || attention > 1.0 || mlp < 0.0 || attention + mlp > 1.0) {
    r.fail("hybrid_attention_ratio", "the attention and MLP ratios must be in [0, 1] and sum <= 1");
  }
  if (primus_hybrid_stack(r)) {
    // Primus' Mamba-2 + MLA HybridStack: its own allocation, an MLP after every mixer.
    return primus_hybrid_pattern(num_layers, attention);
  }
  if (spec == "mamba_stack_spec") {
    // Primus' MambaStack without a pattern: every layer is Mamba (PR5 mamba_block.py).
    return std::string(static_cast<std::size_t>(num_layers), 'M');
  }
  return pattern_from_ratios(num_layers, attention, mlp);
}

std::optional<LinearAttentionKind> hybrid_linear_kind(ArgReader& r, bool& te_spec) {
  const std::string spec = spec_name(r);
  te_spec = !spec.ends_with("_no_te");
  if (primus_linear_stack(r, "gdn_hybrid_stack_spec")) return LinearAttentionKind::kGdn;
  if (primus_linear_stack(r, "kda_hybrid_stack_spec")) return LinearAttentionKind::kKda;
  // Any other gdn / kda spec (not Primus' HybridStack) stays refused.
  if (spec.find("gdn") != std::string::npos) {
    not_supported(r, "spec", spec,
                  "GatedDeltaNet (gdn) stacks other than Primus' are not modelled");
  }
  if (spec.find("kda") != std::string::npos) {
    not_supported(r, "spec", spec,
                  "Kimi Delta Attention (kda) stacks other than Primus' are not modelled");
  }
  return std::nullopt;
}

// get_linear_attention_pattern (MG17 experimental_attention_variant_module_specs.py:458-490): an
// integer N makes layer i (0-based) full attention when (i + 1) % N == 0, linear otherwise; a
// list states the pattern (1 linear, 0 attention) per layer.
std::vector<int> linear_attention_pattern(ArgReader& r, int num_layers) {
  const std::string v = to_lower(r.string_or("experimental_attention_variant", "", ""));
  if (v != "gated_delta_net" && v != "gdn") return std::vector<int>(num_layers, 0);
  const ConfigValue* freq = r.get("linear_attention_freq");
  if (freq == nullptr || freq->is_null()) {
    r.fail("linear_attention_freq", "must be set for gated_delta_net (MG2 transformer_config.py)");
  }
  return linear_layer_pattern(r, *freq, num_layers);
}

std::vector<int> linear_layer_pattern(ArgReader& r, const ConfigValue& freq, int num_layers) {
  const std::string key = "linear_attention_freq";
  const PyValue value = int_or_list(r, key, freq);
  std::vector<int> out(static_cast<std::size_t>(num_layers), 0);
  if (!value.is_list) {
    if (value.integer < 1) r.fail(key, "must be at least 1");
    for (int i = 0; i < num_layers; ++i) {
      out[static_cast<std::size_t>(i)] = (i + 1) % value.integer == 0 ? 0 : 1;
    }
    return out;
  }
  if (static_cast<int>(value.list.size()) != num_layers) {
    r.fail(key,
           fmt::format("the pattern has {} entries for {} layers", value.list.size(), num_layers));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const long long x = value.list[i];
    if (x != 0 && x != 1) r.fail(key, fmt::format("entry '{}' is not 0 or 1", x));
    out[i] = static_cast<int>(x);
  }
  return out;
}

// Primus' LFM2 layer types (PR10 gpt_layer_specs.py:41-66): lfm_layer_types lists "conv" or
// "full_attention" for each of the num_layers layers; null (the default) makes every layer
// attention. 1 where the layer is a gated short conv.
std::vector<int> lfm_conv_pattern(ArgReader& r, int num_layers) {
  std::vector<int> out(static_cast<std::size_t>(num_layers), 0);
  const std::string key = "lfm_layer_types";
  const ConfigValue* types = r.get(key);
  if (types == nullptr) return out;
  if (!types->is_list()) r.fail(key, "must be a list of 'conv' / 'full_attention' or null");
  if (static_cast<int>(types->items.size()) != num_layers) {
    r.fail(key,
           fmt::format("{} entries for {} layers (num_layers)", types->items.size(), num_layers));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::string t = types->items[i].to_text();
    if (t != "conv" && t != "full_attention") {
      r.fail(key, fmt::format("entry '{}' is neither 'conv' nor 'full_attention'", t));
    }
    out[i] = t == "conv" ? 1 : 0;
  }
  return out;
}

int mamba_expand(ArgReader& r) {
  // The mixer's `expand` is a spec parameter, not an argument (Megatron and Primus read no
  // mamba_expand): Primus' hybrid_stack_spec builds its MambaMixer with expand 1 (PR5
  // hybrid_mamba_mla_layer_specs.py:126-140); every other spec keeps MambaMixer's default 2
  // (MG11 mamba_mixer.py:181).
  return primus_hybrid_stack(r) && spec_name(r) == "hybrid_stack_spec" ? 1 : 2;
}

}  // namespace projector::frontend_detail
