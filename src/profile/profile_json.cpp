// The measured profile as versioned JSON and back.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "projector/profile/profile.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"

namespace projector::profile {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kKind = "measured_profile";

Json group_json(const CommGroup& g) {
  return {{"size", g.size},
          {"ranks_per_node", g.ranks_per_node},
          {"nodes", g.nodes},
          {"pods", g.pods},
          {"gpus_per_node", g.gpus_per_node}};
}

Json layers_json(const LayerStructure& l) {
  Json j = {{"found", l.found},       {"method", l.method},
            {"layers", l.repeats},    {"kernels_per_layer", l.period_kernels},
            {"coverage", l.coverage}, {"layer_ms", l.layer_ms}};
  Json c = Json::object();
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const double v = l.layer_class_ms[static_cast<std::size_t>(k)];
    if (v > 0.0) c[std::string(to_string(static_cast<KernelClass>(k)))] = v;
  }
  j["classes_ms"] = c;
  return j;
}

Json bench_json(const BenchLayout& b) {
  return {{"config", b.config},
          {"accelerator", b.accelerator},
          {"tp", b.tp},
          {"pp", b.pp},
          {"vpp", b.vpp},
          {"cp", b.cp},
          {"ep", b.ep},
          {"etp", b.etp},
          {"dp", b.dp},
          {"nodes", b.nodes},
          {"gpus_per_node", b.gpus_per_node},
          {"world", b.world},
          {"mbs", b.mbs},
          {"seq", b.seq},
          {"gbs", b.gbs},
          {"num_layers", b.num_layers},
          {"hidden", b.hidden},
          {"num_experts", b.num_experts},
          {"pp_rank", b.pp_rank},
          {"layers_on_rank", b.layers_on_rank},
          {"microbatches", b.microbatches},
          {"reductions", b.reductions}};
}

Json model_json(const ModelComparison& m) {
  Json j;
  j["bench"] = bench_json(m.bench);
  j["microbatches_in_step"] = m.microbatches_in_step;
  j["has_embedding"] = m.has_embedding;
  j["has_output"] = m.has_output;
  Json cls = Json::array();
  for (int c = 0; c < kNumCostClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (m.measured_ms[i] <= 0.0 && m.model_ms[i] <= 0.0) continue;
    cls.push_back({{"class", std::string(to_string(static_cast<CostClass>(c)))},
                   {"measured_ms", m.measured_ms[i]},
                   {"measured_kernel_ms", m.measured_kernel_ms[i]},
                   {"model_ms", m.model_ms[i]},
                   {"ratio", m.ratio[i]}});
  }
  j["classes"] = cls;
  Json coll = Json::array();
  for (const CollectiveRatio& c : m.collectives) {
    coll.push_back({{"kind", std::string(to_string(c.kind))},
                    {"group", group_json(c.group)},
                    {"measured_ms", c.measured_ms},
                    {"model_ms", c.model_ms},
                    {"ratio", c.ratio}});
  }
  j["collectives"] = coll;
  j["unmapped_ms"] = m.unmapped_ms;
  j["host_idle_ms"] = m.host_idle_ms;
  j["model_step_ms"] = m.model_step_ms;
  j["model_allocated_bytes"] = m.model_allocated_bytes;
  j["model_fragmentation_bytes"] = m.model_fragmentation_bytes;
  Json fitted = Json::array();
  for (const FittedValue& f : m.fitted) {
    fitted.push_back(
        {{"key", f.key}, {"current", f.current}, {"fitted", f.fitted}, {"source", f.source}});
  }
  j["fitted"] = fitted;
  j["warnings"] = m.warnings;
  return j;
}

Json classes_json(const MeasuredProfile& p) {
  Json cls = Json::array();
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const ClassTime& c = p.classes[static_cast<std::size_t>(k)];
    if (c.kernels <= 0.0) continue;
    cls.push_back({{"class", std::string(to_string(static_cast<KernelClass>(k)))},
                   {"kernel_ms", c.kernel_ms},
                   {"wall_ms", c.wall_ms},
                   {"kernels", c.kernels},
                   {"forward_ms", c.phase_ms[0]},
                   {"backward_ms", c.phase_ms[1]},
                   {"optimizer_ms", c.phase_ms[2]},
                   {"unknown_ms", c.phase_ms[3]}});
  }
  return cls;
}

