// Negation-aware readers of free-text fields (phrases.h). Each reader has a table of phrasings; a
// phrase counts where the text affirms it, never where a negation governs it.
#include "validate/phrases.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "projector/util/text.h"

namespace projector::validate_detail {
namespace {

// Clause punctuation: a negation never reaches across it, a phrase never spans it.
constexpr const char* kBoundary = "|";

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// "q/k/v_proj" -> q_proj k_proj v_proj; "query/key/value_proj" -> query_proj key_proj value_proj;
// a group without a shared suffix ("dp/tp") -> its parts.
void push_slash_group(const std::string& group, std::vector<std::string>& out) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t slash = group.find('/'); slash != std::string::npos;
       slash = group.find('/', start)) {
    parts.push_back(group.substr(start, slash - start));
    start = slash + 1;
  }
  parts.push_back(group.substr(start));
  const std::string& last = parts.back();
  const std::size_t us = last.rfind('_');
  const std::string suffix = us == std::string::npos ? "" : last.substr(us);
  for (std::string& p : parts) {
    if (p.empty()) continue;
    if (!suffix.empty() && p.find('_') == std::string::npos) p += suffix;
    out.push_back(p);
  }
}

bool is_negator(const std::string& w) {
  static const char* kBefore[] = {"no", "not", "non", "without", "never", "nor", "disable"};
  return std::any_of(std::begin(kBefore), std::end(kBefore), [&](const char* n) { return w == n; });
}

bool is_post_negator(const std::string& w) {
  return w == "off" || w == "disabled" || w == "false";
}

// One word of a phrase: "recomput*" matches every word starting with "recomput", "*_proj" every
// word ending with "_proj".
bool word_matches(const std::string& pattern, const std::string& word) {
  if (pattern.size() > 1 && pattern.front() == '*') {
    return word.ends_with(std::string_view(pattern).substr(1));
  }
  if (!pattern.empty() && pattern.back() == '*') {
    return word.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  }
  return pattern == word;
}

// Start positions of `phrase` in `words`.
std::vector<std::size_t> occurrences(const std::vector<std::string>& words,
                                     const std::string& phrase) {
  std::vector<std::string> pat;
  std::string cur;
  for (char c : to_lower(phrase) + " ") {
    if (c == ' ') {
      if (!cur.empty()) pat.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  std::vector<std::size_t> out;
  if (pat.empty() || pat.size() > words.size()) return out;
  for (std::size_t i = 0; i + pat.size() <= words.size(); ++i) {
    bool all = true;
    for (std::size_t k = 0; k < pat.size() && all; ++k) all = word_matches(pat[k], words[i + k]);
    if (all) out.push_back(i);
  }
  return out;
}

std::size_t phrase_length(const std::string& phrase) {
  std::size_t n = 0;
  bool in_word = false;
  for (char c : phrase) {
    if (c != ' ' && !in_word) ++n;
    in_word = c != ' ';
  }
  return n;
}

// A negation two words before (within the clause) or one word after the phrase at `i`.
bool negated_at(const std::vector<std::string>& w, std::size_t i, std::size_t len) {
  for (std::size_t back = 1; back <= 2 && back <= i; ++back) {
    if (w[i - back] == kBoundary) break;
    if (is_negator(w[i - back])) return true;
  }
  return i + len < w.size() && is_post_negator(w[i + len]);
}

bool affirms_any(const std::vector<std::string>& w, std::initializer_list<const char*> phrases) {
  return std::any_of(phrases.begin(), phrases.end(), [&](const char* p) { return affirms(w, p); });
}

bool negates_any(const std::vector<std::string>& w, std::initializer_list<const char*> phrases) {
  return std::any_of(phrases.begin(), phrases.end(),
                     [&](const char* p) { return mentions(w, p) && !affirms(w, p); });
}

std::string first_word(const std::vector<std::string>& w) {
  for (const std::string& x : w) {
    if (x != kBoundary) return x;
  }
  return "";
}

}  // namespace

std::vector<std::string> phrase_words(const std::string& text) {
  std::string t = to_lower(text);
  for (std::size_t p = t.find("n't"); p != std::string::npos; p = t.find("n't", p)) {
    t.replace(p, 3, " not");
  }
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == ',' || c == ';' || c == '(' || c == ')' || c == '[' || c == ']') {
      if (out.empty() || out.back() != kBoundary) out.emplace_back(kBoundary);
      ++i;
      continue;
    }
    if (!word_char(c)) {
      ++i;
      continue;
    }
    std::size_t j = i;
    bool slash = false;
    while (j < t.size() &&
           (word_char(t[j]) || (t[j] == '/' && j + 1 < t.size() &&
                                std::isalpha(static_cast<unsigned char>(t[j + 1])) &&
                                std::isalpha(static_cast<unsigned char>(t[j - 1]))))) {
      slash = slash || t[j] == '/';
      ++j;
    }
    const std::string token = t.substr(i, j - i);
    if (slash) {
      push_slash_group(token, out);
    } else {
      out.push_back(token);
    }
    i = j;
  }
  return out;
}

