// Pricing one published kernel row with the cost functions a projection calls, on the same
// shapes the workload builds (workload/build.cpp: a grouped GEMM's backward is a dgrad and an fp32
// wgrad grouped GEMM; the MoE permute moves 2 x routed bytes as a permute-class or row-gather
// memory op; EP dispatch is an all-to-all of the routed bytes over the EP group).
#include <fmt/format.h>

#include <cmath>

#include "projector/cost/attention.h"
#include "projector/cost/collective.h"
#include "projector/cost/gemm.h"
#include "projector/cost/linear_attention.h"
#include "projector/cost/memory_ops.h"
#include "projector/cost/moe_routing.h"
#include "projector/cost/primus_collectives.h"
#include "projector/kernels/kernels.h"
#include "projector/model/job.h"

namespace projector {

namespace {

// DeepEP / Megatron's FP8 dispatch wire format: 1 byte per element plus an fp32 scale per 128.
constexpr double kFp8WireBytes = 1.0 + 4.0 / 128.0;
constexpr double kNominalStreamBytes = 1e9;

struct Priced {
  double time_s = 0.0;
  double flops = 0.0;  // the FLOPs a TFLOP/s measurement divides by
  double bytes = 0.0;  // the bytes a GB/s measurement divides by
  double bus_factor = 1.0;
  std::string model;
  std::string skipped;
};

Priced skip(std::string why) {
  Priced p;
  p.skipped = std::move(why);
  return p;
}

Priced price_gemm(const AcceleratorSpec& acc, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return skip("gemm needs m, n and k");
  GemmShape g{s.m, s.n, s.k, std::max<std::int64_t>(s.batch, 1), r.dtype, Dtype::kBf16};
  g.blockwise = r.dtype == Dtype::kFp8 && r.scaling == "blockwise";
  Priced p;
  p.time_s = gemm_time(acc, g).time_s;
  p.flops = g.flops();
  p.model = fmt::format("gemm_time {}x{}x{} batch {} {}{}", s.m, s.n, s.k, g.batch, r.dtype_name,
                        g.blockwise ? " blockwise" : "");
  return p;
}

Priced price_grouped(const AcceleratorSpec& acc, const KernelRow& r) {
  const KernelShape& s = r.shape;
  const std::int64_t g = std::max<std::int64_t>(s.groups, 1);
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return skip("grouped_gemm needs m, n and k");
  const std::int64_t mg = (s.m + g - 1) / g;
  const bool jagged = !s.m_per_group.empty();
  // Stated group sizes price every group's tiles (the jagged tail tiles a benchmark pays);
  // the weight gradient, whose K is the group's rows, keeps the mean.
  const auto rows_x = [&](std::int64_t n, std::int64_t k) {
    return jagged ? grouped_gemm_time(acc, s.m_per_group, n, k, r.dtype).time_s
                  : grouped_gemm_time(acc, g, mg, n, k, r.dtype).time_s;
  };
  Priced p;
  p.time_s = rows_x(s.n, s.k);
  p.flops = 2.0 * static_cast<double>(s.m) * s.n * s.k;
  if (s.pass == "fwd_bwd") {
    p.time_s += rows_x(s.k, s.n);
    p.time_s += grouped_gemm_time(acc, g, s.n, s.k, mg, r.dtype, Dtype::kFp32).time_s;
    p.flops *= 3.0;
  } else if (!s.pass.empty() && s.pass != "fwd") {
    return skip("grouped_gemm pass must be fwd or fwd_bwd");
  }
  p.model = fmt::format("grouped_gemm_time {} groups x {}{}x{}x{} {} {}", g, jagged ? "mean " : "",
                        mg, s.n, s.k, r.dtype_name, s.pass.empty() ? "fwd" : s.pass);
  return p;
}

Priced price_attention(const AcceleratorSpec& acc, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.seq_q <= 0 || s.heads_q <= 0 || s.head_dim <= 0) {
    return skip("attention needs seq_q, heads_q and head_dim");
  }
  AttentionShape a;
  a.batch = std::max<std::int64_t>(s.batch, 1);
  a.q_heads = s.heads_q;
  a.kv_heads = s.heads_kv;
  a.seq_q = s.seq_q;
  a.seq_kv = s.seq_kv;
  a.head_dim_qk = s.head_dim;
  a.head_dim_v = s.head_dim_v;
  a.causal = s.causal;
  a.window = s.window;
  a.dtype = r.dtype;
  a.kernel = s.backend == "fa2" ? AttentionKernel::kFa2 : AttentionKernel::kFused;
  const std::string pass = s.pass.empty() ? "fwd" : s.pass;
  Priced p;
  if (pass == "fwd" || pass == "fwd_bwd") {
    p.time_s += attention_fwd_time(acc, a).time_s;
    p.flops += attention_fwd_flops(a);
  }
  if (pass == "bwd" || pass == "fwd_bwd") {
    p.time_s += attention_bwd_time(acc, a).time_s;
    p.flops += attention_bwd_flops(a);
  }
  if (p.time_s <= 0.0) return skip("attention pass must be fwd, bwd or fwd_bwd");
  p.model = fmt::format("attention_{}_time b{} h{}/{} s{}x{} d{} {}{} {}", pass, a.batch, a.q_heads,
                        a.kv_heads, a.seq_q, a.seq_kv, a.head_dim_qk, a.causal ? "causal" : "full",
                        a.kernel == AttentionKernel::kFa2 ? " fa2-class" : "", r.dtype_name);
  return p;
}

// Mamba-2's chunked SSD scan (mamba_ssm's mamba_chunk_scan_combined) over batch x seq_q tokens,
// heads_q heads of head_dim channels, groups B / C groups of state_dim, chunks of `chunk` tokens:
// the workload's chunk products and state pass (cost/linear_attention.h), forward only (the
// published rows time the forward; the backward is the workload's structure at the same rates).
Priced price_ssd(const AcceleratorSpec& acc, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.state_dim <= 0 || s.chunk <= 0) return skip("mamba2_ssd needs state_dim and chunk");
  if (s.pass != "fwd") return skip("mamba2_ssd rows are forward only");
  const int groups = static_cast<int>(s.groups);
  if (groups <= 0 || s.heads_q % groups != 0) return skip("mamba2_ssd groups must divide heads_q");
  const SsdShape ssd{s.batch,     s.seq_q, s.heads_q, s.head_dim,
                     s.state_dim, groups,  s.chunk,   r.dtype};
  Priced p;
  for (const ChunkGemm& g : ssd_chunk_gemms(ssd)) {
    p.time_s += gemm_time(acc, g.shape).time_s;
    p.flops += g.shape.flops();
  }
  p.time_s += memory_bound_time(acc, ssd_state_pass_bytes(ssd), MemOpClass::kElementwise).time_s;
  p.model = fmt::format("ssd_chunk_gemms fwd b{} t{} h{} p{} n{} g{} chunk {} {}", s.batch, s.seq_q,
                        s.heads_q, s.head_dim, s.state_dim, groups, s.chunk, r.dtype_name);
  return p;
}

