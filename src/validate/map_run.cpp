// Mapping a published run (free-form, partly unstated) to a JobSpec. Every value not stated by the
// source is the framework's documented default and is listed as an assumption; free text is read
// by keywords and each reading is listed too.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "projector/frontend/layer_pattern.h"
#include "projector/hardware/catalog.h"
#include "projector/memory/memory.h"
#include "projector/util/error.h"
#include "projector/util/text.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

std::string lower(std::string_view s) {
  return to_lower(s);
}

bool has(const std::string& haystack_lower, const char* needle) {
  return haystack_lower.find(needle) != std::string::npos;
}

enum class Framework {
  kMegatronLm,
  kMegatronCore,
  kNemo,
  kMegatronDeepSpeed,
  kPrimus,
  kTorchtitan,
  kMaxText,
  kUnknown
};

// The framework named first wins ("Megatron-Core (config follows NeMo ...)" is Megatron-Core,
// "NeMo 24.07 (Megatron-Core)" is NeMo); at equal positions the longer keyword wins.
Framework detect_framework(const std::string& text) {
  static const std::pair<const char*, Framework> kKeywords[] = {
      {"torchtitan", Framework::kTorchtitan},
      {"maxtext", Framework::kMaxText},
      {"primus", Framework::kPrimus},
      {"megatron-deepspeed", Framework::kMegatronDeepSpeed},
      {"deepspeed", Framework::kMegatronDeepSpeed},
      {"nemo", Framework::kNemo},
      {"megatron-bridge", Framework::kNemo},
      {"megatron-core", Framework::kMegatronCore},
      {"mcore", Framework::kMegatronCore},
      {"megatron", Framework::kMegatronLm},
  };
  const std::string t = lower(text);
  Framework best = Framework::kUnknown;
  std::size_t best_pos = std::string::npos;
  std::size_t best_len = 0;
  for (const auto& [word, fw] : kKeywords) {
    const std::size_t pos = t.find(word);
    if (pos == std::string::npos) continue;
    const std::size_t len = std::char_traits<char>::length(word);
    if (pos < best_pos || (pos == best_pos && len > best_len)) {
      best = fw;
      best_pos = pos;
      best_len = len;
    }
  }
  return best;
}

const char* framework_name(Framework f) {
  switch (f) {
    case Framework::kMegatronLm:
      return "megatron-lm";
    case Framework::kMegatronCore:
      return "megatron-core";
    case Framework::kNemo:
      return "nemo";
    case Framework::kMegatronDeepSpeed:
      return "megatron-deepspeed";
    case Framework::kPrimus:
      return "primus";
    case Framework::kTorchtitan:
      return "torchtitan";
    case Framework::kMaxText:
      return "maxtext";
    case Framework::kUnknown:
      break;
  }
  return "unknown";
}

// Megatron-family frameworks share Megatron-LM's argument defaults.
bool megatron_family(Framework f) {
  return f == Framework::kMegatronLm || f == Framework::kMegatronCore || f == Framework::kNemo ||
         f == Framework::kMegatronDeepSpeed || f == Framework::kPrimus;
}

// Frameworks whose attention is a fused flash kernel by default (Transformer Engine / SDPA /
// Pallas).
bool flash_by_default(Framework f) {
  return f == Framework::kMegatronCore || f == Framework::kNemo || f == Framework::kPrimus ||
         f == Framework::kTorchtitan || f == Framework::kMaxText;
}

class Mapper {
 public:
  Mapper(const RunEntry& e, MappedRun& out) : e_(e), out_(out) {}

  void assume(const std::string& key, const std::string& value, const std::string& reason) {
    out_.assumptions.push_back(fmt::format("{} = {} ({})", key, value, reason));
    out_.job.defaults.push_back({key, value, reason});
  }
  void note(const std::string& text) { out_.assumptions.push_back(text); }
  // Withdraws an earlier assumption about `key` that a later inference replaces.
  void retract(const std::string& key) {
    const std::string prefix = key + " = ";
    std::erase_if(out_.assumptions, [&](const std::string& a) { return a.starts_with(prefix); });
    std::erase_if(out_.job.defaults, [&](const auto& d) { return d.key == key; });
  }

  // Records the first reason the run cannot be mapped; mapping continues to fill what it can.
  void fail(const std::string& reason) {
    if (out_.reason.empty()) out_.reason = reason;
  }

  int int_or(const std::optional<int>& v, int fallback, const std::string& key,
             const std::string& reason) {
    if (v) return *v;
    assume(key, std::to_string(fallback), reason);
    return fallback;
  }

  const RunEntry& e_;
  MappedRun& out_;
};

// ------------------------------------------------------------------------------------ model

ActivationKind read_activation(Mapper& m, const std::string& text, Framework fw, bool& gated) {
  const std::string t = lower(text);
  gated = false;
  if (t.empty()) {
    m.assume("model.activation", "gelu",
             fmt::format("not stated; {} GPT default", framework_name(fw)));
    return ActivationKind::kGelu;
  }
  if (has(t, "swiglu")) {
    gated = true;
    if (has(t, "clamp")) m.note("model.activation: clamped SwiGLU counted as SwiGLU");
    return ActivationKind::kSilu;
  }
  if (has(t, "geglu")) {
    gated = true;
    return ActivationKind::kGelu;
  }
  if (has(t, "squared_relu") || has(t, "squared relu") || has(t, "relu2")) {
    return ActivationKind::kSquaredRelu;
  }
  if (has(t, "relu")) return ActivationKind::kRelu;
  if (has(t, "gelu")) return ActivationKind::kGelu;
  if (has(t, "silu") || has(t, "swish")) return ActivationKind::kSilu;
  m.assume("model.activation", "gelu", "unrecognised text '" + text + "'");
  return ActivationKind::kGelu;
}

