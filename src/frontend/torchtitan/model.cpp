// torchtitan model args -> ModelSpec. Each family follows its torchtitan model code (v0.2.2 line
// numbers in docs/torchtitan.md): llama3 / llama4 FeedForward sizing, llama4 interleaved MoE with
// auto-scaled expert width and a shared expert, DeepSeek-V3 MLA with dense first layers, Qwen3
// q/k norms and optional MoE, gpt-oss biases, sinks and alternating sliding windows.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <set>

#include "frontend/torchtitan/adapter.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/util/bounds.h"

namespace projector::frontend_detail {
namespace {

// JobConfig.Model fields; every other key under `model:` overrides a flavor argument.
const std::set<std::string> kJobConfigModelKeys = {
    "name", "flavor", "hf_assets_path", "tokenizer_path", "converters", "print_after_conversion"};

class Args {
 public:
  Args(const ConfigValue& args, const std::string& what) : a_(args), what_(what) {}
  const ConfigValue* get(const std::string& k) const {
    const ConfigValue* v = a_.find(k);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  // Bounded (so narrowing is exact); the sizes that divide or count layers are at least 1, the
  // counts that add to them at least 0, the layers at most kMaxLayers.
  std::int64_t integer(const std::string& k) const {
    const ConfigValue* v = get(k);
    if (v == nullptr || v->kind != ConfigValue::Kind::kInt) {
      throw InputError(v != nullptr ? v->where : a_.where, k,
                       fmt::format("{}: expected an integer", what_));
    }
    std::string error;
    const std::optional<std::int64_t> n = bounded_integer(*v, error);
    if (!n) throw InputError(v->where, k, fmt::format("{}: {}", what_, error));
    static const std::set<std::string> kPositive = {
        "dim",         "n_heads",  "n_layers",          "multiple_of",       "top_k",
        "num_experts", "head_dim", "num_expert_groups", "num_limited_groups"};
    static const std::set<std::string> kNonNegative = {"num_shared_experts", "n_dense_layers",
                                                       "interleave_moe_layer_step",
                                                       "every_n_layers_nope", "n_kv_heads"};
    const std::int64_t lowest = kPositive.contains(k) ? 1 : kNonNegative.contains(k) ? 0 : *n;
    const std::int64_t highest = k == "n_layers" ? kMaxLayers : kMaxCount;
    if (*n < lowest || *n > highest) {
      throw InputError(v->where, k,
                       fmt::format("{}: must be in {}..{}, got {}", what_, lowest, highest, *n));
    }
    return *n;
  }
  std::int64_t integer_or(const std::string& k, std::int64_t fallback) const {
    return get(k) != nullptr ? integer(k) : fallback;
  }
  std::optional<double> number(const std::string& k) const {
    const ConfigValue* v = get(k);
    if (v == nullptr) return std::nullopt;
    if (v->kind == ConfigValue::Kind::kInt) return static_cast<double>(v->i);
    // Multipliers of widths: finite and at most kMaxCount, so the products stay in 64 bits.
    if (v->kind == ConfigValue::Kind::kFloat && std::isfinite(v->f) &&
        std::fabs(v->f) <= static_cast<double>(kMaxCount)) {
      return v->f;
    }
    throw InputError(v->where, k, fmt::format("{}: expected a finite number", what_));
  }
  bool boolean(const std::string& k, bool fallback) const {
    const ConfigValue* v = get(k);
    return v != nullptr && v->kind == ConfigValue::Kind::kBool ? v->b : fallback;
  }
  std::string text(const std::string& k, const std::string& fallback) const {
    const ConfigValue* v = get(k);
    return v != nullptr && v->kind == ConfigValue::Kind::kString ? v->s : fallback;
  }
  [[noreturn]] void fail(const std::string& k, const std::string& message) const {
    const ConfigValue* v = get(k);
    throw InputError(v != nullptr ? v->where : a_.where, k, fmt::format("{}: {}", what_, message));
  }
  Args moe() const {
    const ConfigValue* m = a_.find("moe_args");
    static const ConfigValue kEmpty = ConfigValue::make_map();
    return Args(m != nullptr && m->is_map() ? *m : kEmpty, what_ + " moe_args");
  }

 private:
  const ConfigValue& a_;
  std::string what_;
};

// llama FeedForward: int(2 * hidden / 3), times ffn_dim_multiplier, rounded up to multiple_of
// (llama3/model/model.py FeedForward.__init__).
std::int64_t llama_ffn(std::int64_t hidden, std::int64_t multiple_of, std::optional<double> mult) {
  hidden = static_cast<std::int64_t>(2.0 * static_cast<double>(hidden) / 3.0);
  if (mult) hidden = static_cast<std::int64_t>(*mult * static_cast<double>(hidden));
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

// llama4 MoE expert width (llama4/model/model.py TransformerBlock.__init__): the dense width
// before rounding, divided by top_k + shared experts when auto-scaled, then rounded up.
std::int64_t llama4_expert_ffn(const Args& a, int top_k, int shared) {
  std::int64_t hidden = static_cast<std::int64_t>(2.0 * 4.0 * a.integer("dim") / 3.0);
  if (const auto m = a.number("ffn_dim_multiplier")) {
    hidden = static_cast<std::int64_t>(*m * static_cast<double>(hidden));
  }
  if (a.boolean("auto_scale_hidden_dim", true)) {
    hidden = static_cast<std::int64_t>(static_cast<double>(hidden) / (top_k + shared));
  }
  const std::int64_t multiple = a.integer("multiple_of");
  return hidden + (multiple - hidden % multiple) % multiple;
}

LayerSpec base_layer(const Args& a, int head_dim) {
  LayerSpec l;
  AttentionSpec& at = l.attention;
  at.num_heads = static_cast<int>(a.integer("n_heads"));
  at.num_query_groups = static_cast<int>(a.integer_or("n_kv_heads", at.num_heads));
  at.head_dim = head_dim;
  l.mlp.activation = ActivationKind::kSilu;
  l.mlp.gated = true;
  return l;
}

// Node-limited routing (v0.2.2 models/moe/moe.py:35-36 MoEArgs num_expert_groups /
// num_limited_groups, None by default; TokenChoiceTopKRouter._get_node_limited_routing_scores
// :251-291, applied in forward :322-326): the experts form num_expert_groups equal groups, each
// token keeps its best num_limited_groups groups (scored by their top-2 experts) and takes its
// top_k experts from them. Off when num_expert_groups is None (num_limited_groups is then
// unread). torchtitan raises without num_limited_groups, when the groups do not divide the
// experts and for groups of fewer than 2 experts (:264-276); like the Megatron adapter this also
// refuses more picked groups than groups and a top_k that does not fit in the picked groups (the
// top-k would then select masked experts). _debug_force_load_balance replaces the choice by a
// round-robin (:336-341), so the groups have no effect then.
void set_group_limited_routing(MoeSpec& m, const Args& moe) {
  if (moe.get("num_expert_groups") == nullptr || moe.boolean("_debug_force_load_balance", false)) {
    return;
  }
  const int groups = static_cast<int>(moe.integer("num_expert_groups"));
  if (moe.get("num_limited_groups") == nullptr) {
    moe.fail("num_limited_groups", "must be set when num_expert_groups is set");
  }
  const int picked = static_cast<int>(moe.integer("num_limited_groups"));
  if (const auto bad = group_routing_problem(m.num_experts, m.topk, groups, picked, 2)) {
    moe.fail(bad->in_groups_key ? "num_expert_groups" : "num_limited_groups", bad->message);
  }
  m.router_num_groups = groups;
  m.router_group_topk = picked;
}

void set_moe(LayerSpec& l, const Args& moe, std::int64_t expert_ffn, std::int64_t shared_ffn) {
  l.is_moe = true;
  l.moe.num_experts = static_cast<int>(moe.integer("num_experts"));
  l.moe.topk = static_cast<int>(moe.integer("top_k"));
  l.moe.expert_ffn_hidden_size = expert_ffn;
  l.moe.shared_expert_ffn_hidden_size = shared_ffn * moe.integer_or("num_shared_experts", 0);
  l.moe.capacity_factor = 0.0;                                   // token-choice routing, dropless
  l.moe.router_bias = moe.get("load_balance_coeff") != nullptr;  // the expert-bias buffer
  l.moe.grouped_gemm = moe.boolean("use_grouped_mm", true);
  set_group_limited_routing(l.moe, moe);
}

std::vector<LayerSpec> llama_layers(const Args& a, bool llama4, std::vector<std::string>& notes) {
  const int heads = static_cast<int>(a.integer("n_heads"));
  const std::int64_t dim = a.integer("dim");
  const int n = static_cast<int>(a.integer("n_layers"));
  std::vector<LayerSpec> layers;
  const Args moe = a.moe();
  const int step = llama4 ? static_cast<int>(a.integer("interleave_moe_layer_step")) : 0;
  const std::int64_t nope = llama4 ? a.integer_or("every_n_layers_nope", 0) : 0;
  if (llama4 && a.get("every_n_layers_nope") != nullptr && nope <= 1) {
    a.fail("every_n_layers_nope", "must be greater than 1 (models/llama4/model/model.py:377-378)");
  }
  const bool chunked = nope > 0 && a.text("attn_type", "sdpa") == "flex";
  for (int i = 0; i < n; ++i) {
    LayerSpec l = base_layer(a, static_cast<int>(dim / heads));
    l.mlp.ffn_hidden_size =
        llama_ffn(4 * dim, a.integer("multiple_of"), a.number("ffn_dim_multiplier"));
    if (llama4 && step > 0 && (i + 1) % step == 0) {
      const int top_k = static_cast<int>(moe.integer("top_k"));
      const int shared = static_cast<int>(moe.integer_or("num_shared_experts", 0));
      const std::int64_t e = llama4_expert_ffn(a, top_k, shared);
      set_moe(l, moe, e, e);
    }
    // iRoPE (models/llama4/model/model.py:374-383): block layer_id % every_n_layers_nope == 0
    // is global without RoPE, the others attend causally within fixed blocks of
    // fixed_attn_block_size tokens (attention.py:242-263 get_fixed_block_mask_mod, and-ed with
    // the causal mask, model.py:560-564). The masks exist only under FlexAttention
    // (model.py:276-285): with SDPA every block is plain causal.
    if (chunked && i % nope != 0) {
      l.attention.chunk_window = static_cast<int>(a.integer("fixed_attn_block_size"));
    }
    layers.push_back(l);
  }
  if (nope > 0 && !chunked) {
    notes.push_back(fmt::format(
        "every_n_layers_nope {} with attn_type '{}': the fixed-block (chunked) mask is applied "
        "only under FlexAttention, so every block is projected with full causal attention",
        nope, a.text("attn_type", "sdpa")));
  }
  return layers;
}

std::vector<LayerSpec> deepseek_layers(const Args& a) {
  std::vector<LayerSpec> layers;
  const Args moe = a.moe();
  const int n = static_cast<int>(a.integer("n_layers"));
  const int dense = static_cast<int>(a.integer("n_dense_layers"));
  for (int i = 0; i < n; ++i) {
    LayerSpec l;
    AttentionSpec& at = l.attention;
    at.kind = AttentionKind::kMla;
    at.num_heads = static_cast<int>(a.integer("n_heads"));
    at.num_query_groups = at.num_heads;
    at.q_lora_rank = static_cast<int>(a.integer("q_lora_rank"));
    at.kv_lora_rank = static_cast<int>(a.integer("kv_lora_rank"));
    at.qk_head_dim = static_cast<int>(a.integer("qk_nope_head_dim"));
    at.qk_pos_emb_head_dim = static_cast<int>(a.integer("qk_rope_head_dim"));
    at.v_head_dim = static_cast<int>(a.integer("v_head_dim"));
    at.head_dim = at.qk_head_dim + at.qk_pos_emb_head_dim;
    l.mlp.activation = ActivationKind::kSilu;
    l.mlp.gated = true;
    l.mlp.ffn_hidden_size = a.integer("inter_dim");
    if (i >= dense) {
      const std::int64_t e = a.integer("moe_inter_dim");
      set_moe(l, moe, e, e);
    }
    layers.push_back(l);
  }
  return layers;
}

std::vector<LayerSpec> qwen3_layers(const Args& a) {
  std::vector<LayerSpec> layers;
  const Args moe = a.moe();
  for (int i = 0; i < a.integer("n_layers"); ++i) {
    LayerSpec l = base_layer(a, static_cast<int>(a.integer("head_dim")));
    l.attention.qk_layernorm = a.boolean("qk_norm", true);
    l.mlp.ffn_hidden_size = a.integer("hidden_dim");
    if (a.boolean("moe_enabled", false)) {
      const std::int64_t e = a.integer("moe_inter_dim");
      set_moe(l, moe, e, e);
    }
    layers.push_back(l);
  }
  return layers;
}

std::vector<LayerSpec> gpt_oss_layers(const Args& a) {
  std::vector<LayerSpec> layers;
  const Args moe = a.moe();
  for (int i = 0; i < a.integer("n_layers"); ++i) {
    LayerSpec l = base_layer(a, static_cast<int>(a.integer("head_dim")));
    l.attention.add_qkv_bias = true;
    l.attention.add_bias_linear = true;
    if (i % 2 == 0) l.attention.sliding_window = static_cast<int>(a.integer("sliding_window_size"));
    l.mlp.add_bias = true;  // the experts' mlp1 / mlp2 biases
    const std::int64_t e = a.integer("moe_inter_dim");
    set_moe(l, moe, e, e);
    l.moe.router_bias = moe.boolean("gate_bias", false) || l.moe.router_bias;
    layers.push_back(l);
  }
  return layers;
}

// The flavor table to read: an installed torchtitan's source when there is one and it has the
// model, else the transcription.
FlavorCatalog flavor_source(const AdapterInput& in, const std::string& name, JobDraft& d) {
  const std::string pkg = torchtitan_checkout(in);
  if (!pkg.empty()) {
    try {
      FlavorCatalog installed = read_checkout_flavors(pkg, {name});
      if (installed.find(name) != nullptr) return installed;
      d.warnings.push_back(fmt::format("{} has no model '{}'; using the transcribed flavor table",
                                       installed.origin, name));
    } catch (const InputError& e) {
      d.warnings.push_back(
          fmt::format("flavor tables of {} not readable ({}); using the "
                      "transcribed table",
                      pkg, e.what()));
    }
  }
  return load_transcribed_flavors(in.data_dir);
}

// Keys under `model:` that are not JobConfig fields override the flavor's arguments.
void apply_architecture_keys(TitanReader& r, ConfigValue& args, JobDraft& d) {
  const ConfigValue* model = r.stated("model");
  if (model == nullptr || !model->is_map()) return;
  for (const auto& [k, v] : model->entries) {
    if (kJobConfigModelKeys.count(k) != 0) continue;
    ConfigValue* target = args.find(k);
    if (target == nullptr) {
      d.warnings.push_back(
          fmt::format("{}:{}: model.{} is neither a JobConfig key nor an "
                      "argument of this flavor (ignored)",
                      v.where.file, v.where.line, k));
      continue;
    }
    if (target->is_map() && v.is_map()) {
      deep_merge(*target, v);
    } else {
      *target = v;
    }
  }
}

}  // namespace

ModelSpec read_torchtitan_model(TitanReader& r, const AdapterInput& in, JobDraft& d,
                                TitanModelFacts& facts) {
  facts.name = r.text("model.name");
  const std::string flavor = r.text("model.flavor");
  const FlavorCatalog catalog = flavor_source(in, facts.name, d);
  const FlavorModel* fm = catalog.find(facts.name);
  if (fm == nullptr) {
    std::vector<std::string> names;
    for (const FlavorModel& m : catalog.models) names.push_back(m.name);
    r.fail("model.name", fmt::format("torchtitan model '{}' is not modelled (known: {})",
                                     facts.name, fmt::join(names, ", ")));
  }
  const ConfigValue* stated = fm->flavor(flavor);
  if (stated == nullptr) {
    r.fail("model.flavor",
           fmt::format("no flavor '{}' of {} in {} (flavors: {})", flavor, facts.name,
                       catalog.origin, fmt::join(fm->flavor_names(), ", ")));
  }
  ConfigValue args = resolve_flavor(catalog, *fm, *stated);
  apply_architecture_keys(r, args, d);
  d.defaults.push_back({"model.flavor", facts.name + " " + flavor,
                        fmt::format("architecture from {} ({}; class defaults {})", catalog.origin,
                                    fm->table_source, fm->args_source),
                        "torchtitan"});
  const Args a(args, facts.name + " " + flavor);
  facts.attn_type = a.text("attn_type", "sdpa");
  facts.attn_mask_type = a.text("attn_mask_type", "causal");
  facts.pipelining = facts.name != "gpt_oss";  // gpt_oss/__init__.py:85 pipelining_fn=None
  ModelSpec m;
  m.name = facts.name + "_" + flavor;
  m.hidden_size = a.integer("dim");
  m.vocab_size = a.integer("vocab_size");
  m.make_vocab_size_divisible_by = 1;
  m.norm = NormKind::kRmsNorm;
  m.position_embedding = PositionEmbeddingKind::kRope;
  m.max_position_embeddings = a.integer_or("max_seq_len", 0);
  m.tied_embeddings = a.boolean("enable_weight_tying", false);
  std::vector<std::string> notes;
  if (facts.name == "llama3" || facts.name == "llama4") {
    m.layers = llama_layers(a, facts.name == "llama4", notes);
  } else if (facts.name == "deepseek_v3") {
    m.layers = deepseek_layers(a);
  } else if (facts.name == "qwen3") {
    m.layers = qwen3_layers(a);
  } else if (facts.name == "gpt_oss") {
    m.layers = gpt_oss_layers(a);
  } else {
    r.fail("model.name", fmt::format("torchtitan model '{}' has a flavor table but no layer "
                                     "mapping in this tool",
                                     facts.name));
  }
  for (const std::string& n : notes) d.warnings.push_back(n);
  for (const LayerSpec& l : m.layers) facts.moe = facts.moe || l.is_moe;
  d.vocab_padding = 1;  // torchtitan pads nothing: the tokenizer's vocabulary
  d.attention_dropout = 0.0;
  d.hidden_dropout = 0.0;
  return m;
}

}  // namespace projector::frontend_detail
