// Megatron arguments -> ModelSpec (one LayerSpec per decoder layer). Values the framework profile
// decides (dropout, vocabulary padding) are left to the job builder when not stated.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "frontend/megatron/adapter.h"
#include "frontend/megatron/arg_reader.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/util/text.h"

namespace projector {

namespace frontend_detail {

PyValue int_or_list(ArgReader& r, const std::string& key, const ConfigValue& v) {
  PyValue out;
  if (v.kind == ConfigValue::Kind::kInt) {
    out.integer = v.i;
  } else if (v.is_list()) {
    out.is_list = true;
    for (const ConfigValue& item : v.items) out.list.push_back(r.as_int(key, item));
  } else if (v.kind == ConfigValue::Kind::kString) {
    std::string error;
    std::optional<PyValue> value = eval_list_expression(v.s, error);
    if (!value) r.fail(key, error);
    out = std::move(*value);
  } else {
    r.fail(key,
           fmt::format("expected an integer, a list or a list expression, got '{}'", v.to_text()));
  }
  return out;
}

}  // namespace frontend_detail

namespace {

using frontend_detail::ArgReader;

std::string lower(std::string_view s) {
  return to_lower(s);
}

int checked_int(ArgReader& r, const std::string& key, std::int64_t v, std::int64_t min_value,
                std::int64_t max_value = kMaxCount) {
  if (v < min_value || v > max_value) {
    r.fail(key, fmt::format("must be between {} and {}, got {}", min_value, max_value, v));
  }
  return static_cast<int>(v);
}

// MoE pattern (1 = MoE layer) from moe_layer_freq: int, list, or a Python-like list expression.
std::vector<int> moe_pattern(ArgReader& r, int num_layers) {
  const std::string key = "moe_layer_freq";
  const ConfigValue* v = r.get(key);
  std::string error;
  std::optional<std::vector<int>> pattern;
  if (v == nullptr) {
    r.note(key, "1", "Megatron default: every layer is an MoE layer");
    pattern = moe_pattern_from_int(1, num_layers, error);
  } else {
    const PyValue value = frontend_detail::int_or_list(r, key, *v);
    pattern = value.is_list ? moe_pattern_from_list(value.list, num_layers, error)
                            : moe_pattern_from_int(value.integer, num_layers, error);
  }
  if (!pattern) r.fail(key, error);
  return *pattern;
}

// Normalisation, position embedding, tied output layer, stated dropout.
void read_embeddings(ArgReader& r, ModelSpec& m) {
  const std::string norm = r.string_or("normalization", "LayerNorm", "Megatron default");
  if (lower(norm) == "rmsnorm") {
    m.norm = NormKind::kRmsNorm;
  } else if (lower(norm) == "layernorm") {
    m.norm = NormKind::kLayerNorm;
  } else {
    r.fail("normalization", fmt::format("unknown normalization '{}' (LayerNorm or RMSNorm)", norm));
  }
  const std::string pos =
      lower(r.string_or("position_embedding_type", "learned_absolute", "Megatron default"));
  if (pos == "rope" || pos == "mrope" || pos == "yarn" || pos == "relative") {
    m.position_embedding = PositionEmbeddingKind::kRope;
  } else if (pos == "learned_absolute") {
    m.position_embedding = PositionEmbeddingKind::kLearnedAbsolute;
  } else if (pos == "none") {
    m.position_embedding = PositionEmbeddingKind::kNone;
  } else {
    r.fail("position_embedding_type",
           fmt::format("unknown position embedding '{}' (rope, learned_absolute, none)", pos));
  }
  // Megatron asserts 0 < rotary_percent <= 1 (the rotated share of each head's channels); the
  // share changes nothing the projection prices beyond one fused elementwise op, so it is only
  // checked.
  if (r.has("rotary_percent")) {
    const double rotary = r.float_or("rotary_percent", 1.0, "");
    if (!(rotary > 0.0 && rotary <= 1.0)) {
      r.fail("rotary_percent", fmt::format("{} is not a fraction in (0, 1]", rotary));
    }
  }
  // Unstated: the sequence length (the job builder fills it once the sequence is final).
  m.max_position_embeddings = r.int_quiet("max_position_embeddings", 0);
  if (r.has("share_embeddings_and_output_weights")) {
    m.tied_embeddings = r.bool_quiet("share_embeddings_and_output_weights", true);
  } else {
    m.tied_embeddings = !r.bool_or("untie_embeddings_and_output_weights", false,
                                   "Megatron default: input embedding and output layer tied");
  }
  m.attention_dropout = r.float_or("attention_dropout", 0.0, "");
  m.hidden_dropout = r.float_or("hidden_dropout", 0.0, "");
}

// Vocabulary: padded_vocab_size > vocab_size > the tokenizer's published size.
void read_vocabulary(ArgReader& r, const std::string& data_dir, ModelSpec& m) {
  if (r.has("padded_vocab_size")) {
    m.vocab_size = r.require_int("padded_vocab_size");
    m.make_vocab_size_divisible_by = 1;
  } else {
    if (r.has("make_vocab_size_divisible_by")) {
      m.make_vocab_size_divisible_by = checked_int(
          r, "make_vocab_size_divisible_by", r.require_int("make_vocab_size_divisible_by"), 1);
    }
    if (r.has("vocab_size")) {
      m.vocab_size = r.require_int("vocab_size");
    } else {
      const std::string type = r.string_or("tokenizer_type", "", "");
      const std::string model = r.string_or("tokenizer_model", "", "");
      const std::optional<TokenizerVocab> vocab = tokenizer_vocab_size(type, model, data_dir);
      if (!vocab) {
        r.fail(r.has("tokenizer_model") ? "tokenizer_model" : "vocab_size",
               fmt::format("vocabulary size unknown for tokenizer '{}' / '{}' (not in "
                           "data/frameworks/tokenizers/vocab_sizes.yaml): set vocab_size",
                           type.empty() ? "-" : type, model.empty() ? "-" : model));
      }
      m.vocab_size = vocab->vocab_size;
      r.note("vocab_size", fmt::format("{}", vocab->vocab_size),
             fmt::format("vocabulary of tokenizer {} ({})", model.empty() ? type : model,
                         vocab->source));
    }
  }
  if (m.vocab_size <= 0) r.fail("vocab_size", "must be positive");
}

AttentionSpec read_attention(ArgReader& r, const ModelSpec& m, int heads,
                             std::vector<std::string>& warnings) {
  AttentionSpec attn;
  attn.num_heads = heads;
  attn.qk_layernorm = r.bool_quiet("qk_layernorm", false);
  const bool bias_linear = r.bool_or("add_bias_linear", true, "Megatron default");
  attn.add_bias_linear = bias_linear;
  attn.add_qkv_bias = bias_linear || r.bool_quiet("add_qkv_bias", false);
  if (r.bool_quiet("multi_latent_attention", false)) {
    frontend_detail::read_mla_geometry(r, attn);
    if (r.bool_quiet("attention_output_gate", false)) {
      r.fail("attention_output_gate", "an output gate on multi-latent attention is not modelled");
    }
  } else {
    attn.output_gate = r.bool_quiet("attention_output_gate", false);
    if (r.has("kv_channels")) {
      attn.head_dim = checked_int(r, "kv_channels", r.require_int("kv_channels"), 1);
    } else {
      if (m.hidden_size % heads != 0) {
        r.fail("num_attention_heads", fmt::format("hidden_size {} is not divisible by {} heads "
                                                  "and kv_channels is not set",
                                                  m.hidden_size, heads));
      }
      attn.head_dim = static_cast<int>(m.hidden_size / heads);
      r.note("kv_channels", fmt::format("{}", attn.head_dim), "hidden_size / num_attention_heads");
    }
    if (r.bool_quiet("group_query_attention", false)) {
      attn.num_query_groups =
          checked_int(r, "num_query_groups", r.require_int("num_query_groups"), 1);
      if (heads % attn.num_query_groups != 0) {
        r.fail("num_query_groups", fmt::format("{} attention heads are not divisible into {} "
                                               "query groups",
                                               heads, attn.num_query_groups));
      }
    } else {
      attn.num_query_groups = heads;
      // DeepSeek-V4 states its single latent as num_query_groups 1 (megatron/deepseek_v4.cpp).
      if (r.has("num_query_groups") && r.int_quiet("num_query_groups", heads) != heads &&
          !frontend_detail::is_deepseek_v4(r)) {
        warnings.push_back(fmt::format(
            "num_query_groups {} ignored because group_query_attention is false (Megatron uses "
            "one group per head)",
            r.int_quiet("num_query_groups", heads)));
      }
    }
  }

  return attn;
}

MlpSpec read_mlp(ArgReader& r, const ModelSpec& m) {
  const bool bias_linear = r.bool_quiet("add_bias_linear", true);
  MlpSpec mlp;
  const bool swiglu = r.bool_or("swiglu", false, "Megatron default");
  if (swiglu) {
    mlp.gated = true;
    mlp.activation = ActivationKind::kSilu;
  } else if (r.bool_quiet("squared_relu", false)) {
    mlp.activation = ActivationKind::kSquaredRelu;
  } else {
    mlp.activation = ActivationKind::kGelu;
    mlp.gated = r.bool_quiet("gated_linear_unit", false);
  }
  mlp.add_bias = bias_linear;
  if (r.has("ffn_hidden_size")) {
    mlp.ffn_hidden_size = r.require_int("ffn_hidden_size");
  } else {
    // Megatron: 4h, or the SwiGLU-equivalent 2/3 of it rounded down to a multiple of 64.
    mlp.ffn_hidden_size = swiglu ? (4 * m.hidden_size * 2 / 3) / 64 * 64 : 4 * m.hidden_size;
    r.note("ffn_hidden_size", fmt::format("{}", mlp.ffn_hidden_size),
           swiglu ? "Megatron default for SwiGLU: int(4h*2/3/64)*64" : "Megatron default: 4h");
  }
  if (mlp.ffn_hidden_size <= 0) r.fail("ffn_hidden_size", "must be positive");

  return mlp;
}

// window_attn_skip_freq (MG transformer_config.py:251-253; arguments.py moe_freq_type): per
// layer, 1 where the layer keeps the sliding window. An int N: every N-th layer (1-based) attends
// fully (utils.py:540, layer_number % N != 0 keeps the window); a list or a list expression: 1 =
// sliding window, 0 = full attention, indexed by layer (utils.py:541-542).
std::vector<int> window_layers(ArgReader& r, int num_layers) {
  const std::string key = "window_attn_skip_freq";
  std::vector<int> windowed(static_cast<std::size_t>(num_layers), 1);
  const ConfigValue* skip = r.get(key);
  if (skip == nullptr) return windowed;
  std::string error;
  std::optional<PyValue> value;
  if (skip->is_list()) {
    value = PyValue{true, 0, {}};
    for (const ConfigValue& item : skip->items) value->list.push_back(r.as_int(key, item));
  } else if (skip->kind == ConfigValue::Kind::kString) {
    value = eval_list_expression(skip->s, error);
    if (!value) r.fail(key, error);
  } else {
    value = PyValue{false, r.as_int(key, *skip), {}};
  }
  if (!value->is_list) {
    if (value->integer < 1) r.fail(key, fmt::format("must be positive, got {}", value->integer));
    for (int i = 0; i < num_layers; ++i) windowed[i] = (i + 1) % value->integer != 0 ? 1 : 0;
    return windowed;
  }
  if (value->list.size() < windowed.size()) {
    r.fail(key, fmt::format("lists {} layers, the model has {}", value->list.size(), num_layers));
  }
  for (int i = 0; i < num_layers; ++i) windowed[i] = value->list[i] != 0 ? 1 : 0;
  return windowed;
}

// Sliding-window attention: window_size [left, right] (or an int; -1 is unbounded), on the layers
// window_attn_skip_freq leaves windowed (window_layers). Returns the window and, per layer,
// whether it attends fully.
int read_window(ArgReader& r, int num_layers, std::vector<int>& full_attention_layer) {
  int window = 0;
  if (const ConfigValue* w = r.get("window_size")) {
    if (w->is_list() && !w->items.empty()) {
      window = static_cast<int>(r.as_int("window_size", w->items[0]));
    } else if (w->kind == ConfigValue::Kind::kString) {
      std::string error;
      const auto value = eval_list_expression(w->s, error);
      if (!value) r.fail("window_size", error);
      window = checked_int(
          r, "window_size",
          value->is_list ? (value->list.empty() ? 0 : value->list[0]) : value->integer, -kMaxCount);
    } else {
      window = static_cast<int>(r.as_int("window_size", *w));
    }
    if (window < 0) window = 0;  // Megatron uses -1 for "unbounded"
  }
  full_attention_layer.assign(static_cast<std::size_t>(num_layers), 1);
  if (window > 0) {
    const std::vector<int> windowed = window_layers(r, num_layers);
    for (int i = 0; i < num_layers; ++i) full_attention_layer[i] = windowed[i] == 0 ? 1 : 0;
  }
  return window;
}

// Primus-Turbo attention (PR primus_turbo.py:741-950 PrimusTurboAttention, the core attention
// when use_turbo_attention is on, transformer_engine_spec_provider.py:224-232) asserts that
// Megatron's window_size is unset (:847) and applies its own window: sink_sliding_window tokens
// on the even layers (0-based; on every layer with sink_window_even_layers_only false,
// :936-942) when use_sink_attention is on and CP is 1 (:795-802 disables sinks with CP).
// Returns the window, 0 when none; full_attention_layer marks the layers without it.
int read_turbo_sink_window(ArgReader& r, int num_layers, int megatron_window,
                           std::vector<int>& full_attention_layer,
                           std::vector<std::string>& warnings) {
  const bool turbo_attention =
      r.bool_quiet("enable_primus_turbo", false) && r.bool_quiet("use_turbo_attention", false);
  if (!turbo_attention) return megatron_window;
  std::fill(full_attention_layer.begin(), full_attention_layer.end(), 1);
  if (megatron_window > 0) {
    warnings.push_back(fmt::format(
        "window_size {}: Primus-Turbo attention (use_turbo_attention) does not run Megatron's "
        "sliding window (Primus asserts it is unset, primus_turbo.py:847); projected with the "
        "Turbo attention's own window (sink_sliding_window)",
        megatron_window));
  }
  const std::int64_t window = r.int_quiet("sink_sliding_window", 0);
  if (window < 0 || window > kMaxCount) {
    r.fail("sink_sliding_window", fmt::format("must be in 0..{}, got {}", kMaxCount, window));
  }
  const bool sinks = r.bool_quiet("use_sink_attention", false);
  if (window == 0 || !sinks || r.int_quiet("context_parallel_size", 1) > 1) return 0;
  const bool even_only = r.bool_quiet("sink_window_even_layers_only", true);
  for (int i = 0; i < num_layers; ++i) full_attention_layer[i] = even_only && i % 2 != 0 ? 1 : 0;
  return static_cast<int>(window);
}

// Group-limited routing (MG2 moe_utils.py group_limited_topk): experts in moe_router_num_groups
// equal groups, each token's top-k taken from its best moe_router_group_topk groups. Both default
// to None (routing over all experts); group_topk needs num_groups.
void read_group_limited_routing(ArgReader& r, MoeSpec& moe) {
  const auto groups = static_cast<int>(r.int_quiet("moe_router_num_groups", 0));
  const auto group_topk = static_cast<int>(r.int_quiet("moe_router_group_topk", 0));
  if (groups < 0) r.fail("moe_router_num_groups", "must not be negative");
  if (group_topk < 0) r.fail("moe_router_group_topk", "must not be negative");
  if (group_topk == 0) return;
  if (groups == 0) r.fail("moe_router_group_topk", "needs moe_router_num_groups");
  if (const auto bad = group_routing_problem(moe.num_experts, moe.topk, groups, group_topk, 1)) {
    r.fail(bad->in_groups_key ? "moe_router_num_groups" : "moe_router_group_topk", bad->message);
  }
  moe.router_num_groups = groups;
  moe.router_group_topk = group_topk;
}

// MoE: the routed-expert shape and which layers are MoE (moe_layer_freq).
MoeSpec read_moe(ArgReader& r, int num_layers, const MlpSpec& mlp, std::vector<int>& pattern) {
  const int num_experts = static_cast<int>(r.int_quiet("num_experts", 0));
  pattern.assign(static_cast<std::size_t>(num_layers), 0);
  MoeSpec moe;
  if (num_experts > 0) {
    pattern = moe_pattern(r, num_layers);
    moe.num_experts = num_experts;
    moe.topk =
        checked_int(r, "moe_router_topk", r.int_or("moe_router_topk", 2, "Megatron default"), 1);
    if (moe.topk > num_experts) {
      r.fail("moe_router_topk",
             fmt::format("top-{} routing over only {} experts", moe.topk, num_experts));
    }
    if (r.has("moe_ffn_hidden_size")) {
      moe.expert_ffn_hidden_size = r.require_int("moe_ffn_hidden_size");
    } else {
      moe.expert_ffn_hidden_size = mlp.ffn_hidden_size;
      r.note("moe_ffn_hidden_size", fmt::format("{}", mlp.ffn_hidden_size),
             "Megatron default: ffn_hidden_size");
    }
    moe.shared_expert_ffn_hidden_size = r.int_quiet("moe_shared_expert_intermediate_size", 0);
    moe.capacity_factor = r.float_or("moe_expert_capacity_factor", 0.0, "");
    moe.router_bias = r.bool_quiet("moe_router_enable_expert_bias", false);
    // Megatron's default is false: SequentialMLP, one GEMM per local expert (MG2
    // transformer_config.py:850).
    moe.grouped_gemm = r.bool_or("moe_grouped_gemm", false, "Megatron default (MG2 :850)");
    moe.latent_size = r.int_quiet("moe_latent_size", 0);
    if (moe.latent_size < 0) r.fail("moe_latent_size", "must not be negative");
    moe.shared_expert_gate = r.bool_quiet("moe_shared_expert_gate", false);
    read_group_limited_routing(r, moe);
  } else if (r.has("num_experts") && r.int_quiet("num_experts", 0) < 0) {
    r.fail("num_experts", "must not be negative");
  }

  return moe;
}

}  // namespace

// Mamba-2 mixer settings (MG2 transformer_config.py:1256-1270; MG11 mamba_mixer.py:181-275):
// d_inner = expand x h unless mamba_num_heads fixes it; heads divide into groups.
MambaSpec read_mamba(ArgReader& r, const ModelSpec& m) {
  MambaSpec s;
  s.state_dim = checked_int(r, "mamba_state_dim",
                            r.int_or("mamba_state_dim", 128, "Megatron default (MG2 :1259)"), 1);
  s.head_dim = checked_int(r, "mamba_head_dim",
                           r.int_or("mamba_head_dim", 64, "Megatron default (MG2 :1262)"), 1);
  s.num_groups = checked_int(r, "mamba_num_groups",
                             r.int_or("mamba_num_groups", 8, "Megatron default (MG2 :1265)"), 1);
  // d_conv is a spec parameter (4 in every Megatron and Primus spec); mamba_d_conv and
  // mamba_expand are Primus preset keys that no trainer reads.
  s.conv_kernel = 4;
  if (r.has("mamba_num_heads")) {
    s.num_heads = checked_int(r, "mamba_num_heads", r.require_int("mamba_num_heads"), 1);
  } else {
    const int expand = frontend_detail::mamba_expand(r);
    const std::int64_t d_inner = static_cast<std::int64_t>(expand) * m.hidden_size;
    if (d_inner % s.head_dim != 0) {
      r.fail("mamba_head_dim", fmt::format("d_inner {} ({} x hidden_size) is not divisible by "
                                           "mamba_head_dim {}",
                                           d_inner, expand, s.head_dim));
    }
    s.num_heads = static_cast<int>(d_inner / s.head_dim);
    r.note("mamba_num_heads", fmt::format("{}", s.num_heads),
           fmt::format("expand {} (the layer spec's) x hidden_size / mamba_head_dim (MG11 "
                       "mamba_mixer.py:246-251)",
                       expand));
  }
  if (s.num_heads % s.num_groups != 0) {
    r.fail("mamba_num_groups", fmt::format("{} Mamba heads are not divisible into {} groups",
                                           s.num_heads, s.num_groups));
  }
  return s;
}

// GDN / KDA settings (MG2 transformer_config.py:370-383 defaults, :1486-1499 checks): the value
// heads are a multiple of the key heads (q and k are repeated to them).
LinearAttentionSpec read_linear_attention(ArgReader& r, LinearAttentionKind kind) {
  LinearAttentionSpec s;
  s.kind = kind;
  const char* why = "Megatron default (MG2 transformer_config.py:370-383)";
  s.conv_kernel =
      checked_int(r, "linear_conv_kernel_dim", r.int_or("linear_conv_kernel_dim", 4, why), 1);
  s.key_head_dim =
      checked_int(r, "linear_key_head_dim", r.int_or("linear_key_head_dim", 128, why), 1);
  s.value_head_dim =
      checked_int(r, "linear_value_head_dim", r.int_or("linear_value_head_dim", 128, why), 1);
  s.num_key_heads =
      checked_int(r, "linear_num_key_heads", r.int_or("linear_num_key_heads", 16, why), 1);
  s.num_value_heads =
      checked_int(r, "linear_num_value_heads", r.int_or("linear_num_value_heads", 32, why), 1);
  if (s.num_value_heads % s.num_key_heads != 0) {
    r.fail("linear_num_value_heads",
           fmt::format("{} value heads are not a multiple of linear_num_key_heads {}",
                       s.num_value_heads, s.num_key_heads));
  }
  // Primus' GDN reads use_short_conv (PR8 gated_delta_net.py:137: getattr(config, "use_short_conv",
  // True)); without it there is no conv.
  if (!r.bool_quiet("use_short_conv", true)) s.conv_kernel = 0;
  return s;
}

// LFM2's gated short conv (PR10 attention.py:113-158): as wide as the model, kernel conv_L_cache,
// biases per conv_bias (defaults of PR10 primus_megatron_model.yaml:13-15).
LinearAttentionSpec read_short_conv(ArgReader& r, std::int64_t hidden) {
  LinearAttentionSpec s;
  s.kind = LinearAttentionKind::kShortConv;
  s.short_conv_width = hidden;
  const char* why = "Primus default (PR10 primus_megatron_model.yaml:14-15)";
  s.conv_kernel = checked_int(r, "conv_L_cache", r.int_or("conv_L_cache", 3, why), 1, 1024);
  s.conv_bias = r.bool_or("conv_bias", false, why);
  return s;
}

// Layers from a hybrid pattern: '*' / '+' attention only, 'M' Mamba-2 (or, in Primus' gdn / kda
// hybrid stacks, GDN / KDA) only, '-' MLP only, 'E' MoE only.
void hybrid_layers(ArgReader& r, const std::string& pattern, const AttentionSpec& attn,
                   const MlpSpec& mlp, const MoeSpec& moe, ModelSpec& m) {
  const bool needs_mamba = pattern.find('M') != std::string::npos;
  bool te_spec = false;
  const std::optional<LinearAttentionKind> linear_kind =
      needs_mamba ? frontend_detail::hybrid_linear_kind(r, te_spec) : std::nullopt;
  std::optional<LinearAttentionSpec> linear;
  if (linear_kind) {
    linear = read_linear_attention(r, *linear_kind);
    // KDA's gate_norm is a TENorm in kda_hybrid_stack_spec, IdentityOp in the no-TE spec (PR5
    // hybrid_mamba_mla_layer_specs.py:381-470).
    linear->gate_norm = *linear_kind == LinearAttentionKind::kKda && te_spec;
  }
  LayerSpec mixer;
  if (linear) {
    mixer.kind = LayerKind::kLinearAttention;
    mixer.linear = *linear;
  } else if (needs_mamba) {
    mixer.kind = LayerKind::kMamba;
    mixer.mamba = read_mamba(r, m);
  }
  if (pattern.find('E') != std::string::npos && moe.num_experts <= 0) {
    r.fail("num_experts", "the hybrid pattern has MoE ('E') layers");
  }
  m.layers.resize(pattern.size());
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    LayerSpec& layer = m.layers[i];
    layer.attention = attn;
    layer.mlp = mlp;
    set_hybrid_layer(pattern[i], mixer, moe, layer);
  }
}

