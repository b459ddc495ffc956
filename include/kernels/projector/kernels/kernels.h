// Published kernel and collective measurements (data/kernels/*.yaml, docs/kernels.md) and their
// check against the cost models: every row is priced by the same cost functions a projection
// calls (cost/gemm.h, cost/attention.h, cost/memory_ops.h, cost/collective.h) and compared with
// its measured time, per op class and accelerator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/hardware/hardware.h"
#include "projector/util/dtype.h"

namespace projector {

enum class KernelClass : std::uint8_t {
  kGemm,
  kGroupedGemm,
  kAttention,
  kMemory,
  kPermute,
  kEpDispatch,
  kCollective,
  kLinearAttention,  // the chunked gated delta rule (GDN): the workload's chunk GEMMs
};
std::string_view to_string(KernelClass c);

// What a row measured: a rate (TFLOP/s, GB/s, bus or algorithm bandwidth) or a time.
enum class KernelMeasure : std::uint8_t { kTflops, kTimeUs, kGbPerS, kBusBwGbPerS, kAlgBwGbPerS };

// The problem of one row; which fields apply depends on the class (docs/kernels.md).
struct KernelShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1, groups = 1;  // gemm, grouped_gemm
  // grouped_gemm with stated, unequal group sizes (a benchmark's jagged offsets): groups and m
  // follow from it; empty: m / groups rows each.
  std::vector<std::int64_t> m_per_group;
  std::int64_t seq_q = 0, seq_kv = 0, window = 0;               // attention
  int heads_q = 0, heads_kv = 0, head_dim = 0, head_dim_v = 0;  // attention
  bool causal = false;                                          // attention
  int state_dim = 0, chunk = 0;  // linear_attention mamba2_ssd: d_state and the chunk length
  std::int64_t tokens = 0, hidden = 0, topk = 1, experts = 0;  // permute, ep_dispatch
  int router_groups = 0, group_topk = 0;  // ep_dispatch: group-limited routing (0: none)
  int ep = 0, nodes = 1, ranks = 0, gpus_per_node = 0;  // ep_dispatch, collective
  int sms = 0;         // ep_dispatch: SMs / CUs the benchmark gave the kernel (0: not stated)
  double bytes = 0.0;  // memory, collective
  std::int64_t rows = 0, cols = 0;  // memory
  std::string pass;       // fwd | bwd | fwd_bwd (attention, grouped_gemm, linear_attention)
  std::string backend;    // attention kernel family (fa2, fa3, cudnn, ck, ...)
  std::string kind;       // memory: copy, rmsnorm_fwd, adam, ...; linear_attention: gdn, mamba2_ssd
  std::string impl;       // permute / ep_dispatch implementation
  std::string direction;  // permute | unpermute | both; dispatch | combine
  std::string op;         // collective: all_reduce, all_gather, ...
};

struct KernelRow {
  std::string id;
  std::string file;  // data/kernels/<class>.yaml it came from
  int line = 0;
  KernelClass op_class = KernelClass::kGemm;
  std::string accelerator;  // catalogue name
  std::string library;
  Dtype dtype = Dtype::kBf16;
  std::string dtype_name;  // as written (fp8 scaling and nvfp4 / mxfp4 kept for reports)
  std::string scaling;     // fp8: tensorwise | rowwise | blockwise | delayed
  KernelShape shape;
  KernelMeasure measure = KernelMeasure::kTimeUs;
  double measured_value = 0.0;
  std::string flops_convention;  // attention TFLOP/s: "fa" (FlashAttention's count)
  // On a part with several framework devices per chip (TPU7x: each TensorCore is a JAX device):
  // "device" (one device, priced on hardware/catalog.h device_share) or "chip"; required there.
  std::string measured_on;
  std::string url, location, quote, note;
};

// Every *.yaml file of `dir` (sorted by name). A malformed row is an InputError naming the file,
// line and key; duplicate ids across files too.
std::vector<KernelRow> load_kernel_rows(const std::string& dir);
std::vector<KernelRow> parse_kernel_rows(const std::string& yaml_text, const std::string& file);

// One row priced by the cost model. error_pct = 100 (measured time / predicted time - 1): the
// predicted rate's error, > 0 when the model is too fast (the sign convention of validate).
struct PricedKernelRow {
  KernelRow row;
  double predicted_s = 0.0;
  double measured_s = 0.0;
  double error_pct = 0.0;
  std::string model;    // the cost function and its inputs, e.g. "gemm_time 8192x8192x8192 bf16"
  std::string skipped;  // non-empty: why the row could not be priced (not in any statistic)
  // The peer baseline: Primus' own analytical collective model (cost/primus_collectives.h) on the
  // same row and network (its `hardware_config` keys), for all-reduce, all-gather,
  // reduce-scatter, all-to-all and send/recv rows; 0 when it does not price the row.
  double peer_predicted_s = 0.0;
  double peer_error_pct = 0.0;
};

// Prices `row` on `acc` (collective and EP rows on `net`).
PricedKernelRow price_kernel_row(const KernelRow& row, const AcceleratorSpec& acc,
                                 const NetworkSpec& net);

struct KernelClassStats {
  std::string op_class;
  std::string accelerator;
  int rows = 0;
  double median_abs_pct = 0.0;
  double p90_abs_pct = 0.0;
  double median_signed_pct = 0.0;
  std::string worst_id;
  double worst_pct = 0.0;
  int peer_rows = 0;                 // rows the peer baseline (Primus' model) priced
  double peer_median_abs_pct = 0.0;  // its median |error| on them
};

struct KernelCheck {
  std::vector<PricedKernelRow> rows;
  std::vector<KernelClassStats> classes;  // by op class, then accelerator
};

// Loads each named accelerator and its default network from `data_dir` once, prices every row
// and summarises. An accelerator missing from the catalogue is an InputError at the row.
KernelCheck check_kernels(const std::vector<KernelRow>& rows, const std::string& data_dir);

// The gate (docs/kernels.md): every class x accelerator with at least `min_rows` priced rows has
// median |error| <= max_median_pct and P90 |error| <= max_p90_pct. One line per failure.
std::vector<std::string> kernel_gate_failures(const KernelCheck& check, int min_rows = 5,
                                              double max_median_pct = 10.0,
                                              double max_p90_pct = 25.0);

// A class x accelerator known to fail the gate, with why (data/kernels/open_gaps.yaml): the gate
// names it apart from new failures, and a listed group that passes is reported as closed.
struct KernelGap {
  std::string op_class;
  std::string accelerator;
  std::string reason;
  int line = 0;
};
inline constexpr const char* kKernelGapsFile = "open_gaps.yaml";
// `dir`/open_gaps.yaml; an absent file is no gap. Malformed entries are InputErrors.
std::vector<KernelGap> load_kernel_gaps(const std::string& dir);

struct KernelGateResult {
  std::vector<std::string> failures;  // failing groups that are not open gaps
  std::vector<std::string> open;      // failing groups listed as open gaps (with the reason)
  std::vector<std::string> closed;    // listed gaps whose group passes (or has < 5 rows)
};
KernelGateResult kernel_gate(const KernelCheck& check, const std::vector<KernelGap>& gaps);

inline constexpr int kKernelsSchemaVersion = 1;
// {"schema_version", "classes": [...], "rows": [...]} (docs/json-schema.md).
std::string kernel_check_to_json(const KernelCheck& check);

}  // namespace projector
