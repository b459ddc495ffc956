// Network files: Primus `hardware_config:` YAMLs (loaded unchanged) and our own, which use the same
// keys plus optional top-level `name:` / `source:` / `description:`.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "hardware/yaml_read.h"
#include "projector/hardware/catalog.h"

namespace projector {

namespace hw = hw_detail;

namespace {

enum class FieldKind { kDouble, kInt, kBool, kString };

// One Primus CollectiveArgs key and the NetworkSpec member it fills.
struct NetworkField {
  std::string_view key;
  FieldKind kind;
  double NetworkSpec::*dbl = nullptr;
  int NetworkSpec::*integer = nullptr;
  bool NetworkSpec::*boolean = nullptr;
  std::string NetworkSpec::*str = nullptr;
  bool nullable = false;  // null means "derive from the job" (GPUs per node, whole job)
};

constexpr NetworkField D(std::string_view k, double NetworkSpec::*m) {
  return {k, FieldKind::kDouble, m, nullptr, nullptr, nullptr, false};
}
constexpr NetworkField I(std::string_view k, int NetworkSpec::*m, bool nullable) {
  return {k, FieldKind::kInt, nullptr, m, nullptr, nullptr, nullable};
}

// Primus' keys, unchanged (§7.1 of the spec), in its documentation order.
constexpr NetworkField kFields[] = {
    D("node_bw", &NetworkSpec::node_bw_gb_per_s),
    D("node_lat", &NetworkSpec::node_lat_us),
    D("pod_bw", &NetworkSpec::pod_bw_gb_per_s),
    D("pod_lat", &NetworkSpec::pod_lat_us),
    D("cluster_bw", &NetworkSpec::cluster_bw_gb_per_s),
    D("cluster_lat", &NetworkSpec::cluster_lat_us),
    I("node_size", &NetworkSpec::node_size, true),
    I("pod_size", &NetworkSpec::pod_size, true),
    I("nics_per_node", &NetworkSpec::nics_per_node, true),
    {"switch_topology", FieldKind::kBool, nullptr, nullptr, &NetworkSpec::switch_topology, nullptr,
     false},
    {"node_topology", FieldKind::kString, nullptr, nullptr, nullptr, &NetworkSpec::node_topology,
     false},
    D("bw_eff", &NetworkSpec::bw_eff),
    D("p2p_bw_eff", &NetworkSpec::p2p_bw_eff),
    D("hbm_latency", &NetworkSpec::hbm_latency_us),
    D("write_latency", &NetworkSpec::write_latency_us),
    D("write_resp", &NetworkSpec::write_resp_us),
    D("kernel_launch_latency", &NetworkSpec::kernel_launch_latency_us),
    D("vector_flops", &NetworkSpec::vector_flops),
    D("rccl_overhead_us", &NetworkSpec::rccl_overhead_us),
    D("ar_overlap_factor", &NetworkSpec::ar_overlap_factor),
    D("ar_warmup_chunk_bytes", &NetworkSpec::ar_warmup_chunk_bytes),
    D("nic_rdma_setup_us", &NetworkSpec::nic_rdma_setup_us),
    D("nic_warmup_bytes", &NetworkSpec::nic_warmup_bytes),
    D("a2a_peer_lat", &NetworkSpec::a2a_peer_lat_us),
    D("a2a_intra_sync_overhead", &NetworkSpec::a2a_intra_sync_overhead_us),
    D("a2a_intra_node_peer_lat", &NetworkSpec::a2a_intra_node_peer_lat_us),
    D("a2a_mesh_contention", &NetworkSpec::a2a_mesh_contention),
    D("a2a_rccl_overhead_us", &NetworkSpec::a2a_rccl_overhead_us),
    D("a2a_remote_contention", &NetworkSpec::a2a_remote_contention),
    I("gpus_per_tray", &NetworkSpec::gpus_per_tray, true),
    // projector's own collective-model parameters (cost/collective.h); Primus would warn on them.
    D("coll_base_lat_us", &NetworkSpec::coll_base_lat_us),
    D("ll_step_lat_us", &NetworkSpec::ll_step_lat_us),
    D("ll128_step_lat_us", &NetworkSpec::ll128_step_lat_us),
    D("simple_step_lat_us", &NetworkSpec::simple_step_lat_us),
    {"ll128_enabled", FieldKind::kBool, nullptr, nullptr, &NetworkSpec::ll128_enabled, nullptr,
     false},
    D("scaleup_bw_eff", &NetworkSpec::scaleup_bw_eff),
    D("scaleout_bw_eff", &NetworkSpec::scaleout_bw_eff),
    D("scaleout_step_lat_us", &NetworkSpec::scaleout_step_lat_us),
    D("scaleout_base_lat_us", &NetworkSpec::scaleout_base_lat_us),
    D("nvls_algbw_eff", &NetworkSpec::nvls_algbw_eff),
    D("hier_overlap", &NetworkSpec::hier_overlap),
    D("ici_link_bw", &NetworkSpec::ici_link_bw_gb_per_s),
    D("ici_bw_eff", &NetworkSpec::ici_bw_eff),
    D("ici_hop_lat_us", &NetworkSpec::ici_hop_lat_us),
    D("ici_base_lat_us", &NetworkSpec::ici_base_lat_us),
    D("core_link_bw", &NetworkSpec::core_link_bw_gb_per_s),
    D("dcn_bw", &NetworkSpec::dcn_bw_gb_per_s),
    D("dcn_bw_eff", &NetworkSpec::dcn_bw_eff),
    D("dcn_lat_us", &NetworkSpec::dcn_lat_us),
};

// Descriptive keys of our own files; Primus would ignore them at the top level.
constexpr std::string_view kMetaKeys[] = {"name", "source", "description"};

const NetworkField* find_field(std::string_view key) {
  for (const auto& f : kFields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

bool is_meta_key(std::string_view key) {
  return std::find(std::begin(kMetaKeys), std::end(kMetaKeys), key) != std::end(kMetaKeys);
}

struct PhysicalRange {
  double lo;
  double hi;
  const char* unit;
};

// What a value of this key can physically be (issue 30: a latency of 1e300 us once printed a
// 300-digit step time): efficiencies and overlaps are fractions, contention factors small, a
// latency under a second, a bandwidth under 100 TB/s, a byte count under a terabyte.
PhysicalRange physical_range(std::string_view key) {
  if (key.ends_with("_eff") || key.ends_with("overlap") || key.ends_with("_factor")) {
    return {0.0, 1.0, "a fraction"};
  }
  if (key.ends_with("contention")) return {0.0, 10.0, "a contention factor"};
  if (key.ends_with("_bw")) return {0.0, 1e5, "GB/s"};
  if (key.ends_with("_bytes")) return {0.0, 1e12, "bytes"};
  if (key == "vector_flops") return {1e9, 1e17, "FLOP/s"};
  return {0.0, 1e6, "us"};  // every other double is a latency or an overhead in microseconds
}

void set_field(const hw::YamlContext& ctx, const NetworkField& f, const YAML::Node& value,
               const std::string& path, NetworkSpec& out) {
  if (f.nullable && hw::is_null(value)) {
    out.*(f.integer) = 0;  // 0 = derive from the job, as Primus does for None
    return;
  }
  switch (f.kind) {
    case FieldKind::kDouble: {
      const double v = hw::read_double(ctx, value, path);
      const PhysicalRange r = physical_range(f.key);
      if (!(v >= r.lo && v <= r.hi)) {
        hw::fail(ctx, value, path,
                 fmt::format("{} is outside [{:g}, {:g}] ({}): not a physical value", v, r.lo, r.hi,
                             r.unit));
      }
      out.*(f.dbl) = v;
      break;
    }
    case FieldKind::kInt:
      out.*(f.integer) = hw::read_int(ctx, value, path);
      if (out.*(f.integer) < 0) hw::fail(ctx, value, path, "must not be negative");
      break;
    case FieldKind::kBool:
      out.*(f.boolean) = hw::read_bool(ctx, value, path);
      break;
    case FieldKind::kString:
      out.*(f.str) = hw::read_string(ctx, value, path);
      break;
  }
}

void read_meta(const hw::YamlContext& ctx, const std::string& key, const YAML::Node& value,
               const std::string& path, NetworkSpec& out) {
  if (key == "name") {
    out.name = hw::read_string(ctx, value, path);
  } else if (key == "source" || key == "description") {
    // `source:` may be one string or a list of strings.
    std::string text;
    if (value.IsSequence()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!text.empty()) text += "; ";
        text += hw::read_string(ctx, value[i], fmt::format("{}[{}]", path, i));
      }
    } else {
      text = hw::read_string(ctx, value, path);
    }
    if (key == "source") out.source = text;
  }
}

// Checks that make a mistyped value fail here rather than produce nonsense later.
void validate(const hw::YamlContext& ctx, const YAML::Node& params, const std::string& prefix,
              NetworkSpec& net) {
  auto at = [&](std::string_view key) {
    const YAML::Node n = params[std::string(key)];
    return n.IsDefined() ? n : params;
  };
  for (const auto& f : kFields) {
    if (f.kind != FieldKind::kDouble) continue;
    const double v = net.*(f.dbl);
    if (v < 0.0) hw::fail(ctx, at(f.key), prefix + std::string(f.key), "must not be negative");
  }
  const std::pair<std::string_view, double> positive[] = {
      {"node_bw", net.node_bw_gb_per_s},       {"pod_bw", net.pod_bw_gb_per_s},
      {"cluster_bw", net.cluster_bw_gb_per_s}, {"bw_eff", net.bw_eff},
      {"p2p_bw_eff", net.p2p_bw_eff},          {"vector_flops", net.vector_flops}};
  for (const auto& [key, v] : positive) {
    if (!(v > 0.0)) hw::fail(ctx, at(key), prefix + std::string(key), "must be greater than 0");
  }
  const std::pair<std::string_view, double> fractions[] = {
      {"bw_eff", net.bw_eff},
      {"p2p_bw_eff", net.p2p_bw_eff},
      {"ar_overlap_factor", net.ar_overlap_factor},
      {"a2a_mesh_contention", net.a2a_mesh_contention},
      {"a2a_remote_contention", net.a2a_remote_contention},
      {"scaleup_bw_eff", net.scaleup_bw_eff},
      {"scaleout_bw_eff", net.scaleout_bw_eff},
      {"nvls_algbw_eff", net.nvls_algbw_eff},
      {"hier_overlap", net.hier_overlap}};
  for (const auto& [key, v] : fractions) {
    if (v > 1.0)
      hw::fail(ctx, at(key), prefix + std::string(key), "is a fraction and must be <= 1");
  }
  if (net.node_topology != "switch" && net.node_topology != "mesh") {
    hw::fail(ctx, at("node_topology"), prefix + "node_topology",
             fmt::format("'{}' is not a topology (switch or mesh)", net.node_topology));
  }
}

}  // namespace

NetworkSpec load_network_file(const std::string& path) {
  const hw::YamlContext ctx{path};
  const YAML::Node root = hw::load_yaml_file(path);
  if (!root.IsDefined() || root.IsNull()) {
    throw InputError(SourceLocation{path, 0, 0}, "", "empty network file");
  }
  if (!root.IsMap()) hw::fail(ctx, root, "", "a network file must be a YAML mapping");

  NetworkSpec net;
  net.file = path;
  // Primus' format nests the parameters under `hardware_config:`; a flat file is accepted too.
  const YAML::Node nested = root["hardware_config"];
  const bool is_nested = nested.IsDefined();
  YAML::Node params = is_nested ? nested : root;
  const std::string prefix = is_nested ? "hardware_config." : "";
  if (is_nested && !nested.IsNull() && !nested.IsMap()) {
    hw::fail(ctx, nested, "hardware_config", "must be a mapping of collective-model parameters");
  }

  if (is_nested) {
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (key == "hardware_config") continue;
      if (is_meta_key(key)) {
        read_meta(ctx, key, kv.second, key, net);
      } else {
        net.unknown_keys.push_back(key);
      }
    }
  }
  if (params.IsMap()) {
    for (const auto& kv : params) {
      const std::string key = kv.first.Scalar();
      if (const NetworkField* f = find_field(key)) {
        set_field(ctx, *f, kv.second, prefix + key, net);
      } else if (is_meta_key(key)) {
        read_meta(ctx, key, kv.second, prefix + key, net);
      } else {
        // Primus prints "Unknown hardware parameter '<key>'" and carries on; so do we (the caller
        // prints the warning).
        net.unknown_keys.push_back(key);
      }
    }
  }
  if (params.IsMap()) validate(ctx, params, prefix, net);
  if (net.name.empty()) net.name = std::filesystem::path(path).stem().string();
  return net;
}

}  // namespace projector
