// Hardware descriptions: accelerators (compute, memory, calibration) and networks (the collective
// model's parameters). Loaded from data/hardware/*.yaml; see docs/hardware.md for the file format.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "projector/model/dtype.h"

namespace projector {

// A calibration value together with where it came from (a measurement, a vendor figure, a fit).
struct Sourced {
  double value = 0.0;
  std::string source;  // e.g. "hardware.md 3.2: MAMF 794.5/989" or "fit: validate set, 2026-11"
};

// Per-dtype table indexed by static_cast<int>(Dtype).
using DtypeTable = std::array<double, 7>;

struct AcceleratorSpec {
  std::string name;                  // catalogue key, e.g. "mi300x"
  std::string display_name;          // e.g. "AMD Instinct MI300X"
  std::string vendor;                // AMD, NVIDIA, Google
  std::string arch;                  // gfx942, sm90, ...
  std::vector<std::string> aliases;  // accepted by --gpu-arch / --hardware

  DtypeTable peak_tflops{};  // dense peak per dtype at boost clock; 0 = unsupported
  int compute_units = 0;     // CUs / SMs / TensorCores
  int dies = 1;              // XCDs / GCDs seen by one kernel
  double boost_clock_mhz = 0.0;
  double sustained_clock_mhz = 0.0;  // typical clock under GEMM load (power managed); 0 = boost
  double hbm_bytes = 0.0;
  double hbm_bw_bytes_per_s = 0.0;
  double l2_bytes = 0.0;
  double llc_bytes = 0.0;  // MALL / Infinity Cache; 0 = none
  double lds_bytes_per_cu = 0.0;
  int default_gpus_per_node = 8;
  double scaleup_bw_bytes_per_s = 0.0;  // per GPU, one direction
  std::string scaleup_topology;         // "switch" (NVSwitch) or "mesh" (xGMI)

  // Calibration: achievable fractions and fixed overheads, each with its source.
  struct Calibration {
    DtypeTable gemm_peak_fraction{};  // best large-GEMM throughput / peak, per dtype
    Sourced attention_fwd_fraction;   // flash-attention forward, fraction of the dtype peak
    Sourced attention_bwd_fraction;
    Sourced hbm_elementwise_fraction;  // streaming elementwise ops (norm, act, residual, rope)
    Sourced hbm_permute_fraction;      // gather/scatter-like ops (MoE permute)
    Sourced hbm_optimizer_fraction;    // optimizer step
    Sourced kernel_launch_s;
    Sourced runtime_context_bytes;        // CUDA/HIP context and allocator pools
    Sourced comm_buffer_bytes_per_group;  // NCCL/RCCL buffers per communicator
    Sourced workspace_bytes;              // cuBLAS/hipBLASLt workspace
    Sourced fragmentation_fraction;       // allocator rounding, point estimate (of dynamic memory)
    Sourced fragmentation_upper_fraction;
    Sourced comm_compute_interference;  // slowdown of compute while a collective overlaps it
  } calibration;

  double peak_flops(Dtype d) const { return peak_tflops[static_cast<int>(d)] * 1e12; }
};

// The collective model's inputs. Field names are Primus' `hardware_config:` keys with units added;
// the loader accepts the Primus keys unchanged (node_bw in GB/s, *_lat in microseconds).
struct NetworkSpec {
  std::string name;
  std::string source;
  double node_bw_gb_per_s = 1024.0;  // intra-node per-GPU bandwidth (raw, before bw_eff)
  double node_lat_us = 0.45;
  double pod_bw_gb_per_s = 50.0;  // per NIC
  double pod_lat_us = 2.0;
  double cluster_bw_gb_per_s = 25.0;
  double cluster_lat_us = 10.0;
  int node_size = 0;      // 0: GPUs per node
  int pod_size = 0;       // 0: the whole job
  int nics_per_node = 0;  // 0: GPUs per node
  bool switch_topology = true;
  std::string node_topology = "switch";  // "switch" or "mesh"
  double bw_eff = 0.70;
  double p2p_bw_eff = 0.80;
  double hbm_latency_us = 0.09;
  double write_latency_us = 0.28;
  double write_resp_us = 0.09;
  double kernel_launch_latency_us = 2.8;
  double vector_flops = 3.2e12;
  double rccl_overhead_us = 200.0;
  double ar_overlap_factor = 0.9;
  double ar_warmup_chunk_bytes = 33554432.0;
  double nic_rdma_setup_us = 260.0;
  double nic_warmup_bytes = 33554432.0;
  double a2a_peer_lat_us = 0.45;
  double a2a_intra_sync_overhead_us = 50.0;
  double a2a_intra_node_peer_lat_us = 2.5;
  double a2a_mesh_contention = 0.12;
  double a2a_rccl_overhead_us = 150.0;
  double a2a_remote_contention = 0.04;
  int gpus_per_tray = 0;                  // accepted for Primus compatibility; informational
  std::vector<std::string> unknown_keys;  // keys the loader did not recognise (warned)
};

}  // namespace projector
