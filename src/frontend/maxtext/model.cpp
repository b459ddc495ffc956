// MaxText architecture keys -> ModelSpec (docs/maxtext.md "Architecture"). Dimensions follow
// types.py: global_parameter_scale 2^k rotates doublings over (heads, MLP), embedding and layers
// (get_individual_scales); per-layer patterns follow each decoder block's source.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "frontend/maxtext/adapter.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/model/family.h"
#include "projector/util/bounds.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

struct Scales {
  int emb = 0, heads = 0, mlp = 0, layers = 0;
};

// types.py get_individual_scales.
Scales individual_scales(MaxTextReader& r) {
  const std::int64_t scale = r.integer("global_parameter_scale", 1);
  if (scale < 1 || (scale & (scale - 1)) != 0) {
    r.fail("global_parameter_scale", fmt::format("must be a power of two, got {}", scale));
  }
  const int log2 = static_cast<int>(std::lround(std::log2(static_cast<double>(scale))));
  const int base = log2 / 3;
  const int rem = log2 % 3;
  Scales s;
  s.heads = base + (rem > 0 ? 1 : 0);
  s.mlp = s.heads;
  s.emb = base + (rem > 1 ? 1 : 0);
  s.layers = base;
  return s;
}

constexpr const char* kBlocks[] = {"default", "llama2", "mistral",   "mixtral", "deepseek",
                                   "gemma",   "gemma2", "gemma3",    "gemma4",  "gpt3",
                                   "qwen2",   "qwen3",  "qwen3_moe", "gpt_oss", "llama4",
                                   "olmo3",   "simple", "simple_mlp"};

ActivationKind activation_of(MaxTextReader& r, const std::string& name) {
  const std::string n = to_lower(name);
  if (n == "silu" || n == "swish" || n == "sigmoid") return ActivationKind::kSilu;
  if (n == "gelu" || n == "gelu_tanh" || n == "gelu_new") return ActivationKind::kGelu;
  if (n == "relu") return ActivationKind::kRelu;
  if (n == "squared_relu" || n == "relu2") return ActivationKind::kSquaredRelu;
  r.fail("mlp_activations", fmt::format("activation '{}' is not modelled", name));
}

struct Dims {
  std::int64_t emb = 0, mlp = 0, moe_mlp = 0;
  int heads = 0, kv_heads = 0, head_dim = 0, layers = 0;
};

Dims read_dims(MaxTextReader& r) {
  const Scales s = individual_scales(r);
  // types.py scales each base size by 2^shift; past kMaxCount it is refused, never narrowed.
  auto scaled = [&r](const char* key, std::int64_t fallback, int shift) {
    const std::int64_t base = r.integer(key, fallback);
    if (base > 0 && base > (kMaxCount >> shift)) {
      r.fail(key, fmt::format("{} x global_parameter_scale is more than {}", base, kMaxCount));
    }
    return base > 0 ? base << shift : base;
  };
  Dims d;
  d.emb = scaled("base_emb_dim", 0, s.emb);
  d.heads = static_cast<int>(scaled("base_num_query_heads", 0, s.heads));
  d.kv_heads = static_cast<int>(scaled("base_num_kv_heads", 0, s.heads));
  d.mlp = scaled("base_mlp_dim", 0, s.mlp);
  d.moe_mlp = scaled("base_moe_mlp_dim", -1, s.mlp);
  d.layers = static_cast<int>(scaled("base_num_decoder_layers", 0, s.layers));
  d.head_dim = static_cast<int>(r.integer("head_dim", 128));
  const std::pair<const char*, std::int64_t> positive[] = {{"base_emb_dim", d.emb},
                                                           {"base_num_query_heads", d.heads},
                                                           {"base_num_kv_heads", d.kv_heads},
                                                           {"base_mlp_dim", d.mlp},
                                                           {"base_num_decoder_layers", d.layers},
                                                           {"head_dim", d.head_dim}};
  for (const auto& [key, v] : positive) {
    if (v < 1) r.fail(key, fmt::format("must be positive, got {}", v));
  }
  // Layers are allocated one by one: bounded before that (the builder checks the rest).
  if (d.layers > kMaxLayers) {
    r.fail("base_num_decoder_layers",
           fmt::format("{} layers is more than the {} this tool models", d.layers, kMaxLayers));
  }
  return d;
}

