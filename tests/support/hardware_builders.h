// Accelerator and network descriptions built in code from the facts in
// /work/shared/reference/hardware_specs.yaml, so cost-model tests do not depend on the YAML loader
// or the data files. Calibration values are the same as the data files should carry; each says
// where it comes from.
#pragma once

#include "projector/hardware/hardware.h"

namespace projector::testing {

inline void set_peak(AcceleratorSpec& a, Dtype d, double tflops) {
  a.peak_tflops[static_cast<int>(d)] = tflops;
}
inline void set_gemm_fraction(AcceleratorSpec& a, Dtype d, double f) {
  a.calibration.gemm_peak_fraction[static_cast<int>(d)] = f;
}

// NVIDIA H100 SXM: 132 SMs, 1830 MHz, 3.35 TB/s, 50 MB L2, 228 KB smem (devices.h100_sxm).
inline AcceleratorSpec h100_sxm() {
  AcceleratorSpec a;
  a.name = "h100_sxm";
  a.vendor = "NVIDIA";
  a.arch = "sm90";
  set_peak(a, Dtype::kFp32, 67.0);
  set_peak(a, Dtype::kTf32, 494.5);
  set_peak(a, Dtype::kBf16, 989.0);
  set_peak(a, Dtype::kFp16, 989.0);
  set_peak(a, Dtype::kFp8, 1979.0);
  a.compute_units = 132;
  a.boost_clock_mhz = 1830.0;
  a.hbm_bytes = 80e9;
  a.hbm_bw_bytes_per_s = 3.35e12;
  a.l2_bytes = 50e6;
  a.lds_bytes_per_cu = 228e3;
  a.scaleup_bw_bytes_per_s = 450e9;
  a.scaleup_topology = "switch";
  auto& c = a.calibration;
  // cuBLASLt FP8 32768^3 1382.2 TFLOP/s (Azure ND H100 v5) / 1979.
  set_gemm_fraction(a, Dtype::kFp8, 1382.2 / 1979.0);
  // MAMF BF16 794.5 / 989 (stas00).
  set_gemm_fraction(a, Dtype::kBf16, 794.5 / 989.0);
  set_gemm_fraction(a, Dtype::kFp16, 794.5 / 989.0);
  c.attention_fwd_fraction = {0.75, "FlashAttention-3 abstract: 740 TFLOP/s FP16, 75% of H100"};
  c.attention_bwd_fraction = {0.55,
                              "assumed: backward ~0.75x the forward efficiency (no H100 bwd "
                              "measurement in the references)"};
  c.hbm_elementwise_fraction = {2.90 / 3.35, "Azure STREAM copy 2.90 / 3.35 TB/s"};
  c.kernel_launch_s = {1.5e-6, "back-to-back kernel start/end gap"};
  return a;
}

// H200: H100 compute, 4.8 TB/s, 141 GB (devices.h200_sxm).
inline AcceleratorSpec h200_sxm() {
  AcceleratorSpec a = h100_sxm();
  a.name = "h200_sxm";
  a.hbm_bytes = 141e9;
  a.hbm_bw_bytes_per_s = 4.8e12;
  // cuBLASLt FP8 16384^3 1366.3 (Azure ND H200 v5) / 1979.
  set_gemm_fraction(a, Dtype::kFp8, 1366.3 / 1979.0);
  a.calibration.hbm_elementwise_fraction = {4.01 / 4.8, "Azure STREAM copy 4.01 / 4.8 TB/s"};
  return a;
}

// GB200 (per GPU): 2500/5000/10000 dense TFLOP/s, 8 TB/s, 126 MB L2, 2062 MHz. The SM count is
// not in the references for GB200; B200's device query reports 148 SMs (pytorch/ao #4002).
inline AcceleratorSpec gb200() {
  AcceleratorSpec a;
  a.name = "gb200";
  a.vendor = "NVIDIA";
  a.arch = "sm100";
  set_peak(a, Dtype::kFp32, 80.0);
  set_peak(a, Dtype::kTf32, 1250.0);
  set_peak(a, Dtype::kBf16, 2500.0);
  set_peak(a, Dtype::kFp16, 2500.0);
  set_peak(a, Dtype::kFp8, 5000.0);
  set_peak(a, Dtype::kMxfp8, 5000.0);
  set_peak(a, Dtype::kFp4, 10000.0);
  a.compute_units = 148;
  a.boost_clock_mhz = 2062.0;
  a.hbm_bytes = 186e9;
  a.hbm_bw_bytes_per_s = 8e12;
  a.l2_bytes = 126e6;
  a.lds_bytes_per_cu = 228e3;
  a.scaleup_topology = "switch";
  // cuBLASLt FP8 16384^3 2906.9 / 5000; FP4 16384^3 7627.6 / 10000 (Azure ND GB200 v6); BF16 MAMF
  // 1822 / 2500 (stas00).
  set_gemm_fraction(a, Dtype::kFp8, 2906.9 / 5000.0);
  set_gemm_fraction(a, Dtype::kMxfp8, 2906.9 / 5000.0);
  set_gemm_fraction(a, Dtype::kFp4, 7627.6 / 10000.0);
  set_gemm_fraction(a, Dtype::kBf16, 1822.0 / 2500.0);
  a.calibration.kernel_launch_s = {1.5e-6, "back-to-back kernel start/end gap"};
  return a;
}

// A100 80 GB SXM: 312 TFLOP/s, 108 SMs, 1410 MHz, 2.039 TB/s, 40 MB L2, 164 KB smem.
inline AcceleratorSpec a100_80gb() {
  AcceleratorSpec a;
  a.name = "a100_80gb_sxm";
  a.vendor = "NVIDIA";
  a.arch = "sm80";
  set_peak(a, Dtype::kFp32, 19.5);
  set_peak(a, Dtype::kTf32, 156.0);
  set_peak(a, Dtype::kBf16, 312.0);
  set_peak(a, Dtype::kFp16, 312.0);
  a.compute_units = 108;
  a.boost_clock_mhz = 1410.0;
  a.hbm_bytes = 80e9;
  a.hbm_bw_bytes_per_s = 2.039e12;
  a.l2_bytes = 40e6;
  a.lds_bytes_per_cu = 164e3;
  a.scaleup_topology = "switch";
  // cuBLASLt FP16 16384^3 256.5 / 312 (Azure ND A100 v4); BF16 MAMF 271.2 / 312 (stas00).
  set_gemm_fraction(a, Dtype::kFp16, 256.5 / 312.0);
  set_gemm_fraction(a, Dtype::kBf16, 271.2 / 312.0);
  // FlashAttention-2 on A100 reaches 50-73% of peak (FA2 paper via review); 0.70 = its upper
  // range for the forward at head dim 128.
  a.calibration.attention_fwd_fraction = {0.70, "FA2 paper: up to 73% of A100 peak (forward)"};
  a.calibration.attention_bwd_fraction = {0.55, "FA2 paper: backward below the forward (50-73%)"};
  a.calibration.hbm_elementwise_fraction = {1.61 / 2.0, "Azure STREAM copy 1.61 / 2.0 TB/s"};
  a.calibration.kernel_launch_s = {1.5e-6, "back-to-back kernel start/end gap"};
  return a;
}

// AMD MI300X: 1307.4 BF16 / 2614.9 FP8, 304 CUs at 2100 MHz boost, 5.3 TB/s, 64 KiB LDS,
// 4 MiB L2 per XCD (32 MiB), 256 MiB Infinity Cache. Under MFMA load the clock drops to ~1207 MHz
// (AMD MAF blog median for BF16).
inline AcceleratorSpec mi300x() {
  AcceleratorSpec a;
  a.name = "mi300x";
  a.vendor = "AMD";
  a.arch = "gfx942";
  set_peak(a, Dtype::kFp32, 163.4);
  set_peak(a, Dtype::kTf32, 653.7);
  set_peak(a, Dtype::kBf16, 1307.4);
  set_peak(a, Dtype::kFp16, 1307.4);
  set_peak(a, Dtype::kFp8, 2614.9);
  a.compute_units = 304;
  a.dies = 8;
  a.boost_clock_mhz = 2100.0;
  a.sustained_clock_mhz = 1207.0;
  a.hbm_bytes = 192e9;
  a.hbm_bw_bytes_per_s = 5.3e12;
  a.l2_bytes = 32.0 * 1048576.0;
  a.llc_bytes = 256.0 * 1048576.0;
  a.lds_bytes_per_cu = 65536.0;
  a.scaleup_bw_bytes_per_s = 448e9;
  a.scaleup_topology = "mesh";
  // At the sustained clock the BF16 peak is 1307.4 x 1207/2100 = 751.4. MAF 708 is 0.94 of that
  // (AMD's "software efficiency"), hipBLASLt on LLM shapes averages 607 (0.81): 0.87 is their
  // geometric mean, so both stay within ~8%.
  set_gemm_fraction(a, Dtype::kBf16, 0.87);
  set_gemm_fraction(a, Dtype::kFp16, 0.87);
  // FP8 MAF 1273 at 1230 MHz; at 1207 MHz the FP8 peak is 1502.9: 0.85 of the sustained peak.
  set_gemm_fraction(a, Dtype::kFp8, 1273.0 / 1502.9);
  // AITER FA forward "~450 TFLOP/s" = 0.60 of the 751.4 sustained BF16 peak.
  a.calibration.attention_fwd_fraction = {0.60, "Primus-Turbo: AITER FA fwd ~450 TFLOP/s"};
  a.calibration.attention_bwd_fraction = {
      0.35, "assumed: AMD backward ~0.6x forward (HipKittens: AITER bwd ~30% of best kernel)"};
  a.calibration.hbm_elementwise_fraction = {0.566, "Primus _ACTIVATION_BW_FRACTION"};
  a.calibration.hbm_permute_fraction = {0.057, "Primus _PERMUTE_BW_FRACTION"};
  a.calibration.hbm_optimizer_fraction = {0.21, "Primus optimizer eta"};
  a.calibration.hbm_loss_fraction = {0.65, "Primus loss _BW_EFFICIENCY"};
  a.calibration.grouped_gemm_fraction = {475.4 / 607.4,
                                         "CK grouped GEMM avg 475.4 vs hipBLASLt dense 607.4"};
  a.calibration.kernel_launch_s = {2.8e-6, "Primus launch latency"};
  return a;
}

// AMD MI355X: 2500 BF16 / 5000 FP8 / 10100 FP4, 256 CUs at 2400 MHz, 8 TB/s, 160 KiB LDS.
inline AcceleratorSpec mi355x() {
  AcceleratorSpec a;
  a.name = "mi355x";
  a.vendor = "AMD";
  a.arch = "gfx950";
  set_peak(a, Dtype::kFp32, 157.3);
  set_peak(a, Dtype::kBf16, 2500.0);
  set_peak(a, Dtype::kFp16, 2500.0);
  set_peak(a, Dtype::kFp8, 5000.0);
  set_peak(a, Dtype::kMxfp8, 5000.0);
  set_peak(a, Dtype::kFp4, 10100.0);
  a.compute_units = 256;
  a.dies = 8;
  a.boost_clock_mhz = 2400.0;
  a.hbm_bytes = 288e9;
  a.hbm_bw_bytes_per_s = 8e12;
  a.l2_bytes = 32.0 * 1048576.0;
  a.llc_bytes = 256.0 * 1048576.0;
  a.lds_bytes_per_cu = 160.0 * 1024.0;
  a.scaleup_topology = "mesh";
  // MAMF BF16 1565 / 2500 (stas00; no sustained clock published, so folded into the fraction).
  set_gemm_fraction(a, Dtype::kBf16, 1565.0 / 2500.0);
  set_gemm_fraction(a, Dtype::kFp16, 1565.0 / 2500.0);
  a.calibration.kernel_launch_s = {2.8e-6, "Primus launch latency"};
  return a;
}

// ---------------------------------------------------------------- networks
// Primus' CollectiveArgs defaults (collective_args.py): NetworkSpec's own defaults.
inline NetworkSpec primus_default_network() {
  NetworkSpec n;
  n.name = "primus-default";
  return n;
}

// Primus examples/hardware_configs/mi355x.yaml (hardware_specs.yaml primus_hardware_configs).
inline NetworkSpec primus_mi355x_network() {
  NetworkSpec n;
  n.name = "primus-mi355x";
  n.node_bw_gb_per_s = 537.6;
  n.node_size = 8;
  n.pod_size = 64;
  n.nics_per_node = 8;
  n.switch_topology = false;
  n.node_topology = "mesh";
  n.vector_flops = 157.0e12;
  return n;
}

inline NetworkSpec primus_mi300x_network() {
  NetworkSpec n = primus_mi355x_network();
  n.name = "primus-mi300x";
  n.node_bw_gb_per_s = 448.0;
  n.vector_flops = 163.0e12;
  return n;
}

// ---- networks for projector's collective model, fitted to the all-reduce busbw curves in
// hardware_specs.yaml collectives.allreduce_busbw_vs_size (fit: tests/cost/collective_test.cpp
// checks them; the data files carry the same values).

// 8x MI300X xGMI mesh, RCCL (mi300x_8gpu_1node): plateau 315.7 = 448 x 0.705.
inline NetworkSpec mi300x_xgmi_network() {
  NetworkSpec n;
  n.name = "mi300x-xgmi-rccl";
  n.node_bw_gb_per_s = 448.0;
  n.node_size = 8;
  n.node_topology = "mesh";
  n.switch_topology = false;
  n.scaleup_bw_eff = 0.705;
  n.coll_base_lat_us = 6.0;
  n.ll_step_lat_us = 0.30;
  n.ll128_step_lat_us = 2.5;
  n.simple_step_lat_us = 3.0;
  return n;
}

// Two MI300X nodes with 8x ConnectX-7 400G each (mi300x_16gpu_2node, RCCL 2.22.3).
inline NetworkSpec mi300x_cx7_network() {
  NetworkSpec n = mi300x_xgmi_network();
  n.name = "mi300x-cx7-rccl";
  n.pod_bw_gb_per_s = 50.0;
  n.nics_per_node = 8;
  n.scaleout_bw_eff = 0.80;
  n.hier_overlap = 1.0;
  n.scaleout_base_lat_us = 20.0;
  n.scaleout_step_lat_us = 5.0;
  n.nic_rdma_setup_us = 300.0;
  n.nic_warmup_bytes = 64.0 * 1048576.0;
  n.ar_warmup_chunk_bytes = 32.0 * 1048576.0;
  return n;
}

// Two MI355X nodes with 8x Pollara 400 + ANP (mi355x_16gpu_2node_pollara, RCCL 2.26.6). The
// intra-node efficiency is MI300X's (no 1-node MI355X curve in the references).
inline NetworkSpec mi355x_pollara_network() {
  NetworkSpec n = mi300x_xgmi_network();
  n.name = "mi355x-pollara-rccl";
  n.node_bw_gb_per_s = 537.6;
  n.pod_bw_gb_per_s = 50.0;
  n.nics_per_node = 8;
  n.scaleout_bw_eff = 0.80;
  n.hier_overlap = 0.9;
  n.scaleout_base_lat_us = 40.0;
  n.scaleout_step_lat_us = 10.0;
  n.nic_rdma_setup_us = 0.0;
  n.ar_warmup_chunk_bytes = 64.0 * 1048576.0;
  return n;
}

// 8x H100 NVSwitch with NVLS (h100_8gpu_1node_nvls, NCCL 2.18.5): ring 0.80 x 450 = 360
// (maintainer: ~370), NVLS algbw 0.60 x 450 = 270 (maintainer: ~275).
inline NetworkSpec h100_nvswitch_network() {
  NetworkSpec n;
  n.name = "h100-nvswitch-nccl";
  n.node_bw_gb_per_s = 450.0;
  n.node_size = 8;
  n.node_topology = "switch";
  n.scaleup_bw_eff = 0.80;
  n.nvls_algbw_eff = 0.60;
  n.coll_base_lat_us = 20.0;
  n.ll_step_lat_us = 0.6;
  n.ll128_step_lat_us = 1.0;
  n.simple_step_lat_us = 8.0;
  n.pod_bw_gb_per_s = 50.0;
  n.nics_per_node = 8;
  return n;
}

// 8x A100 NVSwitch (a100_8gpu_1node, Azure NCCL 2.18.5): plateau 231.6 = 300 x 0.77.
inline NetworkSpec a100_nvswitch_network() {
  NetworkSpec n;
  n.name = "a100-nvswitch-nccl";
  n.node_bw_gb_per_s = 300.0;
  n.node_size = 8;
  n.node_topology = "switch";
  n.scaleup_bw_eff = 0.77;
  n.coll_base_lat_us = 10.0;
  n.ll_step_lat_us = 0.6;
  n.ll128_step_lat_us = 10.0;
  n.simple_step_lat_us = 14.0;
  n.pod_bw_gb_per_s = 25.0;
  n.nics_per_node = 8;
  return n;
}

}  // namespace projector::testing