// The chunked gated delta rule (FLA's chunk_gated_delta_rule) over batch x seq_q tokens,
// heads_q heads of key / value dims head_dim / head_dim_v, in 64-token chunks: the workload's
// chunk GEMMs (cost/linear_attention.h), and for the backward each one's two gradient GEMMs.
// Only the chunk algorithm: the gates, norms, conv and projections around it are other ops.
Priced price_linear_attention(const AcceleratorSpec& acc, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.batch <= 0 || s.seq_q <= 0 || s.heads_q <= 0 || s.head_dim <= 0) {
    return skip("linear_attention needs batch, seq_q, heads_q and head_dim");
  }
  if (s.kind == "mamba2_ssd") return price_ssd(acc, r);
  if (s.kind != "gdn") {
    return skip("linear_attention kind must be gdn (the gated delta rule) or mamba2_ssd");
  }
  const bool fwd = s.pass == "fwd" || s.pass == "fwd_bwd";
  const bool bwd = s.pass == "bwd" || s.pass == "fwd_bwd";
  if (!fwd && !bwd) return skip("linear_attention pass must be fwd, bwd or fwd_bwd");
  const int chunk = LinearAttentionSpec{}.chunk_size;  // FLA's, as the workload's layers take it
  const int dv = s.head_dim_v > 0 ? s.head_dim_v : s.head_dim;
  Priced p;
  for (const ChunkGemm& g :
       delta_rule_chunk_gemms(s.batch, s.seq_q, s.heads_q, s.head_dim, dv, chunk, r.dtype)) {
    if (fwd) {
      p.time_s += gemm_time(acc, g.shape).time_s;
      p.flops += g.shape.flops();
    }
    if (bwd) {
      for (const GemmShape& b : weightless_backward_shapes(g.shape)) {
        p.time_s += gemm_time(acc, b).time_s;
        p.flops += b.flops();
      }
    }
  }
  p.model = fmt::format("delta_rule_chunk_gemms {} b{} t{} h{} dk{} dv{} chunk {} {}", s.pass,
                        s.batch, s.seq_q, s.heads_q, s.head_dim, dv, chunk, r.dtype_name);
  return p;
}