AttentionSpec base_attention(MaxTextReader& r, const Dims& dims) {
  AttentionSpec a;
  a.num_heads = dims.heads;
  a.num_query_groups = dims.kv_heads;
  a.head_dim = dims.head_dim;
  a.add_qkv_bias = r.boolean("attention_bias", false);
  a.qk_layernorm = r.boolean("use_qk_norm", false);
  if (to_lower(r.text("attention_type", "global")) == "mla") {
    a.kind = AttentionKind::kMla;
    a.q_lora_rank = static_cast<int>(r.integer("q_lora_rank", 0));
    a.kv_lora_rank = static_cast<int>(r.integer("kv_lora_rank", 512));
    a.qk_head_dim = static_cast<int>(r.integer("qk_nope_head_dim", 128));
    a.qk_pos_emb_head_dim = static_cast<int>(r.integer("qk_rope_head_dim", 64));
    a.v_head_dim = static_cast<int>(r.integer("v_head_dim", 128));
    a.num_query_groups = a.num_heads;
  }
  return a;
}

// The attention of (projector) layer i under the block's local / global / chunked pattern:
// gpt_oss.py and gemma2 alternate (local, global); gemma3.py:37-49 / gemma4.py:42-54
// get_attention_type cycle five LOCAL_SLIDING layers and one GLOBAL; llama4.py:267-278
// determine_is_nope_layer makes every nope_layer_interval-th layer GLOBAL (no RoPE), the others
// CHUNK (:386, chunk_attn_window_size).
AttentionSpec layer_attention(MaxTextReader& r, const std::string& block, const AttentionSpec& base,
                              int i) {
  AttentionSpec a = base;
  const int window = static_cast<int>(r.integer("sliding_window_size", 0));
  const std::string type = to_lower(r.text("attention_type", "global"));
  if (block == "gpt_oss") {
    if (i % 2 == 0) a.sliding_window = window;  // gpt_oss.py: (local, global) pattern
  } else if (block == "gemma4" || block == "gemma3") {
    if (i % 6 != 5) {  // gemma4.py / gemma3.py: five local layers, then one global
      a.sliding_window = window;
    } else if (block == "gemma4") {
      const int gd = static_cast<int>(r.integer("global_head_dim", 0));
      const int gkv = static_cast<int>(r.integer("global_num_kv_heads", 0));
      if (gd > 0) a.head_dim = gd;
      if (gkv > 0) a.num_query_groups = gkv;
      if (r.boolean("share_kv_projections", false)) {
        // One projection serves K and V: the parameters, FLOPs and bytes of K and V over half the
        // KV heads each.
        if (a.num_query_groups % 2 != 0) {
          throw NotModelledError(r.where("share_kv_projections"), "share_kv_projections",
                                 "shared K/V projections with an odd KV head count are not "
                                 "modelled");
        }
        a.num_query_groups /= 2;
      }
    }
  } else if (block == "gemma2") {
    if (i % 2 == 0) a.sliding_window = window;  // the local half of a MaxText layer
  } else if (block == "llama4") {
    const std::int64_t nope = r.integer("nope_layer_interval", -1);
    const bool global = nope > 0 && (i + 1) % nope == 0;  // llama4.py determine_is_nope_layer
    if (!global) a.chunk_window = static_cast<int>(r.integer("chunk_attn_window_size", 0));
  } else if (type == "local_sliding") {
    a.sliding_window = window;
  } else if (type == "chunk") {
    a.chunk_window = static_cast<int>(r.integer("chunk_attn_window_size", 0));
  }
  return a;
}

