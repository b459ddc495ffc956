// Hand-built model specs from published architectures, for tests that must not depend on the
// catalogue or the front-end.
#pragma once

#include <vector>

#include "projector/model/job.h"

namespace projector::testing {

struct DenseShape {
  int layers;
  std::int64_t hidden;
  std::int64_t ffn;
  int heads;
  int kv_heads;
  std::int64_t vocab;
  bool swiglu = true;
  bool tied = false;
  NormKind norm = NormKind::kRmsNorm;
  PositionEmbeddingKind pos = PositionEmbeddingKind::kRope;
  std::int64_t max_pos = 0;
  bool bias = false;
  int head_dim = 0;  // 0: hidden / heads
};

inline ModelSpec make_dense(const DenseShape& s) {
  ModelSpec m;
  m.hidden_size = s.hidden;
  m.vocab_size = s.vocab;
  m.make_vocab_size_divisible_by = 1;
  m.norm = s.norm;
  m.position_embedding = s.pos;
  m.max_position_embeddings = s.max_pos;
  m.tied_embeddings = s.tied;
  LayerSpec layer;
  layer.attention.num_heads = s.heads;
  layer.attention.num_query_groups = s.kv_heads;
  layer.attention.head_dim = s.head_dim > 0 ? s.head_dim : static_cast<int>(s.hidden / s.heads);
  layer.attention.add_qkv_bias = s.bias;
  layer.attention.add_bias_linear = s.bias;
  layer.mlp.ffn_hidden_size = s.ffn;
  layer.mlp.gated = s.swiglu;
  layer.mlp.activation = s.swiglu ? ActivationKind::kSilu : ActivationKind::kGelu;
  layer.mlp.add_bias = s.bias;
  m.layers.assign(static_cast<std::size_t>(s.layers), layer);
  return m;
}

inline ModelSpec llama31_8b() {
  return make_dense({32, 4096, 14336, 32, 8, 128256});
}
inline ModelSpec llama31_70b() {
  return make_dense({80, 8192, 28672, 64, 8, 128256});
}
inline ModelSpec llama31_405b() {
  return make_dense({126, 16384, 53248, 128, 8, 128256});
}

// GPT-3 175B (Brown et al. 2020): 96 layers, d_model 12288, 96 heads, learned positions, GELU,
// LayerNorm with biases, tied embeddings, vocabulary 50257 (Megatron pads to 51200).
inline ModelSpec gpt3_175b() {
  return make_dense({96, 12288, 4 * 12288, 96, 96, 51200, false, true, NormKind::kLayerNorm,
                     PositionEmbeddingKind::kLearnedAbsolute, 2048, true});
}

// Mixtral 8x7B: Mistral 7B blocks with 8 experts, top-2.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m = make_dense({32, 4096, 14336, 32, 8, 32000});
  for (LayerSpec& l : m.layers) {
    l.is_moe = true;
    l.moe.num_experts = 8;
    l.moe.topk = 2;
    l.moe.expert_ffn_hidden_size = 14336;
  }
  return m;
}

// DeepSeek-V3 (arXiv:2412.19437): 61 layers (3 dense), MLA, 256 routed experts top-8 + 1 shared,
// 1 MTP module.
inline ModelSpec deepseek_v3() {
  ModelSpec m = make_dense({61, 7168, 18432, 128, 128, 129280});
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    LayerSpec& l = m.layers[i];
    l.attention.kind = AttentionKind::kMla;
    l.attention.q_lora_rank = 1536;
    l.attention.kv_lora_rank = 512;
    l.attention.qk_head_dim = 128;
    l.attention.qk_pos_emb_head_dim = 64;
    l.attention.v_head_dim = 128;
    l.attention.head_dim = 192;
    if (i >= 3) {
      l.is_moe = true;
      l.moe.num_experts = 256;
      l.moe.topk = 8;
      l.moe.expert_ffn_hidden_size = 2048;
      l.moe.shared_expert_ffn_hidden_size = 2048;
    }
  }
  m.mtp_num_layers = 1;
  return m;
}

// Llama 3.2 1B (HF config.json): 16 layers, d 2048, SwiGLU 8192, 32 heads / 8 KV heads of
// dim 64, tied embeddings, vocabulary 128256.
inline ModelSpec llama32_1b() {
  DenseShape s{16, 2048, 8192, 32, 8, 128256};
  s.tied = true;
  s.head_dim = 64;
  return make_dense(s);
}

// DeepSeek-V4 as Primus' presets state it (deepseek_v4_base.yaml + deepseek_v4_flash.yaml /
// deepseek_v4_pro.yaml @fd1eeabb): head dim 512 shared K = V latent, rope tail 64, window 128
// with sinks, indexer 64 heads x 128, o_lora_rank 1024, hc_mult 4, every layer MoE with one
// shared expert of the routed width, the first 3 layers hash-routed, vocabulary 129280 untied.
struct V4Shape {
  int layers;
  std::int64_t hidden;
  int heads;
  int q_lora_rank;
  int o_groups;
  int experts;
  std::int64_t expert_ffn;
  int index_topk;
  std::vector<int> ratios;  // compress ratio per layer
};

inline ModelSpec deepseek_v4(const V4Shape& s) {
  ModelSpec m = make_dense({s.layers, s.hidden, s.expert_ffn, s.heads, 1, 129280});
  m.hc_mult = 4;
  m.hc_sinkhorn_iters = 20;
  m.mtp_num_layers = 1;
  for (int i = 0; i < s.layers; ++i) {
    LayerSpec& l = m.layers[static_cast<std::size_t>(i)];
    AttentionSpec& a = l.attention;
    a.kind = AttentionKind::kCompressed;
    a.head_dim = 512;
    a.qk_pos_emb_head_dim = 64;
    a.q_lora_rank = s.q_lora_rank;
    a.sliding_window = 128;
    a.compressed.compress_ratio = s.ratios[static_cast<std::size_t>(i)];
    a.compressed.index_topk = s.index_topk;
    a.compressed.index_head_dim = 128;
    a.compressed.index_n_heads = 64;
    a.compressed.o_groups = s.o_groups;
    a.compressed.o_lora_rank = 1024;
    a.compressed.attn_sink = true;
    l.is_moe = true;
    l.moe.num_experts = s.experts;
    l.moe.topk = 6;
    l.moe.expert_ffn_hidden_size = s.expert_ffn;
    l.moe.shared_expert_ffn_hidden_size = s.expert_ffn;
    l.moe.hash_routing = i < 3;
  }
  return m;
}

// The schedules of deepseek_v4_flash.yaml (43 layers: 0, 0, then 4 / 128 alternating, a final 4)
// and deepseek_v4_pro.yaml (61 layers: 128, 128, then 4 / 128 alternating, a final 4); each
// preset lists one more entry for the MTP layer, which Primus drops.
inline std::vector<int> v4_ratios(int layers, int first) {
  std::vector<int> r(static_cast<std::size_t>(layers));
  for (int i = 0; i < layers; ++i)
    r[static_cast<std::size_t>(i)] = i < 2 ? first : (i % 2 ? 128 : 4);
  return r;
}
inline ModelSpec deepseek_v4_flash() {
  return deepseek_v4({43, 4096, 64, 1024, 8, 256, 2048, 512, v4_ratios(43, 0)});
}
inline ModelSpec deepseek_v4_pro() {
  return deepseek_v4({61, 7168, 128, 1536, 16, 384, 3072, 1024, v4_ratios(61, 128)});
}

}  // namespace projector::testing