// Bytes one call reads and writes, from `bytes` or from rows x cols for the kinds whose traffic
// is fixed by their definition (a norm reads x and writes y; its backward reads x and dy and
// writes dx; a copy reads and writes once; a fused residual add + RMSNorm reads x and the
// residual and writes both the new residual and y, the FP8 variant y in one byte).
double memory_bytes(const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.bytes > 0.0) return s.bytes;
  const double e = static_cast<double>(s.rows) * static_cast<double>(s.cols);
  // A bandwidth without a size (STREAM tables): priced on 1 GB, where the launch is negligible.
  if (e <= 0.0) return r.measure == KernelMeasure::kGbPerS ? kNominalStreamBytes : 0.0;
  const double b = bytes_per_element(r.dtype);
  const std::string& k = s.kind;
  if (k == "copy" || k == "rmsnorm_fwd" || k == "layernorm_fwd" || k == "softmax") {
    return 2.0 * e * b;
  }
  if (k == "rmsnorm_bwd" || k == "layernorm_bwd") return 3.0 * e * b;
  if (k == "fused_add_rmsnorm_fwd") return 4.0 * e * b;
  if (k == "fused_add_rmsnorm_fp8") return 3.0 * e * b + e;
  return 0.0;
}

// A cross-entropy row of a stated implementation (eager: Megatron's vocab_parallel_cross_entropy;
// compiled: its fused_vocab_parallel_cross_entropy through torch.compile; fused: one kernel) over
// rows x cols logits: the workload's traffic for its pass.
double cross_entropy_row_bytes(const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.kind != "cross_entropy") return 0.0;
  CrossEntropyKernel kernel = CrossEntropyKernel::kEager;
  if (s.impl == "compiled") {
    kernel = CrossEntropyKernel::kCompiled;
  } else if (s.impl == "fused") {
    kernel = CrossEntropyKernel::kFused;
  } else if (s.impl != "eager") {
    return 0.0;
  }
  const double e = static_cast<double>(s.rows) * static_cast<double>(s.cols);
  const CrossEntropyTraffic t = cross_entropy_traffic(e, bytes_per_element(r.dtype), kernel);
  if (s.pass == "fwd_bwd") return t.fwd_bytes + t.bwd_bytes;
  if (s.pass == "bwd") return t.bwd_bytes;
  return s.pass.empty() || s.pass == "fwd" ? t.fwd_bytes : 0.0;
}

Priced price_memory(const AcceleratorSpec& acc, const KernelRow& r) {
  const double ce = cross_entropy_row_bytes(r);
  const double bytes = ce > 0.0 ? ce : memory_bytes(r);
  if (bytes <= 0.0) return skip("memory row without bytes (or rows x cols for its kind)");
  const std::string& k = r.shape.kind;
  const MemOpClass cls = k == "adam"            ? MemOpClass::kOptimizer
                         : k == "cross_entropy" ? MemOpClass::kLoss
                                                : MemOpClass::kElementwise;
  Priced p;
  p.bytes = bytes;
  p.time_s = memory_bound_time(acc, bytes, cls).time_s;
  p.model = fmt::format("memory_bound_time {:.4g} B {}", bytes, to_string(cls));
  return p;
}

Priced price_permute(const AcceleratorSpec& acc, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.tokens <= 0 || s.hidden <= 0) return skip("permute needs tokens and hidden");
  if (s.impl == "fused_into_dispatch")
    return skip("a permute fused into the dispatch is priced there");
  const double routed = static_cast<double>(s.tokens) * std::max<std::int64_t>(s.topk, 1) *
                        s.hidden * bytes_per_element(r.dtype);
  const double passes = s.direction == "both" ? 2.0 : 1.0;
  // Every dedicated permute kernel (TE's fused permute, Triton, vLLM / TileOPs CUDA kernels)
  // gathers whole rows in one pass, as the workload's fused permute; "eager" is PyTorch's
  // sort / index_select / scatter.
  const bool fused = s.impl != "eager";
  const MemOpClass cls = fused ? MemOpClass::kEmbedding : MemOpClass::kPermute;
  Priced p;
  p.bytes = 2.0 * routed * passes;
  p.time_s = memory_bound_time(acc, 2.0 * routed, cls).time_s * passes;
  p.model = fmt::format("memory_bound_time 2 x routed {:.4g} B {}{}", routed, to_string(cls),
                        passes > 1.0 ? " (permute + unpermute)" : "");
  return p;
}

