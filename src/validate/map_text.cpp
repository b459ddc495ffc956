// Free-text readings of a published run: activation, recompute, dispatcher, precision, schedule,
// interconnect bandwidth, FLOP convention. Each reading is listed as an assumption; whatever the
// text leaves open is left to the framework profile (data/frameworks/).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <regex>

#include "projector/job/spec.h"
#include "projector/util/text.h"
#include "validate/mapper.h"

namespace projector::validate_detail {

bool has(const std::string& haystack_lower, const char* needle) {
  return haystack_lower.find(needle) != std::string::npos;
}

void Mapper::retract(const std::string& key) {
  const std::string prefix = key + " = ";
  std::erase_if(out_.assumptions, [&](const std::string& a) { return a.starts_with(prefix); });
  std::erase_if(out_.job.defaults, [&](const AppliedDefault& d) { return d.key == key; });
  std::erase_if(d_.defaults, [&](const AppliedDefault& d) { return d.key == key; });
}

ActivationKind read_activation(Mapper& m, const std::string& text, bool& gated) {
  const std::string t = to_lower(text);
  gated = false;
  if (t.empty()) {
    m.assume("model.activation", "gelu", "not stated; the GPT default of Megatron-family recipes");
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

// Phrase reading (phrases.h read_recompute_text); the Megatron details (block count) here.
void read_recompute(Mapper& m, const std::string& text) {
  RecomputeSpec& r = m.d_.runtime.recompute;
  r = RecomputeSpec{};
  if (text.empty()) {
    m.assume("training.recompute", "none",
             "not stated; no recomputation is every framework's default");
    return;
  }
  const RecomputeReading reading = read_recompute_text(text);
  if (!reading.recognised) {
    m.assume("training.recompute", "none", "unrecognised text '" + text + "'");
    return;
  }
  r.granularity = reading.granularity;
  if (r.granularity == RecomputeGranularity::kSelective) {
    for (RecomputeModule mod : reading.modules) r.modules.add(mod);
    if (!r.modules.empty()) {
      m.note(fmt::format("training.recompute: '{}' {}: {}", text, reading.how,
                         fmt::join(r.modules.names(), ", ")));
    } else {  // the framework profile's selective set
      m.note(fmt::format("training.recompute: '{}' {} (the framework's selective set)", text,
                         reading.how));
    }
    return;
  }
  if (r.granularity != RecomputeGranularity::kFull) {
    m.note(fmt::format("training.recompute: '{}' {}", text, reading.how));
    return;
  }
  const std::string t = to_lower(text);
  r.method = has(t, "block") ? RecomputeMethod::kBlock : RecomputeMethod::kUniform;
  r.num_layers = 1;
  if (r.method == RecomputeMethod::kBlock) {
    // "recompute_num_layers 5" or "first 5 of 48 layers": that many layers per stage.
    static const std::regex kCount(R"((?:recompute_num_layers|first)\D{0,3}(\d{1,5}))");
    std::smatch c;
    if (std::regex_search(t, c, kCount)) {
      r.num_layers = std::stoi(c[1].str());
      m.note(
          fmt::format("training.recompute: block recompute of {} layers per stage", r.num_layers));
    } else {
      r.num_layers = 16384;  // block without a count: every layer of the stage
      m.note("training.recompute: block without a layer count read as all layers");
    }
  }
}

// The SMs (CUs) a deduplicating dispatcher's kernels run on: a count the text states
// ("moe_hybridep_num_sms=32", "turbo_deepep_num_cu 80", "24 SMs"), else the profile's default
// for the kernel, as the Megatron adapter reads an unstated moe_deepep_num_sms.
void read_dispatcher_units(Mapper& m, const std::string& text) {
  static const std::regex kStated(
      R"((?:num[_-](?:sms|cu)\D{0,3}(\d{1,4}))|(?:(\d{1,4})\s*(?:sms|cus)\b))");
  RuntimeSpec& rt = m.d_.runtime;
  std::smatch s;
  const std::string t = to_lower(text);
  if (std::regex_search(t, s, kStated)) {
    rt.moe_comm_compute_units = std::stoi(s[1].matched ? s[1].str() : s[2].str());
    m.note(fmt::format("training.moe_dispatcher: its kernels on {} SMs / CUs, as stated",
                       rt.moe_comm_compute_units));
    return;
  }
  const bool hybrid = rt.moe_dispatch_kernel == MoeDispatchKernel::kHybridEp;
  const ProfileDefault<int>& def =
      hybrid ? m.d_.profile.hybridep_num_sms : m.d_.profile.deepep_num_sms;
  if (!def.value) return;  // the framework names no budget: no units charged
  rt.moe_comm_compute_units = *def.value;
  m.assume(hybrid ? "training.moe_hybridep_num_sms" : "training.moe_deepep_num_sms",
           std::to_string(*def.value),
           fmt::format("not stated; {}: {}", m.d_.profile.name, def.source));
}

// The token dispatcher decides how many copies of a token cross the expert-parallel group.
void read_dispatcher(Mapper& m, const std::string& text) {
  if (text.empty()) {
    m.assume("training.moe_dispatcher", "alltoall",
             "not stated; the all-to-all dispatcher Megatron recipes use with expert parallelism "
             "(one copy per chosen expert)");
    return;
  }
  // Only what the text affirms: "alltoall (no flex backend)" is the all-to-all dispatcher.
  const std::string kind = read_dispatcher_kind(text);
  if (kind == "flex") {
    m.d_.runtime.moe_dedup_dispatch = true;
    m.d_.runtime.moe_dispatcher = MoeDispatcher::kFlex;
    m.d_.runtime.moe_dispatch_kernel = affirms(phrase_words(text), "hybridep")
                                           ? MoeDispatchKernel::kHybridEp
                                           : MoeDispatchKernel::kDeepEp;
    m.note("training.moe_dispatcher: '" + text +
           "' read as a deduplicating dispatcher (one copy per destination node / GPU)");
    read_dispatcher_units(m, text);
    return;
  }
  if (kind == "allgather") {
    m.d_.runtime.moe_dispatcher = MoeDispatcher::kAllGather;
    return;
  }
  if (kind.empty()) {
    m.assume("training.moe_dispatcher", "alltoall", "unrecognised text '" + text + "'");
  }
}

void read_token_balance(Mapper& m, const std::string& text, const std::string& stated) {
  const std::string t = to_lower(text);
  if (has(t, "forc") && has(t, "balanc")) {
    m.d_.runtime.moe_routing = MoeRouting::kForced;
    m.note("training.moe_token_balance: '" + text + "' read as forced balanced routing");
  }
  // NeMo AutoModel's benchmark recipes replace the router by FakeBalancedGate, which gives token
  // t the experts [k t, k t + k) mod E (AM1 layers.py): balanced, and each token's copies on the
  // fewest neighbouring experts, so a deduplicating dispatcher sends it to one or two GPUs.
  const std::string s = to_lower(stated);
  if (has(s, "fake_balanced_gate") || has(s, "fake balanced gate")) {
    m.d_.runtime.moe_routing = MoeRouting::kForced;
    m.d_.runtime.moe_placement = MoePlacement::kConsecutive;
    m.note(
        "routing: the entry states AutoModel's fake balanced gate (fake_balanced_gate), read as "
        "balanced routing of token t to the consecutive experts [k t, k t + k) mod E (AM1 "
        "nemo_automodel/components/moe/layers.py FakeBalancedGate)");
  }
}

void read_precision(Mapper& m, const std::string& text) {
  PrecisionSpec& p = m.d_.runtime.precision;
  const std::string t = to_lower(text);
  if (t.empty()) {
    p.params_dtype = Dtype::kBf16;
    m.assume("training.precision", "bf16", "not stated; 16-bit mixed precision assumed");
    return;
  }
  const bool bf16 = has(t, "bf16") || has(t, "bfloat16");
  const bool fp16 = has(t, "fp16") || (has(t, "float16") && !has(t, "bfloat16"));
  p.params_dtype = fp16 && !bf16 ? Dtype::kFp16 : Dtype::kBf16;
  if (bf16 == fp16 && !has(t, "fp8") && !has(t, "float8")) {
    m.assume("training.precision", "bf16",
             "'" + text + "' does not name one 16-bit type (bf16 and fp16 peaks are equal)");
  }
  JobDraft& d = m.d_;
  if (has(t, "mxfp8")) {
    d.fp8 = true;
    d.fp8_recipe = Fp8Recipe::kMxfp8;
  } else if (has(t, "fp8") || has(t, "float8")) {
    d.fp8 = true;
    if (has(t, "tensorwise")) {
      d.fp8_recipe = Fp8Recipe::kTensorwise;
    } else if (has(t, "blockwise")) {
      d.fp8_recipe = Fp8Recipe::kBlockwise;
    } else if (has(t, "delayed") || has(t, "hybrid") || has(t, "transformer engine")) {
      d.fp8_recipe = Fp8Recipe::kDelayed;
    }  // else: the framework profile's recipe
  }
  // FP8 weights when the entry names Megatron's flag; else the framework profile's recipes.
  if (d.fp8 && (has(t, "fp8_param_gather") || has(t, "fp8-param-gather"))) d.fp8_param = true;
  // Transformer Engine's FP8 attention (fp8_dpa); the builder checks the recipe runs it.
  if (d.fp8 && (has(t, "dot-product attention") || has(t, "fp8_dot_product_attention") ||
                has(t, "fp8 attention"))) {
    d.runtime.precision.fp8_attention = true;
  }
  if (has(t, "assumed")) m.note("training.precision: the source entry marks it as assumed");
}

// A named schedule; an unnamed or unrecognised one is left to the job builder's `auto` rule.
void read_schedule(Mapper& m, const std::string& text) {
  const std::string t = to_lower(text);
  ScheduleKind& s = m.d_.schedule;
  // A schedule name (the shared vocabulary); "1f1b" still follows vpp below.
  const std::optional<ScheduleKind> named = parse_schedule_kind(t);
  if (named && *named != ScheduleKind::kAuto && *named != ScheduleKind::k1F1B) {
    s = *named;
  } else if (has(t, "dualpipe")) {
    s = ScheduleKind::kDualPipeV;
  } else if (has(t, "zbv") || has(t, "zb-v") || has(t, "zero bubble v")) {
    s = ScheduleKind::kZbvFormatted;
  } else if (has(t, "zero bubble") || has(t, "zero-bubble") || has(t, "zb")) {
    s = ScheduleKind::kZeroBubble;
  } else if (has(t, "interleav") && !has(t, "non-interleav")) {
    s = ScheduleKind::kInterleaved;
  } else if (has(t, "1f1b")) {
    s = m.d_.vpp.value_or(1) > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  } else if (!t.empty() && t != "none") {
    m.note("training.pipeline_schedule: unrecognised text '" + text + "'; the builder's rule");
  }
}

// Link technologies whose per-port rate is a fixed fact (Gb/s per port).
constexpr std::pair<const char*, double> kLinkGbps[] = {
    {"omni-path", 100.0}, {"opa", 100.0}, {"edr", 100.0}, {"hdr", 200.0}, {"ndr", 400.0}};

// Gb/s per unit as written: bits (Gb/s, Gbit/s, Gbps) or bytes (GB/s, GBps, GByte/s).
double gbps_per_unit(const std::string& unit) {
  if (unit == "GB/s" || unit == "GBps" || unit == "GByte/s") return 8.0;
  return 1.0;
}

// A number the patterns below matched (digits, maybe a fraction): never throws; a figure too large
// to be a link rate reads as 0 (nothing stated).
double figure(const std::string& digits) {
  const double v = std::strtod(digits.c_str(), nullptr);
  return std::isfinite(v) && v <= 1e9 ? v : 0.0;
}

double stated_node_gbps(const std::string& text, int gpus_per_node, std::string& how) {
  // Units must be rates: "8x80GB per node" is memory, not a link. Case matters: B is bytes.
  static const std::regex kTimes(
      R"((\d+)\s*[xX]\s*(\d+(?:\.\d+)?)\s*(Gb/s|Gbit/s|Gbps|GB/s|GBps))");
  static const std::regex kPer(
      R"((\d+(?:\.\d+)?)\s*(Gb/s|Gbit/s|Gbps|GB/s|GBps)\s*(?:per|/)\s*(GPU|gpu|node|Node|host))");
  static const std::regex kTech(R"((\d+)\s*x\s*([a-z-]+))");
  static const std::regex kSimCfg(R"(inter_node_bandwidth\s*[:=]?\s*(\d+))");
  const std::string t = to_lower(text);
  std::smatch mt;
  if (std::regex_search(text, mt, kTimes) && has(t, "per node")) {
    how = mt.str(0) + " per node";
    return figure(mt.str(1)) * figure(mt.str(2)) * gbps_per_unit(mt.str(3));
  }
  if (std::regex_search(text, mt, kPer)) {
    how = mt.str(0);
    const double v = figure(mt.str(1)) * gbps_per_unit(mt.str(2));
    return to_lower(mt.str(3)) == "gpu" ? v * gpus_per_node : v;
  }
  for (auto it = std::sregex_iterator(t.begin(), t.end(), kTech); it != std::sregex_iterator();
       ++it) {
    for (const auto& [tech, gbps] : kLinkGbps) {
      if ((*it).str(2) == tech && has(t, "per node")) {
        how = (*it).str(0) + fmt::format(" links per node ({:.0f} Gb/s each)", gbps);
        return figure((*it).str(1)) * gbps;
      }
    }
  }
  if (std::regex_search(t, mt, kSimCfg) && (has(t, "gbps per node") || has(t, "gb/s per node"))) {
    how = mt.str(0) + " read as Gb/s per node, the unit the description gives";
    return figure(mt.str(1));
  }
  return 0.0;
}

// The catalogue network assumes the accelerator's usual fabric; a description that states the
// scale-out bandwidth replaces it (the pod and cluster bandwidths scale by the same ratio).
void read_interconnect(Mapper& m, const std::string& text, ClusterSpec& cl) {
  if (text.empty() || cl.nodes <= 1) return;
  std::string how;
  const double node_gbps = stated_node_gbps(text, cl.gpus_per_node, how);
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

FlopConvention read_convention(Mapper& m, const std::string& text) {
  FlopConvention c;
  const std::string t = to_lower(text);
  c.options.causal_attention_half = false;
  if (t.empty()) {
    const FrameworkProfile& p = m.d_.profile;
    c.hardware = p.flop_counting.value.value_or(FlopCounting::kModel) == FlopCounting::kHardware;
    c.description = c.hardware ? "hardware FLOPs incl. recompute (framework default of the era)"
                               : "model FLOPs, full attention (framework default)";
    m.assume("measured.flop_counting", c.hardware ? "hardware" : "model",
             fmt::format("not stated; {}: {}", p.name, p.flop_counting.source));
    return c;
  }
  c.hardware = has(t, "hardware") || has(t, "incl. recompute") || has(t, "4*2") ||
               has(t, "including recompute");
  if (has(t, "no recompute")) c.hardware = false;
  // "causal-halved" attention counting, and FLOPs "incl. causal attention" (the attention of the
  // causal mask: its unmasked half, as Megatron-LM has counted it since 8873b55d6a, 2025-03-06,
  // MG1 training.py num_floating_point_operations, and MaxText since July 2025); "non-causal" /
  // "full" attention is the whole s x s.
  c.options.causal_attention_half =
      (has(t, "causal-halved") || has(t, "causal halved") || has(t, "half") ||
       has(t, "causal attention") || has(t, "megatron-lm model flops") ||
       has(t, "num_floating_point_operations") || has(t, "primus/megatron tflop")) &&
      !has(t, "non-causal") && !has(t, "full (non-causal)");
  if (c.options.causal_attention_half && !has(t, "causal")) {
    m.note(
        "measured.flop_counting: Megatron-LM's num_floating_point_operations counts the causal "
        "half of the attention since 8873b55d6a (2025-03-06, MG1 training.py), as the run's "
        "code does");
  }
  // A count the tool cannot redo from the job (e.g. a hybrid model's layers counted as dense
  // transformer layers, Megatron's transformer_flops when no hybrid pattern is set): the entry
  // says so, and carries the step time it derived from the TFLOP/s instead.
  c.comparable = !has(t, "not re-expressible");
  c.description = text;
  return c;
}

}  // namespace projector::validate_detail