void map_model(Mapper& m, Framework fw, int seq_len) {
  const RunEntry::Model& src = m.e_.model;
  ModelSpec& ms = m.out_.job.model;
  ms.name = src.name;
  if (!src.num_layers || *src.num_layers <= 0) return m.fail("model.num_layers not stated");
  if (!src.hidden_size || *src.hidden_size <= 0) return m.fail("model.hidden_size not stated");
  if (!src.num_attention_heads || *src.num_attention_heads <= 0) {
    return m.fail("model.num_attention_heads not stated");
  }
  const std::int64_t h = *src.hidden_size;
  const int heads = *src.num_attention_heads;
  ms.hidden_size = h;
  const std::string family = lower(src.family);
  const bool gpt_like = has(family, "gpt") && !has(family, "gpt_oss") && !has(family, "gpt-oss");

  if (src.vocab_size) {
    ms.vocab_size = *src.vocab_size;
  } else if (gpt_like) {
    ms.vocab_size = 50257;
    m.assume("model.vocab_size", "50257", "not stated; GPT-2 BPE, Megatron's GPT tokenizer");
  } else {
    return m.fail("model.vocab_size not stated");
  }
  ms.make_vocab_size_divisible_by = megatron_family(fw) ? 128 : 1;

  const std::string norm = lower(src.norm);
  if (norm.empty()) {
    ms.norm = NormKind::kLayerNorm;
    m.assume("model.norm", "layernorm", "not stated; Megatron default normalization");
  } else if (has(norm, "rms")) {
    ms.norm = NormKind::kRmsNorm;
  } else if (has(norm, "layernorm") || has(norm, "layer_norm") || has(norm, "layer norm")) {
    ms.norm = NormKind::kLayerNorm;
    if (has(norm, "embedding")) m.note("model.norm: extra embedding LayerNorm not modelled");
  } else {
    ms.norm = NormKind::kRmsNorm;
    m.assume("model.norm", "rmsnorm", "unrecognised text '" + src.norm + "'");
  }

  const std::string pos = lower(src.position_embedding);
  if (pos.empty()) {
    ms.position_embedding = PositionEmbeddingKind::kLearnedAbsolute;
    m.assume("model.position_embedding", "learned_absolute",
             "not stated; Megatron default position_embedding_type");
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
  ms.max_position_embeddings = seq_len;

  if (src.tied_embeddings) {
    ms.tied_embeddings = *src.tied_embeddings;
  } else {
    // Megatron and NeMo GPT share embeddings unless told not to; the modern families do not.
    const bool tied = gpt_like || has(family, "bloom");
    ms.tied_embeddings = tied;
    m.assume("model.tied_embeddings", tied ? "true" : "false",
             tied ? "not stated; Megatron GPT default (share_embeddings_and_output_weights)"
                  : "not stated; untied output layer of the " + src.family + " family");
  }
  if (!src.block.empty()) m.note("model.block: '" + src.block + "' counted as a standard block");
  // Megatron trains its GPT models with dropout 0.1 unless told otherwise (--attention-dropout,
  // --hidden-dropout); the modern families' recipes (Llama, Mixtral, ...) set 0.
  if (gpt_like && (fw == Framework::kMegatronLm || fw == Framework::kMegatronDeepSpeed ||
                   fw == Framework::kMegatronCore)) {
    ms.attention_dropout = 0.1;
    ms.hidden_dropout = 0.1;
    m.assume("model.dropout", "0.1", "not stated; Megatron's GPT default (attention and hidden)");
  }

  LayerSpec base;
  AttentionSpec& a = base.attention;
  a.num_heads = heads;
  if (src.num_kv_heads) {
    a.num_query_groups = *src.num_kv_heads;
  } else {
    a.num_query_groups = heads;
    m.assume("model.num_kv_heads", std::to_string(heads), "not stated; multi-head attention");
  }
  if (src.head_dim) {
    a.head_dim = *src.head_dim;
  } else {
    a.head_dim = static_cast<int>(h / heads);
    m.assume("model.head_dim", std::to_string(a.head_dim), "not stated; hidden / heads");
  }
  a.qk_layernorm = src.qk_layernorm.value_or(false);
  if (src.mla) {
    const RunEntry::Mla& x = *src.mla;
    if (!x.kv_lora_rank || !x.qk_nope_head_dim || !x.qk_rope_head_dim || !x.v_head_dim) {
      return m.fail(
          "model.mla: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim "
          "are required");
    }
    a.kind = AttentionKind::kMla;
    a.q_lora_rank = x.q_lora_rank.value_or(0);
    a.kv_lora_rank = *x.kv_lora_rank;
    a.qk_head_dim = *x.qk_nope_head_dim;
    a.qk_pos_emb_head_dim = *x.qk_rope_head_dim;
    a.v_head_dim = *x.v_head_dim;
    a.head_dim = a.qk_head_dim + a.qk_pos_emb_head_dim;
    a.num_query_groups = heads;
  }

  bool gated = false;
  base.mlp.activation = read_activation(m, src.activation, fw, gated);
  base.mlp.gated = gated;

  // Sliding windows: "alternating full / sliding-window (128)".
  int window = 0;
  bool alternating = false;
  const std::string attn = lower(src.attention);
  if (has(attn, "sliding")) {
    std::smatch match;
    if (std::regex_search(attn, match, std::regex(R"(\((\d+)\))"))) window = std::stoi(match[1]);
    alternating = has(attn, "alternat");
    if (window > 0) {
      m.note(fmt::format("model.attention: sliding window {} on {} layers{}", window,
                         alternating ? "alternate (even-index)" : "all",
                         has(attn, "sink") ? "; attention sinks not modelled" : ""));
    } else {
      m.note("model.attention: sliding window size not found in '" + src.attention +
             "'; full attention counted");
    }
  }

  const int L = *src.num_layers;
  const bool moe = src.moe.has_value() || lower(src.type) == "moe";
  std::vector<int> is_moe(static_cast<std::size_t>(L), 0);
  MoeSpec moe_spec;
  if (moe) {
    if (!src.moe) return m.fail("model.type is moe but the model.moe block is missing");
    const RunEntry::Moe& x = *src.moe;
    if (!x.num_experts || !x.topk || !x.moe_ffn_hidden_size) {
      return m.fail("model.moe: num_experts, topk and moe_ffn_hidden_size are required");
    }
    moe_spec.num_experts = *x.num_experts;
    moe_spec.topk = *x.topk;
    moe_spec.expert_ffn_hidden_size = *x.moe_ffn_hidden_size;
    const int shared = x.shared_experts.value_or(0);
    if (!x.shared_experts) m.assume("model.moe.shared_experts", "0", "not stated");
    if (shared > 0) {
      if (x.shared_expert_ffn_hidden_size) {
        moe_spec.shared_expert_ffn_hidden_size = *x.shared_expert_ffn_hidden_size;
      } else {
        moe_spec.shared_expert_ffn_hidden_size = shared * *x.moe_ffn_hidden_size;
        m.assume("model.moe.shared_expert_ffn_hidden_size",
                 std::to_string(moe_spec.shared_expert_ffn_hidden_size),
                 "not stated; shared_experts x moe_ffn_hidden_size");
      }
    }
    const std::string router = lower(x.router);
    moe_spec.router_bias =
        has(router, "bias") || has(router, "aux-loss-free") || has(router, "aux_loss_free");
    moe_spec.capacity_factor = 0.0;  // dropless: Megatron's default and NVIDIA's benchmark rows
    const int dense = x.dense_layers.value_or(0);
    if (dense > L) return m.fail("model.moe.dense_layers exceeds num_layers");
    const std::string freq = lower(x.moe_layer_freq);
    if (freq.empty() || has(freq, "all")) {
      if (freq.empty()) m.assume("model.moe.moe_layer_freq", "1", "not stated; every layer MoE");
      std::fill(is_moe.begin(), is_moe.end(), 1);
    } else {
      std::string error;
      const std::optional<PyValue> v = eval_list_expression(x.moe_layer_freq, error);
      std::optional<std::vector<int>> pattern;
      if (v) {
        pattern = v->is_list ? moe_pattern_from_list(v->list, L, error)
                             : moe_pattern_from_int(v->integer, L, error);
      }
      if (!pattern) return m.fail("model.moe.moe_layer_freq: " + error);
      is_moe = *pattern;
    }
    for (int i = 0; i < dense; ++i) is_moe[static_cast<std::size_t>(i)] = 0;
  }

  std::int64_t dense_ffn = 0;
  const bool any_dense = std::find(is_moe.begin(), is_moe.end(), 0) != is_moe.end();
  if (any_dense) {
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
  ms.layers.reserve(static_cast<std::size_t>(L));
  for (int i = 0; i < L; ++i) {
    LayerSpec layer = base;
    if (window > 0 && (!alternating || i % 2 == 0)) layer.attention.sliding_window = window;
    if (is_moe[static_cast<std::size_t>(i)]) {
      layer.is_moe = true;
      layer.moe = moe_spec;
      layer.mlp.ffn_hidden_size = moe_spec.expert_ffn_hidden_size;
    } else {
      layer.mlp.ffn_hidden_size = dense_ffn;
    }
    ms.layers.push_back(layer);
  }
  ms.mtp_num_layers = src.mtp_layers.value_or(0);
  m.out_.moe = moe;
}

// --------------------------------------------------------------------------------- training

RecomputeSpec read_recompute(Mapper& m, const std::string& text, Framework fw) {
  RecomputeSpec r;
  const std::string t = lower(text);
  if (t.empty()) {
    m.assume("training.recompute", "none",
             "not stated; no recomputation is every framework's default");
    return r;
  }
  if (has(t, "selective")) {
    r.granularity = RecomputeGranularity::kSelective;
    // Megatron --recompute-modules named in the text.
    static const char* const kModules[] = {"core_attn",      "moe_act", "layernorm", "mla_up_proj",
                                           "shared_experts", "mlp",     "moe"};
    std::string rest = t;
    for (const char* mod : kModules) {
      const std::size_t pos = rest.find(mod);
      if (pos == std::string::npos) continue;
      r.modules.emplace_back(mod);
      rest.replace(pos, std::char_traits<char>::length(mod), " ");  // "moe_act" is not "moe"
    }
    if (!r.modules.empty()) {
      m.note(
          fmt::format("training.recompute: selective recompute of {}", fmt::join(r.modules, ", ")));
      return r;
    }
    if (fw == Framework::kTorchtitan || has(t, "sac")) {
      // torchtitan's per-op policy saves every second matmul output and recomputes the rest with
      // the cheap ops around them; the closest Megatron saved set is selective "mlp".
      r.modules = {"mlp"};
      m.note("training.recompute: torchtitan per-op SAC read as selective recompute of the MLP");
    } else {
      r.modules = {"core_attn"};
      m.note("training.recompute: selective read as Megatron's core_attn recomputation");
    }
    return r;
  }
  if (has(t, "full") || has(t, "checkpoint") || has(t, "remat")) {
    r.granularity = RecomputeGranularity::kFull;
    r.method = has(t, "block") ? RecomputeMethod::kBlock : RecomputeMethod::kUniform;
    r.num_layers = 1;
    if (r.method == RecomputeMethod::kBlock) {
      r.num_layers = 1 << 20;  // block without a count: every layer of the stage
      m.note("training.recompute: block without a layer count read as all layers");
    }
    return r;
  }
  if (t == "none" || t == "no" || t == "false" || has(t, "no recompute")) return r;
  m.assume("training.recompute", "none", "unrecognised text '" + text + "'");
  return r;
}

// The token dispatcher decides how many copies of a token cross the expert-parallel group.
void read_dispatcher(Mapper& m, const std::string& text, RuntimeSpec& r) {
  const std::string t = lower(text);
  if (t.empty()) {
    m.assume("training.moe_dispatcher", "alltoall",
             "not stated; the all-to-all dispatcher Megatron recipes use with expert parallelism "
             "(one copy per chosen expert)");
    return;
  }
  if (has(t, "flex") || has(t, "deepep") || has(t, "hybridep")) {
    r.moe_dedup_dispatch = true;
    m.note("training.moe_dispatcher: '" + text +
           "' read as a deduplicating dispatcher (one copy per destination node / GPU)");
    return;
  }
  if (!has(t, "alltoall") && !has(t, "all-to-all")) {
    m.assume("training.moe_dispatcher", "alltoall", "unrecognised text '" + text + "'");
  }
}

void read_precision(Mapper& m, const std::string& text, Framework fw, PrecisionSpec& p) {
  const std::string t = lower(text);
  if (t.empty()) {
    p.params_dtype = Dtype::kBf16;
    m.assume("training.precision", "bf16", "not stated; 16-bit mixed precision assumed");
    return;
  }
  const bool bf16 = has(t, "bf16") || has(t, "bfloat16");
  const bool fp16 = has(t, "fp16") || (has(t, "float16") && !has(t, "bfloat16"));
  if (bf16 && !fp16) {
    p.params_dtype = Dtype::kBf16;
  } else if (fp16 && !bf16) {
    p.params_dtype = Dtype::kFp16;
  } else {
    p.params_dtype = Dtype::kBf16;
    if (!has(t, "fp8") && !has(t, "float8")) {
      m.assume("training.precision", "bf16",
               "'" + text + "' does not name one 16-bit type (bf16 and fp16 peaks are equal)");
    }
  }
  if (has(t, "mxfp8")) {
    p.fp8 = Fp8Recipe::kMxfp8;
  } else if (has(t, "fp8") || has(t, "float8")) {
    if (has(t, "tensorwise") || has(t, "torchao")) {
      p.fp8 = Fp8Recipe::kTensorwise;
    } else if (has(t, "blockwise")) {
      p.fp8 = Fp8Recipe::kBlockwise;
    } else if (has(t, "delayed") || has(t, "hybrid") || has(t, "transformer engine")) {
      p.fp8 = Fp8Recipe::kDelayed;
    } else if (fw == Framework::kTorchtitan) {
      p.fp8 = Fp8Recipe::kTensorwise;
      m.assume("training.fp8_recipe", "tensorwise", "torchtitan's float8 default");
    } else {
      p.fp8 = Fp8Recipe::kDelayed;
      m.assume("training.fp8_recipe", "delayed", "Transformer Engine's default FP8 recipe");
    }
  }
  if (has(t, "assumed")) m.note("training.precision: the source entry marks it as assumed");
}

ScheduleKind read_schedule(Mapper& m, const std::string& text, int pp, int vpp) {
  const std::string t = lower(text);
  // A schedule name (the shared vocabulary); "1f1b" still follows vpp below.
  const std::optional<ScheduleKind> named = parse_schedule_kind(t);
  if (named && *named != ScheduleKind::kAuto && *named != ScheduleKind::k1F1B) return *named;
  if (has(t, "dualpipe")) return ScheduleKind::kDualPipeV;
  if (has(t, "zbv") || has(t, "zb-v") || has(t, "zero bubble v")) {
    return ScheduleKind::kZbvFormatted;
  }
  if (has(t, "zero bubble") || has(t, "zero-bubble") || has(t, "zb")) {
    return ScheduleKind::kZeroBubble;
  }
  if (has(t, "interleav") && !has(t, "non-interleav")) return ScheduleKind::kInterleaved;
  if (has(t, "1f1b")) return vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  if (pp <= 1) return ScheduleKind::kAuto;
  const ScheduleKind s = vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  if (t.empty() || t == "none") {
    m.assume("training.pipeline_schedule", std::string(to_string(s)),
             "not stated; Megatron's schedule for this pp / vpp");
  } else {
    m.assume("training.pipeline_schedule", std::string(to_string(s)),
             "unrecognised text '" + text + "'");
  }
  return s;
}

void build_stages(Mapper& m, ParallelSpec& p, const ModelSpec& model) {
  const int k = p.pp * p.vpp;
  const int L = model.num_layers();
  p.stages.assign(static_cast<std::size_t>(k), VirtualStage{});
  const std::string& layout = m.e_.training.pipeline_layout;
  if (!layout.empty()) {
    std::string error;
    const auto parsed = parse_pipeline_layout(layout, error);
    if (!parsed) return m.fail("training.pipeline_layout: " + error);
    if (static_cast<int>(parsed->size()) != k) {
      return m.fail(
          fmt::format("training.pipeline_layout has {} stages, pp x vpp = {}", parsed->size(), k));
    }
    int first = 0;
    for (int z = 0; z < k; ++z) {
      const LayoutStage& s = (*parsed)[static_cast<std::size_t>(z)];
      p.stages[static_cast<std::size_t>(z)] = {first, s.decoder_layers, s.embedding, s.loss,
                                               s.mtp_layers};
      first += s.decoder_layers;
    }
    if (first != L) {
      return m.fail(
          fmt::format("training.pipeline_layout places {} layers, the model has {}", first, L));
    }
    return;
  }
  if (L < k) return m.fail(fmt::format("{} layers cannot fill pp x vpp = {} stages", L, k));
  if (L % k != 0) {
    m.assume(
        "parallel.stages", "uneven",
        fmt::format("{} layers over {} virtual stages: the first {} take one more", L, k, L % k));
  }
  int first = 0;
  for (int z = 0; z < k; ++z) {
    const int len = L / k + (z < L % k ? 1 : 0);
    VirtualStage& s = p.stages[static_cast<std::size_t>(z)];
    s.first_layer = first;
    s.num_layers = len;
    s.has_embedding = z == 0;
    s.has_output = z == k - 1;
    s.mtp_layers = z == k - 1 ? model.mtp_num_layers : 0;
    first += len;
  }
}

void map_training(Mapper& m, Framework fw, int world) {
  const RunEntry::Training& t = m.e_.training;
  JobSpec& job = m.out_.job;
  ParallelSpec& p = job.parallel;
  p.tp = m.int_or(t.tp, 1, "training.tp", "not stated; no tensor parallelism");
  p.pp = m.int_or(t.pp, 1, "training.pp", "not stated; no pipeline parallelism");
  p.vpp = t.vpp.value_or(1);
  p.cp = m.int_or(t.cp, 1, "training.cp", "not stated; no context parallelism");
  p.ep = m.int_or(t.ep, 1, "training.ep", "not stated; no expert parallelism");
  if (p.tp < 1 || p.pp < 1 || p.vpp < 1 || p.cp < 1 || p.ep < 1) {
    return m.fail("training: tp, pp, vpp, cp and ep must be at least 1");
  }
  if (t.etp) {
    p.etp = *t.etp;
  } else {
    p.etp = m.out_.moe ? p.tp : 1;
    if (m.out_.moe) m.assume("training.etp", std::to_string(p.etp), "Megatron default etp = tp");
  }
  const int mp = p.tp * p.pp * p.cp;
  if (world % mp != 0) {
    return m.fail(fmt::format("{} GPUs are not a multiple of tp x pp x cp = {}", world, mp));
  }
  p.dp = world / mp;
  if (t.dp && *t.dp != p.dp) {
    return m.fail(
        fmt::format("training.dp {} disagrees with GPUs / (tp x pp x cp) = {}", *t.dp, p.dp));
  }
  if (!m.out_.moe && p.ep > 1) {
    m.note("training.ep > 1 on a dense model ignored");
    p.ep = 1;
  }
  const int expert_mp = p.etp * p.ep * p.pp;
  if (world % expert_mp != 0) {
    return m.fail(
        fmt::format("{} GPUs are not a multiple of etp x ep x pp = {}", world, expert_mp));
  }
  p.expert_dp = world / expert_mp;

  const std::string zero = lower(t.zero_stage);
  const std::string fsdp = lower(t.fsdp);
  if (has(fsdp, "yes") || has(fsdp, "fsdp2") || has(fsdp, "true")) {
    p.fsdp = FsdpKind::kFsdp2;
  } else if (has(zero, "fsdp") || has(zero, "zero-3") || has(zero, "zero3") || zero == "3") {
    p.fsdp = FsdpKind::kZero3;
  } else if (fsdp.empty() && fw == Framework::kTorchtitan) {
    p.fsdp = FsdpKind::kFsdp2;
    m.assume("training.fsdp", "fsdp2", "not stated; torchtitan shards with FSDP2 by default");
  }
  if (t.distributed_optimizer) {
    p.distributed_optimizer = *t.distributed_optimizer;
  } else if (has(zero, "zero-1") || has(zero, "zero1") || zero == "1") {
    p.distributed_optimizer = true;
    m.note("training.zero_stage: ZeRO-1 read as the distributed optimizer");
  } else if (p.fsdp == FsdpKind::kNone) {
    const bool on =
        fw == Framework::kNemo || fw == Framework::kMegatronCore || fw == Framework::kPrimus;
    p.distributed_optimizer = on;
    m.assume("training.distributed_optimizer", on ? "true" : "false",
             on ? fmt::format("not stated; {} performance recipes use it", framework_name(fw))
                : fmt::format("not stated; {} default", framework_name(fw)));
  }
  if (t.sequence_parallel) {
    p.sequence_parallel = *t.sequence_parallel;
  } else if (p.tp > 1) {
    const bool on =
        fw == Framework::kNemo || fw == Framework::kMegatronCore || fw == Framework::kPrimus;
    p.sequence_parallel = on;
    m.assume("training.sequence_parallel", on ? "true" : "false",
             on ? "not stated; NeMo / Megatron-Core recipes enable it with TP"
                : fmt::format("not stated; {} default", framework_name(fw)));
  }
  const std::string overlap = lower(t.overlap);
  if (!overlap.empty()) {
    p.overlap_grad_reduce = has(overlap, "overlap-grad-reduce");
    p.overlap_param_gather = has(overlap, "overlap-param-gather");
    p.tp_comm_overlap = has(overlap, "tp-comm-overlap");
  } else if (fw == Framework::kNemo) {
    p.overlap_grad_reduce = true;
    p.overlap_param_gather = p.distributed_optimizer;
    p.tp_comm_overlap = p.tp > 1 && p.sequence_parallel;
    m.assume("training.overlap", "grad reduce, param gather, TP comm",
             "not stated; NeMo performance-recipe defaults");
  }

  build_stages(m, p, job.model);

  // Runtime.
  RuntimeSpec& r = job.runtime;
  if (t.micro_batch_size) {
    r.micro_batch_size = *t.micro_batch_size;
  } else if (fw == Framework::kTorchtitan && t.local_batch_size) {
    r.micro_batch_size = *t.local_batch_size;
    m.note("training.micro_batch_size: torchtitan local_batch_size, no gradient accumulation");
  } else if (fw == Framework::kMaxText && t.per_device_batch_size) {
    r.micro_batch_size = *t.per_device_batch_size;
    m.note("training.micro_batch_size: MaxText per_device_batch_size, no gradient accumulation");
  } else {
    r.micro_batch_size = 1;
    m.assume("training.micro_batch_size", "1",
             "not stated and required by Megatron; 1 is the NVIDIA recipes' usual value");
  }
  if (t.global_batch_size) {
    r.global_batch_size = *t.global_batch_size;
  } else if (p.pp > 1) {
    // With pipeline parallelism the microbatch count sets the bubble: guessing it would decide
    // the prediction, so the run is not compared.
    return m.fail(
        "training.global_batch_size not stated and pp > 1 (the microbatch count decides "
        "the pipeline bubble)");
  } else {
    r.global_batch_size = r.micro_batch_size * p.dp;
    m.assume("training.global_batch_size", std::to_string(r.global_batch_size),
             "not stated; Megatron default micro_batch_size x dp (one microbatch)");
  }
  if (r.micro_batch_size < 1 || r.global_batch_size < 1 ||
      r.global_batch_size % (r.micro_batch_size * p.dp) != 0) {
    return m.fail(fmt::format("global batch {} is not a multiple of micro batch {} x dp {}",
                              r.global_batch_size, r.micro_batch_size, p.dp));
  }
  r.recompute = read_recompute(m, t.recompute, fw);
  if (fw == Framework::kTorchtitan) {
    // torch.nn.functional.cross_entropy on .float() logits allocates a fresh fp32 gradient.
    r.loss_grad_in_place = false;
    m.note("runtime: torchtitan's loss allocates its fp32 logit gradient (not in place)");
  }
  read_precision(m, t.precision, fw, r.precision);
  // NVIDIA's performance recipes accumulate and reduce gradients in bf16 (NeMo launcher
  // grad_sync_dtype=bf16, Megatron-Bridge grad_reduce_in_fp32=False, the Megatron-LM examples'
  // --grad-reduce-in-bf16); Megatron's own default is fp32.
  if (fw == Framework::kNemo || has(lower(m.e_.framework), "nemo")) {
    r.main_grads_dtype = Dtype::kBf16;
    m.assume("training.grad_reduce_dtype", "bf16",
             "not stated; NVIDIA's NeMo / Megatron-Bridge performance recipes reduce gradients "
             "in bf16");
  }
  m.out_.fp8 = r.precision.fp8 != Fp8Recipe::kNone;
  r.schedule = read_schedule(m, t.pipeline_schedule, p.pp, p.vpp);
  if (t.flash_attention) {
    r.flash_attention = *t.flash_attention;
  } else {
    r.flash_attention = flash_by_default(fw);
    m.assume("training.flash_attention", r.flash_attention ? "true" : "false",
             r.flash_attention ? fmt::format("not stated; {} uses fused flash attention by default",
                                             framework_name(fw))
                               : fmt::format("not stated; {} of that era has no flash attention",
                                             framework_name(fw)));
  }
  if (r.flash_attention && fw == Framework::kTorchtitan) {
    // torchtitan calls PyTorch's scaled_dot_product_attention, whose flash backend is
    // FlashAttention-2.
    r.attention_kernel = AttentionKernel::kFa2;
    m.note("runtime: torchtitan attention runs PyTorch SDPA's FlashAttention-2 kernel");
  }
  if (m.out_.moe && p.ep > 1) read_dispatcher(m, t.moe_dispatcher, r);
}

FlopConvention read_convention(Mapper& m, const std::string& text, Framework fw) {
  FlopConvention c;
  const std::string t = lower(text);
  c.options.causal_attention_half = false;
  if (t.empty()) {
    // SC'21-era Megatron-LM and Megatron-DeepSpeed logged hardware FLOPs; later tools model FLOPs.
    c.hardware = fw == Framework::kMegatronLm || fw == Framework::kMegatronDeepSpeed;
    c.description = c.hardware ? "hardware FLOPs incl. recompute (framework default of the era)"
                               : "model FLOPs, full attention (framework default)";
    m.assume("measured.flop_counting", c.hardware ? "hardware" : "model",
             "not stated; " + std::string(framework_name(fw)) + " convention");
    return c;
  }
  c.hardware = has(t, "hardware") || has(t, "incl. recompute") || has(t, "4*2") ||
               has(t, "including recompute");
  if (has(t, "no recompute")) c.hardware = false;
  // "causal-halved" attention counting; "non-causal" / "full" attention is the whole s x s.
  c.options.causal_attention_half =
      (has(t, "causal-halved") || has(t, "causal halved") || has(t, "half")) &&
      !has(t, "non-causal") && !has(t, "full (non-causal)");
  c.description = text;
  return c;
}

std::string accelerator_family(const AcceleratorSpec& a, const std::string& text) {
  const std::string v = lower(a.vendor + " " + a.name + " " + text);
  if (has(v, "tpu") || has(v, "google")) return "TPU";
  if (has(v, "amd") || has(v, "instinct") || has(v, "mi3")) return "AMD";
  if (has(v, "nvidia") || has(v, "a100") || has(v, "h100") || has(v, "b200")) return "NVIDIA";
  return "other";
}

// --------------------------------------------------------------------------------- network

// Link technologies whose per-port rate is a fixed fact (Gb/s per port).
constexpr std::pair<const char*, double> kLinkGbps[] = {
    {"omni-path", 100.0}, {"opa", 100.0}, {"edr", 100.0}, {"hdr", 200.0}, {"ndr", 400.0}};

// Scale-out bandwidth per node in Gb/s stated by an interconnect description, or 0. Read:
// "8x400 Gb/s per node", "400 Gb/s per GPU", "4x Omni-Path links per node", and a simulator
// config's "inter_node_bandwidth 800" when the text gives its unit as Gb/s per node.
double stated_node_gbps(const std::string& t, int gpus_per_node, std::string& how) {
  // Units must be rates: "8x80GB per node" is memory, not a link.
  static const std::regex kTimes(R"((\d+)\s*x\s*(\d+)\s*(gb/s|gbit/s|gbps))");
  static const std::regex kPer(R"((\d+)\s*(gb/s|gbit/s|gbps)\s+per\s+(gpu|node))");
  static const std::regex kTech(R"((\d+)\s*x\s*([a-z-]+))");
  static const std::regex kSimCfg(R"(inter_node_bandwidth\s*[:=]?\s*(\d+))");
  std::smatch mt;
  if (std::regex_search(t, mt, kTimes) && has(t, "per node")) {
    how = mt.str(0) + " per node";
    return std::stod(mt.str(1)) * std::stod(mt.str(2));
  }
  if (std::regex_search(t, mt, kPer)) {
    how = mt.str(0);
    const double v = std::stod(mt.str(1));
    return mt.str(3) == "gpu" ? v * gpus_per_node : v;
  }
  for (auto it = std::sregex_iterator(t.begin(), t.end(), kTech); it != std::sregex_iterator();
       ++it) {
    for (const auto& [tech, gbps] : kLinkGbps) {
      if ((*it).str(2) == tech && has(t, "per node")) {
        how = (*it).str(0) + fmt::format(" links per node ({:.0f} Gb/s each)", gbps);
        return std::stod((*it).str(1)) * gbps;
      }
    }
  }
  if (std::regex_search(t, mt, kSimCfg) && (has(t, "gbps per node") || has(t, "gb/s per node"))) {
    how = mt.str(0) + " read as Gb/s per node, the unit the description gives";
    return std::stod(mt.str(1));
  }
  return 0.0;
}

// The catalogue network assumes the accelerator's usual fabric; a description that states the
// scale-out bandwidth replaces it (the pod and cluster bandwidths scale by the same ratio).
void read_interconnect(Mapper& m, const std::string& text, ClusterSpec& cl) {
  if (text.empty() || cl.nodes <= 1) return;
  std::string how;
  const double node_gbps = stated_node_gbps(lower(text), cl.gpus_per_node, how);
  if (node_gbps <= 0.0) return;
  NetworkSpec& n = cl.network;
  const int nics = n.nics_per_node > 0 ? n.nics_per_node : cl.gpus_per_node;
  const double catalogue_gb_s_per_gpu = n.pod_bw_gb_per_s * nics / cl.gpus_per_node;
  const double stated_gb_s_per_gpu = node_gbps / 8.0 / cl.gpus_per_node;
  if (catalogue_gb_s_per_gpu <= 0.0 ||
      std::abs(stated_gb_s_per_gpu / catalogue_gb_s_per_gpu - 1.0) < 0.01) {
    return;
  }
  const double ratio = stated_gb_s_per_gpu / catalogue_gb_s_per_gpu;
  n.pod_bw_gb_per_s *= ratio;
  n.cluster_bw_gb_per_s *= ratio;
  m.note(fmt::format(
      "hardware.interconnect: '{}' -> {:.0f} Gb/s per node, {:.2f} GB/s per GPU scale-out "
      "(catalogue network '{}' has {:.2f})",
      how, node_gbps, stated_gb_s_per_gpu, n.name, catalogue_gb_s_per_gpu));
}

// A measured run fit in memory. When the source does not state its recomputation and the job
// without any is clearly out of memory, the run must have recomputed: take the lightest Megatron
// setting that fits (selective core attention, then full recomputation of every layer).
// "Clearly": the no-recompute peak is more than kClearlyOom x the capacity, beyond what the
// memory projection's own error (allocator behaviour, framework buffers) could explain; a run
// just above the capacity is projected as stated.
void infer_recompute_from_fit(Mapper& m, JobSpec& job) {
  constexpr double kClearlyOom = 1.5;
  MemoryOptions opts;
  opts.suggest_remedies = false;
  const MemoryReport none = project_memory(job, opts);
  if (none.capacity_bytes <= 0.0 || none.peak_point_bytes <= kClearlyOom * none.capacity_bytes) {
    return;
  }
  RecomputeSpec selective;
  selective.granularity = RecomputeGranularity::kSelective;
  selective.modules = {"core_attn"};
  RecomputeSpec full;
  full.granularity = RecomputeGranularity::kFull;
  full.method = RecomputeMethod::kUniform;
  full.num_layers = 1;
  const std::pair<RecomputeSpec, const char*> kCandidates[] = {{selective, "selective (core_attn)"},
                                                               {full, "full (uniform, 1 layer)"}};
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const RecomputeSpec stated = job.runtime.recompute;
  for (const auto& [spec, label] : kCandidates) {
    job.runtime.recompute = spec;
    const MemoryReport r = project_memory(job, opts);
    if (r.verdict == MemoryVerdict::kOom) continue;
    m.retract("training.recompute");
    m.assume("training.recompute", label,
             fmt::format("not stated; without recomputation the projected peak is {:.0f} GiB of "
                         "{:.0f} GiB, and a measured run fit, so it recomputed at least this much",
                         none.peak_point_bytes / kGiB, none.capacity_bytes / kGiB));
    return;
  }
  job.runtime.recompute = stated;
  m.note(fmt::format(
      "memory: projected out of memory ({:.0f} GiB of {:.0f} GiB) even with full recomputation",
      none.peak_point_bytes / kGiB, none.capacity_bytes / kGiB));
}

}  // namespace

MappedRun map_run(const RunEntry& entry, const std::string& data_dir) {
  MappedRun out;
  out.id = entry.id;
  out.job.source = "<validation:" + entry.id + ">";
  Mapper m(entry, out);
  if (!entry.ok()) {
    out.reason = entry.errors.front();
    return out;
  }
  const Framework fw = detect_framework(entry.framework);
  out.framework = framework_name(fw);
  if (fw == Framework::kUnknown) m.note("framework '" + entry.framework + "' not recognised");

  // Cluster.
  ClusterSpec& cl = out.job.cluster;
  if (entry.hardware.accelerator.empty()) m.fail("hardware.accelerator not stated");
  std::optional<std::string> name;
  if (!entry.hardware.accelerator.empty()) {
    try {
      name = match_accelerator_name(entry.hardware.accelerator, data_dir);
    } catch (const InputError& ex) {
      m.fail(std::string("hardware catalogue: ") + ex.what());
    }
    if (name) {
      try {
        cl.accelerator = load_accelerator(*name, data_dir);
        out.accelerator_name = *name;
        m.note("hardware.accelerator: '" + entry.hardware.accelerator + "' -> catalogue '" + *name +
               "'");
        try {
          cl.network = default_network_for(cl.accelerator, data_dir);
        } catch (const InputError& ex) {
          m.assume("cluster.network", "built-in defaults", ex.what());
        }
      } catch (const InputError& ex) {
        m.fail(std::string("hardware catalogue: ") + ex.what());
      }
    } else {
      m.fail("hardware.accelerator '" + entry.hardware.accelerator + "' not in the catalogue");
    }
  }
  out.accelerator_family = accelerator_family(cl.accelerator, entry.hardware.accelerator);
  int world = 0;
  if (!entry.hardware.count || *entry.hardware.count <= 0) {
    m.fail("hardware.count not stated");
  } else {
    world = *entry.hardware.count;
    int per_node = 0;
    if (entry.hardware.per_node && *entry.hardware.per_node > 0) {
      per_node = *entry.hardware.per_node;
    } else {
      per_node =
          cl.accelerator.default_gpus_per_node > 0 ? cl.accelerator.default_gpus_per_node : 8;
      m.assume("hardware.per_node", std::to_string(per_node),
               "not stated; the accelerator's usual node / host size");
    }
    if (world <= per_node) {
      cl.nodes = 1;
      cl.gpus_per_node = world;
    } else if (world % per_node != 0) {
      m.fail(fmt::format("{} GPUs do not fill nodes of {}", world, per_node));
    } else {
      cl.nodes = world / per_node;
      cl.gpus_per_node = per_node;
    }
  }
  out.num_gpus = world;
  if (world > 0) read_interconnect(m, entry.hardware.interconnect, cl);

  // Sequence length: the training block, else the model block.
  int seq = 0;
  if (entry.training.seq_len) {
    seq = *entry.training.seq_len;
  } else if (entry.model.seq_len) {
    seq = *entry.model.seq_len;
    m.note("training.seq_len taken from model.seq_len");
  } else {
    m.fail("seq_len not stated (no framework default)");
  }
  out.job.runtime.seq_length = seq;

  map_model(m, fw, seq);
  if (world > 0 && !out.job.model.layers.empty()) map_training(m, fw, world);
  out.flop_convention = read_convention(m, entry.measured.flop_counting, fw);
  out.mapped = out.reason.empty();
  if (out.mapped && entry.training.recompute.empty()) infer_recompute_from_fit(m, out.job);
  return out;
}

}  // namespace projector