Json steps_json(const MeasuredProfile& p) {
  Json list = Json::array();
  for (const StepInfo& s : p.steps) {
    list.push_back({{"name", s.name},
                    {"cpu_ms", s.cpu_ms},
                    {"gpu_annotation_ms", s.gpu_annotation_ms},
                    {"gpu_span_ms", (s.gpu_end_us - s.gpu_start_us) / 1e3},
                    {"kernels", s.kernels}});
  }
  const double err = p.reference_step_ms > 0.0
                         ? 100.0 * (p.step_ms - p.reference_step_ms) / p.reference_step_ms
                         : 0.0;
  return {{"source", p.step_source},
          {"used", p.steps_used},
          {"step_ms", p.step_ms},
          {"reference_step_ms", p.reference_step_ms},
          {"reference", p.reference},
          {"error_pct", err},
          {"kernel_ms", p.kernel_ms},
          {"busy_ms", p.busy_ms},
          {"host_idle_ms", p.host_idle_ms},
          {"launch_gap_us", p.launch_gap_us},
          {"list", list}};
}

}  // namespace

std::string profile_json(const MeasuredProfile& p, int indent) {
  Json j;
  j["kind"] = kKind;
  j["schema_version"] = MeasuredProfile::kSchemaVersion;
  j["trace"] = {{"path", p.trace},    {"gzip", p.gzip}, {"json_mib", p.json_mib},
                {"device", p.device}, {"rank", p.rank}, {"world_size", p.world_size}};
  j["steps"] = steps_json(p);
  j["phases"] = {
      {"source", p.phase_source}, {"backward", p.has_backward}, {"optimizer", p.has_optimizer}};
  j["classes"] = classes_json(p);
  Json un = Json::array();
  for (const auto& [name, ms] : p.top_unattributed) un.push_back({{"name", name}, {"ms", ms}});
  j["attribution"] = {{"attributed_fraction", p.attributed_fraction},
                      {"residual_ms", p.residual_ms},
                      {"residual_pct", 100.0 * (1.0 - p.attributed_fraction)},
                      {"unattributed", un}};
  j["layers"] = {{"forward", layers_json(p.forward_layers)},
                 {"backward", layers_json(p.backward_layers)}};
  Json gemms = Json::array();
  for (const GemmStat& g : p.gemms) {
    gemms.push_back({{"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"batch", g.batch},
                     {"dtype", std::string(to_string(g.dtype))},
                     {"count", g.count},
                     {"measured_us", g.measured_us},
                     {"measured_tflops", g.flops() / g.measured_us / 1e6},
                     {"model_us", g.model_us},
                     {"model_tflops", g.model_us > 0.0 ? g.flops() / g.model_us / 1e6 : 0.0}});
  }
  j["gemms"] = gemms;
  Json coll = Json::array();
  for (const CollectiveStat& c : p.collectives) {
    coll.push_back({{"class", std::string(to_string(c.cls))},
                    {"group_size", c.group_size},
                    {"message_bytes", c.message_bytes},
                    {"calls", c.calls},
                    {"kernel_ms", c.kernel_ms}});
  }
  j["collectives"] = coll;
  j["memory"] = p.memory.present ? Json{{"samples", p.memory.samples},
                                        {"peak_allocated_bytes", p.memory.allocated_bytes},
                                        {"peak_reserved_bytes", p.memory.reserved_bytes}}
                                 : Json(nullptr);
  j["model"] = p.model.present ? model_json(p.model) : Json(nullptr);
  j["notes"] = p.notes;
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Reads with the key path in every error.
struct Reader {
  std::string file;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError({file, 0, 0}, key, what);
  }
  const Json& at(const Json& j, const std::string& key, const std::string& path) const {
    if (!j.is_object() || !j.contains(key)) fail(path + key, "missing");
    return j.at(key);
  }
  // Every number a profile holds is a count, bytes, milliseconds or a ratio: non-negative and
  // below 1e15 (a petabyte; 30 years in milliseconds).
  double num(const Json& j, const std::string& key, const std::string& path) const {
    const Json& v = at(j, key, path);
    if (!v.is_number()) fail(path + key, "not a number");
    const double x = v.get<double>();
    if (!(x >= -1.0 && x <= 1e15)) fail(path + key, fmt::format("{:g} is out of range", x));
    return x;
  }
  // A step or class time: at most 10^7 ms (2.8 hours) per iteration.
  double ms(const Json& j, const std::string& key, const std::string& path) const {
    const double x = num(j, key, path);
    if (!(x >= 0.0 && x <= 1e7)) fail(path + key, fmt::format("{:g} ms is not a step time", x));
    return x;
  }
  // Measured over modelled time of one class: 0 (not measured) or within kMin/kMaxMeasuredRatio.
  double ratio(const Json& j, const std::string& key, const std::string& path) const {
    const double x = num(j, key, path);
    if (x != 0.0 && !(x >= kMinMeasuredRatio && x <= kMaxMeasuredRatio)) {
      fail(path + key, fmt::format("{:g} is outside [{}, {}] (0: not measured)", x,
                                   kMinMeasuredRatio, kMaxMeasuredRatio));
    }
    return x;
  }
  int integer(const Json& j, const std::string& key, const std::string& path) const {
    const double x = num(j, key, path);
    if (x != static_cast<double>(static_cast<std::int64_t>(x)) || x > 1e9) {
      fail(path + key, fmt::format("{:g} is not a count", x));
    }
    return static_cast<int>(x);
  }
  std::string str(const Json& j, const std::string& key, const std::string& path) const {
    const Json& v = at(j, key, path);
    if (!v.is_string()) fail(path + key, "not a string");
    return v.get<std::string>();
  }
  bool flag(const Json& j, const std::string& key, const std::string& path) const {
    const Json& v = at(j, key, path);
    if (!v.is_boolean()) fail(path + key, "not true/false");
    return v.get<bool>();
  }
};

CostClass cost_class_named(const Reader& r, const std::string& s, const std::string& key) {
  for (int c = 0; c < kNumCostClasses; ++c) {
    if (to_string(static_cast<CostClass>(c)) == s) return static_cast<CostClass>(c);
  }
  r.fail(key, "unknown cost class '" + s + "'");
}

CollectiveKind collective_named(const Reader& r, const std::string& s, const std::string& key) {
  for (CollectiveKind k :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kSendRecv, CollectiveKind::kBroadcast}) {
    if (to_string(k) == s) return k;
  }
  r.fail(key, "unknown collective '" + s + "'");
}

