#include "projector/model/describe.h"

#include <fmt/format.h>

namespace projector {

std::string describe_layer(const LayerSpec& layer) {
  const AttentionSpec& a = layer.attention;
  std::string out;
  if (layer.has_mamba()) {
    const MambaSpec& s = layer.mamba;
    return fmt::format("Mamba-2 {} heads x {}, state {}, {} groups, conv {}", s.num_heads,
                       s.head_dim, s.state_dim, s.num_groups, s.conv_kernel);
  }
  if (layer.has_linear_attention()) {
    const LinearAttentionSpec& s = layer.linear;
    if (s.short_conv()) {
      out = fmt::format("LFM2 short conv {} channels, kernel {}{}", s.short_conv_width,
                        s.conv_kernel, s.conv_bias ? ", bias" : "");
    } else {
      out = fmt::format(
          "{} {} v heads x {} / {} k heads x {}, conv {}, chunk {}",
          s.kind == LinearAttentionKind::kGdn ? "Gated DeltaNet" : "Kimi Delta Attention",
          s.num_value_heads, s.value_head_dim, s.num_key_heads, s.key_head_dim, s.conv_kernel,
          s.chunk_size);
    }
    if (!layer.has_ffn()) return out;
  } else if (!layer.has_attention()) {
    out = "FFN only";
  } else if (a.kind == AttentionKind::kCompressed) {
    const CompressedAttentionSpec& x = a.compressed;
    const char* branch = x.compress_ratio == 4 ? "CSA" : x.compress_ratio > 0 ? "HCA" : "local";
    out = fmt::format("V4 attention {} heads x {} (one K = V latent), {}", a.num_heads, a.head_dim,
                      branch);
    if (x.compress_ratio > 0) out += fmt::format(" ratio {}", x.compress_ratio);
    if (x.csa()) out += fmt::format(" top-{}", x.index_topk);
    if (x.o_lora_rank > 0) out += fmt::format(", o {} x {}", x.o_groups, x.o_lora_rank);
  } else if (a.kind == AttentionKind::kMla) {
    out = fmt::format("MLA {} heads, q_lora {}, kv_lora {}, qk {}+{}, v {}", a.num_heads,
                      a.q_lora_rank, a.kv_lora_rank, a.qk_head_dim, a.qk_pos_emb_head_dim,
                      a.v_head_dim);
  } else {
    const char* kind = a.num_query_groups == a.num_heads ? "MHA"
                       : a.num_query_groups == 1         ? "MQA"
                                                         : "GQA";
    out = fmt::format("{} {} heads", kind, a.num_heads);
    if (a.num_query_groups != a.num_heads) out += fmt::format(" / {} KV", a.num_query_groups);
    out += fmt::format(", head_dim {}", a.head_dim);
    if (layer.dit.streams > 0) {
      out = fmt::format("Flux {}-stream block (adaLN {} x h{}), ",
                        layer.dit.streams == 2 ? "double" : "single", layer.dit.adaln_chunks,
                        layer.dit.streams == 2 ? " per stream" : "") +
            out + ", non-causal";
    }
  }
  if (layer.has_attention()) {
    if (a.qk_layernorm) out += ", qk-norm";
    if (a.output_gate) out += ", output gate";
    if (a.add_qkv_bias) out += ", qkv bias";
    if (a.sliding_window > 0) out += fmt::format(", sliding window {}", a.sliding_window);
    if (a.chunk_window > 0) out += fmt::format(", chunked attention {}", a.chunk_window);
    if (!layer.has_ffn()) return out + " (attention only)";
  }
  const MlpSpec& m = layer.mlp;
  const char* act = m.activation == ActivationKind::kSitu          ? "situ (soft-clamped GLU)"
                    : m.activation == ActivationKind::kSilu        ? "SiLU"
                    : m.activation == ActivationKind::kRelu        ? "ReLU"
                    : m.activation == ActivationKind::kSquaredRelu ? "squared-ReLU"
                                                                   : "GeLU";
  const std::string mlp_kind = fmt::format("{}{}", act, m.gated ? "-GLU" : "");
  if (layer.is_moe) {
    const MoeSpec& e = layer.moe;
    out += fmt::format("; MoE {} experts top-{}, expert ffn {} ({})", e.num_experts, e.topk,
                       e.expert_ffn_hidden_size, mlp_kind);
    if (e.shared_expert_ffn_hidden_size > 0) {
      out += fmt::format(", shared ffn {}", e.shared_expert_ffn_hidden_size);
    }
    if (e.capacity_factor > 0) out += fmt::format(", capacity {}", e.capacity_factor);
    if (e.hash_routing) out += ", hash-routed";
    if (e.router_group_topk > 0) {
      out +=
          fmt::format(", routed within {} of {} groups", e.router_group_topk, e.router_num_groups);
    }
  } else {
    out += fmt::format("; MLP ffn {} ({})", m.ffn_hidden_size, mlp_kind);
  }
  if (m.add_bias) out += ", bias";
  return out;
}

std::vector<LayerRun> layer_runs(const ModelSpec& model) {
  std::vector<LayerRun> runs;
  for (int i = 0; i < model.num_layers(); ++i) {
    std::string d = describe_layer(model.layers[i]);
    if (!runs.empty() && runs.back().description == d) {
      ++runs.back().count;
    } else {
      runs.push_back({i, 1, std::move(d)});
    }
  }
  return runs;
}

std::string describe_stage(const VirtualStage& s) {
  std::string out = s.num_layers == 0   ? std::string("no decoder layers")
                    : s.num_layers == 1 ? fmt::format("layer {}", s.first_layer)
                                        : fmt::format("layers {}-{}", s.first_layer,
                                                      s.first_layer + s.num_layers - 1);
  if (s.has_embedding) out += " + embedding";
  if (s.mtp_layers > 0) out += fmt::format(" + {} MTP", s.mtp_layers);
  if (s.has_output) out += " + output/loss";
  return out;
}

}  // namespace projector
