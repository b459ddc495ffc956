// The model block of a published run -> the draft's ModelSpec: a decoder LM (per-layer attention,
// MLP or MoE, MLA, sliding windows) or a recommendation model (model.type dlrm).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <regex>

#include "projector/frontend/layer_pattern.h"
#include "projector/util/bounds.h"
#include "projector/util/text.h"
#include "validate/family_facts.h"
#include "validate/mapper.h"

namespace projector::validate_detail {
namespace {

// Why an unstated setting took the family's reference fact.
std::string family_reason(const Mapper& m, const std::string& source) {
  return fmt::format("not stated; the {} family ({})", m.e_.model.family, source);
}

// An unstated model setting: the family's reference fact, else the framework profile's default,
// with the reason to record ("not stated; ...").
template <typename T>
std::optional<FamilyFact<T>> unstated(const Mapper& m, std::optional<FamilyFact<T>> fact,
                                      const ProfileDefault<T>& def) {
  if (fact) {
    fact->source = family_reason(m, fact->source);
    return fact;
  }
  if (!def.value) return std::nullopt;
  return FamilyFact<T>{*def.value,
                       fmt::format("not stated; {}: {}", m.d_.profile.name, def.source)};
}

bool fail_unstated(Mapper& m, const char* key, const FamilyFacts& family) {
  m.fail(fmt::format("{} not stated (neither the family in {} nor the {} profile gives it)", key,
                     family.path(), m.d_.profile.name));
  return false;
}

bool map_position_embedding(Mapper& m, FamilyFacts& family) {
  const RunEntry::Model& src = m.e_.model;
  ModelSpec& ms = m.d_.model;
  const std::string pos = to_lower(src.position_embedding);
  if (pos.empty()) {
    const auto f = unstated(m, family.position_embedding(), m.d_.profile.position_embedding);
    if (!f) return fail_unstated(m, "model.position_embedding", family);
    ms.position_embedding = f->value;
    const PositionEmbeddingKind k = f->value;
    m.assume("model.position_embedding",
             k == PositionEmbeddingKind::kRope              ? "rope"
             : k == PositionEmbeddingKind::kLearnedAbsolute ? "learned_absolute"
                                                            : "none",
             f->source);
  } else if (has(pos, "rope") || has(pos, "rotary")) {
    ms.position_embedding = PositionEmbeddingKind::kRope;
    if (has(pos, "percent") || has(pos, "yarn")) {
      m.note("model.position_embedding: '" + src.position_embedding + "' counted as plain RoPE");
    }
  } else if (has(pos, "learned") || has(pos, "absolute")) {
    ms.position_embedding = PositionEmbeddingKind::kLearnedAbsolute;
  } else if (has(pos, "alibi") || has(pos, "none")) {
    ms.position_embedding = PositionEmbeddingKind::kNone;  // ALiBi has no weights
  } else {
    ms.position_embedding = PositionEmbeddingKind::kRope;
    m.assume("model.position_embedding", "rope",
             "unrecognised text '" + src.position_embedding + "'");
  }
  return true;
}

// Vocabulary, normalisation, position embedding, tied output layer, dropout: as stated, else the
// family's reference facts (data/models/_families.yaml), else the framework profile's default,
// each recorded with its source; what none gives is refused rather than guessed. The vocabulary
// has no framework default (it is the tokenizer's); dropout left unset here takes the profile's
// in the job builder.
bool map_embeddings(Mapper& m, int seq_len) {
  const RunEntry::Model& src = m.e_.model;
  ModelSpec& ms = m.d_.model;
  FamilyFacts family(m.data_dir, src.family);
  if (src.vocab_size) {
    ms.vocab_size = *src.vocab_size;
  } else if (const auto f = family.vocab_size()) {
    ms.vocab_size = f->value;
    m.assume("model.vocab_size", std::to_string(f->value), family_reason(m, f->source));
  } else {
    return fail_unstated(m, "model.vocab_size", family);
  }
  const std::string norm = to_lower(src.norm);
  if (norm.empty()) {
    const auto f = unstated(m, family.norm(), m.d_.profile.norm);
    if (!f) return fail_unstated(m, "model.norm", family);
    ms.norm = f->value;
    m.assume("model.norm", f->value == NormKind::kRmsNorm ? "rmsnorm" : "layernorm", f->source);
  } else if (has(norm, "rms")) {
    ms.norm = NormKind::kRmsNorm;
  } else if (has(norm, "layernorm") || has(norm, "layer_norm") || has(norm, "layer norm")) {
    ms.norm = NormKind::kLayerNorm;
    if (has(norm, "embedding")) m.note("model.norm: extra embedding LayerNorm not modelled");
  } else {
    ms.norm = NormKind::kRmsNorm;
    m.assume("model.norm", "rmsnorm", "unrecognised text '" + src.norm + "'");
  }
  if (!map_position_embedding(m, family)) return false;
  ms.max_position_embeddings = seq_len;
  if (src.tied_embeddings) {
    ms.tied_embeddings = *src.tied_embeddings;
  } else if (const auto f = unstated(m, family.tied_embeddings(), m.d_.profile.tied_embeddings)) {
    ms.tied_embeddings = f->value;
    m.assume("model.tied_embeddings", f->value ? "true" : "false", f->source);
  } else {
    return fail_unstated(m, "model.tied_embeddings", family);
  }
  if (const auto f = family.dropout()) {
    m.d_.attention_dropout = f->value;
    m.d_.hidden_dropout = f->value;
    m.assume("model.dropout", fmt::format("{}", f->value), family_reason(m, f->source));
  }
  if (!src.block.empty()) m.note("model.block: '" + src.block + "' counted as a standard block");
  return true;
}

// The attention of every layer: standard (GQA / MHA) or MLA from the mla block.
bool map_attention(Mapper& m, AttentionSpec& a) {
  const RunEntry::Model& src = m.e_.model;
  const int heads = *src.num_attention_heads;
  a.num_heads = heads;
  a.qk_layernorm = src.qk_layernorm.value_or(false);
  if (!src.mla) {
    if (src.num_kv_heads) {
      a.num_query_groups = *src.num_kv_heads;
    } else {
      a.num_query_groups = heads;
      m.assume("model.num_kv_heads", std::to_string(heads), "not stated; multi-head attention");
    }
    if (src.head_dim) {
      a.head_dim = *src.head_dim;
    } else {
      a.head_dim = static_cast<int>(*src.hidden_size / heads);
      m.assume("model.head_dim", std::to_string(a.head_dim), "not stated; hidden / heads");
    }
    return true;
  }
  // MLA: the attention dimensions come from the mla block, never from hidden / heads.
  const RunEntry::Mla& x = *src.mla;
  if (!x.kv_lora_rank || !x.qk_nope_head_dim || !x.qk_rope_head_dim || !x.v_head_dim) {
    m.fail(
        "model.mla: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim are "
        "required");
    return false;
  }
  a.kind = AttentionKind::kMla;
  a.q_lora_rank = x.q_lora_rank.value_or(0);
  a.kv_lora_rank = *x.kv_lora_rank;
  a.qk_head_dim = *x.qk_nope_head_dim;
  a.qk_pos_emb_head_dim = *x.qk_rope_head_dim;
  a.v_head_dim = *x.v_head_dim;
  a.head_dim = a.qk_head_dim + a.qk_pos_emb_head_dim;
  a.num_query_groups = heads;
  return true;
}

// Sliding windows: "alternating full / sliding-window (128)".
int read_window(Mapper& m, bool& alternating) {
  const std::string& text = m.e_.model.attention;
  const std::string attn = to_lower(text);
  alternating = false;
  if (!has(attn, "sliding")) return 0;
  int window = 0;
  std::smatch match;
  if (std::regex_search(attn, match, std::regex(R"(\((\d+)\))"))) {
    const std::string digits = match[1];
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), window);
    if (ec != std::errc() || window > kMaxCount) {
      m.fail("model.attention: sliding window '" + digits + "' out of range");
      window = 0;
    }
  }
  alternating = has(attn, "alternat");
  if (window > 0) {
    m.note(fmt::format("model.attention: sliding window {} on {} layers{}", window,
                       alternating ? "alternate (even-index)" : "all",
                       has(attn, "sink") ? "; attention sinks not modelled" : ""));
  } else {
    m.note("model.attention: sliding window size not found in '" + text +
           "'; full attention counted");
  }
  return window;
}