BenchLayout read_bench(const Reader& r, const Json& j) {
  const std::string p = "model.bench.";
  BenchLayout b;
  b.config = r.str(j, "config", p);
  b.accelerator = r.str(j, "accelerator", p);
  b.tp = r.integer(j, "tp", p), b.pp = r.integer(j, "pp", p), b.vpp = r.integer(j, "vpp", p);
  b.cp = r.integer(j, "cp", p), b.ep = r.integer(j, "ep", p), b.etp = r.integer(j, "etp", p);
  b.dp = r.integer(j, "dp", p), b.nodes = r.integer(j, "nodes", p);
  b.gpus_per_node = r.integer(j, "gpus_per_node", p), b.world = r.integer(j, "world", p);
  b.mbs = r.integer(j, "mbs", p), b.seq = r.integer(j, "seq", p), b.gbs = r.integer(j, "gbs", p);
  b.num_layers = r.integer(j, "num_layers", p), b.hidden = r.integer(j, "hidden", p);
  b.num_experts = r.integer(j, "num_experts", p), b.pp_rank = r.integer(j, "pp_rank", p);
  b.layers_on_rank = r.integer(j, "layers_on_rank", p);
  b.microbatches = r.integer(j, "microbatches", p);
  for (const Json& s : r.at(j, "reductions", p)) b.reductions.push_back(s.get<std::string>());
  return b;
}