bool mentions(const std::vector<std::string>& words, const std::string& phrase) {
  return !occurrences(words, phrase).empty();
}

bool affirms(const std::vector<std::string>& words, const std::string& phrase) {
  const std::size_t len = phrase_length(phrase);
  for (std::size_t i : occurrences(words, phrase)) {
    if (!negated_at(words, i, len)) return true;
  }
  return false;
}

FsdpReading read_fsdp_text(const std::string& text) {
  FsdpReading r;
  const std::vector<std::string> w = phrase_words(text);
  if (w.empty()) return r;
  const std::string first = first_word(w);
  // A leading "no" / "none" / "off" answers the field ("no (DDP + distributed optimizer)"); "no
  // reshard ..." is about resharding, not about FSDP.
  const bool leading_no = (is_negator(first) || first == "none" || first == "off" ||
                           first == "false" || first == "disabled") &&
                          !(w.size() > 1 && w[1].starts_with("reshard"));
  if (leading_no || (w.size() == 1 && (first == "0" || first == "1"))) {
    r.kind = FsdpKind::kNone;
    r.how = "read as no FSDP";
    return r;
  }
  // Megatron-FSDP's data_parallel_sharding_strategy: optim / optim_grads shard only the
  // optimizer state (and gradients): the distributed optimizer, not FSDP.
  if (affirms_any(w, {"optim_grads_params"})) {
    r.kind = FsdpKind::kZero3;
  } else if (affirms_any(w, {"optim_grads"})) {
    r.kind = FsdpKind::kNone;
    r.distributed_optimizer = r.grads_sharded = true;
    r.how = "read as Megatron-FSDP sharding the optimizer state and the gradients (ZeRO-2)";
  } else if (affirms_any(w, {"optim"})) {
    r.kind = FsdpKind::kNone;
    r.distributed_optimizer = true;
    r.how = "read as Megatron-FSDP sharding the optimizer state only (distributed optimizer)";
  } else if (affirms_any(w, {"no_shard"})) {
    r.kind = FsdpKind::kNone;
  } else if (affirms_any(w, {"megatron fsdp", "megatron_fsdp", "use_megatron_fsdp", "custom fsdp",
                             "zero 3", "zero3", "zero_3", "stage 3"})) {
    r.kind = FsdpKind::kZero3;  // Megatron's custom FSDP, optim_grads_params (its default)
  } else if (affirms_any(w, {"fsdp*", "fully_shard*", "fully sharded", "full_shard", "hsdp", "yes",
                             "true", "on", "enabled", "sharded", "sharding"})) {
    r.kind = FsdpKind::kFsdp2;
  } else if (affirms_any(w, {"ddp"}) || negates_any(w, {"fsdp*", "sharding", "sharded"})) {
    r.kind = FsdpKind::kNone;
  }
  if (r.kind && *r.kind != FsdpKind::kNone) {
    r.how = *r.kind == FsdpKind::kZero3 ? "read as Megatron-FSDP / ZeRO-3 (parameters, gradients "
                                          "and optimizer state sharded)"
                                        : "read as FSDP (parameters, gradients and optimizer "
                                          "state sharded)";
    static const std::regex kGroup(
        R"((?:shard(?:ing)?[ _-]*(?:group|degree|size)|dp[ _]shard(?:_degree)?)\D{0,4}(\d{1,6}))");
    static const std::regex kWay(R"((\d{1,6})[ -]way[ -]shard)");
    const std::string t = to_lower(text);
    std::smatch g;
    if (std::regex_search(t, g, kGroup) || std::regex_search(t, g, kWay)) {
      r.shard_group = std::stoi(g[1].str());
    }
  }
  if (mentions(w, "reshard*")) r.reshard_after_forward = affirms(w, "reshard*");
  return r;
}

