// Network files: Primus' example hardware_config files load unchanged (values from spec 9.1 and the
// CollectiveArgs defaults of spec 7.1), strings are coerced like Primus, unknown keys are reported.
#include <gtest/gtest.h>

#include <algorithm>

#include "hardware/hw_test_util.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

using testing::data_dir;
using testing::line_of;
using testing::ScratchDir;
using testing::test_data_dir;

std::string fixture(const std::string& gpu) {
  return test_data_dir() + "/hardware/primus_examples/" + gpu + ".yaml";
}

// Every parameter of two specs is equal (names and files aside).
void expect_same_parameters(const NetworkSpec& a, const NetworkSpec& b) {
  EXPECT_EQ(a.node_bw_gb_per_s, b.node_bw_gb_per_s);
  EXPECT_EQ(a.node_lat_us, b.node_lat_us);
  EXPECT_EQ(a.pod_bw_gb_per_s, b.pod_bw_gb_per_s);
  EXPECT_EQ(a.pod_lat_us, b.pod_lat_us);
  EXPECT_EQ(a.cluster_bw_gb_per_s, b.cluster_bw_gb_per_s);
  EXPECT_EQ(a.cluster_lat_us, b.cluster_lat_us);
  EXPECT_EQ(a.node_size, b.node_size);
  EXPECT_EQ(a.pod_size, b.pod_size);
  EXPECT_EQ(a.nics_per_node, b.nics_per_node);
  EXPECT_EQ(a.switch_topology, b.switch_topology);
  EXPECT_EQ(a.node_topology, b.node_topology);
  EXPECT_EQ(a.bw_eff, b.bw_eff);
  EXPECT_EQ(a.p2p_bw_eff, b.p2p_bw_eff);
  EXPECT_EQ(a.hbm_latency_us, b.hbm_latency_us);
  EXPECT_EQ(a.write_latency_us, b.write_latency_us);
  EXPECT_EQ(a.write_resp_us, b.write_resp_us);
  EXPECT_EQ(a.kernel_launch_latency_us, b.kernel_launch_latency_us);
  EXPECT_EQ(a.vector_flops, b.vector_flops);
  EXPECT_EQ(a.rccl_overhead_us, b.rccl_overhead_us);
  EXPECT_EQ(a.ar_overlap_factor, b.ar_overlap_factor);
  EXPECT_EQ(a.ar_warmup_chunk_bytes, b.ar_warmup_chunk_bytes);
  EXPECT_EQ(a.nic_rdma_setup_us, b.nic_rdma_setup_us);
  EXPECT_EQ(a.nic_warmup_bytes, b.nic_warmup_bytes);
  EXPECT_EQ(a.a2a_peer_lat_us, b.a2a_peer_lat_us);
  EXPECT_EQ(a.a2a_intra_sync_overhead_us, b.a2a_intra_sync_overhead_us);
  EXPECT_EQ(a.a2a_intra_node_peer_lat_us, b.a2a_intra_node_peer_lat_us);
  EXPECT_EQ(a.a2a_mesh_contention, b.a2a_mesh_contention);
  EXPECT_EQ(a.a2a_rccl_overhead_us, b.a2a_rccl_overhead_us);
  EXPECT_EQ(a.a2a_remote_contention, b.a2a_remote_contention);
  EXPECT_EQ(a.gpus_per_tray, b.gpus_per_tray);
  EXPECT_EQ(a.coll_base_lat_us, b.coll_base_lat_us);
  EXPECT_EQ(a.scaleup_bw_eff, b.scaleup_bw_eff);
  EXPECT_EQ(a.nvls_algbw_eff, b.nvls_algbw_eff);
  EXPECT_EQ(a.ll128_enabled, b.ll128_enabled);
}