// Whether layer i is an MoE layer (maxtext_utils.py get_dense_moe_layers, llama4.py).
bool is_moe_layer(MaxTextReader& r, const std::string& block, int i) {
  if (block == "deepseek") return i >= r.integer("first_num_dense_layers", 0);
  if (block == "llama4") {
    const std::int64_t step = r.integer("interleave_moe_layer_step", 1);
    return step > 0 && (i + 1) % step == 0;
  }
  return true;
}

MoeSpec read_moe(MaxTextReader& r, const std::string& block, const Dims& dims) {
  MoeSpec m;
  m.num_experts = static_cast<int>(r.integer("num_experts", 1));
  m.topk = static_cast<int>(r.integer("num_experts_per_tok", 1));
  if (dims.moe_mlp <= 0) {
    r.fail("base_moe_mlp_dim", "must be positive for a MoE model (num_experts > 1)");
  }
  m.expert_ffn_hidden_size = dims.moe_mlp;
  // Shared experts use moe_mlp_dim, Gemma 4's mlp_dim (maxtext_utils.py get_shared_expert_mlp_dim).
  const std::int64_t shared = r.integer("shared_experts", 0);
  m.shared_expert_ffn_hidden_size = shared * (block == "gemma4" ? dims.mlp : dims.moe_mlp);
  m.router_bias = r.boolean("routed_bias", false);
  m.grouped_gemm = r.boolean("sparse_matmul", true);
  // Only the dense path drops tokens (MX6 moe.py dense_matmul :2732, `if capacity_factor > 0`
  // :2791); sparse_matmul (:1403) routes every token whatever capacity_factor says (its ragged
  // buffers are ragged_buffer_factor's, runtime.cpp).
  const double cf = r.number("capacity_factor", -1.0);
  m.capacity_factor = cf > 0.0 && !m.grouped_gemm ? cf : 0.0;
  if (m.topk < 1 || m.topk > m.num_experts) {
    r.fail("num_experts_per_tok",
           fmt::format("must be in 1..num_experts ({}), got {}", m.num_experts, m.topk));
  }
  return m;
}

// Group-limited routing (MX1 base.yml:296-298 n_routing_groups / topk_routing_group, -1 = off;
// types.py:1060-1065): layers/moe.py get_topk routes DeepSeek-V3 / V4 models (model_name
// deepseek3*, deepseek4*, :739-741) through deepseek_routing (:813-837), which keeps each token's
// best topk_routing_group of n_routing_groups equal expert groups (scored by their top-2 experts,
// expert_group_mask :775-811) before its top-k; random routing (use_random_routing, :721-727)
// bypasses it. The checks are MaxText's (pyconfig_deprecated.py:1142-1153 validate_deepseek_moe:
// the group count must be set with the top groups, exceed them and divide the experts) plus the
// top-2-per-group scoring's groups of at least 2 and a top-k that fits in the picked groups.
void read_group_limited_routing(MaxTextReader& r, MoeSpec& m, std::vector<std::string>& warnings) {
  const std::int64_t groups = r.integer("n_routing_groups", -1);
  const std::int64_t picked = r.integer("topk_routing_group", -1);
  if (groups == -1) return;
  const std::string name = r.text("model_name", "default");
  const bool deepseek = name.starts_with("deepseek3") || name.starts_with("deepseek4");
  if (!deepseek || r.boolean("use_random_routing", false)) {
    warnings.push_back(fmt::format(
        "n_routing_groups {}: no effect ({}; MaxText routes by groups only for deepseek3 / "
        "deepseek4 models without random routing)",
        groups, deepseek ? "use_random_routing" : "model_name '" + name + "'"));
    return;
  }
  if (groups < 1) r.fail("n_routing_groups", "must be -1 (off) or positive");
  if (picked == -1) r.fail("topk_routing_group", "must be set with n_routing_groups");
  if (picked < 1 || picked >= groups) {
    r.fail("topk_routing_group",
           fmt::format("must be in 1..{} (below n_routing_groups), got {}", groups - 1, picked));
  }
  if (const auto bad = group_routing_problem(m.num_experts, m.topk, static_cast<int>(groups),
                                             static_cast<int>(picked), 2)) {
    r.fail(bad->in_groups_key ? "n_routing_groups" : "topk_routing_group", bad->message);
  }
  m.router_num_groups = static_cast<int>(groups);
  m.router_group_topk = static_cast<int>(picked);
}

}  // namespace

