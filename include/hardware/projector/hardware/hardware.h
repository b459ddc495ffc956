// Hardware descriptions: accelerators (compute, memory, calibration) and networks (the collective
// model's parameters). Loaded from data/hardware/*.yaml; see docs/hardware.md for the file format.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "projector/util/dtype.h"

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
  std::string status;                // "shipping" or "announced"
  // The catalogue entry whose calibration this one reuses (`derived_from:`); empty when the
  // calibration is this part's own. Every report says so (calibration_note()).
  std::string derived_from;
  int devices_per_chip = 1;  // framework devices per chip (TPU7x: 2 JAX devices, one per die)

  DtypeTable peak_tflops{};  // dense peak per dtype at boost clock; 0 = unsupported
  // Published dense peaks of formats the cost models do not price (fp64, fp6, mxfp6, mxfp4,
  // nvfp4, int8 in TOP/s); sources under "peak_tflops.<format>". 0 = unsupported / unpublished.
  struct ExtraPeak {
    std::string format;
    double tflops = 0.0;
  };
  std::vector<ExtraPeak> extra_peak_tflops;
  int compute_units = 0;  // CUs / SMs / TensorCores; 0 = unpublished (roofline GEMM pricing)
  int dies = 1;           // XCDs / GCDs seen by one kernel
  double boost_clock_mhz = 0.0;
  double sustained_clock_mhz = 0.0;  // typical clock under GEMM load (power managed); 0 = boost
  // Board power (TDP / typical board power, W): what a device draws while it computes (an upper
  // end: measured training draw is 76-87 % of it, docs/hardware.md EN1-EN2); 0 = unpublished (no
  // energy figure).
  double board_power_w = 0.0;
  // What a device holding a job draws while it runs no kernel (pipeline bubbles, waits), measured;
  // 0 = unpublished (a run's energy is then priced at board power throughout).
  double idle_power_w = 0.0;
  double hbm_bytes = 0.0;
  double hbm_bw_bytes_per_s = 0.0;
  double l2_bytes = 0.0;
  double llc_bytes = 0.0;  // MALL / Infinity Cache; 0 = none
  double lds_bytes_per_cu = 0.0;
  int default_gpus_per_node = 8;
  double scaleup_bw_bytes_per_s = 0.0;  // per GPU, one direction
  std::string scaleup_topology;         // "switch" (NVSwitch), "mesh" (xGMI) or "torus" (TPU ICI)
  // Facts about the fabrics; the collective model reads the network file, not these.
  int scaleup_domain = 0;                    // GPUs/chips in one scale-up domain; 0 = unknown
  int scaleup_links = 0;                     // scale-up links per GPU/chip; 0 = unknown
  double scaleup_link_bw_bytes_per_s = 0.0;  // per link, one direction; 0 = unknown
  int torus_dims = 0;                        // 2 or 3 for a torus fabric, else 0
  std::string torus_wraparound;  // always / full_axis / cube_multiples / none; "" = not a torus
  double scaleout_bw_bytes_per_s = 0.0;  // NIC / DCN bandwidth per GPU/chip, one direction
  // Systolic matrix units (TPU MXU): the array's side (128 or 256). GEMMs are priced by the
  // systolic model (K and N padded to it) instead of the GPU tile/wave model; 0 = not systolic.
  int matrix_unit_dim = 0;
  // GPU GEMM kernels (tile/wave model): whether a tile's epilogue (the output store) overlaps the
  // next tile's main loop on the same CU (`gemm_epilogue: overlapped`: Blackwell's double-buffered
  // TMEM accumulators) or runs before it (`per_tile`, the default: each tile's store is paid).
  bool gemm_epilogue_overlapped = false;
  // Host link (PCIe / host DMA) per GPU/chip, one direction: activation and optimizer offload to
  // host memory; 0 = unknown.
  double host_bw_bytes_per_s = 0.0;
  std::string default_network;  // network catalogue name used when none is given
  std::string file;             // the YAML file it was loaded from (empty if built in code)

  // Where each non-calibration fact came from, keyed by its field path in the YAML file
  // ("peak_tflops.bf16", "hbm_capacity", ...). Calibration values carry their own sources.
  struct FieldSource {
    std::string field;
    std::string source;
  };
  std::vector<FieldSource> sources;

  // Calibration: achievable fractions and fixed overheads, each with its source.
  struct Calibration {
    DtypeTable gemm_peak_fraction{};  // best large-GEMM throughput / (peak x sustained/boost)
    std::array<std::string, 7> gemm_peak_fraction_source{};  // indexed like gemm_peak_fraction
    Sourced attention_fwd_fraction;  // flash-attention forward, fraction of the dtype peak
    Sourced attention_bwd_fraction;
    // The same for FlashAttention-2-class kernels (0: as above).
    Sourced attention_fa2_fwd_fraction;
    Sourced attention_fa2_bwd_fraction;
    // FP8 attention (Transformer Engine's fp8_dpa: cuDNN's FP8 kernels): per-tensor-scaled FP8
    // and MXFP8, fractions of that dtype's peak (0: not measured; such attention is priced in
    // BF16, an upper bound, and the job says so).
    Sourced attention_fp8_fwd_fraction;
    Sourced attention_fp8_bwd_fraction;
    Sourced attention_mxfp8_fwd_fraction;
    Sourced attention_mxfp8_bwd_fraction;
    Sourced hbm_elementwise_fraction;  // streaming elementwise ops (norm, act, residual, rope)
    Sourced hbm_permute_fraction;      // gather/scatter-like ops (MoE permute)
    // Embedding-row gathers and scatters (TBE lookups, their fused optimizer update): random rows
    // of a large table (0: not calibrated, cost/memory_ops.h says the fallback).
    Sourced hbm_gather_fraction;
    Sourced hbm_optimizer_fraction;  // optimizer step
    Sourced hbm_loss_fraction;       // cross-entropy loss passes (Primus charges these separately)
    Sourced kernel_launch_s;
    Sourced runtime_context_bytes;        // CUDA/HIP context and allocator pools
    Sourced comm_buffer_bytes_per_group;  // NCCL/RCCL buffers per communicator
    Sourced workspace_bytes;              // cuBLAS/hipBLASLt workspace
    // What the framework's allocator reserves beyond the replay of the allocation timeline
    // (docs/memory.md "Allocator"), as a fraction of dynamic memory: point and upper bound, for
    // fixed segments (and XLA), and for PyTorch's expandable segments (0: the fixed values).
    Sourced fragmentation_fraction;
    Sourced fragmentation_upper_fraction;
    Sourced fragmentation_expandable_fraction;
    Sourced fragmentation_expandable_upper_fraction;
    Sourced comm_compute_interference;  // slowdown of compute while a collective overlaps it
    // Added for the cost models (cost/): 0 means "not calibrated" and each model says its fallback.
    Sourced grouped_gemm_fraction;  // grouped (MoE) GEMM main-loop speed relative to dense (0: 1.0)
    // The same for 8-bit and 4-bit (fp8, MXFP8, FP4) scaled grouped GEMMs (0:
    // grouped_gemm_fraction).
    Sourced grouped_gemm_fraction_fp8;
    Sourced kernel_fixed_s;  // per-kernel prologue/epilogue beyond launch (0: none)
    // The node's host CPU: its time to issue one framework op relative to the x86 host the
    // framework profiles' host costs were measured on (FrameworkProfile host_*_us; 0: 1.0).
    Sourced host_dispatch_scale;
    // Block-scaled fp8 GEMMs (DeepSeek 1 x 128 / 128 x 128 scales): their own fraction of the
    // fp8 peak (0: priced like per-tensor fp8, gemm_peak_fraction.fp8).
    Sourced gemm_fp8_blockwise_fraction;
    // Bytes one SM (CU) of a DeepEP-class normal dispatch / combine kernel moves per second
    // (DeepEP's byte count: one copy per destination GPU): with few SMs the kernel is bound by
    // its SMs' copy loops, not by the links (0: not measured, the links alone bound it).
    Sourced ep_kernel_unit_bytes_per_s;
    // Mamba-2's chunked SSD scan (mamba_ssm's Triton chunk kernels): the main-loop speed of its
    // chunk products relative to the dense GEMM model (GemmShape::ssd_chunk; 0: not measured on
    // this part, priced at the dense rate, an upper bound the job warns about).
    Sourced ssd_scan_fraction;
    // Fused attention: each workgroup's fixed work (Q tile load, softmax finalisation, output
    // store, pipeline fill) in units of one key tile's main-loop time (0: none).
    Sourced attention_workgroup_tiles;
    // Every fraction above prices a kernel as it runs in isolation (scripts/fit_kernels.py fits
    // them on data/kernels); what a training step adds between kernels is the framework's
    // (FrameworkProfile::kernel_gap_fraction).
  } calibration;

  double peak_flops(Dtype d) const { return peak_tflops[static_cast<int>(d)] * 1e12; }
  // "efficiency borrowed from b200, not measured on gb300" for a derived entry, else "".
  std::string calibration_note() const {
    if (derived_from.empty()) return {};
    return "efficiency borrowed from " + derived_from + ", not measured on " + name;
  }
  // The source recorded for `field`, or an empty string.
  const std::string& source_of(const std::string& field) const {
    static const std::string kNone;
    for (const auto& s : sources) {
      if (s.field == field) return s.source;
    }
    return kNone;
  }
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
  int gpus_per_tray = 0;  // accepted for Primus compatibility; informational

  // --- projector's own collective model (cost/collective.h). Primus' keys above keep their
  // meaning for the Primus-parity model (cost/primus_collectives.h). Defaults are generic; the
  // per-network values are fitted to measured nccl/rccl-tests curves (see data/hardware/networks).
  double coll_base_lat_us = 5.0;      // fixed cost of any collective: launch + sync
  double ll_step_lat_us = 0.6;        // per scale-up ring step, LL protocol (8 B per 4 B payload)
  double ll128_step_lat_us = 1.2;     // per step, LL128 (128 B per 120 B payload)
  double simple_step_lat_us = 3.0;    // per step, Simple protocol (full bandwidth)
  bool ll128_enabled = true;          // library uses LL128 on this fabric
  double scaleup_bw_eff = 0.0;        // bulk fraction of node_bw reached by rings; 0: bw_eff
  double scaleout_bw_eff = 0.0;       // fraction of pod/cluster bw per NIC reached; 0: bw_eff
  double scaleout_step_lat_us = 0.0;  // per inter-node step; 0: pod_lat (cluster_lat across pods)
  double scaleout_base_lat_us = 0.0;  // fixed extra cost of a multi-node collective (proxy, RDMA)
  double nvls_algbw_eff = 0.0;        // > 0: in-switch all-reduce (NVLS), algbw = node_bw x this
  double hier_overlap = 0.9;          // pipelining of intra/inter legs in hierarchical algorithms
  // Torus fabric (TPU ICI) between the chips of one slice and the data-centre network (DCN)
  // between slices; used for groups placed on a torus (cost/collective.h TorusSpan). 0: no torus.
  double ici_link_bw_gb_per_s = 0.0;   // one ICI link, one direction
  double ici_bw_eff = 0.0;             // fraction of the link rate collectives reach (0: bw_eff)
  double ici_hop_lat_us = 1.0;         // per torus hop of a ring step
  double ici_base_lat_us = 2.0;        // fixed cost of one collective
  double core_link_bw_gb_per_s = 0.0;  // between the devices (dies) of one chip, one direction
  double dcn_bw_gb_per_s = 0.0;        // DCN per chip, one direction (0: pod_bw / chips per NIC)
  double dcn_bw_eff = 0.0;             // fraction reached (0: bw_eff)
  double dcn_lat_us = 20.0;            // per DCN collective step
  std::string file;                    // the YAML file it was loaded from (empty if built in code)
  std::vector<std::string> unknown_keys;  // keys the loader did not recognise (warned)
};

}  // namespace projector