ModelSpec build_model(const ConfigValue& args, const std::string& data_dir,
                      std::vector<AppliedDefault>& defaults, std::vector<std::string>& warnings) {
  ArgReader r(args, defaults);
  ModelSpec m;
  frontend_detail::refuse_unmodelled_models(r);
  if (frontend_detail::is_flux_model(r)) return frontend_detail::build_flux_model(r);
  const int num_layers = checked_int(r, "num_layers", r.require_int("num_layers"), 1, kMaxLayers);
  m.hidden_size = checked_int(r, "hidden_size", r.require_int("hidden_size"), 1);
  const int heads = checked_int(r, "num_attention_heads", r.require_int("num_attention_heads"), 1);
  read_embeddings(r, m);
  read_vocabulary(r, data_dir, m);
  const AttentionSpec attn = read_attention(r, m, heads, warnings);
  const MlpSpec mlp = read_mlp(r, m);
  std::vector<int> full_attention_layer;
  const int window =
      read_turbo_sink_window(r, num_layers, read_window(r, num_layers, full_attention_layer),
                             full_attention_layer, warnings);
  if (const std::optional<std::string> hybrid =
          frontend_detail::hybrid_layer_pattern(r, num_layers)) {
    if (hybrid->empty()) r.fail("num_layers", "the hybrid stack has no layers");
    std::vector<int> unused;
    const MoeSpec moe = read_moe(r, static_cast<int>(hybrid->size()), mlp, unused);
    const std::vector<int> lfm = frontend_detail::lfm_conv_pattern(r, num_layers);
    if (std::find(lfm.begin(), lfm.end(), 1) != lfm.end()) {
      r.fail("lfm_layer_types", "LFM2 short convs in a hybrid (Mamba) stack are not modelled");
    }
    hybrid_layers(r, *hybrid, attn, mlp, moe, m);
    m.mtp_num_layers = static_cast<int>(r.int_quiet("mtp_num_layers", 0));
    if (m.mtp_num_layers != 0) r.fail("mtp_num_layers", "MTP on a hybrid stack is not modelled");
    return m;
  }
  std::vector<int> pattern;
  const MoeSpec moe = read_moe(r, num_layers, mlp, pattern);
  const std::vector<int> linear_layers = frontend_detail::linear_attention_pattern(r, num_layers);
  const bool any_linear =
      std::find(linear_layers.begin(), linear_layers.end(), 1) != linear_layers.end();
  const LinearAttentionSpec linear =
      any_linear ? read_linear_attention(r, LinearAttentionKind::kGdn) : LinearAttentionSpec{};
  const std::vector<int> conv_layers = frontend_detail::lfm_conv_pattern(r, num_layers);
  const bool any_conv = std::find(conv_layers.begin(), conv_layers.end(), 1) != conv_layers.end();
  if (any_conv && any_linear) {
    r.fail("lfm_layer_types", "LFM2 short convs with GatedDeltaNet layers are not modelled");
  }
  const LinearAttentionSpec conv =
      any_conv ? read_short_conv(r, m.hidden_size) : LinearAttentionSpec{};
  m.layers.resize(static_cast<std::size_t>(num_layers));
  for (int i = 0; i < num_layers; ++i) {
    LayerSpec& layer = m.layers[i];
    layer.attention = attn;
    if (linear_layers[static_cast<std::size_t>(i)] == 1) {
      layer.kind = LayerKind::kLinearTransformer;
      layer.linear = linear;
    }
    if (conv_layers[static_cast<std::size_t>(i)] == 1) {
      layer.kind = LayerKind::kLinearTransformer;
      layer.linear = conv;
    }
    if (!full_attention_layer[i]) layer.attention.sliding_window = window;
    layer.mlp = mlp;
    layer.is_moe = pattern[i] == 1;
    if (layer.is_moe) layer.moe = moe;
  }
  m.mtp_num_layers = static_cast<int>(r.int_quiet("mtp_num_layers", 0));
  if (m.mtp_num_layers < 0) r.fail("mtp_num_layers", "must not be negative");
  if (frontend_detail::is_deepseek_v4(r)) frontend_detail::apply_deepseek_v4(r, m);
  if (frontend_detail::is_kimi_k3(r)) {
    frontend_detail::apply_kimi_k3(r, m, read_linear_attention(r, LinearAttentionKind::kKda));
  }
  return m;
}

