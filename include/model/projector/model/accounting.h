// Parameter and FLOP accounting: the one place that knows how many weights each module has and how
// many FLOPs a pass costs. Memory, workload and reports all call these.
#pragma once

#include <cstdint>

#include "projector/model/job.h"

namespace projector {

// Weights of one decoder layer, split by how they are sharded.
struct LayerParams {
  std::int64_t attention = 0;        // QKV / MLA projections, output projection, their biases
  std::int64_t attention_norms = 0;  // input norm, q/k norms, MLA latent norms (replicated over TP)
  std::int64_t mlp = 0;          // dense MLP, or the shared experts of an MoE layer (TP-sharded)
  std::int64_t mlp_norm = 0;     // pre-MLP norm (replicated over TP)
  std::int64_t router = 0;       // MoE router, latent projections, shared-expert gate
                                 // (replicated over TP and EP)
  std::int64_t expert_each = 0;  // one routed expert
  std::int64_t experts = 0;      // all routed experts (sharded over EP x ETP)
  std::int64_t modulation = 0;   // DiT blocks: adaLN modulation Linear(h -> chunks x h) per stream
  std::int64_t hyper = 0;  // hyper-connection mixers of both sublayers (fp32, replicated over TP)

  std::int64_t total() const {
    return attention + attention_norms + mlp + mlp_norm + router + experts + modulation + hyper;
  }
  // Weights touched by one token: the routed experts count topk times, not num_experts times.
  std::int64_t active(int topk) const {
    return attention + attention_norms + mlp + mlp_norm + router + expert_each * topk + modulation +
           hyper;
  }
};

LayerParams layer_params(const ModelSpec& model, const LayerSpec& layer);

// Hyper-connections (ModelSpec::hc_mult = K > 1; PR11 hyper_connection.py): one HyperMixer per
// sublayer, fn (K h -> (2 + K) K), 3 scales and (2 + K) K biases; the HyperHead that collapses the
// K streams at the end of the trunk (and, with its own copy, after each MTP layer): fn (K h -> K),
// one scale, K biases. 0 when K is 1.
std::int64_t hyper_mixer_params(const ModelSpec& model);
std::int64_t hyper_head_params(const ModelSpec& model);
// DeepSeek-V4 attention (AttentionKind::kCompressed) without the layer's input norm, split into
// the attention proper, its compressor and its lightning indexer (CSA layers only).
struct CompressedAttentionParams {
  std::int64_t attention = 0;   // q down / up, q norm, kv, kv norm, output projection, sinks
  std::int64_t compressor = 0;  // wkv_gate, the window position bias (ape), the pool norm
  std::int64_t indexer = 0;     // w_dq_w, w_iuq and the indexer's own compressor
  std::int64_t total() const { return attention + compressor + indexer; }
};
CompressedAttentionParams compressed_attention_params(std::int64_t hidden, const AttentionSpec& a);
// Flux (docs/diffusion.md): the conditioning embedders beside img_in's weight (img_in's bias,
// txt_in, time_in, vector_in, guidance_in) and the output head beside proj_out's weight (its bias
// and norm_out's modulation Linear(h -> 2h)). 0 for other models.
std::int64_t diffusion_embedder_params(const ModelSpec& model);
std::int64_t diffusion_head_params(const ModelSpec& model);

// Model-wide totals (padded vocabulary given explicitly so callers decide TP padding).
struct ModelParams {
  std::int64_t embedding = 0;     // word (+ learned position) embeddings
  std::int64_t output_layer = 0;  // 0 when tied to the embedding
  std::int64_t final_norm = 0;
  std::int64_t decoder = 0;  // all decoder layers
  std::int64_t mtp = 0;      // MTP modules (projection, norms, their layer)
  std::int64_t total = 0;
  std::int64_t active = 0;  // per token (MoE: topk routed experts + shared)
};

ModelParams model_params(const ModelSpec& model, std::int64_t padded_vocab);
// Convenience: padded to make_vocab_size_divisible_by x 1 (what published totals use: the raw
// vocabulary when it already is a multiple).
ModelParams model_params(const ModelSpec& model);

// Params of one MTP module: eh projection (2h x h), two input norms, one decoder layer and a norm.
std::int64_t mtp_module_params(const ModelSpec& model);

// Bytes per parameter the optimizer keeps and moves, from the optimizer and the configured dtypes;
// the memory projection (state held) and the workload (optimizer-step traffic) both read this.
struct OptimizerBytes {
  double master_bytes = 0.0;  // fp32 master weights (0 when the weights are fp32 themselves)
  double state_bytes = 0.0;   // Adam: exp_avg + exp_avg_sq in their dtypes; SGD (Megatron's
                              // --sgd-momentum 0.9) and Muon: one fp32 momentum buffer
  // One step reads the gradient (main_grads_dtype), the master weights and the states, writes
  // master and states back and the working weights (their storage dtype): Adam in fp32 with bf16
  // weights 4 + 2*4 + 2*8 + 2 = 30 bytes.
  double step_traffic_bytes = 0.0;
};
OptimizerBytes optimizer_bytes_per_param(const RuntimeSpec& rt);

// Whether the backward pass reads `t` (mlp_out is only summed into the residual stream, so no
// policy saves it even when it names it).
bool layer_tensor_needed(const LayerSpec& layer, LayerTensor t);

}  // namespace projector