// Spec 9.1 table: node_bw and vector_flops differ per file; the rest is common; keys the files do
// not set keep the CollectiveArgs defaults of spec 7.1.
TEST(Network, PrimusExampleFilesLoadUnchanged) {
  struct Case {
    const char* gpu;
    double node_bw;
    double vector_flops;
  };
  const Case cases[] = {{"mi300x", 448.0, 163.0e12},
                        {"mi325x", 448.0, 163.0e12},
                        {"mi350x", 537.6, 144.0e12},
                        {"mi355x", 537.6, 157.0e12}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.gpu);
    const NetworkSpec n = load_network(fixture(c.gpu), data_dir());
    EXPECT_TRUE(n.unknown_keys.empty());
    EXPECT_DOUBLE_EQ(n.node_bw_gb_per_s, c.node_bw);
    EXPECT_DOUBLE_EQ(n.vector_flops, c.vector_flops);
    EXPECT_DOUBLE_EQ(n.node_lat_us, 0.45);
    EXPECT_DOUBLE_EQ(n.pod_bw_gb_per_s, 50.0);
    EXPECT_DOUBLE_EQ(n.pod_lat_us, 2.0);
    EXPECT_DOUBLE_EQ(n.cluster_bw_gb_per_s, 25.0);
    EXPECT_DOUBLE_EQ(n.cluster_lat_us, 10.0);
    EXPECT_EQ(n.node_size, 8);
    EXPECT_EQ(n.pod_size, 64);
    EXPECT_EQ(n.nics_per_node, 8);
    EXPECT_FALSE(n.switch_topology);
    EXPECT_EQ(n.node_topology, "mesh");
    // Unset keys: Primus CollectiveArgs defaults.
    EXPECT_DOUBLE_EQ(n.bw_eff, 0.70);
    EXPECT_DOUBLE_EQ(n.p2p_bw_eff, 0.80);
    EXPECT_DOUBLE_EQ(n.rccl_overhead_us, 200.0);
    EXPECT_DOUBLE_EQ(n.kernel_launch_latency_us, 2.8);
    EXPECT_DOUBLE_EQ(n.nic_warmup_bytes, 32.0 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(n.a2a_rccl_overhead_us, 150.0);
    EXPECT_EQ(n.name, c.gpu);  // no name key: the file stem
  }
}

TEST(Network, BundledPrimusCopiesEqualTheExamples) {
  for (const char* gpu : {"mi300x", "mi325x", "mi350x", "mi355x"}) {
    SCOPED_TRACE(gpu);
    const NetworkSpec ours = load_network(std::string("primus_") + gpu, data_dir());
    const NetworkSpec theirs = load_network(fixture(gpu), data_dir());
    expect_same_parameters(ours, theirs);
    EXPECT_EQ(ours.name, std::string("primus_") + gpu);
    EXPECT_NE(ours.source.find("Primus"), std::string::npos);
    EXPECT_TRUE(ours.unknown_keys.empty());
  }
}

