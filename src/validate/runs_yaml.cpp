// Reading the validation runs file. Each entry is read on its own: a value of the wrong type is
// dropped with a warning on that entry (the entry still maps from what it states correctly); only
// a structural problem (an entry that is not a mapping, a missing or duplicate id) makes the entry
// invalid. A block whose fields are all null is absent.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "projector/util/bounds.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"
#include "projector/util/text.h"
#include "projector/validate/validate.h"
#include "validate/phrases.h"
#include "validate/run_config.h"

namespace projector {
namespace {

int line_of(const YAML::Node& n) {
  return n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
}

bool is_null(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return true;
  if (!n.IsScalar()) return false;
  const std::string s = n.Scalar();
  return n.Tag() != "!" && (s == "~" || s == "null" || s == "Null" || s == "NULL");
}

// Free text longer than this is refused (the longest field read is under 500 characters), which
// also bounds the free-text readings' regular expressions.
constexpr std::size_t kMaxText = 1024;
// Integers of a list (table rows, layer widths).
constexpr long long kMaxListValue = 1LL << 40;

std::string clipped(const std::string& s) {
  return s.size() <= 40 ? s : s.substr(0, 24) + "... (" + std::to_string(s.size()) + " characters)";
}

// Reads typed fields of one entry and records what is wrong with them.
class EntryReader {
 public:
  explicit EntryReader(RunEntry& entry) : e_(entry) {}

  void error(const std::string& field, const std::string& message, int line) {
    e_.errors.push_back(describe(field, message, line));
  }
  // A wrongly typed value: dropped, the entry goes on.
  void error_dropped(const std::string& field, const std::string& message, int line) {
    e_.warnings.push_back(describe(field, message + "; ignored", line));
  }

  // A mapping section, or an undefined node when absent, null or all of its fields are null.
  // Anything else is dropped with a warning.
  YAML::Node section(const YAML::Node& parent, const char* key, const std::string& path) {
    if (!parent.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node n = parent[key];
    if (is_null(n)) return YAML::Node(YAML::NodeType::Undefined);
    if (!n.IsMap()) {
      error_dropped(path, "expected a mapping", line_of(n));
      return YAML::Node(YAML::NodeType::Undefined);
    }
    bool all_null = true;
    for (const auto& kv : n) all_null = all_null && is_null(kv.second);
    return all_null ? YAML::Node(YAML::NodeType::Undefined) : n;
  }

  // A list of non-negative integers; empty when absent or null.
  std::vector<std::int64_t> integers(const YAML::Node& parent, const char* key,
                                     const std::string& path) {
    std::vector<std::int64_t> out;
    if (!parent.IsDefined()) return out;
    const YAML::Node n = parent[key];
    if (is_null(n)) return out;
    const std::string field = path + "." + key;
    if (!n.IsSequence()) {
      error_dropped(field, "expected a list of integers", line_of(n));
      return out;
    }
    for (const YAML::Node& item : n) {
      long long v = 0;
      const std::string s = item.IsScalar() ? item.Scalar() : "";
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v < 0 ||
          v > kMaxListValue) {
        error_dropped(field, fmt::format("expected a list of integers in 0..{}", kMaxListValue),
                      line_of(item));
        return {};
      }
      out.push_back(v);
    }
    return out;
  }

  std::string text(const YAML::Node& parent, const char* key, const std::string& path) {
    if (!parent.IsDefined()) return {};
    const YAML::Node n = parent[key];
    if (is_null(n)) return {};
    if (!n.IsScalar()) {
      error_dropped(path + "." + key, "expected text", line_of(n));
      return {};
    }
    if (n.Scalar().size() > kMaxText) {
      error_dropped(path + "." + key,
                    fmt::format("text of {} characters, more than {}", n.Scalar().size(), kMaxText),
                    line_of(n));
      return {};
    }
    return n.Scalar();
  }