namespace frontend_detail {

// Megatron's MLA keys with its argument defaults (arguments.py: q_lora_rank None, kv_lora_rank
// 32, qk_head_dim 128, qk_pos_emb_head_dim 64, v_head_dim 128).
void read_mla_geometry(ArgReader& r, AttentionSpec& attn) {
  attn.kind = AttentionKind::kMla;
  attn.num_query_groups = attn.num_heads;
  attn.q_lora_rank = checked_int(r, "q_lora_rank", r.int_quiet("q_lora_rank", 0), 0);
  attn.kv_lora_rank =
      checked_int(r, "kv_lora_rank", r.int_or("kv_lora_rank", 32, "Megatron default"), 1);
  attn.qk_head_dim =
      checked_int(r, "qk_head_dim", r.int_or("qk_head_dim", 128, "Megatron default"), 1);
  attn.qk_pos_emb_head_dim = checked_int(
      r, "qk_pos_emb_head_dim", r.int_or("qk_pos_emb_head_dim", 64, "Megatron default"), 0);
  attn.v_head_dim =
      checked_int(r, "v_head_dim", r.int_or("v_head_dim", 128, "Megatron default"), 1);
  attn.head_dim = attn.qk_head_dim + attn.qk_pos_emb_head_dim;
  attn.add_qkv_bias = false;  // MLA projections carry no QKV bias in Megatron
}

}  // namespace frontend_detail

}  // namespace projector