// The MoE block and which layers are MoE (1) or dense (0).
// A Megatron hybrid stack stated in model.block ("hybrid_layer_pattern MEME*..."): one symbol per
// layer, as the Megatron adapter reads hybrid_layer_pattern (frontend/megatron/hybrid.cpp).
std::optional<std::string> hybrid_pattern(const Mapper& m) {
  static const std::regex kPattern(R"(hybrid_(?:layer|override)_pattern\W{0,3}([-M*+E]+))");
  std::smatch p;
  const std::string& block = m.e_.model.block;
  if (!std::regex_search(block, p, kPattern)) return std::nullopt;
  return p[1].str();
}

// Mamba-2 mixer sizes as a hybrid entry states them ("64 heads x head_dim 64, state 128, 8
// groups"); the rest at Megatron's defaults (MG11 mamba_mixer.py: d_conv 4, chunk 128).
std::optional<MambaSpec> hybrid_mamba(const Mapper& m) {
  static const std::regex kMamba(
      R"((\d+)\s*heads\s*x\s*head_dim\s*(\d+),\s*state\s*(\d+),\s*(\d+)\s*groups)");
  std::smatch x;
  const std::string& block = m.e_.model.block;
  if (!std::regex_search(block, x, kMamba)) return std::nullopt;
  MambaSpec s;
  s.num_heads = std::stoi(x[1].str());
  s.head_dim = std::stoi(x[2].str());
  s.state_dim = std::stoi(x[3].str());
  s.num_groups = std::stoi(x[4].str());
  if (s.num_heads <= 0 || s.head_dim <= 0 || s.state_dim <= 0 || s.num_groups <= 0 ||
      s.num_heads % s.num_groups != 0) {
    return std::nullopt;
  }
  return s;
}