  // A list of short names (a text alone is a one-item list); empty when absent or null.
  std::vector<std::string> names(const YAML::Node& parent, const char* key,
                                 const std::string& path) {
    std::vector<std::string> out;
    if (!parent.IsDefined()) return out;
    const YAML::Node n = parent[key];
    if (is_null(n)) return out;
    if (n.IsScalar()) return {text(parent, key, path)};
    if (!n.IsSequence() || n.size() > 64) {
      error_dropped(path + "." + key, "expected a list of names", line_of(n));
      return out;
    }
    for (const YAML::Node& item : n) {
      if (!item.IsScalar() || item.Scalar().empty() || item.Scalar().size() > 64) {
        error_dropped(path + "." + key, "expected a list of names", line_of(item));
        return {};
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  template <typename Int>
  std::optional<Int> integer(const YAML::Node& parent, const char* key, const std::string& path) {
    if (!parent.IsDefined()) return std::nullopt;
    const YAML::Node n = parent[key];
    if (is_null(n)) return std::nullopt;
    const std::string field = path + "." + key;
    if (!n.IsScalar()) {
      error_dropped(field, "expected an integer", line_of(n));
      return std::nullopt;
    }
    const std::string& s = n.Scalar();
    long long v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > kMaxCount)) {
      error_dropped(field, fmt::format("{} is out of range (at most {})", clipped(s), kMaxCount),
                    line_of(n));
      return std::nullopt;
    }
    if (ec != std::errc() || ptr != s.data() + s.size()) {
      error_dropped(field, "expected an integer, got '" + clipped(s) + "'", line_of(n));
      return std::nullopt;
    }
    if (v < 0) {
      error_dropped(field, "must not be negative, got " + s, line_of(n));
      return std::nullopt;
    }
    return static_cast<Int>(v);  // 0..kMaxCount fits every Int used
  }

  std::optional<double> number(const YAML::Node& parent, const char* key, const std::string& path) {
    if (!parent.IsDefined()) return std::nullopt;
    const YAML::Node n = parent[key];
    if (is_null(n)) return std::nullopt;
    const std::string field = path + "." + key;
    if (!n.IsScalar()) {
      error_dropped(field, "expected a number", line_of(n));
      return std::nullopt;
    }
    const std::string& s = n.Scalar();
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) {
      error_dropped(field, "expected a number, got '" + clipped(s) + "'", line_of(n));
      return std::nullopt;
    }
    if (!std::isfinite(v)) {  // "nan", "inf", 1e999: no measurement
      error_dropped(field, "must be a finite number, got '" + clipped(s) + "'", line_of(n));
      return std::nullopt;
    }
    if (v < 0) {
      error_dropped(field, "must not be negative, got " + s, line_of(n));
      if (path == "measured") e_.contradictions.push_back(field + " is negative (" + s + ")");
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> boolean(const YAML::Node& parent, const char* key, const std::string& path) {
    if (!parent.IsDefined()) return std::nullopt;
    const YAML::Node n = parent[key];
    if (is_null(n)) return std::nullopt;
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      error_dropped(path + "." + key,
                    "expected true or false, got '" + (n.IsScalar() ? n.Scalar() : "") + "'",
                    line_of(n));
      return std::nullopt;
    }
    return v;
  }

 private:
  std::string describe(const std::string& field, const std::string& message, int line) const {
    std::string s = e_.id + ": " + field + ": " + message;
    if (line > 0) s += " (line " + std::to_string(line) + ")";
    return s;
  }

  RunEntry& e_;
};

void read_hardware(EntryReader& r, const YAML::Node& node, RunEntry& e) {
  const YAML::Node hw = r.section(node, "hardware", "hardware");
  e.hardware.accelerator = r.text(hw, "accelerator", "hardware");
  e.hardware.count = r.integer<int>(hw, "count", "hardware");
  e.hardware.per_node = r.integer<int>(hw, "per_node", "hardware");
  e.hardware.interconnect = r.text(hw, "interconnect", "hardware");
}

// The model's moe / mla / dlrm blocks.
void read_model_blocks(EntryReader& r, const YAML::Node& m, RunEntry::Model& mo) {
  if (const YAML::Node moe = r.section(m, "moe", "model.moe"); moe.IsDefined()) {
    RunEntry::Moe x;
    x.num_experts = r.integer<int>(moe, "num_experts", "model.moe");
    x.topk = r.integer<int>(moe, "topk", "model.moe");
    x.moe_ffn_hidden_size = r.integer<std::int64_t>(moe, "moe_ffn_hidden_size", "model.moe");
    x.shared_experts = r.integer<int>(moe, "shared_experts", "model.moe");
    x.shared_expert_ffn_hidden_size =
        r.integer<std::int64_t>(moe, "shared_expert_ffn_hidden_size", "model.moe");
    x.dense_layers = r.integer<int>(moe, "dense_layers", "model.moe");
    x.dense_ffn_hidden_size = r.integer<std::int64_t>(moe, "dense_ffn_hidden_size", "model.moe");
    x.moe_layer_freq = r.text(moe, "moe_layer_freq", "model.moe");
    x.router = r.text(moe, "router", "model.moe");
    mo.moe = x;
  }
  if (const YAML::Node d = r.section(m, "dlrm", "model.dlrm"); d.IsDefined()) {
    RunEntry::Dlrm x;
    x.dense_features = r.integer<int>(d, "dense_features", "model.dlrm");
    x.embedding_dim = r.integer<int>(d, "embedding_dim", "model.dlrm");
    x.num_embeddings_per_feature = r.integers(d, "num_embeddings_per_feature", "model.dlrm");
    x.multi_hot_sizes = r.integers(d, "multi_hot_sizes", "model.dlrm");
    x.dense_arch_layer_sizes = r.integers(d, "dense_arch_layer_sizes", "model.dlrm");
    x.over_arch_layer_sizes = r.integers(d, "over_arch_layer_sizes", "model.dlrm");
    x.interaction_type = r.text(d, "interaction_type", "model.dlrm");
    x.dcn_num_layers = r.integer<int>(d, "dcn_num_layers", "model.dlrm");
    x.dcn_low_rank_dim = r.integer<int>(d, "dcn_low_rank_dim", "model.dlrm");
    x.embedding_dtype = r.text(d, "embedding_dtype", "model.dlrm");
    mo.dlrm = x;
  }
  if (const YAML::Node mla = r.section(m, "mla", "model.mla"); mla.IsDefined()) {
    RunEntry::Mla x;
    x.q_lora_rank = r.integer<int>(mla, "q_lora_rank", "model.mla");
    x.kv_lora_rank = r.integer<int>(mla, "kv_lora_rank", "model.mla");
    x.qk_nope_head_dim = r.integer<int>(mla, "qk_nope_head_dim", "model.mla");
    x.qk_rope_head_dim = r.integer<int>(mla, "qk_rope_head_dim", "model.mla");
    x.v_head_dim = r.integer<int>(mla, "v_head_dim", "model.mla");
    mo.mla = x;
  }
  const std::string ca_path = "model.compressed_attention";
  if (const YAML::Node ca = r.section(m, "compressed_attention", ca_path); ca.IsDefined()) {
    RunEntry::CompressedAttention x;
    x.q_lora_rank = r.integer<int>(ca, "q_lora_rank", ca_path);
    x.qk_rope_head_dim = r.integer<int>(ca, "qk_rope_head_dim", ca_path);
    x.sliding_window = r.integer<int>(ca, "sliding_window", ca_path);
    x.attn_sink = r.boolean(ca, "attn_sink", ca_path);
    x.o_groups = r.integer<int>(ca, "o_groups", ca_path);
    x.o_lora_rank = r.integer<int>(ca, "o_lora_rank", ca_path);
    x.index_topk = r.integer<int>(ca, "index_topk", ca_path);
    x.index_head_dim = r.integer<int>(ca, "index_head_dim", ca_path);
    x.index_n_heads = r.integer<int>(ca, "index_n_heads", ca_path);
    x.hc_mult = r.integer<int>(ca, "hc_mult", ca_path);
    x.hc_sinkhorn_iters = r.integer<int>(ca, "hc_sinkhorn_iters", ca_path);
    x.num_hash_layers = r.integer<int>(ca, "num_hash_layers", ca_path);
    x.compress_ratios = r.integers(ca, "compress_ratios", ca_path);
    mo.compressed_attention = x;
  }
}

void read_model(EntryReader& r, const YAML::Node& node, RunEntry& e) {
  const YAML::Node m = r.section(node, "model", "model");
  auto& mo = e.model;
  mo.name = r.text(m, "name", "model");
  mo.family = r.text(m, "family", "model");
  mo.type = r.text(m, "type", "model");
  mo.num_layers = r.integer<int>(m, "num_layers", "model");
  mo.hidden_size = r.integer<std::int64_t>(m, "hidden_size", "model");
  mo.ffn_hidden_size = r.integer<std::int64_t>(m, "ffn_hidden_size", "model");
  mo.num_attention_heads = r.integer<int>(m, "num_attention_heads", "model");
  mo.num_kv_heads = r.integer<int>(m, "num_kv_heads", "model");
  mo.head_dim = r.integer<int>(m, "head_dim", "model");
  mo.vocab_size = r.integer<std::int64_t>(m, "vocab_size", "model");
  mo.seq_len = r.integer<int>(m, "seq_len", "model");
  mo.activation = r.text(m, "activation", "model");
  mo.norm = r.text(m, "norm", "model");
  mo.position_embedding = r.text(m, "position_embedding", "model");
  mo.tied_embeddings = r.boolean(m, "tied_embeddings", "model");
  mo.qk_layernorm = r.boolean(m, "qk_layernorm", "model");
  mo.mtp_layers = r.integer<int>(m, "mtp_layers", "model");
  mo.attention = r.text(m, "attention", "model");
  mo.block = r.text(m, "block", "model");
  mo.arch_source = r.text(m, "arch_source", "model");
  read_model_blocks(r, m, mo);
}

// flash_attention: a boolean, or a description of the attention kernel read by phrases
// ("TE fused attention (CK backend)" -> fused); a description naming neither is dropped.
void read_flash_attention(EntryReader& r, const YAML::Node& t, RunEntry::Training& tr) {
  if (!t.IsDefined()) return;
  const YAML::Node n = t["flash_attention"];
  bool v = false;
  if (is_null(n)) return;
  if (n.IsScalar() && YAML::convert<bool>::decode(n, v)) {
    tr.flash_attention = v;
    return;
  }
  const std::string text = r.text(t, "flash_attention", "training");
  if (text.empty()) return;
  tr.flash_attention = validate_detail::read_fused_attention(text);
  if (tr.flash_attention) {
    tr.flash_attention_text = text;
  } else {
    r.error_dropped("training.flash_attention",
                    "'" + clipped(text) + "' names neither a fused nor an unfused attention",
                    line_of(n));
  }
}

void read_training(EntryReader& r, const YAML::Node& node, RunEntry& e) {
  const YAML::Node t = r.section(node, "training", "training");
  auto& tr = e.training;
  tr.global_batch_size = r.integer<int>(t, "global_batch_size", "training");
  tr.micro_batch_size = r.integer<int>(t, "micro_batch_size", "training");
  tr.seq_len = r.integer<int>(t, "seq_len", "training");
  tr.tp = r.integer<int>(t, "tp", "training");
  tr.pp = r.integer<int>(t, "pp", "training");
  tr.vpp = r.integer<int>(t, "vpp", "training");
  tr.cp = r.integer<int>(t, "cp", "training");
  tr.ep = r.integer<int>(t, "ep", "training");
  tr.etp = r.integer<int>(t, "etp", "training");
  tr.dp = r.integer<int>(t, "dp", "training");
  tr.sequence_parallel = r.boolean(t, "sequence_parallel", "training");
  tr.distributed_optimizer = r.boolean(t, "distributed_optimizer", "training");
  tr.zero_stage = r.text(t, "zero_stage", "training");
  tr.fsdp = r.text(t, "fsdp", "training");
  tr.recompute = r.text(t, "recompute", "training");
  tr.recompute_modules = r.names(t, "recompute_modules", "training");
  tr.precision = r.text(t, "precision", "training");
  read_flash_attention(r, t, tr);
  tr.pipeline_schedule = r.text(t, "pipeline_schedule", "training");
  tr.pipeline_layout = r.text(t, "pipeline_layout", "training");
  tr.account_for_embedding_in_pipeline_split =
      r.boolean(t, "account_for_embedding_in_pipeline_split", "training");
  tr.account_for_loss_in_pipeline_split =
      r.boolean(t, "account_for_loss_in_pipeline_split", "training");
  tr.overlap = r.text(t, "overlap", "training");
  tr.moe_dispatcher = r.text(t, "moe_dispatcher", "training");
  if (tr.moe_dispatcher.empty()) tr.moe_dispatcher = r.text(t, "moe_dispatch", "training");
  tr.moe_token_balance = r.text(t, "moe_token_balance", "training");
  tr.moe_a2a_overlap = r.boolean(t, "moe_a2a_overlap", "training");
  tr.moe_permute_fusion = r.boolean(t, "moe_permute_fusion", "training");
  tr.cuda_graphs = r.text(t, "cuda_graphs", "training");
  tr.features = r.text(t, "features", "training");
  tr.local_batch_size = r.integer<int>(t, "local_batch_size", "training");
  tr.per_device_batch_size = r.number(t, "per_device_batch_size", "training");  // may be < 1
  tr.fsdp_shard_degree = r.integer<int>(t, "fsdp_shard_degree", "training");
  tr.batch_size_per_gpu = r.integer<int>(t, "batch_size_per_gpu", "training");
  tr.optimizer = r.text(t, "optimizer", "training");
  tr.optimizer_states = r.text(t, "optimizer_states", "training");
  tr.sharding = r.text(t, "sharding", "training");
  tr.parallelism = r.text(t, "parallelism", "training");
  tr.token_dropping = r.boolean(t, "token_dropping", "training");
}

void read_measured(EntryReader& r, const YAML::Node& node, RunEntry& e) {
  const YAML::Node me = r.section(node, "measured", "measured");
  auto& ms = e.measured;
  ms.tokens_per_sec_per_gpu = r.number(me, "tokens_per_sec_per_gpu", "measured");
  ms.tokens_per_sec_per_gpu_vanilla_tp =
      r.number(me, "tokens_per_sec_per_gpu_vanilla_tp", "measured");
  ms.tokens_per_sec_per_gpu_async_tp = r.number(me, "tokens_per_sec_per_gpu_async_tp", "measured");
  ms.tokens_per_sec_total = r.number(me, "tokens_per_sec_total", "measured");
  ms.samples_per_sec_total = r.number(me, "samples_per_sec_total", "measured");
  ms.tflops_per_gpu = r.number(me, "tflops_per_gpu", "measured");
  if (!ms.tflops_per_gpu) ms.tflops_per_gpu = r.number(me, "tflops_per_chip", "measured");
  ms.flop_counting = r.text(me, "flop_counting", "measured");
  ms.mfu_pct = r.number(me, "mfu_pct", "measured");
  ms.step_time_s = r.number(me, "step_time_s", "measured");
  ms.peak_memory_gib = r.number(me, "peak_memory_gib", "measured");
  ms.peak_memory_gb = r.number(me, "peak_memory_gb", "measured");
  ms.peak_memory_pct = r.number(me, "peak_memory_pct", "measured");
  if (ms.peak_memory_pct && *ms.peak_memory_pct > 100.0) {
    r.error("measured.peak_memory_pct", "more than 100 % of the device",
            line_of(me["peak_memory_pct"]));
  }
  ms.memory_metric = r.text(me, "memory_metric", "measured");

  const YAML::Node de = r.section(node, "derived", "derived");
  e.derived.tokens_per_sec_per_gpu = r.number(de, "tokens_per_sec_per_gpu", "derived");
  e.derived.step_time_s = r.number(de, "step_time_s", "derived");
}

// The entry's own framework config (`config:` with its `args:`), resolved against the runs file.
void read_config(EntryReader& r, const YAML::Node& node, const std::string& file, RunEntry& e) {
  const YAML::Node config = node["config"];
  if (is_null(config)) {
    if (!is_null(node["args"])) r.error("args", "args without a config", line_of(node["args"]));
    return;
  }
  try {
    e.config = validate_detail::read_run_config(config, node["args"], file);
  } catch (const InputError& ex) {
    r.error(ex.key(), ex.message(), ex.where().line);
  }
}

// `description: config`: the config is the run's only description, so a training block (a
// second description that could disagree with it) is refused, and a config is required.
void read_description(EntryReader& r, const YAML::Node& node, RunEntry& e) {
  const YAML::Node d = node["description"];
  if (is_null(d)) return;
  if (!d.IsScalar() || d.Scalar() != "config") {
    r.error("description", "the only description other than the entry itself is 'config'",
            line_of(d));
    return;
  }
  e.described_by_config = true;
  if (!is_null(node["training"])) {
    r.error("training", "a run described by its config states its training there",
            line_of(node["training"]));
  }
  if (is_null(node["config"])) r.error("description", "'config' without a config:", line_of(d));
}

// What the file's authors state beside the structured fields: each `assumed` item's value and
// reason and each `notes` line, one per line (settings a source gives only in prose or in the
// recipe it links, read by the mapper's free-text readings). Items that are not text are skipped.
void read_stated(const YAML::Node& node, RunEntry& e) {
  auto add = [&](const YAML::Node& n) {
    if (is_null(n) || !n.IsScalar() || n.Scalar().size() > kMaxText) return;
    if (!e.stated_text.empty()) e.stated_text += '\n';
    e.stated_text += n.Scalar();
  };
  if (const YAML::Node a = node["assumed"]; a.IsDefined() && a.IsSequence()) {
    for (const YAML::Node& item : a) {
      if (!item.IsMap()) continue;
      add(item["value"]);
      add(item["reason"]);
    }
  }
  if (const YAML::Node n = node["notes"]; n.IsDefined() && n.IsSequence()) {
    for (const YAML::Node& item : n) add(item);
  }
}

RunEntry read_entry(const YAML::Node& node, std::size_t index, const std::string& file) {
  RunEntry e;
  e.line = line_of(node);
  e.id = "#" + std::to_string(index + 1);
  EntryReader r(e);
  if (!node.IsMap()) {
    r.error("entry", "expected a mapping", e.line);
    return e;
  }
  const YAML::Node id = node["id"];
  if (is_null(id) || !id.IsScalar() || id.Scalar().empty()) {
    r.error("id", "missing", e.line);
  } else {
    e.id = id.Scalar();
  }
  e.confidence = r.text(node, "confidence", "");
  e.framework = r.text(node, "framework", "");
  e.exclude_from_statistics = r.text(node, "exclude_from_statistics", "");
  if (const YAML::Node src = r.section(node, "source", "source"); src.IsDefined()) {
    e.source_title = r.text(src, "title", "source");
  }

  read_hardware(r, node, e);
  read_model(r, node, e);
  read_training(r, node, e);
  read_measured(r, node, e);
  read_stated(node, e);
  read_config(r, node, file, e);
  read_description(r, node, e);
  return e;
}

}  // namespace

std::vector<RunEntry> parse_runs(const std::string& yaml_text, const std::string& file) {
  // Every text of a runs file reaches the report (ids, notes, sources): refuse bytes that are
  // not UTF-8 at their line, as the experiment loader does, instead of passing them on.
  if (!is_valid_utf8(yaml_text)) {
    std::size_t begin = 0;
    for (int line = 1; begin <= yaml_text.size(); ++line) {
      std::size_t end = yaml_text.find('\n', begin);
      if (end == std::string::npos) end = yaml_text.size();
      const std::string_view text(yaml_text.data() + begin, end - begin);
      if (!is_valid_utf8(text)) {
        throw InputError({file, line, 0}, "",
                         fmt::format("'{}' is not valid UTF-8 (save the file as UTF-8)",
                                     escape_invalid_utf8(text)));
      }
      begin = end + 1;
    }
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& ex) {
    throw InputError({file, ex.mark.line + 1, ex.mark.column + 1}, "", ex.msg);
  }
  if (!root.IsSequence()) {
    throw InputError({file, line_of(root), 0}, "", "a runs file is a list of run entries");
  }
  constexpr std::size_t kMaxRuns = 100000;
  if (root.size() > kMaxRuns) {
    throw InputError({file, line_of(root), 0}, "",
                     fmt::format("{} run entries, more than the {} a runs file may have",
                                 root.size(), kMaxRuns));
  }
  std::vector<RunEntry> runs;
  runs.reserve(root.size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < root.size(); ++i) {
    RunEntry e = read_entry(root[i], i, file);
    if (!seen.insert(e.id).second) {
      e.errors.push_back(e.id + ": id: duplicate id (line " + std::to_string(e.line) + ")");
    }
    runs.push_back(std::move(e));
  }
  return runs;
}

std::vector<RunEntry> load_runs(const std::string& path) {
  return parse_runs(read_input_file(path), path);
}

}  // namespace projector