RecomputeReading read_recompute_text(const std::string& text) {
  RecomputeReading r;
  const std::vector<std::string> w = phrase_words(text);
  const std::string first = first_word(w);
  if (w.empty() || first == "none" || first == "no" || first == "false" || first == "off" ||
      first == "disabled" || first == "without") {
    r.how = "read as no recomputation";
    return r;
  }
  // Megatron --recompute-modules and the words people use for them, longest first.
  static const std::pair<const char*, RecomputeModule> kModules[] = {
      {"mla_up_proj", RecomputeModule::kMlaUpProj},
      {"mla up projection*", RecomputeModule::kMlaUpProj},
      {"mla up proj*", RecomputeModule::kMlaUpProj},
      {"up projection*", RecomputeModule::kMlaUpProj},
      {"core_attn", RecomputeModule::kCoreAttn},
      {"core attention", RecomputeModule::kCoreAttn},
      {"attention core", RecomputeModule::kCoreAttn},
      {"moe_act", RecomputeModule::kMoeAct},
      {"moe activation*", RecomputeModule::kMoeAct},
      {"expert activation*", RecomputeModule::kMoeAct},
      {"shared_experts", RecomputeModule::kSharedExperts},
      {"shared expert*", RecomputeModule::kSharedExperts},
      {"layernorm*", RecomputeModule::kLayernorm},
      {"layer norm*", RecomputeModule::kLayernorm},
      {"rmsnorm*", RecomputeModule::kLayernorm},
      {"rms norm*", RecomputeModule::kLayernorm},
      {"norms", RecomputeModule::kLayernorm},
      {"mlp", RecomputeModule::kMlp},
      {"moe", RecomputeModule::kMoe}};
  std::vector<bool> used(w.size(), false);
  for (const auto& [phrase, module] : kModules) {
    const std::size_t len = phrase_length(phrase);
    for (std::size_t i : occurrences(w, phrase)) {
      if (std::any_of(used.begin() + i, used.begin() + i + len, [](bool u) { return u; })) continue;
      std::fill(used.begin() + i, used.begin() + i + len, true);
      if (negated_at(w, i, len)) continue;
      if (std::find(r.modules.begin(), r.modules.end(), module) == r.modules.end()) {
        r.modules.push_back(module);
      }
    }
  }
  const bool verb = affirms_any(w, {"recomput*", "rematerial*", "remat", "rematted", "checkpointed",
                                    "activation checkpoint*"});
  if (affirms(w, "selective")) {
    r.granularity = RecomputeGranularity::kSelective;
    r.how = "read as selective recomputation";
  } else if (affirms_any(w, {"full", "checkpoint_activations", "checkpoint activations",
                             "activation checkpoint*", "use_checkpoint", "checkpoint"})) {
    r.granularity = RecomputeGranularity::kFull;
    r.modules.clear();
    r.how = "read as full recomputation";
  } else if (verb && (!r.modules.empty() || affirms_any(w, {"*_proj", "proj*", "attention*"}))) {
    // Named tensors or modules recomputed ("RMSNorm + MLA up-projection recomputed", "q/k/v_proj
    // rematerialized"): selective recomputation, never "saved".
    r.granularity = RecomputeGranularity::kSelective;
    r.how = "named parts recomputed: read as selective recomputation";
  } else if (verb) {
    r.granularity = RecomputeGranularity::kFull;
    r.how = "recomputation without a named part: read as full recomputation";
  } else if (negates_any(w, {"recomput*", "rematerial*", "remat", "checkpoint*"})) {
    r.how = "recomputation negated: read as none";
  } else {
    r.modules.clear();
    r.recognised = false;
  }
  return r;
}

