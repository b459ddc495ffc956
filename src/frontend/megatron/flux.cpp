// Primus' Flux diffusion transformer (FluxPretrainTrainer; docs/diffusion.md) -> ModelSpec: DiT
// blocks over the image + text sequence, the conditioning embedders, the velocity head.
#include <fmt/format.h>

#include "frontend/megatron/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

// FluxConfig's defaults (PR9 flux/config.py:48-110), recorded when applied.
constexpr const char* kFluxDefault = "FluxConfig default (PR9 flux/config.py)";

int stated_count(ArgReader& r, const std::string& key, std::int64_t min_value) {
  const std::int64_t v = r.require_int(key);
  if (v < min_value || v > kMaxLayers) {
    r.fail(key, fmt::format("must be between {} and {}, got {}", min_value, kMaxLayers, v));
  }
  return static_cast<int>(v);
}

std::int64_t width(ArgReader& r, const std::string& key, std::int64_t fallback) {
  const std::int64_t v = r.int_or(key, fallback, kFluxDefault);
  if (v < 1 || v > kMaxWidth) {
    r.fail(key, fmt::format("must be between 1 and {}, got {}", kMaxWidth, v));
  }
  return v;
}

// The image side of the sequence: FluxPretrainTrainer takes the mock dataset's image_size
// (default 256) and makes (image_size / 8 / 2)^2 image tokens (the VAE's 8x downsampling, then
// 2 x 2 packing), the rest of seq_length being T5 tokens (PR9 flux_pretrain_trainer.py:193-198).
// Energon datasets (mock_data false) are pre-encoded at the resolution of their preparation,
// which the config does not state: the trainer's default applies and is recorded.
void read_sequence(ArgReader& r, DiffusionSpec& d) {
  std::int64_t image_size = 256;
  const bool mock_data = r.bool_quiet("mock_data", false);
  const ConfigValue* mock = mock_data ? r.get("mock_dataset") : nullptr;
  const ConfigValue* params = mock != nullptr && mock->is_map() ? mock->find("params") : nullptr;
  const ConfigValue* size =
      params != nullptr && params->is_map() ? params->find("image_size") : nullptr;
  if (size != nullptr && !size->is_null()) {
    image_size = r.as_int("mock_dataset", *size);
  } else {
    r.note("image_size", "256",
           mock_data ? "FluxPretrainTrainer's default mock image size (PR9 "
                       "flux_pretrain_trainer.py:195)"
                     : "pre-encoded (energon) latents carry their resolution, which the config "
                       "does not state: FluxPretrainTrainer's default 256 x 256 (PR9 "
                       "flux_pretrain_trainer.py:195; the schnell examples' '256 img tokens')");
  }
  if (image_size < 16 || image_size % 16 != 0) {
    r.fail("mock_dataset", fmt::format("image_size {} is not a positive multiple of 16 (8x VAE "
                                       "downsampling, 2 x 2 packing)",
                                       image_size));
  }
  d.image_tokens = (image_size / 16) * (image_size / 16);
  const std::int64_t seq = r.require_int("seq_length");
  d.text_tokens = seq - d.image_tokens;
  if (d.text_tokens < 1) {
    r.fail("seq_length", fmt::format("{} tokens leave no text tokens beside the {} image tokens of "
                                     "a {}x{} image (seq_length = image + T5 tokens)",
                                     seq, d.image_tokens, image_size, image_size));
  }
}

// One block: attention with q / k RMSNorms over the joint sequence (no mask), a GELU MLP;
// `shape` carries the settings read once for all blocks.
LayerSpec flux_block(const LayerSpec& shape, int streams, bool bias) {
  LayerSpec l = shape;
  l.dit.streams = streams;
  l.dit.adaln_chunks = streams == 2 ? 6 : 3;  // PR9 layer_spec.py:122-155, 323-333
  l.attention.add_bias_linear = bias;
  l.mlp.add_bias = bias;
  return l;
}