TEST(Network, EveryBundledNetworkLoadsCleanly) {
  const auto names = list_networks(data_dir());
  for (const char* expected :
       {"primus_mi300x", "primus_mi325x", "primus_mi350x", "primus_mi355x", "mi250x_4x200g",
        "mi300x_ib400", "mi325x_roce400", "mi350x_roce400", "mi355x_pollara400", "a100_ib200",
        "h100_ib400", "h200_ib400", "h800_ib400", "b200_ib400", "gb200_nvl72", "tpu_v4_ici",
        "tpu_v5e_ici", "tpu_v5p_ici", "tpu_v6e_ici"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const NetworkSpec n = load_network(name, data_dir());
    EXPECT_EQ(n.name, name);
    EXPECT_TRUE(n.unknown_keys.empty());
    EXPECT_FALSE(n.source.empty());
  }
}

TEST(Network, PlatformFactsFromHardwareNotes) {
  const NetworkSpec mi300 = load_network("mi300x_ib400", data_dir());
  EXPECT_DOUBLE_EQ(mi300.node_bw_gb_per_s, 7 * 64.0);  // 7 xGMI links x 64 GB/s
  EXPECT_EQ(mi300.node_topology, "mesh");
  // Plateau 0.70 x 448 = 313.6 GB/s vs measured 313-316 GB/s (rccl-tests, 8x MI300X).
  EXPECT_NEAR(mi300.bw_eff * mi300.node_bw_gb_per_s, 315.0, 2.0);
  EXPECT_DOUBLE_EQ(mi300.pod_bw_gb_per_s, 400.0 / 8.0);  // 400 Gb/s NIC
  const NetworkSpec h100 = load_network("h100_ib400", data_dir());
  EXPECT_DOUBLE_EQ(h100.node_bw_gb_per_s, 450.0);
  EXPECT_EQ(h100.node_topology, "switch");
  EXPECT_NEAR(h100.bw_eff * h100.node_bw_gb_per_s, 370.0, 2.0);  // NCCL maintainer's 370
  const NetworkSpec a100 = load_network("a100_ib200", data_dir());
  EXPECT_DOUBLE_EQ(a100.pod_bw_gb_per_s, 200.0 / 8.0);
  EXPECT_NEAR(a100.bw_eff * a100.node_bw_gb_per_s, 231.6, 0.5);  // Azure 8x A100 plateau
  const NetworkSpec gb200 = load_network("gb200_nvl72", data_dir());
  EXPECT_EQ(gb200.node_size, 72);
  EXPECT_EQ(gb200.gpus_per_tray, 4);
  EXPECT_DOUBLE_EQ(gb200.node_bw_gb_per_s, 900.0);
}

TEST(Network, FlatFilesAndStringCoercionLikePrimus) {
  ScratchDir dir;
  const std::string path = dir.write("flat.yaml",
                                     "node_bw: \"448\"\n"
                                     "node_size: \"1e1\"\n"
                                     "pod_size: 6.4e1\n"
                                     "nics_per_node: ~\n"
                                     "switch_topology: \"yes\"\n"
                                     "bw_eff: '0.5'\n"
                                     "ar_warmup_chunk_bytes: 1.6e7\n"
                                     "gpus_per_tray: 4\n");
  const NetworkSpec n = load_network(path, data_dir());
  EXPECT_DOUBLE_EQ(n.node_bw_gb_per_s, 448.0);
  EXPECT_EQ(n.node_size, 10);
  EXPECT_EQ(n.pod_size, 64);
  EXPECT_EQ(n.nics_per_node, 0);  // None -> GPUs per node, decided by the job
  EXPECT_TRUE(n.switch_topology);
  EXPECT_DOUBLE_EQ(n.bw_eff, 0.5);
  EXPECT_DOUBLE_EQ(n.ar_warmup_chunk_bytes, 1.6e7);
  EXPECT_EQ(n.gpus_per_tray, 4);
  EXPECT_EQ(n.name, "flat");
  for (const auto& [text, expected] : std::vector<std::pair<std::string, bool>>{{"on", true},
                                                                                {"1", true},
                                                                                {"TRUE", true},
                                                                                {"off", false},
                                                                                {"0", false},
                                                                                {"no", false}}) {
    const std::string p =
        dir.write("b.yaml", "hardware_config:\n  switch_topology: " + text + "\n");
    EXPECT_EQ(load_network(p, data_dir()).switch_topology, expected) << text;
  }
}

// projector's own collective-model keys (cost/collective.h) load next to Primus' keys.
TEST(Network, ProjectorCollectiveKeysLoad) {
  ScratchDir dir;
  const std::string path = dir.write("ext.yaml",
                                     "hardware_config:\n"
                                     "  node_bw: 450\n"
                                     "  coll_base_lat_us: 7.5\n"
                                     "  ll128_enabled: off\n"
                                     "  nvls_algbw_eff: 0.6\n"
                                     "  scaleout_base_lat_us: 30\n");
  const NetworkSpec n = load_network(path, data_dir());
  EXPECT_TRUE(n.unknown_keys.empty());
  EXPECT_DOUBLE_EQ(n.coll_base_lat_us, 7.5);
  EXPECT_FALSE(n.ll128_enabled);
  EXPECT_DOUBLE_EQ(n.nvls_algbw_eff, 0.6);
  EXPECT_DOUBLE_EQ(n.scaleout_base_lat_us, 30.0);
}

TEST(Network, UnknownKeysAreReportedNotFatal) {
  ScratchDir dir;
  const std::string path = dir.write("u.yaml",
                                     "vendor_note: hello\n"
                                     "hardware_config:\n"
                                     "  node_bw: 300\n"
                                     "  node_bandwidth: 300\n");
  const NetworkSpec n = load_network(path, data_dir());
  EXPECT_DOUBLE_EQ(n.node_bw_gb_per_s, 300.0);
  EXPECT_EQ(n.unknown_keys, (std::vector<std::string>{"vendor_note", "node_bandwidth"}));
}

TEST(Network, BadValuesNameFileLineAndKey) {
  ScratchDir dir;
  struct Case {
    std::string body;
    std::string bad_line;
    std::string key;
  };
  const Case cases[] = {
      {"hardware_config:\n  node_bw: 448\n  node_size: 1.5\n", "node_size",
       "hardware_config.node_size"},
      {"hardware_config:\n  switch_topology: maybe\n", "switch_topology",
       "hardware_config.switch_topology"},
      {"hardware_config:\n  node_lat: 0.45\n  bw_eff: fast\n", "bw_eff", "hardware_config.bw_eff"},
      {"hardware_config:\n  node_topology: ring\n", "node_topology",
       "hardware_config.node_topology"},
      {"hardware_config:\n  bw_eff: 1.5\n", "bw_eff", "hardware_config.bw_eff"},
      {"hardware_config:\n  pod_bw: [1, 2]\n", "pod_bw", "hardware_config.pod_bw"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    const std::string path = dir.write("bad.yaml", c.body);
    try {
      load_network(path, data_dir());
      ADD_FAILURE() << "expected InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, path);
      EXPECT_EQ(e.where().line, line_of(c.body, c.bad_line + ":"));
      EXPECT_EQ(e.key(), c.key);
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
}

TEST(Network, SyntaxErrorsCarryTheLine) {
  ScratchDir dir;
  const std::string path = dir.write("syntax.yaml", "hardware_config:\n  node_bw: [448\n");
  try {
    load_network(path, data_dir());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_GE(e.where().line, 2);
  }
  EXPECT_THROW(load_network(dir.path() + "/missing.yaml", data_dir()), InputError);
}

}  // namespace
}  // namespace projector
