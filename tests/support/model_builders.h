// Hand-built model specs from published architectures, for tests that must not depend on the
// catalogue or the front-end.
#pragma once

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

}  // namespace projector::testing
