// Primus' DeepSeek-V4 (model_type deepseek_v4; docs/deepseek-v4.md): the GPT layers the shared
// reader builds are given V4's hybrid attention, hyper-connections and hash routing from the
// keys Primus' V4 builder reads (PR11 deepseek_v4_transformer_config.py, deepseek_v4_block.py).
#include <fmt/format.h>

#include "frontend/megatron/adapter.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

// compress_ratios: a list or its Python text; one entry per layer, 0 / 4 / 128. Primus truncates a
// longer list (decoder + MTP entries) and pads a shorter one with its last entry
// (deepseek_v4_block.py:197-237 _normalize_compress_ratios); null makes every layer dense.
std::vector<int> compress_ratios(ArgReader& r, int num_layers) {
  const std::string key = "compress_ratios";
  std::vector<long long> list;
  if (const ConfigValue* v = r.get(key); v != nullptr && !v->is_null()) {
    const PyValue value = int_or_list(r, key, *v);
    if (!value.is_list) r.fail(key, "must be a list with one ratio per layer");
    list = value.list;
  }
  std::vector<int> out(static_cast<std::size_t>(num_layers), 0);
  for (int i = 0; i < num_layers; ++i) {
    if (list.empty()) break;
    const long long ratio =
        i < static_cast<int>(list.size()) ? list[static_cast<std::size_t>(i)] : list.back();
    // DeepseekV4Attention supports these three (deepseek_v4_attention.py:123, :519-523).
    if (ratio != 0 && ratio != 4 && ratio != 128) {
      r.fail(key, fmt::format("entry {} is {}: DeepSeek-V4 attention takes 0, 4 or 128", i, ratio));
    }
    out[static_cast<std::size_t>(i)] = static_cast<int>(ratio);
  }
  return out;
}

int positive(ArgReader& r, const std::string& key, std::int64_t fallback, const char* why) {
  const std::int64_t v = r.int_or(key, fallback, why);
  if (v < 1 || v > kMaxCount) r.fail(key, fmt::format("must be at least 1, got {}", v));
  return static_cast<int>(v);
}

// Keys whose settings Primus' V4 path would train but this model does not cost.
void refuse_unmodelled_v4_keys(ArgReader& r) {
  if (r.float_or("v4_indexer_distill_loss_coeff", 0.0, "") > 0.0) {
    r.fail("v4_indexer_distill_loss_coeff",
           "a trained lightning indexer (its distillation loss and backward) is not modelled; "
           "with 0 Primus freezes it (deepseek_v4_attention.py:680-699)");
  }
  if (r.bool_quiet("moe_experts_fp4", false)) {
    r.fail("moe_experts_fp4", "MXFP4 routed experts beside an FP8 model are not modelled");
  }
  // The V4 block checkpoints whole layers only (deepseek_v4_block.py:956-1001): a selective
  // granularity would run without any recompute, which the stated modules would misstate.
  if (to_lower(r.string_or("recompute_granularity", "", "")) == "selective") {
    r.fail("recompute_granularity",
           "DeepSeek-V4's block recomputes only whole layers (full); selective is not applied "
           "by Primus");
  }
  if (r.bool_quiet("multi_latent_attention", false)) {
    r.fail("multi_latent_attention", "DeepSeek-V4 builds its own attention, not MLA");
  }
}

}  // namespace

bool is_deepseek_v4(ArgReader& r) {
  return to_lower(r.string_or("model_type", "gpt", "")) == "deepseek_v4";
}

void apply_deepseek_v4(ArgReader& r, ModelSpec& m) {
  refuse_unmodelled_v4_keys(r);
  const char* why = "DeepSeekV4TransformerConfig default (PR11)";
  AttentionSpec a;
  a.kind = AttentionKind::kCompressed;
  a.num_heads = m.layers.empty() ? 0 : m.layers.front().attention.num_heads;
  a.num_query_groups = 1;  // one latent is both K and V for every head
  a.head_dim = positive(r, "kv_channels", 512, why);
  a.qk_pos_emb_head_dim = static_cast<int>(r.int_or("qk_pos_emb_head_dim", 64, why));
  if (a.qk_pos_emb_head_dim < 0 || a.qk_pos_emb_head_dim > a.head_dim) {
    r.fail("qk_pos_emb_head_dim", "must be between 0 and kv_channels");
  }
  // deepseek_v4_attention.py:539-544: V4 always projects q through a low rank.
  a.q_lora_rank = static_cast<int>(r.int_quiet("q_lora_rank", 0));
  if (a.q_lora_rank <= 0) r.fail("q_lora_rank", "DeepSeek-V4 requires q_lora_rank > 0");
  a.sliding_window = static_cast<int>(r.int_or("attn_sliding_window", 0, why));
  if (a.sliding_window < 0) a.sliding_window = 0;
  CompressedAttentionSpec& c = a.compressed;
  c.attn_sink = r.bool_quiet("attn_sink", false);
  c.o_groups = positive(r, "o_groups", 8, why);
  c.o_lora_rank = static_cast<int>(r.int_or("o_lora_rank", 0, why));
  if (static_cast<std::int64_t>(a.num_heads) * a.head_dim % c.o_groups != 0) {
    r.fail("o_groups",
           fmt::format("heads x kv_channels ({}) is not divisible by {} groups",
                       static_cast<std::int64_t>(a.num_heads) * a.head_dim, c.o_groups));
  }
  c.index_topk = positive(r, "index_topk", 512, why);
  c.index_head_dim = positive(r, "index_head_dim", 128, why);
  c.index_n_heads = positive(r, "index_n_heads", 64, why);
  const std::vector<int> ratios = compress_ratios(r, m.num_layers());
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerSpec& layer = m.layers[static_cast<std::size_t>(i)];
    layer.attention = a;
    layer.attention.compressed.compress_ratio = ratios[static_cast<std::size_t>(i)];
  }
  m.hc_mult = positive(r, "hc_mult", 1, why);
  m.hc_sinkhorn_iters = static_cast<int>(r.int_or("hc_sinkhorn_iters", 20, why));
  if (m.hc_mult > 1 && m.mtp_num_layers > 0 && !r.bool_quiet("mtp_use_separate_hc_head", true)) {
    // deepseek_v4_mtp_layer.py:98-108 raises for this combination.
    r.fail("mtp_use_separate_hc_head", "MTP with hc_mult > 1 needs its own HyperHead (true)");
  }
  // The first num_hash_layers decoder layers route by token id (deepseek_v4_block.py:1127-1133).
  const int hash_layers = static_cast<int>(r.int_quiet("num_hash_layers", 0));
  if (hash_layers < 0) r.fail("num_hash_layers", "must not be negative");
  for (int i = 0; i < std::min(hash_layers, m.num_layers()); ++i) {
    LayerSpec& layer = m.layers[static_cast<std::size_t>(i)];
    if (layer.is_moe) layer.moe.hash_routing = true;
  }
}

}  // namespace projector::frontend_detail
