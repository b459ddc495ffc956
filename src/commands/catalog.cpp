#include "projector/commands/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/hardware/compare.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"

namespace projector {
namespace {

constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

nlohmann::json sourced_json(const Sourced& s) {
  return {{"value", s.value}, {"source", s.source}};
}

nlohmann::json accelerator_value(const AcceleratorSpec& a) {
  nlohmann::json j;
  j["name"] = a.name;
  j["display_name"] = a.display_name;
  j["vendor"] = a.vendor;
  j["arch"] = a.arch;
  j["aliases"] = a.aliases;
  j["file"] = a.file;
  j["status"] = {{"value", a.status}, {"source", a.source_of("status")}};
  j["derived_from"] = {
      {"value", a.derived_from.empty() ? nlohmann::json() : nlohmann::json(a.derived_from)},
      {"source", a.source_of("derived_from")}};
  j["calibration_note"] = a.calibration_note();
  auto fact = [&](const std::string& f, const nlohmann::json& v) {
    return nlohmann::json{{"value", v}, {"source", a.source_of(f)}};
  };
  nlohmann::json peaks = nlohmann::json::object();
  for (Dtype d : kAllDtypes) {
    const std::string k(to_string(d));
    const double v = a.peak_tflops[static_cast<int>(d)];
    peaks[k] = fact("peak_tflops." + k, v > 0.0 ? nlohmann::json(v) : nlohmann::json());
  }
  for (const auto& e : a.extra_peak_tflops) {
    peaks[e.format] = fact("peak_tflops." + e.format,
                           e.tflops > 0.0 ? nlohmann::json(e.tflops) : nlohmann::json());
  }
  j["peak_tflops"] = peaks;
  j["devices_per_chip"] = fact("devices_per_chip", a.devices_per_chip);
  j["compute_units"] = fact("compute_units", a.compute_units);
  j["dies"] = fact("dies", a.dies);
  j["boost_clock_mhz"] = fact("boost_clock_mhz", a.boost_clock_mhz);
  j["sustained_clock_mhz"] = fact("sustained_clock_mhz", a.sustained_clock_mhz);
  j["hbm_bytes"] = fact("hbm_capacity", a.hbm_bytes);
  j["hbm_bw_bytes_per_s"] = fact("hbm_bandwidth", a.hbm_bw_bytes_per_s);
  j["l2_bytes"] = fact("l2", a.l2_bytes);
  j["llc_bytes"] = fact("llc", a.llc_bytes);
  j["lds_bytes_per_cu"] = fact("lds_per_cu", a.lds_bytes_per_cu);
  j["default_gpus_per_node"] = fact("default_gpus_per_node", a.default_gpus_per_node);
  j["scaleup_bw_bytes_per_s"] = fact("scaleup_bandwidth", a.scaleup_bw_bytes_per_s);
  j["scaleup_topology"] = fact("scaleup_topology", a.scaleup_topology);
  j["scaleup_domain"] = fact("scaleup_domain", a.scaleup_domain);
  j["scaleup_links"] = fact("scaleup_links", a.scaleup_links);
  j["scaleup_link_bw_bytes_per_s"] = fact("scaleup_link_bandwidth", a.scaleup_link_bw_bytes_per_s);
  j["torus_dims"] = fact("torus_dims", a.torus_dims);
  j["torus_wraparound"] = fact("torus_wraparound", a.torus_wraparound);
  j["scaleout_bw_bytes_per_s"] = fact("scaleout_bandwidth", a.scaleout_bw_bytes_per_s);
  j["default_network"] = a.default_network;
  const auto& c = a.calibration;
  nlohmann::json cal;
  nlohmann::json gemm = nlohmann::json::object();
  for (Dtype d : kAllDtypes) {
    const int i = static_cast<int>(d);
    gemm[std::string(to_string(d))] = {
        {"value",
         a.peak_tflops[i] > 0.0 ? nlohmann::json(c.gemm_peak_fraction[i]) : nlohmann::json()},
        {"source", c.gemm_peak_fraction_source[i]}};
  }
  cal["gemm_peak_fraction"] = gemm;
  cal["attention_fwd_fraction"] = sourced_json(c.attention_fwd_fraction);
  cal["attention_bwd_fraction"] = sourced_json(c.attention_bwd_fraction);
  cal["attention_fa2_fwd_fraction"] = sourced_json(c.attention_fa2_fwd_fraction);
  cal["attention_fa2_bwd_fraction"] = sourced_json(c.attention_fa2_bwd_fraction);
  cal["attention_fp8_fwd_fraction"] = sourced_json(c.attention_fp8_fwd_fraction);
  cal["attention_fp8_bwd_fraction"] = sourced_json(c.attention_fp8_bwd_fraction);
  cal["attention_mxfp8_fwd_fraction"] = sourced_json(c.attention_mxfp8_fwd_fraction);
  cal["attention_mxfp8_bwd_fraction"] = sourced_json(c.attention_mxfp8_bwd_fraction);
  cal["hbm_elementwise_fraction"] = sourced_json(c.hbm_elementwise_fraction);
  cal["hbm_permute_fraction"] = sourced_json(c.hbm_permute_fraction);
  cal["hbm_gather_fraction"] = sourced_json(c.hbm_gather_fraction);
  cal["hbm_optimizer_fraction"] = sourced_json(c.hbm_optimizer_fraction);
  cal["hbm_loss_fraction"] = sourced_json(c.hbm_loss_fraction);
  cal["kernel_launch_s"] = sourced_json(c.kernel_launch_s);
  cal["runtime_context_bytes"] = sourced_json(c.runtime_context_bytes);
  cal["comm_buffer_bytes_per_group"] = sourced_json(c.comm_buffer_bytes_per_group);
  cal["workspace_bytes"] = sourced_json(c.workspace_bytes);
  cal["fragmentation_fraction"] = sourced_json(c.fragmentation_fraction);
  cal["fragmentation_upper_fraction"] = sourced_json(c.fragmentation_upper_fraction);
  cal["comm_compute_interference"] = sourced_json(c.comm_compute_interference);
  cal["grouped_gemm_fraction"] = sourced_json(c.grouped_gemm_fraction);
  cal["kernel_fixed_s"] = sourced_json(c.kernel_fixed_s);
  cal["host_dispatch_scale"] = sourced_json(c.host_dispatch_scale);
  cal["grouped_gemm_fraction_fp8"] = sourced_json(c.grouped_gemm_fraction_fp8);
  cal["gemm_fp8_blockwise_fraction"] = sourced_json(c.gemm_fp8_blockwise_fraction);
  cal["ep_kernel_unit_bytes_per_s"] = sourced_json(c.ep_kernel_unit_bytes_per_s);
  cal["ssd_scan_fraction"] = sourced_json(c.ssd_scan_fraction);
  cal["attention_workgroup_tiles"] = sourced_json(c.attention_workgroup_tiles);
  j["calibration"] = cal;
  return j;
}

// Ordered so the keys print in Primus' documentation order.
nlohmann::ordered_json network_value(const NetworkSpec& n) {
  return {{"name", n.name},
          {"source", n.source},
          {"file", n.file},
          {"hardware_config",
           {{"node_bw", n.node_bw_gb_per_s},
            {"node_lat", n.node_lat_us},
            {"pod_bw", n.pod_bw_gb_per_s},
            {"pod_lat", n.pod_lat_us},
            {"cluster_bw", n.cluster_bw_gb_per_s},
            {"cluster_lat", n.cluster_lat_us},
            {"node_size", n.node_size},
            {"pod_size", n.pod_size},
            {"nics_per_node", n.nics_per_node},
            {"switch_topology", n.switch_topology},
            {"node_topology", n.node_topology},
            {"bw_eff", n.bw_eff},
            {"p2p_bw_eff", n.p2p_bw_eff},
            {"hbm_latency", n.hbm_latency_us},
            {"write_latency", n.write_latency_us},
            {"write_resp", n.write_resp_us},
            {"kernel_launch_latency", n.kernel_launch_latency_us},
            {"vector_flops", n.vector_flops},
            {"rccl_overhead_us", n.rccl_overhead_us},
            {"ar_overlap_factor", n.ar_overlap_factor},
            {"ar_warmup_chunk_bytes", n.ar_warmup_chunk_bytes},
            {"nic_rdma_setup_us", n.nic_rdma_setup_us},
            {"nic_warmup_bytes", n.nic_warmup_bytes},
            {"a2a_peer_lat", n.a2a_peer_lat_us},
            {"a2a_intra_sync_overhead", n.a2a_intra_sync_overhead_us},
            {"a2a_intra_node_peer_lat", n.a2a_intra_node_peer_lat_us},
            {"a2a_mesh_contention", n.a2a_mesh_contention},
            {"a2a_rccl_overhead_us", n.a2a_rccl_overhead_us},
            {"a2a_remote_contention", n.a2a_remote_contention},
            {"gpus_per_tray", n.gpus_per_tray},
            {"coll_base_lat_us", n.coll_base_lat_us},
            {"ll_step_lat_us", n.ll_step_lat_us},
            {"ll128_step_lat_us", n.ll128_step_lat_us},
            {"simple_step_lat_us", n.simple_step_lat_us},
            {"ll128_enabled", n.ll128_enabled},
            {"scaleup_bw_eff", n.scaleup_bw_eff},
            {"scaleout_bw_eff", n.scaleout_bw_eff},
            {"scaleout_step_lat_us", n.scaleout_step_lat_us},
            {"scaleout_base_lat_us", n.scaleout_base_lat_us},
            {"nvls_algbw_eff", n.nvls_algbw_eff},
            {"hier_overlap", n.hier_overlap}}},
          {"unknown_keys", n.unknown_keys}};
}

nlohmann::ordered_json projection_json(const AcceleratorProjection& p) {
  if (!p.job) return {{"accelerator", p.accelerator}, {"error", p.error}};
  const PerfReport& r = p.report;
  return {{"accelerator", p.accelerator},
          {"world_size", r.world_size},
          {"iteration_time_ms", r.iteration_s * 1e3},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
          {"mfu_pct", 100.0 * r.mfu},
          {"peak_memory_bytes", r.memory.peak_point_bytes},
          {"memory_verdict", std::string(to_string(r.memory.verdict))}};
}

nlohmann::ordered_json peak_or_null(const AcceleratorSpec& a, Dtype d) {
  const double v = a.peak_tflops[static_cast<int>(d)];
  return v > 0.0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
}

// The source the list's "peaks from" column cites: fp8's when the accelerator has it, else bf16's.
std::string peaks_source(const AcceleratorSpec& a) {
  const bool fp8 =
      !a.source_of("peak_tflops.fp8").empty() && a.peak_tflops[static_cast<int>(Dtype::kFp8)] > 0.0;
  return a.source_of(fp8 ? "peak_tflops.fp8" : "peak_tflops.bf16");
}

}  // namespace

std::string hardware_list_json(const std::string& data_dir) {
  const std::vector<AcceleratorSpec> accs = load_accelerator_catalog(data_dir);
  if (accs.empty()) {
    throw InputError(
        SourceLocation{}, "data-dir",
        fmt::format("no accelerator files under '{}/hardware/accelerators'", data_dir));
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const AcceleratorSpec& a : accs) {
    nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
    nlohmann::ordered_json estimated = nlohmann::ordered_json::array();
    for (Dtype d : kAllDtypes) {
      const std::string k(to_string(d));
      peaks[k] = peak_or_null(a, d);
      if (a.peak_tflops[static_cast<int>(d)] > 0.0 && is_estimated(a, "peak_tflops." + k)) {
        estimated.push_back(k);
      }
    }
    list.push_back({{"name", a.name},
                    {"display_name", a.display_name},
                    {"vendor", a.vendor},
                    {"arch", a.arch},
                    {"status", a.status},
                    {"file", a.file},
                    {"peak_tflops", peaks},
                    {"estimated_peaks", estimated},
                    {"hbm_bytes", a.hbm_bytes},
                    {"hbm_bw_bytes_per_s", a.hbm_bw_bytes_per_s},
                    {"peaks_source", peaks_source(a)},
                    {"hbm_source", a.source_of("hbm_capacity")},
                    {"calibration", calibration_origin(a)},
                    {"default_network", a.default_network}});
  }
  const nlohmann::ordered_json doc = {{"kind", "hardware_list"},
                                      {"schema_version", 1},
                                      {"data_dir", data_dir},
                                      {"accelerators", list},
                                      {"networks", list_networks(data_dir)}};
  return doc.dump(2, ' ', false, kReplace);
}

std::string accelerator_json(const AcceleratorSpec& a) {
  return accelerator_value(a).dump(2);
}

std::string network_json(const NetworkSpec& n) {
  return network_value(n).dump(2);
}

std::string hardware_show_json(const std::string& name, const std::string& data_dir,
                               std::optional<NetworkSpec>* network) {
  const std::vector<std::string> nets = list_networks(data_dir);
  if (std::find(nets.begin(), nets.end(), name) != nets.end()) {
    NetworkSpec n = load_network(name, data_dir);
    std::string doc = network_json(n);
    if (network != nullptr) *network = std::move(n);
    return doc;
  }
  return accelerator_json(load_accelerator(name, data_dir));
}

namespace {

AcceleratorProjection project_on(const AcceleratorSpec& acc,
                                 const std::function<JobSpec(const AcceleratorSpec&)>& job_on) {
  AcceleratorProjection p;
  p.accelerator = acc.name;
  try {
    p.job = job_on(acc);
    PerfOptions po;
    po.keep_op_table = false;
    p.report = project_performance(*p.job, po);
  } catch (const InputError& e) {
    p.job.reset();
    p.error = e.what();
    p.failure = e;
  }
  return p;
}

}  // namespace

HardwareComparison compare_hardware(const std::string& a, const std::string& b,
                                    const std::string& data_dir, const std::string& config,
                                    const std::function<JobSpec(const AcceleratorSpec&)>& job_on) {
  const AcceleratorIndex index(data_dir);
  HardwareComparison c{index.load(a), index.load(b), config, std::nullopt, std::nullopt};
  if (!config.empty()) {
    c.pa = project_on(c.a, job_on);
    c.pb = project_on(c.b, job_on);
    // The same error on both parts is the config's (malformed, a bad value, a missing file), not
    // a difference between the parts: thrown with its location instead of two "not projected".
    if (c.pa->failure && c.pb->failure && c.pa->error == c.pb->error) throw *c.pa->failure;
  }
  return c;
}

double comparison_speedup(const AcceleratorProjection& a, const AcceleratorProjection& b) {
  if (!a.job || !b.job || a.report.tokens_per_s_per_gpu <= 0.0) return 0.0;
  return b.report.tokens_per_s_per_gpu / a.report.tokens_per_s_per_gpu;
}

std::string hardware_compare_json(const HardwareComparison& c) {
  nlohmann::ordered_json j;
  for (const auto& [key, acc] : {std::pair{"a", &c.a}, std::pair{"b", &c.b}}) {
    j[key] = {{"name", acc->name},
              {"status", acc->status},
              {"calibration", calibration_origin(*acc)},
              {"calibration_note", acc->calibration_note()}};
  }
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();
  for (const auto& f : compare_accelerators(c.a, c.b)) {
    facts.push_back({{"field", f.field},
                     {"label", f.label},
                     {"a", f.a},
                     {"b", f.b},
                     {"ratio", f.ratio > 0.0 ? nlohmann::ordered_json(f.ratio) : nullptr}});
  }
  j["facts"] = facts;
  if (c.pa && c.pb) {
    const double s = comparison_speedup(*c.pa, *c.pb);
    j["projection"] = {{"config", c.config},
                       {"a", projection_json(*c.pa)},
                       {"b", projection_json(*c.pb)},
                       {"speedup_tokens_per_s_per_gpu",
                        s > 0.0 ? nlohmann::ordered_json(s) : nlohmann::ordered_json()}};
  }
  return j.dump(2, ' ', false, kReplace);
}

std::string models_list_json(const std::string& data_dir) {
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  for (const std::string& name : list_model_presets(data_dir)) {
    const ModelSpec m = load_model_preset(name, data_dir);
    const ModelParams p = model_params(m);
    int experts = 0;
    for (const LayerSpec& l : m.layers) {
      if (l.is_moe) experts = l.moe.num_experts;
    }
    models.push_back({{"name", name},
                      {"layers", m.num_layers()},
                      {"hidden_size", m.hidden_size},
                      {"experts", experts},
                      {"params", p.total},
                      {"active_params", p.active}});
  }
  const nlohmann::ordered_json doc = {
      {"kind", "model_list"}, {"schema_version", 1}, {"data_dir", data_dir}, {"models", models}};
  return doc.dump(2, ' ', false, kReplace);
}

}  // namespace projector
