// Internal to workload: the context of one microbatch's op lists and the op builders shared by
// the files that assemble a decoder layer (op_builders.cpp, attention_ops.cpp, ffn_ops.cpp,
// mixer_ops.cpp, backward_ops.cpp) and build.cpp, which puts layers, stages and the iteration
// together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/job/spec.h"
#include "projector/workload/workload.h"

namespace projector::workload_detail {

struct Ctx {
  const JobSpec& job;
  Dtype act;               // activation dtype
  Dtype gemm;              // GEMM input dtype (attention, dense MLP, shared experts)
  Dtype gemm_expert;       // routed-expert grouped GEMMs
  Dtype gemm_output;       // the output layer
  double act_b;            // bytes per activation element
  std::int64_t tokens;     // b*s/cp: rows of every GEMM on a TP rank
  std::int64_t tokens_sp;  // tokens seen by norms / residuals (divided by tp with SP)
  int tp;
  bool sp;
};

Ctx make_ctx(const JobSpec& job);
// The context of decoder layer `layer`: a layer kept out of the fp8 / fp4 recipe
// (PrecisionSpec::layer_quantized) runs its GEMMs in the activation dtype.
Ctx make_layer_ctx(const JobSpec& job, int layer);

// ---------------------------------------------------------------- op builders (op_builders.cpp)
Op gemm_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
           int groups, Dtype in);
void push_gemm(const Ctx& c, std::vector<Op>& f, const std::string& name, std::int64_t m,
               std::int64_t n, std::int64_t k, int groups = 1);
Op act_gemm_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k);
Op einsum_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
             int batch);
Op mem_op(std::string name, double bytes, MemOpClass cls = MemOpClass::kElementwise);
Op comm_op(std::string name, GroupKind g, CollectiveKind coll, int size, double bytes,
           Overlap overlap = Overlap::kExposed);
void tp_enter(const Ctx& c, std::vector<Op>& f, const std::string& what);
void tp_exit(const Ctx& c, std::vector<Op>& f, const std::string& what);
double norm_bytes(const Ctx& c, std::int64_t rows, std::int64_t width);

// ------------------------------------------------------------------ layer parts (forward ops)
void add_attention(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer);  // attention_ops
void add_hc_pre(const Ctx& c, std::vector<Op>& f, const std::string& sub);     // attention_ops
void add_hc_post(const Ctx& c, std::vector<Op>& f, const std::string& sub);    // attention_ops
void add_ffn(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer);        // ffn_ops
void add_mamba(const Ctx& c, std::vector<Op>& f, const MambaSpec& m);          // mixer_ops
void add_linear_attention(const Ctx& c, std::vector<Op>& f, const LinearAttentionSpec& s);
void add_short_conv(const Ctx& c, std::vector<Op>& f, const LinearAttentionSpec& s);

// ------------------------------------------------------------------- backward (backward_ops.cpp)
void add_backward(const std::vector<Op>& fwd, std::vector<Op>& out, bool sp);
bool layer_fully_recomputed(const JobSpec& job, int layer_index);
// The layer's work from its forward ops: backward, recompute, saved activations.
void finish_block(const JobSpec& job, std::vector<Op>& fwd, bool full_recompute, LayerWork& lw,
                  bool sp, const LayerSpec* layer = nullptr);

}  // namespace projector::workload_detail
