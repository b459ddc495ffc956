// The op constructors every layer builder uses (layer_ops.h): GEMMs with their fp8 casts,
// memory-bound ops, collectives, the TP collectives around a parallel pair.
#include <algorithm>
#include <cmath>

#include "projector/job/spec.h"
#include "workload/layer_ops.h"

namespace projector::workload_detail {

Ctx make_ctx(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const RuntimeSpec& r = job.runtime;
  const std::int64_t tokens = static_cast<std::int64_t>(r.micro_batch_size) * r.seq_length / p.cp;
  const bool sp = p.sequence_parallel && p.tp > 1;
  const PrecisionSpec& pr = r.precision;
  return Ctx{job,
             pr.params_dtype,
             pr.fp8_dense ? pr.gemm_dtype() : pr.params_dtype,
             pr.fp8_experts ? pr.gemm_dtype() : pr.params_dtype,
             pr.fp8_output ? pr.gemm_dtype() : pr.params_dtype,
             bytes_per_element(r.precision.params_dtype),
             tokens,
             sp ? tokens / p.tp : tokens,
             p.tp,
             sp};
}

Ctx make_layer_ctx(const JobSpec& job, int layer) {
  Ctx c = make_ctx(job);
  const PrecisionSpec& pr = job.runtime.precision;
  if (pr.quantized_gemms() && !pr.layer_quantized(layer, job.model.num_layers())) {
    c.gemm = pr.params_dtype;
    c.gemm_expert = pr.params_dtype;
  }
  return c;
}

// `in`: the GEMM's input dtype (the job's GEMM dtype unless the op stays in the activation dtype).
Op gemm_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
           int groups, Dtype in) {
  Op op;
  op.name = std::move(name);
  op.kind = groups > 1 ? OpKind::kGroupedGemm : OpKind::kGemm;
  op.gemm = GemmShape{m, n, k, groups, in, c.act};
  op.gemm.blockwise = in == Dtype::kFp8 && c.job.runtime.precision.fp8 == Fp8Recipe::kBlockwise;
  op.flops = op.gemm.flops();
  const double in_b = bytes_per_element(in);
  op.bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n) * groups * in_b +
             static_cast<double>(m) * n * groups * c.act_b;
  return op;
}

// A GEMM that runs in the job's GEMM dtype. With an fp8 recipe (Transformer Engine) its input
// is quantized first: a fused cast + transpose reads the bf16 activation and writes the fp8
// copy and its transpose (the transpose feeds the weight-gradient GEMM); in the backward the
// output gradient is quantized the same way. Weights are cast once per iteration (cached).
void push_gemm(const Ctx& c, std::vector<Op>& f, const std::string& name, std::int64_t m,
               std::int64_t n, std::int64_t k, int groups) {
  // Routed experts (grouped) and the output layer follow their own fp8 coverage.
  const Dtype in = name.rfind("moe.experts", 0) == 0 ? c.gemm_expert : c.gemm;
  if (in != c.act) {
    const double rows = static_cast<double>(m) * groups;
    const double q = bytes_per_element(in);
    Op cast = mem_op(name + ".fp8_cast", rows * k * (c.act_b + 2.0 * q), MemOpClass::kElementwise);
    cast.bwd_bytes = rows * n * (c.act_b + 2.0 * q);
    f.push_back(cast);
  }
  f.push_back(gemm_op(c, name, m, n, k, groups, in));
}

// GEMMs that stay in the activation dtype under fp8 recipes (router, output layer).
Op act_gemm_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k) {
  return gemm_op(c, std::move(name), m, n, k, 1, c.act);
}

Op mem_op(std::string name, double bytes, MemOpClass cls) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kMemoryBound;
  op.mem_class = cls;
  op.bytes = bytes;
  return op;
}

Op comm_op(std::string name, GroupKind g, CollectiveKind coll, int size, double bytes,
           Overlap overlap) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kCollective;
  op.group = g;
  op.collective = coll;
  op.group_size = size;
  op.bytes = bytes;
  op.overlap = overlap;
  return op;
}

// Forward-side TP collectives around a column-parallel (before) / row-parallel (after) pair.
void tp_enter(const Ctx& c, std::vector<Op>& f, const std::string& what) {
  if (c.tp > 1 && c.sp) {
    f.push_back(
        comm_op(what + ".sp_all_gather", GroupKind::kTp, CollectiveKind::kAllGather, c.tp,
                static_cast<double>(c.tokens) * c.job.model.hidden_size * c.act_b,
                c.job.parallel.tp_comm_overlap ? Overlap::kWithCompute : Overlap::kExposed));
  }
}
void tp_exit(const Ctx& c, std::vector<Op>& f, const std::string& what) {
  if (c.tp <= 1) return;
  const double bytes = static_cast<double>(c.tokens) * c.job.model.hidden_size * c.act_b;
  f.push_back(comm_op(what + (c.sp ? ".sp_reduce_scatter" : ".tp_all_reduce"), GroupKind::kTp,
                      c.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, c.tp,
                      bytes,
                      c.job.parallel.tp_comm_overlap ? Overlap::kWithCompute : Overlap::kExposed));
}

double norm_bytes(const Ctx& c, std::int64_t rows, std::int64_t width) {
  return 2.0 * static_cast<double>(rows) * width * c.act_b;  // read x, write y
}

// A weightless (activation x activation) batched GEMM, e.g. a one-hot dispatch einsum.
Op einsum_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
             int batch) {
  Op op = gemm_op(c, std::move(name), m, n, k, batch, c.act);
  op.kind = OpKind::kGemm;
  op.weightless = true;
  return op;
}

}  // namespace projector::workload_detail