bool map_moe(Mapper& m, MoeSpec& spec, std::vector<int>& is_moe) {
  const RunEntry::Moe& x = *m.e_.model.moe;
  const int layers = *m.e_.model.num_layers;
  if (!x.num_experts || !x.topk || !x.moe_ffn_hidden_size) {
    m.fail("model.moe: num_experts, topk and moe_ffn_hidden_size are required");
    return false;
  }
  spec.num_experts = *x.num_experts;
  spec.topk = *x.topk;
  spec.expert_ffn_hidden_size = *x.moe_ffn_hidden_size;
  const int shared = x.shared_experts.value_or(0);
  if (!x.shared_experts) m.assume("model.moe.shared_experts", "0", "not stated");
  if (shared > 0 && x.shared_expert_ffn_hidden_size) {
    spec.shared_expert_ffn_hidden_size = *x.shared_expert_ffn_hidden_size;
  } else if (shared > 0) {
    spec.shared_expert_ffn_hidden_size = shared * *x.moe_ffn_hidden_size;
    m.assume("model.moe.shared_expert_ffn_hidden_size",
             std::to_string(spec.shared_expert_ffn_hidden_size),
             "not stated; shared_experts x moe_ffn_hidden_size");
  }
  const std::string router = to_lower(x.router);
  spec.router_bias =
      has(router, "bias") || has(router, "aux-loss-free") || has(router, "aux_loss_free");
  spec.capacity_factor = 0.0;  // dropless: Megatron's default and NVIDIA's benchmark rows
  const int dense = x.dense_layers.value_or(0);
  if (dense > layers) {
    m.fail("model.moe.dense_layers exceeds num_layers");
    return false;
  }
  const std::string freq = to_lower(x.moe_layer_freq);
  if (hybrid_pattern(m)) {
    std::fill(is_moe.begin(), is_moe.end(), 1);  // the pattern's 'E' layers decide (map_hybrid)
  } else if (freq.empty() || has(freq, "all")) {
    if (freq.empty()) m.assume("model.moe.moe_layer_freq", "1", "not stated; every layer MoE");
    std::fill(is_moe.begin(), is_moe.end(), 1);
  } else {
    std::string error;
    const std::optional<PyValue> v = eval_list_expression(x.moe_layer_freq, error);
    std::optional<std::vector<int>> pattern;
    if (v) {
      pattern = v->is_list ? moe_pattern_from_list(v->list, layers, error)
                           : moe_pattern_from_int(v->integer, layers, error);
    }
    if (!pattern) {
      m.fail("model.moe.moe_layer_freq: " + error);
      return false;
    }
    is_moe = *pattern;
  }
  for (int i = 0; i < dense; ++i) is_moe[static_cast<std::size_t>(i)] = 0;
  return true;
}