LayerSpec block_shape(ArgReader& r, const ModelSpec& m, int heads) {
  LayerSpec l;
  l.kind = LayerKind::kTransformer;
  AttentionSpec& a = l.attention;
  a.num_heads = heads;
  a.num_query_groups = heads;
  a.head_dim = static_cast<int>(m.hidden_size / heads);
  a.qk_layernorm = true;
  a.add_qkv_bias = r.bool_or("add_qkv_bias", true, kFluxDefault);
  a.causal = false;  // AttnMaskType.no_mask (PR9 layer_spec.py:423, 463)
  l.mlp.ffn_hidden_size = r.int_or("ffn_hidden_size", 4 * m.hidden_size,
                                   "4 x hidden_size (PR9 flux_base.yaml: mlp_ratio 4)");
  if (l.mlp.ffn_hidden_size < 1 || l.mlp.ffn_hidden_size > kMaxWidth) {
    r.fail("ffn_hidden_size", fmt::format("must be between 1 and {}", kMaxWidth));
  }
  l.mlp.activation = ActivationKind::kGelu;
  return l;
}

}  // namespace

bool is_flux_model(ArgReader& r) {
  const std::string type = to_lower(r.string_or("model_type", "gpt", ""));
  return type.starts_with("flux") || (type == "diffusion_model" && r.has("num_joint_layers"));
}

ModelSpec build_flux_model(ArgReader& r) {
  ModelSpec m;
  const int joint = stated_count(r, "num_joint_layers", 0);
  const int single = stated_count(r, "num_single_layers", 0);
  if (joint + single < 1) r.fail("num_joint_layers", "a Flux model needs at least one block");
  m.hidden_size = width(r, "hidden_size", 3072);
  const int heads = static_cast<int>(width(r, "num_attention_heads", 24));
  if (m.hidden_size % heads != 0) {
    r.fail("num_attention_heads",
           fmt::format("hidden_size {} is not divisible into {} heads", m.hidden_size, heads));
  }
  if (r.int_or("patch_size", 1, kFluxDefault) != 1) {
    r.fail("patch_size", "only Flux's 1 x 1 patches (2 x 2 packing in in_channels) are modelled");
  }
  m.norm = NormKind::kLayerNorm;
  m.position_embedding = PositionEmbeddingKind::kRope;  // 3D RoPE over (t, h, w) ids
  m.max_position_embeddings = 0;
  m.tied_embeddings = false;
  m.attention_dropout = r.float_or("attention_dropout", 0.0, "");
  m.hidden_dropout = r.float_or("hidden_dropout", 0.0, "");
  // The "vocabulary" is proj_out's width: the packed latent channels (velocity per patch).
  m.vocab_size = width(r, "in_channels", 64);
  m.make_vocab_size_divisible_by = 1;
  DiffusionSpec& d = m.diffusion;
  d.context_dim = width(r, "context_dim", 4096);
  d.vec_in_dim = width(r, "vec_in_dim", 768);
  d.model_channels = width(r, "model_channels", 256);
  d.guidance_embed = r.bool_or("guidance_embed", false, kFluxDefault);
  read_sequence(r, d);
  // Joint blocks take add_bias_linear (Megatron default true; Primus' diffusion presets do not set
  // it), single blocks single_block_bias (PR9 layer_spec.py:308-317).
  const bool joint_bias = r.bool_or("add_bias_linear", true, "Megatron default");
  const bool single_bias = r.bool_or("single_block_bias", true, kFluxDefault);
  const LayerSpec shape = block_shape(r, m, heads);
  for (int i = 0; i < joint; ++i) m.layers.push_back(flux_block(shape, 2, joint_bias));
  for (int i = 0; i < single; ++i) m.layers.push_back(flux_block(shape, 1, single_bias));
  return m;
}

}  // namespace projector::frontend_detail
