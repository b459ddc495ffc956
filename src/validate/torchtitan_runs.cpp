// Published torchtitan runs, read through the torchtitan back-end adapter: the entry (model block,
// training block, free text) is written as the JobConfig namespace a torchtitan job TOML would
// have (model.name / flavor + architecture keys, training, parallelism, activation_checkpoint,
// compile, quantize) and handed to the same adapter that reads job files, so a run gets exactly
// torchtitan's semantics and defaults. Every reading of free text is listed as an assumption.
#include <fmt/format.h>

#include <regex>

#include "projector/frontend/adapter.h"
#include "projector/frontend/torchtitan.h"
#include "projector/job/spec.h"
#include "projector/util/text.h"
#include "validate/mapper.h"

namespace projector::validate_detail {
namespace {

struct Namespace {
  ConfigValue root = ConfigValue::make_map();
  SourceLocation at;

  void put(const std::string& dotted, ConfigValue v) {
    v.where = at;
    ConfigValue* node = &root;
    std::size_t start = 0;
    for (std::size_t dot = dotted.find('.'); dot != std::string::npos;
         dot = dotted.find('.', start)) {
      const std::string part = dotted.substr(start, dot - start);
      if (node->find(part) == nullptr) node->set(part, ConfigValue::make_map(at));
      node = node->find(part);
      start = dot + 1;
    }
    node->set(dotted.substr(start), std::move(v));
  }
  void put_int(const std::string& k, std::int64_t v) { put(k, ConfigValue::make_int(v)); }
  void put_text(const std::string& k, const std::string& v) { put(k, ConfigValue::make_string(v)); }
  void put_bool(const std::string& k, bool v) { put(k, ConfigValue::make_bool(v)); }
  void put_list(const std::string& k, const std::vector<std::string>& items) {
    ConfigValue l;
    l.kind = ConfigValue::Kind::kList;
    for (const std::string& s : items) l.items.push_back(ConfigValue::make_string(s, at));
    put(k, l);
  }
};

// torchtitan's model.name for the entry's family.
std::string model_name_of(const RunEntry& e) {
  const std::string f = to_lower(e.model.family + " " + e.model.name);
  if (has(f, "llama4") || has(f, "llama-4")) return "llama4";
  if (has(f, "llama3") || has(f, "llama-3")) return "llama3";
  if (has(f, "deepseek")) return "deepseek_v3";
  if (has(f, "qwen3") || has(f, "qwen-3")) return "qwen3";
  if (has(f, "gpt-oss") || has(f, "gpt_oss")) return "gpt_oss";
  return "";
}

bool map_model_keys(Mapper& m, Namespace& ns, const std::string& data_dir) {
  const RunEntry::Model& md = m.e_.model;
  const std::string name = model_name_of(m.e_);
  if (name.empty()) {
    m.fail("model.family '" + md.family + "' is not a torchtitan model");
    return false;
  }
  TorchtitanArchitecture arch;
  arch.hidden_size = md.hidden_size.value_or(0);
  arch.num_heads = md.num_attention_heads.value_or(0);
  arch.num_kv_heads = md.num_kv_heads.value_or(0);
  arch.num_experts = md.moe && md.moe->num_experts ? *md.moe->num_experts : 0;
  const std::optional<TorchtitanFlavorMatch> match = match_torchtitan_flavor(data_dir, name, arch);
  if (!match) {
    m.fail(fmt::format("no torchtitan {} flavor with hidden {}, {} heads, {} KV heads, {} experts",
                       name, arch.hidden_size, arch.num_heads, arch.num_kv_heads,
                       arch.num_experts));
    return false;
  }
  ns.put_text("model.name", name);
  ns.put_text("model.flavor", match->flavor);
  m.note(fmt::format("model: torchtitan {} flavor {} (hidden, heads, KV heads and experts match)",
                     name, match->flavor));
  if (md.num_layers && *md.num_layers != match->num_layers) {
    ns.put_int("model.n_layers", *md.num_layers);
    m.note(fmt::format("model.n_layers: {} instead of the flavor's {} (an architecture key)",
                       *md.num_layers, match->num_layers));
  }
  if (md.vocab_size && *md.vocab_size != match->vocab_size) {
    ns.put_int("model.vocab_size", *md.vocab_size);
    m.note(fmt::format("model.vocab_size: {} instead of the flavor's {}", *md.vocab_size,
                       match->vocab_size));
  }
  return true;
}

void map_parallel_keys(Mapper& m, Namespace& ns) {
  const RunEntry::Training& t = m.e_.training;
  std::optional<int> shard = t.fsdp_shard_degree;
  const std::string fsdp = to_lower(t.fsdp);
  if (!shard && !fsdp.empty() && std::all_of(fsdp.begin(), fsdp.end(), ::isdigit) &&
      fsdp.size() < 8) {
    shard = std::stoi(fsdp);
  }
  // A described FSDP ("FSDP2, sharding group 8, does not reshard"): its shard group and
  // resharding (phrases.h).
  const FsdpReading fr = read_fsdp_text(t.fsdp);
  if (!shard && fr.shard_group) {
    shard = fr.shard_group;
    m.note(
        fmt::format("training.fsdp: '{}' read as data_parallel_shard_degree {}", t.fsdp, *shard));
  }
  if (shard) {
    ns.put_int("parallelism.data_parallel_shard_degree", *shard);
  } else {
    m.note("parallelism.data_parallel_shard_degree: not stated, -1 (every remaining rank)");
  }
  if (fr.reshard_after_forward) {
    const char* v = *fr.reshard_after_forward ? "always" : "never";
    ns.put_text("parallelism.fsdp_reshard_after_forward", v);
    m.note(fmt::format("training.fsdp: '{}' read as fsdp_reshard_after_forward {}", t.fsdp, v));
  }
  const std::pair<const std::optional<int>*, const char*> sizes[] = {
      {&t.tp, "parallelism.tensor_parallel_degree"},
      {&t.pp, "parallelism.pipeline_parallel_degree"},
      {&t.cp, "parallelism.context_parallel_degree"},
      {&t.ep, "parallelism.expert_parallel_degree"},
      {&t.etp, "parallelism.expert_tensor_parallel_degree"}};
  for (const auto& [v, key] : sizes) {
    if (v->has_value()) ns.put_int(key, **v);
  }
  const std::string sched = to_lower(t.pipeline_schedule);
  if (t.pp.value_or(1) > 1 && !sched.empty()) {
    const char* name = has(sched, "dualpipe")    ? "DualPipeV"
                       : has(sched, "zbv")       ? "ZBVZeroBubble"
                       : has(sched, "interleav") ? "Interleaved1F1B"
                       : has(sched, "gpipe")     ? "GPipe"
                                                 : "1F1B";
    ns.put_text("parallelism.pipeline_parallel_schedule", name);
    m.note(fmt::format("parallelism.pipeline_parallel_schedule: '{}' read as {}",
                       t.pipeline_schedule, name));
  }
}

// training.recompute text -> activation_checkpoint.mode / selective_ac_option.
void map_checkpointing(Mapper& m, Namespace& ns) {
  const std::string t = to_lower(m.e_.training.recompute);
  if (t.empty()) {
    m.note("activation_checkpoint: not stated; torchtitan's default (selective every 2nd block)");
    return;
  }
  if (has(t, "none") || t == "no" || t == "false") {
    ns.put_text("activation_checkpoint.mode", "none");
  } else if (has(t, "full")) {
    ns.put_text("activation_checkpoint.mode", "full");
  } else if (has(t, "selective") || has(t, "sac")) {
    ns.put_text("activation_checkpoint.mode", "selective");
    std::smatch every;
    const bool per_op = has(t, "op") || has(t, "sac");
    if (!per_op && std::regex_search(t, every, std::regex("(\\d+)"))) {
      ns.put_text("activation_checkpoint.selective_ac_option", every[1].str());
    } else {
      ns.put_text("activation_checkpoint.selective_ac_option", "op");
    }
  } else {
    m.note("activation_checkpoint: '" + m.e_.training.recompute + "' not recognised; default");
    return;
  }
  m.note("activation_checkpoint: '" + m.e_.training.recompute + "' read as torchtitan's AC mode");
}

// The names listed after "except" in a precision text ("... all linears except output,
// router.gate, attention.wk, attention.wv; ...").
std::vector<std::string> excepted_modules(const std::string& text_lower) {
  std::vector<std::string> out;
  const std::size_t at = text_lower.find("except");
  if (at == std::string::npos) return out;
  const std::string rest = text_lower.substr(at + 6, text_lower.find_first_of(";(", at) - at - 6);
  const std::regex name("[a-z_]+(\\.[a-z_0-9]+)*");
  for (std::sregex_iterator it(rest.begin(), rest.end(), name), end; it != end; ++it) {
    const std::string n = it->str();
    if (n != "and") out.push_back(n);
  }
  return out;
}

void map_precision(Mapper& m, Namespace& ns) {
  const std::string p = to_lower(m.e_.training.precision);
  std::vector<std::string> converters;
  if (has(p, "mxfp8") || has(p, "mx ")) {
    const bool linears = has(p, "linear");
    const bool grouped = has(p, "grouped") || has(p, "expert");
    if (linears || !grouped) {
      converters.push_back("quantize.linear.mx");
      std::vector<std::string> filter = excepted_modules(p);
      if (filter.empty()) filter.push_back("output");
      ns.put_list("quantize.linear.mx.filter_fqns", filter);
    }
    if (grouped) {
      converters.push_back("quantize.grouped_mm.mx");
      ns.put_list("quantize.grouped_mm.mx.fqns", {"experts"});
    }
  } else if (has(p, "float8") || has(p, "fp8")) {
    converters.push_back("quantize.linear.float8");
    if (has(p, "rowwise")) ns.put_text("quantize.linear.float8.recipe_name", "rowwise");
    // The float8 converter kept the output layer in bf16 (torchtitan's train configs list it in
    // filter_fqns).
    ns.put_list("quantize.linear.float8.filter_fqns", {"output"});
  }
  if (!converters.empty()) {
    ns.put_list("model.converters", converters);
    m.note(fmt::format("precision: '{}' read as torchtitan converters [{}]",
                       m.e_.training.precision, fmt::join(converters, ", ")));
  }
}

// torchtitan's per-rank batch (training.local_batch_size). A run that states only a micro batch
// and a global batch: without PP the micro batch is the local batch (the global batch by gradient
// accumulation); with PP the local batch is the global batch over the stated DP, split into
// pipeline microbatches of the micro batch. Each derivation is recorded as an assumption.
bool map_local_batch(Mapper& m, Namespace& ns) {
  const RunEntry::Training& t = m.e_.training;
  if (t.local_batch_size) {
    ns.put_int("training.local_batch_size", *t.local_batch_size);
    return true;
  }
  if (!t.micro_batch_size || !t.global_batch_size) {
    m.fail(
        "training.local_batch_size not stated (torchtitan's per-rank batch), nor a micro and "
        "a global batch to derive it from");
    return false;
  }
  const int mbs = *t.micro_batch_size;
  if (t.pp.value_or(1) <= 1) {
    ns.put_int("training.local_batch_size", mbs);
    m.assume("training.local_batch_size", std::to_string(mbs),
             "not stated; the micro batch, the global batch by gradient accumulation");
    return true;
  }
  if (!t.dp || *t.dp < 1 || *t.global_batch_size % *t.dp != 0) {
    m.fail(
        "training.local_batch_size not stated, and with PP it needs a DP that divides the "
        "global batch");
    return false;
  }
  const int local = *t.global_batch_size / *t.dp;
  ns.put_int("training.local_batch_size", local);
  ns.put_int("parallelism.pipeline_parallel_microbatch_size", mbs);
  m.assume("training.local_batch_size", std::to_string(local),
           fmt::format("not stated; global batch {} over DP {}, in pipeline microbatches of the "
                       "micro batch {}",
                       *t.global_batch_size, *t.dp, mbs));
  return true;
}

}  // namespace

void map_torchtitan_run(Mapper& m, const std::string& data_dir, int seq) {
  const RunEntry& e = m.e_;
  Namespace ns;
  ns.at = {m.d_.source, e.line, 0};
  if (!map_model_keys(m, ns, data_dir)) return;
  m.out_.moe = e.model.moe.has_value() && e.model.moe->num_experts.value_or(0) > 0;
  if (!map_local_batch(m, ns)) return;
  if (seq > 0) ns.put_int("training.seq_len", seq);
  if (e.training.global_batch_size) {
    ns.put_int("training.global_batch_size", *e.training.global_batch_size);
  }
  map_parallel_keys(m, ns);
  map_checkpointing(m, ns);
  const std::string features = to_lower(e.framework + " " + e.training.features);
  const bool compile = has(features, "compile");
  ns.put_bool("compile.enable", compile);
  if (compile) {
    m.note("compile: torch.compile named by the entry");
    // torchtitan compiled only the transformer blocks until 2025-04-02 (commit bbb1b616e, which
    // also compiles the loss; train.py at 9dec370 keeps the loss compile commented out).
    std::smatch date;
    if (std::regex_search(e.framework, date, std::regex(R"((20\d\d)-(\d\d)-(\d\d))")) &&
        date.str(0) < "2025-04-02") {
      ns.put_list("compile.components", {"model"});
      m.note("compile.components: [model] (the framework version of " + date.str(0) +
             " compiled the blocks, not the loss)");
    }
  }
  if (e.training.tp.value_or(1) > 1 &&
      states_async_tp(e.training.features + "; " + e.training.overlap)) {
    // torchtitan runs async TP only on compiled blocks.
    if (compile) {
      ns.put_bool("parallelism.enable_async_tensor_parallel", true);
      m.note("parallelism.enable_async_tensor_parallel: async TP named by the entry");
    } else {
      m.note("async TP named without torch.compile, which torchtitan requires: not applied");
    }
  }
  map_precision(m, ns);

  const BackendAdapter* adapter = builtin_adapters().find("torchtitan");
  AdapterInput in;
  in.args = ns.root;
  in.source = m.d_.source;
  in.model_name = e.model.name;
  in.profile = m.d_.profile;
  in.data_dir = data_dir;
  try {
    JobDraft d = adapter->normalize(in);
    for (const AppliedDefault& a : d.defaults) {
      m.out_.assumptions.push_back(fmt::format("{} = {} ({}{})", a.key, a.value,
                                               a.source.empty() ? "" : a.source + ": ", a.reason));
    }
    for (const std::string& w : d.warnings) m.note("torchtitan adapter: " + w);
    d.source = m.d_.source;
    d.parallel.allow_tp_beyond_node = true;  // the run ran
    m.d_ = std::move(d);
  } catch (const InputError& ex) {
    m.fail(std::string("torchtitan adapter: ") + ex.what());
  }
}

}  // namespace projector::validate_detail