// The row's hosts, folded into the network's node tier as a job's groups are (a multi-host
// NVLink domain is one node).
CommGroup row_group(const AcceleratorSpec& acc, const NetworkSpec& net, int ranks, int nodes,
                    int gpus_per_node) {
  const int gpn = gpus_per_node > 0 ? gpus_per_node
                  : nodes > 1       ? (ranks + nodes - 1) / nodes
                                    : std::max(acc.default_gpus_per_node, ranks);
  return make_group(ranks, 1, collective_node_gpus(acc, net, gpn));
}

// The normal (throughput) kernels of DeepEP and of the libraries built on its tests (HybridEP,
// UCCL-EP) send a token once per destination node / GPU and report bandwidth on those bytes.
bool deduplicating(const KernelShape& s) {
  return s.impl == "deepep_normal" || s.impl == "hybridep" || s.impl == "uccl";
}

Priced price_dispatch(const AcceleratorSpec& acc, const NetworkSpec& net, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (s.tokens <= 0 || s.hidden <= 0 || s.ep <= 1)
    return skip("ep_dispatch needs tokens, hidden, ep");
  if (!acc.torus_wraparound.empty()) return skip("EP rows on a torus are not placed");
  const bool dedup = deduplicating(s);
  if (dedup && s.experts < s.ep) return skip("a deduplicating dispatch row needs its experts");
  const double wire = r.dtype == Dtype::kFp8 ? kFp8WireBytes : bytes_per_element(r.dtype);
  const double routed =
      static_cast<double>(s.tokens) * std::max<std::int64_t>(s.topk, 1) * s.hidden * wire;
  CommGroup g = row_group(acc, net, s.ep, s.nodes, s.gpus_per_node);
  g.gpu_initiated = s.impl == "deepep_ll" || s.impl == "mori_ll";
  Priced p;
  p.bytes = routed;
  double bytes = routed;  // what the workload's moe.dispatch moves for this shape
  if (dedup) {
    MoeSpec m;
    m.num_experts = static_cast<int>(s.experts);
    m.topk = static_cast<int>(s.topk);
    m.router_num_groups = s.router_groups;
    m.router_group_topk = s.group_topk;
    bytes *= dedup_dispatch_factor(m, s.ep, g.nodes);
    g.node_aggregated = true;
    if (g.nodes > 1 && g.ranks_per_node > 1) {  // as the workload's add_moe
      const double k = g.ranks_per_node;
      g.node_forward_ratio = routed / std::max<std::int64_t>(s.topk, 1) *
                             expected_destinations(m, s.ep) * (k - 1.0) / k / bytes;
    }
    // DeepEP's tests divide by one copy per destination node (RDMA) or GPU (NVLink), the
    // sender's own included (tests/test_internode.py, test_intranode.py).
    const int parts = g.nodes > 1 ? g.nodes : s.ep;
    p.bytes = static_cast<double>(s.tokens) * expected_destinations(m, parts) * s.hidden * wire;
  }
  const CollectiveEstimate e = collective_estimate(net, CollectiveKind::kAllToAll, bytes, g);
  p.time_s = e.cost.time_s;
  p.model =
      fmt::format("all-to-all {:.4g} B over {} ranks on {} node(s){}, {} {}", bytes, g.size,
                  g.nodes, dedup ? " deduplicated, node-aggregated" : "", e.algorithm, e.protocol);
  // DeepEP's normal kernels copy with the SMs they are given: with few, those bound the rate
  // (the job's pricing applies the same bound, perf/perf.cpp price_collective).
  const double units_s =
      s.impl == "deepep_normal" ? ep_kernel_unit_bound_s(acc, bytes, s.sms) : 0.0;
  if (units_s > p.time_s) {
    p.time_s = units_s;
    p.model += fmt::format("; bound by {} SMs' copy rate", s.sms);
  }
  return p;
}

Priced price_collective(const AcceleratorSpec& acc, const NetworkSpec& net, const KernelRow& r) {
  const KernelShape& s = r.shape;
  static const std::pair<const char*, CollectiveKind> kOps[] = {
      {"all_reduce", CollectiveKind::kAllReduce},
      {"all_gather", CollectiveKind::kAllGather},
      {"reduce_scatter", CollectiveKind::kReduceScatter},
      {"all_to_all", CollectiveKind::kAllToAll},
      {"broadcast", CollectiveKind::kBroadcast},
      {"send_recv", CollectiveKind::kSendRecv}};
  const CollectiveKind* kind = nullptr;
  for (const auto& [name, k] : kOps) {
    if (s.op == name) kind = &k;
  }
  if (kind == nullptr) return skip("unknown collective op '" + s.op + "'");
  if (s.ranks < 2 || s.bytes <= 0.0) return skip("collective needs ranks >= 2 and bytes");
  if (!acc.torus_wraparound.empty()) return skip("collectives on a torus need the slice placement");
  const CommGroup g = row_group(acc, net, s.ranks, s.nodes, s.gpus_per_node);
  const CollectiveEstimate e = collective_estimate(net, *kind, s.bytes, g);
  Priced p;
  p.bytes = s.bytes;
  p.bus_factor = bus_bandwidth_factor(*kind, s.ranks);
  p.time_s = e.cost.time_s;
  p.model = fmt::format("{} {:.4g} B over {} ranks on {} node(s), {} {}", s.op, s.bytes, g.size,
                        g.nodes, e.algorithm, e.protocol);
  return p;
}