// The hybrid stack's layers, as the Megatron adapter's hybrid_layers builds them: 'M' a Mamba-2
// mixer, '*' / '+' attention, '-' a dense MLP, 'E' a MoE block, each its own layer.
void map_hybrid(Mapper& m, const LayerSpec& base, const MoeSpec& moe, std::int64_t dense_ffn) {
  const std::string pattern = *hybrid_pattern(m);
  ModelSpec& ms = m.d_.model;
  if (static_cast<int>(pattern.size()) != *m.e_.model.num_layers) {
    return m.fail(fmt::format("model.block: the hybrid pattern has {} layers, model.num_layers {}",
                              pattern.size(), *m.e_.model.num_layers));
  }
  const std::optional<MambaSpec> mamba = hybrid_mamba(m);
  if (pattern.find('M') != std::string::npos && !mamba) {
    return m.fail(
        "model.block: Mamba layers without their sizes ('<n> heads x head_dim <d>, state <s>, "
        "<g> groups')");
  }
  if (pattern.find('E') != std::string::npos && moe.num_experts <= 0) {
    return m.fail("model.block: the hybrid pattern has MoE ('E') layers and no model.moe block");
  }
  const std::int64_t ffn = dense_ffn > 0 ? dense_ffn : m.e_.model.ffn_hidden_size.value_or(0);
  if (pattern.find('-') != std::string::npos && ffn <= 0) {
    return m.fail("model.block: the hybrid pattern has MLP ('-') layers and no ffn_hidden_size");
  }
  LayerSpec mixer;
  mixer.kind = LayerKind::kMamba;
  if (mamba) mixer.mamba = *mamba;
  ms.layers.assign(pattern.size(), base);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    LayerSpec& layer = ms.layers[i];
    // The MLP every layer carries, run only by '-' ('E' runs the experts' width, as the
    // uniform stack of map_decoder_lm sets it).
    layer.mlp.ffn_hidden_size = ffn > 0 ? ffn : moe.expert_ffn_hidden_size;
    set_hybrid_layer(pattern[i], mixer, moe, layer);
    if (layer.is_moe) layer.mlp.ffn_hidden_size = moe.expert_ffn_hidden_size;
  }
  m.note(
      fmt::format("model.block: hybrid stack of {} layers read from its pattern", pattern.size()));
}

void map_decoder_lm(Mapper& m, int seq_len) {
  const RunEntry::Model& src = m.e_.model;
  ModelSpec& ms = m.d_.model;
  if (!src.num_layers || *src.num_layers <= 0) return m.fail("model.num_layers not stated");
  if (*src.num_layers > kMaxLayers) {
    return m.fail(fmt::format("model.num_layers {} is more than the {} this tool models",
                              *src.num_layers, kMaxLayers));
  }
  if (!src.hidden_size || *src.hidden_size <= 0) return m.fail("model.hidden_size not stated");
  if (!src.num_attention_heads || *src.num_attention_heads <= 0) {
    return m.fail("model.num_attention_heads not stated");
  }
  const std::int64_t h = *src.hidden_size;
  ms.hidden_size = h;
  if (!map_embeddings(m, seq_len)) return;
  LayerSpec base;
  if (!map_attention(m, base.attention)) return;
  bool gated = false;
  base.mlp.activation = read_activation(m, src.activation, gated);
  base.mlp.gated = gated;
  bool alternating = false;
  const int window = read_window(m, alternating);

  const int layers = *src.num_layers;
  const bool moe = src.moe.has_value() || to_lower(src.type) == "moe";
  std::vector<int> is_moe(static_cast<std::size_t>(layers), 0);
  MoeSpec moe_spec;
  if (moe && !src.moe) return m.fail("model.type is moe but the model.moe block is missing");
  if (moe && !map_moe(m, moe_spec, is_moe)) return;
  std::int64_t dense_ffn = 0;
  if (std::find(is_moe.begin(), is_moe.end(), 0) != is_moe.end()) {
    if (moe && src.moe->dense_ffn_hidden_size) {
      dense_ffn = *src.moe->dense_ffn_hidden_size;
    } else if (src.ffn_hidden_size) {
      dense_ffn = *src.ffn_hidden_size;
    } else {
      // Megatron: 4h, or 2/3 of it rounded down to a multiple of 64 for gated units.
      dense_ffn = gated ? (8 * h / 3) / 64 * 64 : 4 * h;
      m.assume("model.ffn_hidden_size", std::to_string(dense_ffn),
               "not stated; Megatron default (4h, 8h/3 for gated units)");
    }
  }
  ms.layers.clear();
  ms.layers.reserve(static_cast<std::size_t>(layers));
  for (int i = 0; i < layers; ++i) {
    LayerSpec layer = base;
    if (window > 0 && (!alternating || i % 2 == 0)) layer.attention.sliding_window = window;
    layer.is_moe = is_moe[static_cast<std::size_t>(i)] != 0;
    if (layer.is_moe) layer.moe = moe_spec;
    layer.mlp.ffn_hidden_size = layer.is_moe ? moe_spec.expert_ffn_hidden_size : dense_ffn;
    ms.layers.push_back(layer);
  }
  ms.mtp_num_layers = src.mtp_layers.value_or(0);
  m.out_.moe = moe;
  if (hybrid_pattern(m)) map_hybrid(m, base, moe_spec, dense_ffn);
}