std::optional<std::string> stated_placement(const std::string& text, const std::string& key) {
  // A key and the shorter names people write for it.
  std::vector<std::string> names = {key};
  if (key == "query_proj") names.push_back("q_proj");
  if (key == "key_proj") names.push_back("k_proj");
  if (key == "value_proj") names.push_back("v_proj");
  std::string t = to_lower(text);
  for (const char* group : {"query/key/value_proj", "query/key/value"}) {
    if (const std::size_t p = t.find(group); p != std::string::npos) {
      t.replace(p, std::string(group).size(), "query_proj key_proj value_proj");
    }
  }
  const std::vector<std::string> w = phrase_words(t);
  // Clauses end at punctuation; a clause without a verb shares the next clause's
  // ("decoder_layer_input, out_proj, query/key/value_proj offloaded").
  bool pending = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= w.size(); ++i) {
    if (i < w.size() && w[i] != kBoundary) continue;
    const std::vector<std::string> clause(w.begin() + start, w.begin() + i);
    start = i + 1;
    pending = pending || std::any_of(names.begin(), names.end(),
                                     [&](const std::string& n) { return mentions(clause, n); });
    if (!pending) continue;
    if (mentions(clause, "offload*")) return affirms(clause, "offload*") ? "offload" : "device";
    for (const char* v : {"rematerial*", "recomput*", "remat", "rematted"}) {
      if (mentions(clause, v)) return affirms(clause, v) ? "remat" : "device";
    }
    for (const char* v : {"saved", "kept", "keep*", "save*", "device", "hbm"}) {
      if (mentions(clause, v)) return affirms(clause, v) ? "device" : "remat";
    }
  }
  if (!pending) return std::nullopt;
  // Named without a verb: a custom policy names what it keeps (offloaded when the text offloads).
  return mentions(w, "offload*") ? "offload" : "device";
}

std::optional<bool> read_fused_attention(const std::string& text) {
  const std::vector<std::string> w = phrase_words(text);
  const std::string first = first_word(w);
  if (first == "none" || first == "no" || first == "false" || first == "off" ||
      affirms_any(w, {"unfused", "eager", "math", "naive", "vanilla"}) ||
      negates_any(w, {"flash*", "fused", "fmha"})) {
    return false;
  }
  if (affirms_any(w, {"flash*", "fused", "fmha", "sdpa", "cudnn*", "splash*", "fa2", "fa3", "ck",
                      "aiter", "flex attention", "flexattention", "xformers", "mem_efficient",
                      "memory efficient", "dot_product_attention", "yes", "true", "on"})) {
    return true;
  }
  return std::nullopt;
}

std::string read_dispatcher_kind(const std::string& text) {
  const std::vector<std::string> w = phrase_words(text);
  if (affirms_any(w, {"flex", "deepep", "hybridep", "moe_flex_dispatcher*"})) return "flex";
  if (affirms_any(w, {"allgather", "all gather"})) return "allgather";
  if (affirms_any(w, {"alltoall", "all to all", "a2a"})) return "alltoall";
  return "";
}

bool states_async_tp(const std::string& text) {
  const std::vector<std::string> w = phrase_words(text);
  return affirms_any(w, {"async tp", "async_tp", "asynctp", "async tensor parallel*",
                         "enable_async_tensor_parallel", "tp comm overlap", "tp_comm_overlap"});
}

}  // namespace projector::validate_detail