// Primus' analytical model (collective_model.py, ported in cost/primus_collectives.h) priced as
// its users would call it: the row's message bytes, ranks and nodes on the same network file.
double primus_collective_s(const AcceleratorSpec& acc, const NetworkSpec& net, const KernelRow& r) {
  const KernelShape& s = r.shape;
  if (r.op_class != KernelClass::kCollective || s.ranks < 2 || s.bytes <= 0.0) return 0.0;
  if (!acc.torus_wraparound.empty()) return 0.0;
  const CommGroup g = row_group(acc, net, s.ranks, s.nodes, s.gpus_per_node);
  const primus::CollectiveArgs a =
      primus::make_collective_args(net, g.nodes, g.nodes > 1 ? g.ranks_per_node : g.gpus_per_node);
  double us = 0.0;
  if (s.op == "all_reduce") us = primus::allreduce(a, s.bytes, s.ranks);
  if (s.op == "all_gather") us = primus::allgather(a, s.bytes, s.ranks);
  if (s.op == "reduce_scatter") us = primus::reduce_scatter(a, s.bytes, s.ranks);
  if (s.op == "all_to_all") us = primus::alltoall(a, s.bytes, s.ranks);
  if (s.op == "send_recv") us = primus::sendrecv(a, s.bytes);
  return std::isfinite(us) && us > 0.0 ? us * 1e-6 : 0.0;
}

// The measured time: a time as written, or the row's work over its rate.
double measured_time_s(const KernelRow& r, const Priced& p) {
  const double v = r.measured_value;
  switch (r.measure) {
    case KernelMeasure::kTimeUs:
      return v * 1e-6;
    case KernelMeasure::kTflops:
      return p.flops > 0.0 ? p.flops / (v * 1e12) : 0.0;
    case KernelMeasure::kGbPerS:
    case KernelMeasure::kAlgBwGbPerS:
      return p.bytes > 0.0 ? p.bytes / (v * 1e9) : 0.0;
    case KernelMeasure::kBusBwGbPerS:
      return p.bytes > 0.0 ? p.bytes * p.bus_factor / (v * 1e9) : 0.0;
  }
  return 0.0;
}

}  // namespace

PricedKernelRow price_kernel_row(const KernelRow& row, const AcceleratorSpec& acc,
                                 const NetworkSpec& net) {
  Priced p;
  switch (row.op_class) {
    case KernelClass::kGemm:
      p = price_gemm(acc, row);
      break;
    case KernelClass::kGroupedGemm:
      p = price_grouped(acc, row);
      break;
    case KernelClass::kAttention:
      p = price_attention(acc, row);
      break;
    case KernelClass::kMemory:
      p = price_memory(acc, row);
      break;
    case KernelClass::kPermute:
      p = price_permute(acc, row);
      break;
    case KernelClass::kEpDispatch:
      p = price_dispatch(acc, net, row);
      break;
    case KernelClass::kCollective:
      p = price_collective(acc, net, row);
      break;
    case KernelClass::kLinearAttention:
      p = price_linear_attention(acc, row);
      break;
  }
  PricedKernelRow out;
  out.row = row;
  out.model = std::move(p.model);
  out.skipped = std::move(p.skipped);
  if (!out.skipped.empty()) return out;
  out.predicted_s = p.time_s;
  out.measured_s = measured_time_s(row, p);
  if (out.measured_s <= 0.0 || out.predicted_s <= 0.0) {
    out.skipped = "the measurement's unit does not apply to this class (no FLOPs or bytes)";
    return out;
  }
  out.error_pct = 100.0 * (out.measured_s / out.predicted_s - 1.0);
  out.peer_predicted_s = primus_collective_s(acc, net, row);
  if (out.peer_predicted_s > 0.0) {
    out.peer_error_pct = 100.0 * (out.measured_s / out.peer_predicted_s - 1.0);
  }
  return out;
}

}  // namespace projector