// ------------------------------------------------------------------------------------------ FLOPs
// Megatron convention: only matrix multiplies are counted (2*m*n*k per GEMM); norms, activations,
// softmax, biases and the embedding lookup are not. A backward pass costs two forwards (dgrad +
// wgrad), so model FLOPs = 3 x forward. Hardware FLOPs add the forward work repeated by activation
// recomputation. All values are doubles: an iteration of a 1T model exceeds int64.

namespace projector {

struct FlopOptions {
  // Causal attention: true counts only the unmasked half of QK^T and A*V (Megatron-LM's newer
  // num_floating_point_operations, MaxText since July 2025, DeepSeek's per-token figures).
  // false counts the full s x s product (SC'21 paper, NeMo 24.07 / Megatron-Bridge model TFLOP/s
  // tables, older Megatron-LM, MaxText before July 2025). Default false: most published
  // throughput tables in data/validation use it.
  bool causal_attention_half = false;
};

// Forward FLOPs of one decoder layer, per token of a sequence of seq_len tokens.
struct LayerFlops {
  double qkv_flops = 0.0;          // Q/K/V projections (MLA: down- and up-projections)
  double attn_core_flops = 0.0;    // Q K^T and A V
  double attn_out_flops = 0.0;     // output projection
  double mlp_flops = 0.0;          // dense MLP, or the shared experts of an MoE layer
  double router_flops = 0.0;       // MoE router (+ latent projections, shared-expert gate)
  double experts_flops = 0.0;      // the topk routed experts
  double mla_up_proj_flops = 0.0;  // part of qkv_flops: MLA up-projections (selective recompute)
  double mamba_flops = 0.0;        // Mamba-2 mixer: in_proj, out_proj and the SSD scan
  // Linear attention (GDN / KDA): projections and the chunked delta-rule kernel.
  double linear_attn_flops = 0.0;
  // DiT blocks: the adaLN modulation GEMMs, once per sample, spread over its tokens.
  double modulation_flops = 0.0;
  // Hyper-connections: the two mixers' fn GEMMs (K h -> (2 + K) K each, fp32).
  double hyper_flops = 0.0;

  double attention() const { return qkv_flops + attn_core_flops + attn_out_flops; }
  double total() const {
    return attention() + mlp_flops + router_flops + experts_flops + mamba_flops +
           linear_attn_flops + modulation_flops + hyper_flops;
  }
};

// DeepSeek-V4 attention per token, by branch (AttentionKind::kCompressed; docs/deepseek-v4.md).
// GEMMs: the projections, the compressor's wkv_gate and the indexer's projections; the core is the
// sliding-window keys plus the compressed keys (HCA: the visible pool; CSA: the top-k chosen),
// QK^T and PV over the shared 512-wide latent; the indexer scores every visible pool entry.
struct CompressedAttentionFlops {
  double projections = 0.0;  // q down / up, kv, output o_a + o_b
  double compressor = 0.0;   // wkv_gate of the attention's compressor
  double indexer = 0.0;      // w_dq_w, w_iuq, the indexer's compressor and its scores
  double core = 0.0;         // QK^T and PV over local + compressed keys
  double local_keys = 0.0;   // keys per query of the sliding-window branch
  double pool_keys = 0.0;    // keys per query of the compressed branch
  double total() const { return projections + compressor + indexer + core; }
};
CompressedAttentionFlops compressed_attention_flops(std::int64_t hidden, const AttentionSpec& a,
                                                    std::int64_t seq_len,
                                                    const FlopOptions& options = {});

// Parameters of one GDN / KDA mixer (without the layer's input norm): in_proj, the conv, the
// per-head decay parameters, the gate projections (KDA), the output norm and out_proj.
std::int64_t linear_attention_params(std::int64_t hidden, const LinearAttentionSpec& s);
// Forward FLOPs per token of the chunked delta-rule kernel over all value heads
// (docs/linear-attention.md): 6 C d_k + 4 C d_v + 6 d_k d_v + 2 C floor(C / 3) per head.
double delta_rule_flops_per_token(const LinearAttentionSpec& s);
// Forward FLOPs per token of one GDN / KDA mixer: its GEMMs and the kernel.
double linear_attention_flops_per_token(std::int64_t hidden, const LinearAttentionSpec& s);

LayerFlops layer_forward_flops_per_token(const ModelSpec& model, const LayerSpec& layer,
                                         std::int64_t seq_len, const FlopOptions& options = {});

// Forward FLOPs per token of the whole model: decoder layers, MTP modules, output layer.
struct ForwardFlops {
  double decoder_flops = 0.0;
  double mtp_flops = 0.0;     // per MTP module: eh projection + one layer + its logits
  double logits_flops = 0.0;  // main output layer (diffusion: proj_out over the image tokens)
  // Diffusion: img_in, txt_in, the conditioning embedders and norm_out's modulation.
  double conditioning_flops = 0.0;
  double total() const { return decoder_flops + mtp_flops + logits_flops + conditioning_flops; }
};

ForwardFlops forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len,
                                     std::int64_t padded_vocab, const FlopOptions& options = {});