ModelComparison read_model(const Reader& r, const Json& j) {
  const std::string p = "model.";
  ModelComparison m;
  m.present = true;
  m.bench = read_bench(r, r.at(j, "bench", p));
  m.microbatches_in_step = r.integer(j, "microbatches_in_step", p);
  m.has_embedding = r.flag(j, "has_embedding", p);
  m.has_output = r.flag(j, "has_output", p);
  for (const Json& c : r.at(j, "classes", p)) {
    const auto i = static_cast<std::size_t>(
        cost_class_named(r, r.str(c, "class", "model.classes[]."), "model.classes[].class"));
    m.measured_ms[i] = r.ms(c, "measured_ms", "model.classes[].");
    m.measured_kernel_ms[i] = r.ms(c, "measured_kernel_ms", "model.classes[].");
    m.model_ms[i] = r.ms(c, "model_ms", "model.classes[].");
    m.ratio[i] = r.ratio(c, "ratio", "model.classes[].");
  }
  for (const Json& c : r.at(j, "collectives", p)) {
    const std::string q = "model.collectives[].";
    CollectiveRatio cr;
    cr.kind = collective_named(r, r.str(c, "kind", q), q + "kind");
    const Json& g = r.at(c, "group", q);
    cr.group = {r.integer(g, "size", q + "group."), r.integer(g, "ranks_per_node", q + "group."),
                r.integer(g, "nodes", q + "group."), r.integer(g, "pods", q + "group."),
                r.integer(g, "gpus_per_node", q + "group.")};
    cr.measured_ms = r.ms(c, "measured_ms", q);
    cr.model_ms = r.ms(c, "model_ms", q);
    cr.ratio = r.ratio(c, "ratio", q);
    m.collectives.push_back(cr);
  }
  m.unmapped_ms = r.ms(j, "unmapped_ms", p);
  m.host_idle_ms = r.ms(j, "host_idle_ms", p);
  m.model_step_ms = r.ms(j, "model_step_ms", p);
  m.model_allocated_bytes = r.num(j, "model_allocated_bytes", p);
  m.model_fragmentation_bytes = r.num(j, "model_fragmentation_bytes", p);
  for (const Json& f : r.at(j, "fitted", p)) {
    m.fitted.push_back({r.str(f, "key", "model.fitted[]."), r.num(f, "current", "model.fitted[]."),
                        r.num(f, "fitted", "model.fitted[]."),
                        r.str(f, "source", "model.fitted[].")});
  }
  return m;
}

}  // namespace

MeasuredProfile parse_profile(const std::string& text, const std::string& label) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError({label, 0, 0}, "", fmt::format("not valid JSON (byte {})", e.byte));
  } catch (const nlohmann::json::exception& e) {  // e.g. a number beyond double (1e400)
    throw InputError({label, 0, 0}, "", fmt::format("not a readable JSON document: {}", e.what()));
  }
  const Reader r{label};
  if (!j.is_object() || !j.contains("kind") || j["kind"] != kKind) {
    r.fail("kind",
           "not a measured profile (write one with `projector profile --trace T --config "
           "C --json P`)");
  }
  if (r.integer(j, "schema_version", "") != MeasuredProfile::kSchemaVersion) {
    r.fail("schema_version",
           fmt::format("this projector reads version {}", MeasuredProfile::kSchemaVersion));
  }
  MeasuredProfile p;
  const Json& t = r.at(j, "trace", "");
  p.trace = r.str(t, "path", "trace.");
  p.device = r.str(t, "device", "trace.");
  const Json& s = r.at(j, "steps", "");
  p.step_source = r.str(s, "source", "steps.");
  p.steps_used = r.integer(s, "used", "steps.");
  p.step_ms = r.ms(s, "step_ms", "steps.");
  p.reference_step_ms = r.ms(s, "reference_step_ms", "steps.");
  p.reference = r.str(s, "reference", "steps.");
  p.kernel_ms = r.ms(s, "kernel_ms", "steps.");
  p.busy_ms = r.ms(s, "busy_ms", "steps.");
  p.host_idle_ms = r.ms(s, "host_idle_ms", "steps.");
  const Json& ph = r.at(j, "phases", "");
  p.phase_source = r.str(ph, "source", "phases.");
  p.has_backward = r.flag(ph, "backward", "phases.");
  p.has_optimizer = r.flag(ph, "optimizer", "phases.");
  const Json& a = r.at(j, "attribution", "");
  p.attributed_fraction = r.num(a, "attributed_fraction", "attribution.");
  p.residual_ms = r.ms(a, "residual_ms", "attribution.");
  const Json& mem = r.at(j, "memory", "");
  if (!mem.is_null()) {
    p.memory.present = true;
    p.memory.samples = r.integer(mem, "samples", "memory.");
    p.memory.allocated_bytes = r.num(mem, "peak_allocated_bytes", "memory.");
    p.memory.reserved_bytes = r.num(mem, "peak_reserved_bytes", "memory.");
  }
  const Json& model = r.at(j, "model", "");
  if (!model.is_null()) p.model = read_model(r, model);
  return p;
}

MeasuredProfile read_profile(const std::string& path) {
  return parse_profile(read_input_file(path), path);
}

}  // namespace projector::profile
