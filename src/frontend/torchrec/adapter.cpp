// The TorchRec DLRM back-end adapter (frontend/torchrec/adapter.h): key folding, the dlrm_main.py
// command line, typo warnings, and the draft.
#include "frontend/torchrec/adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>

#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

std::string canonical_key(std::string key) {
  while (key.starts_with("-")) key.erase(0, 1);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

// The launcher words before the flags ("python", "dlrm_main.py", "torchrun ...") are skipped.
bool is_flag(std::string_view word) {
  return word.size() > 2 && word.substr(0, 2) == "--";
}

void name_fields(const ArgReader& r, JobDraft& d, bool v4) {
  const std::pair<DraftField, const char*> keys[] = {
      {DraftField::kModel, v4 ? "num_embedding_tables" : "num_embeddings_per_feature"},
      {DraftField::kMicroBatchSize, v4 ? "micro_batch_size" : "batch_size"},
      {DraftField::kGlobalBatchSize, "global_batch_size"},
      {DraftField::kTp, "tensor_model_parallel_size"},
      {DraftField::kPp, "pipeline_model_parallel_size"},
      {DraftField::kCp, "context_parallel_size"},
      {DraftField::kEp, "expert_model_parallel_size"},
      {DraftField::kHardware, "hardware"},
      {DraftField::kNodes, "nodes"},
      {DraftField::kGpusPerNode, "gpus_per_node"}};
  for (const auto& [field, key] : keys) {
    d.set_origin(field, key, r.has(key) ? r.where(key) : SourceLocation{});
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> split_dlrm_command_line(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  char quote = 0;
  for (const char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  // shlex and argparse refuse an unclosed quote; reading on would swallow the flags after it.
  if (quote != 0) {
    throw InputError({}, "command_line",
                     fmt::format("unclosed {} quote: the shell would not run this command line",
                                 quote == '"' ? "double" : "single"));
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  // A launcher's own flags end at a bare "--" (torchx ... --script dlrm_main.py -- FLAGS).
  for (std::size_t j = 0; j < words.size(); ++j) {
    if (words[j] == "--") i = j + 1;
  }
  while (i < words.size() && !is_flag(words[i])) ++i;  // launcher and script
  for (; i < words.size(); ++i) {
    if (!is_flag(words[i])) continue;  // a stray positional word
    std::string key = words[i];
    std::string value = "true";
    if (const std::size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key.resize(eq);
    } else if (i + 1 < words.size() && !is_flag(words[i + 1])) {
      value = words[++i];
    }
    out.emplace_back(canonical_key(key), value);
  }
  return out;
}

void normalize_torchrec_args(ConfigValue& args, std::vector<std::string>& warnings,
                             std::vector<std::string>* expanded) {
  // Canonical keys, the later of two spellings winning in the first one's place (indexed: linear
  // in the keys, whatever their number).
  std::vector<std::pair<std::string, ConfigValue>> entries;
  std::map<std::string, std::size_t> index;
  for (auto& [k, v] : args.entries) {
    std::string key = canonical_key(k);
    if (const auto [it, added] = index.emplace(key, entries.size()); !added) {
      entries[it->second].second = std::move(v);
    } else {
      entries.emplace_back(std::move(key), std::move(v));
    }
  }
  args.entries = std::move(entries);
  for (const char* key : {"command_line", "dlrm_main_args"}) {
    const ConfigValue* cl = args.find(key);
    if (cl == nullptr) continue;
    if (cl->kind != ConfigValue::Kind::kString) {
      throw InputError(cl->where, key, "expected a dlrm_main.py command line (a string)");
    }
    const ConfigValue line = *cl;
    args.erase(key);
    std::vector<std::pair<std::string, std::string>> flags;
    try {
      flags = split_dlrm_command_line(line.s);
    } catch (const InputError& e) {
      throw InputError(line.where, key, e.message());
    }
    constexpr std::size_t kMaxFlags = 1000;  // dlrm_main.py has about 60 arguments
    if (flags.size() > kMaxFlags) {
      throw InputError(line.where, key,
                       fmt::format("{} flags; at most {} are read", flags.size(), kMaxFlags));
    }
    for (const auto& [flag, text] : flags) {
      if (const ConfigValue* existing = args.find(flag); existing != nullptr) {
        warnings.push_back(fmt::format("{}:{}: --{} in {} is overridden by the file's {}: {}",
                                       line.where.file, line.where.line, flag, key, flag,
                                       existing->to_text()));
        continue;
      }
      args.set(flag, resolve_plain_scalar(text, line.where));
      if (expanded != nullptr) expanded->push_back(flag);
    }
  }
}

std::optional<std::vector<std::int64_t>> int_list(const ArgReader& r, const std::string& key,
                                                  bool positive) {
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return std::nullopt;
  std::vector<std::int64_t> out;
  auto add = [&](std::int64_t n, std::size_t index) {
    if (positive && n <= 0) {
      r.fail(key, fmt::format("entry {} is {}: every value must be a positive integer", index, n));
    }
    out.push_back(n);
  };
  if (v->is_list()) {
    for (std::size_t i = 0; i < v->items.size(); ++i) add(r.as_int(key, v->items[i]), i);
    return out;
  }
  if (v->kind == ConfigValue::Kind::kInt) {
    add(r.as_int(key, *v), 0);
    return out;
  }
  std::string text = v->kind == ConfigValue::Kind::kString ? v->s : v->to_text();
  text.erase(std::remove_if(text.begin(), text.end(),
                            [](char c) { return c == '[' || c == ']' || c == ' ' || c == '"'; }),
             text.end());
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const ConfigValue typed = resolve_plain_scalar(item, v->where);
    if (item.empty() || !is_integer_literal(item)) {
      r.fail(key, fmt::format("expected a list of integers such as 512,256,128, got '{}'",
                              v->to_text()));
    }
    add(r.as_int(key, typed), out.size());
    start = comma + 1;
  }
  return out;
}

std::string profile_text(const FrameworkProfile& p, const std::string& key, JobDraft& d,
                         const std::string& as) {
  const RecsysProfileValue* v = p.recsys.find(key);
  if (v == nullptr) {
    throw InputError(
        {p.file, 0, 0}, "recsys." + key,
        fmt::format("the framework profile '{}' has no recsys value '{}'", p.name, key));
  }
  d.defaults.push_back({as, v->text, v->source, p.name});
  return v->text;
}

std::int64_t profile_integer(const FrameworkProfile& p, const std::string& key, JobDraft& d,
                             const std::string& as) {
  const std::string text = profile_text(p, key, d, as);
  long long n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0 || n > kMaxCount) {
    throw InputError({p.file, 0, 0}, "recsys." + key,
                     fmt::format("expected an integer in 0..{}, got '{}'", kMaxCount, text));
  }
  return n;
}

void read_sharding_pins(ArgReader& r, ModelSpec& model) {
  const std::string key = "embedding_sharding";
  const ConfigValue* v = r.get(key);
  if (v == nullptr) return;
  std::vector<EmbeddingTableSpec>& tables = model.recommendation.tables;
  auto parse = [&](const ConfigValue& item, const std::string& what) {
    const std::string text = item.kind == ConfigValue::Kind::kString ? item.s : item.to_text();
    const std::optional<EmbeddingSharding> s = parse_embedding_sharding(text);
    if (!s) {
      throw InputError(item.where, what,
                       fmt::format("unknown sharding '{}' ({}; also tw, cw, rw, twrw, dp and "
                                   "Primus' table, column, row, data)",
                                   text, embedding_sharding_names()));
    }
    return *s;
  };
  if (v->is_scalar()) {
    const EmbeddingSharding s = parse(*v, key);
    for (EmbeddingTableSpec& t : tables) t.sharding = s;
  } else if (v->is_list()) {
    if (v->items.size() != tables.size()) {
      r.fail(key, fmt::format("{} shardings for {} tables", v->items.size(), tables.size()));
    }
    for (std::size_t i = 0; i < tables.size(); ++i) tables[i].sharding = parse(v->items[i], key);
  } else {
    for (const auto& [name, item] : v->entries) {
      auto it = std::find_if(tables.begin(), tables.end(),
                             [&n = name](const EmbeddingTableSpec& t) { return t.name == n; });
      if (it == tables.end()) {
        throw InputError(item.where, key + "." + name,
                         fmt::format("no table '{}' (tables are named {} ... {})", name,
                                     tables.empty() ? "-" : tables.front().name,
                                     tables.empty() ? "-" : tables.back().name));
      }
      it->sharding = parse(item, key + "." + name);
    }
  }
}

KeySchema TorchrecAdapter::key_schema(const std::string& data_dir) const {
  return load_key_schema(
      (std::filesystem::path(data_dir) / "frameworks" / "keys" / "torchrec_dlrm.txt").string());
}

JobDraft TorchrecAdapter::normalize(AdapterInput& in) const {
  JobDraft d;
  d.source = in.source;
  d.profile = in.profile;
  d.defaults = in.defaults;
  d.warnings = in.warnings;
  std::vector<std::string> expanded;
  normalize_torchrec_args(in.args, d.warnings, &expanded);
  std::vector<std::string> keys = expanded;
  for (const std::string& k : in.user_keys) keys.push_back(canonical_key(k));
  for (std::string& w :
       unknown_key_warnings(in.args, keys, key_schema(in.data_dir), in.strict_keys)) {
    d.warnings.push_back(std::move(w));
  }
  ArgReader r(in.args, d.defaults);
  const bool v4 = uses_dlrm_v4_keys(in.args);
  name_fields(r, d, v4);
  d.model.family = ModelFamily::kRecommendation;
  d.model.name = in.model_name == "(inline)" ? (v4 ? "dlrm-v4" : "dlrm") : in.model_name;
  if (v4) {
    read_dlrm_v4_args(r, in.profile, d);
  } else {
    read_dlrm_main_args(r, in.profile, d);
  }
  read_sharding_pins(r, d.model);
  for (const char* key : {"tensor_model_parallel_size", "pipeline_model_parallel_size",
                          "context_parallel_size", "expert_model_parallel_size"}) {
    if (!r.has(key)) continue;
    std::optional<int>& field = key[0] == 't'   ? d.tp
                                : key[0] == 'p' ? d.pp
                                : key[0] == 'c' ? d.cp
                                                : d.ep;
    field = static_cast<int>(r.as_int(key, *r.get(key)));
  }
  if (r.has("planner_hbm_cap_gib")) {
    d.recsys.planner_hbm_cap_bytes =
        r.float_or("planner_hbm_cap_gib", 0.0, "") * 1024.0 * 1024.0 * 1024.0;
  }
  if (r.has("planner_reservation")) {
    d.recsys.planner_reservation = r.float_or("planner_reservation", 0.0, "");
    if (*d.recsys.planner_reservation < 0.0 || *d.recsys.planner_reservation >= 1.0) {
      r.fail("planner_reservation", "must be a fraction in [0, 1)");
    }
  }
  d.seq_length = 1;
  d.set_origin(DraftField::kSeqLength, "seq_length");
  return d;
}

}  // namespace projector::frontend_detail