// Per iteration (global batch) and per token.
struct ModelFlops {
  double tokens = 0.0;
  ForwardFlops forward_per_token;
  double model_flops = 0.0;      // 3 x forward (fwd + dgrad + wgrad)
  double recompute_flops = 0.0;  // forward work repeated by activation recomputation
  double hardware_flops = 0.0;   // model_flops + recompute_flops
  double model_flops_per_token() const { return tokens > 0 ? model_flops / tokens : 0.0; }
  double hardware_flops_per_token() const { return tokens > 0 ? hardware_flops / tokens : 0.0; }
};

// Forward FLOPs per token that recomputation repeats: full recompute repeats the whole forward of
// each recomputed layer (RecomputeSpec: uniform -> every layer; block -> the first num_layers of
// each virtual stage in `stages`, or of pp*vpp balanced stages when `stages` is empty; layer_ids ->
// those layers); selective repeats the listed modules (core_attn, mlp, moe, shared_experts,
// mla_up_proj; moe_act / layernorm hold no GEMMs).
// kOpPolicy replays the share of each block's GEMMs the policy does not save
// (model/recompute_policy.h), which depends on the fp8 coverage in `precision`.
double recompute_forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len,
                                         const RecomputeSpec& recompute,
                                         const std::vector<VirtualStage>& stages, int num_stages,
                                         const FlopOptions& options = {},
                                         const PrecisionSpec& precision = {});

// Training FLOPs per token in the convention of the PaLM paper (Chowdhery et al. 2022, App. B)
// that torchtitan logs: 6 x (active parameters - embedding) + 6 x heads x (d_qk + d_v) x seq per
// layer; every weight counted (norms too), tied weights once, no causal halving, no windows.
double palm_flops_per_token(const ModelSpec& model, std::int64_t seq_len);

// SC'21 (Narayanan et al., arXiv:2104.04473, Eq. 3): hardware FLOPs of one iteration of a GPT
// model with full recomputation, F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double sc21_megatron_flops(double batch, double seq_len, double layers, double hidden,
                           double vocab);

}  // namespace projector

// ------------------------------------------------------------------------------- stage params
// Weights one pipeline stage holds on one rank after tensor/expert parallel sharding (Megatron-Core
// rules), before data-parallel / FSDP sharding (implemented in accounting_stage.cpp).

namespace projector {

// Parts of LayerParams::attention / ::mlp that tensor parallelism replicates instead of sharding:
// MLA down-projections (q_down, kv_down: Megatron builds them "duplicated") and the row-parallel
// output biases (attention output projection, fc2).
struct LayerTpReplicated {
  std::int64_t attention = 0;
  std::int64_t mlp = 0;
};
LayerTpReplicated layer_tp_replicated(const ModelSpec& model, const LayerSpec& layer);

// True when two layers have the same shape (every field that parameter, FLOP or memory accounting
// reads), so per-layer results can be reused across a run of identical layers.
bool same_layer_shape(const LayerSpec& a, const LayerSpec& b);

struct StageParams {
  double dense_params = 0.0;         // non-expert weights on one rank
  double dense_gemm_params = 0.0;    // the part run by the decoder/MTP GEMMs (fp8-eligible)
  double expert_params = 0.0;        // routed experts: ceil(E / ep) experts, each / etp
  double largest_unit_params = 0.0;  // largest of: one decoder layer, embedding, output layer
  // The decoder-GEMM and expert weights of the stage's layers that `precision` keeps out of its
  // fp8 / fp4 recipe (PrecisionSpec::layer_quantized); 0 without a precision.
  double bf16_gemm_params = 0.0;
  double bf16_expert_params = 0.0;
  int decoder_layers = 0;
};

// `rank_has_embedding`: the rank already holds the word embedding (from another chunk), so a tied
// output layer or an MTP head on this stage reuses it instead of holding a copy.
StageParams stage_params(const ModelSpec& model, const ParallelSpec& parallel,
                         const VirtualStage& stage, bool rank_has_embedding,
                         const PrecisionSpec* precision = nullptr);

}  // namespace projector