void read_maxtext_model(MaxTextReader& r, JobDraft& d) {
  ModelSpec& m = d.model;
  m.family = ModelFamily::kDecoderLm;
  m.name = r.text("model_name", "default");
  const std::string block = to_lower(r.text("decoder_block", "llama2"));
  if (std::find(std::begin(kBlocks), std::end(kBlocks), block) == std::end(kBlocks)) {
    throw NotModelledError(r.where("decoder_block"), "decoder_block",
                           fmt::format("decoder block '{}' is not modelled", block));
  }
  const Dims dims = read_dims(r);
  m.hidden_size = dims.emb;
  m.vocab_size = r.integer("vocab_size", 32000);
  m.make_vocab_size_divisible_by = 1;
  d.vocab_padding = 1;  // MaxText uses vocab_size as configured
  m.tied_embeddings = r.boolean("logits_via_embedding", false);
  m.norm = block == "gpt3" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  const std::int64_t positions = r.integer("trainable_position_size", -1);
  m.position_embedding =
      positions > 0 ? PositionEmbeddingKind::kLearnedAbsolute : PositionEmbeddingKind::kRope;
  if (positions > 0) m.max_position_embeddings = positions;
  const double dropout = r.boolean("enable_dropout", true) ? r.number("dropout_rate", 0.0) : 0.0;
  m.attention_dropout = m.hidden_dropout = dropout;
  d.attention_dropout = d.hidden_dropout = dropout;
  m.mtp_num_layers = static_cast<int>(r.integer("mtp_num_layers", 0));

  const std::vector<std::string> acts = r.list("mlp_activations");
  if (acts.empty()) r.fail("mlp_activations", "needs at least one activation");
  MlpSpec mlp;
  mlp.activation = activation_of(r, acts.front());
  mlp.gated = acts.size() >= 2;
  mlp.add_bias = r.boolean("mlp_bias", false) || block == "gpt3";
  mlp.ffn_hidden_size = dims.mlp;
  const AttentionSpec attention = base_attention(r, dims);
  const bool moe_model = r.integer("num_experts", 1) > 1;
  MoeSpec moe = moe_model ? read_moe(r, block, dims) : MoeSpec{};
  if (moe_model) read_group_limited_routing(r, moe, d.warnings);
  // gemma2.py:38-300 Gemma2DecoderLayer holds a local (LOCAL_SLIDING) and a global attention,
  // each with its own MLP and norms: one MaxText layer is two transformer layers
  // (configs/models/gemma2-2b.yml:21, "half of the real number of layers").
  const int layers = block == "gemma2" ? 2 * dims.layers : dims.layers;
  if (layers > kMaxLayers) {
    r.fail("base_num_decoder_layers",
           fmt::format("{} layers is more than the {} this tool models", layers, kMaxLayers));
  }
  m.layers.clear();
  m.layers.reserve(static_cast<std::size_t>(layers));
  for (int i = 0; i < layers; ++i) {
    LayerSpec l;
    l.attention = layer_attention(r, block, attention, i);
    l.mlp = mlp;
    if (moe_model && is_moe_layer(r, block, i)) {
      l.is_moe = true;
      l.moe = moe;
    }
    m.layers.push_back(l);
  }
}

}  // namespace projector::frontend_detail