// DeepSeek-V4 attention from the compressed_attention block (docs/deepseek-v4.md): the same
// settings Primus' V4 builder reads; the layers keep their MoE blocks, the first num_hash_layers
// route by token id.
void map_compressed_attention(Mapper& m) {
  const RunEntry::CompressedAttention& x = *m.e_.model.compressed_attention;
  ModelSpec& ms = m.d_.model;
  if (!x.q_lora_rank || !x.o_groups || !x.o_lora_rank || !x.index_topk || !x.index_head_dim ||
      !x.index_n_heads || !m.e_.model.head_dim) {
    return m.fail(
        "model.compressed_attention: q_lora_rank, o_groups, o_lora_rank, index_topk, "
        "index_head_dim, index_n_heads and model.head_dim are required");
  }
  if (static_cast<int>(x.compress_ratios.size()) != ms.num_layers()) {
    return m.fail("model.compressed_attention.compress_ratios: one entry per layer is required");
  }
  for (int i = 0; i < ms.num_layers(); ++i) {
    LayerSpec& layer = ms.layers[static_cast<std::size_t>(i)];
    AttentionSpec& a = layer.attention;
    a.kind = AttentionKind::kCompressed;
    a.num_query_groups = 1;
    a.head_dim = *m.e_.model.head_dim;
    a.q_lora_rank = *x.q_lora_rank;
    a.qk_pos_emb_head_dim = x.qk_rope_head_dim.value_or(0);
    a.sliding_window = x.sliding_window.value_or(0);
    CompressedAttentionSpec& c = a.compressed;
    c.compress_ratio = static_cast<int>(x.compress_ratios[static_cast<std::size_t>(i)]);
    if (c.compress_ratio != 0 && c.compress_ratio != 4 && c.compress_ratio != 128) {
      return m.fail("model.compressed_attention.compress_ratios: entries are 0, 4 or 128");
    }
    c.attn_sink = x.attn_sink.value_or(false);
    c.o_groups = *x.o_groups;
    c.o_lora_rank = *x.o_lora_rank;
    c.index_topk = *x.index_topk;
    c.index_head_dim = *x.index_head_dim;
    c.index_n_heads = *x.index_n_heads;
    if (layer.is_moe && i < x.num_hash_layers.value_or(0)) layer.moe.hash_routing = true;
  }
  ms.hc_mult = x.hc_mult.value_or(1);
  ms.hc_sinkhorn_iters = x.hc_sinkhorn_iters.value_or(0);
}

}  // namespace

void map_model(Mapper& m, int seq_len) {
  m.d_.model.name = m.e_.model.name;
  const std::string type = to_lower(m.e_.model.type);
  if (type == "dlrm" || m.e_.model.dlrm) return map_recommendation(m);
  const std::string family = to_lower(m.e_.model.family);
  if ((has(family, "deepseek-v4") || has(family, "deepseek_v4")) &&
      !m.e_.model.compressed_attention) {
    // Read as a GPT it would be a 64-head MHA of head dim 512 (ten times the attention weights).
    m.out_.not_modelled =
        "DeepSeek-V4 needs its model.compressed_attention block (compress ratios, indexer, "
        "grouped output projection, hyper-connections)";
  }
  map_decoder_lm(m, seq_len);
  if (m.e_.model.compressed_attention && !m.d_.model.layers.empty()) map_compressed_attention(m);
}

}  // namespace projector::validate_detail
