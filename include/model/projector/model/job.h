// The parts of the job model (job/spec.h JobSpec): the model, its layout, the runtime settings and
// the cluster, the one internal representation every front-end produces and every projection
// consumes. Plain value types; no behaviour beyond small helpers. They live below the job module
// because the model's FLOP, parameter and tensor accounting reads them.
//
// Naming follows Megatron-LM's argument names where one exists, so a reader can map each field to
// the config key it came from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "projector/hardware/hardware.h"
#include "projector/model/recommendation.h"
#include "projector/model/saved_tensors.h"
#include "projector/util/allocator_kind.h"
#include "projector/util/bounds.h"
#include "projector/util/dtype.h"
#include "projector/util/schedule_kind.h"

namespace projector {

// ---------------------------------------------------------------------------------------- model

enum class NormKind { kLayerNorm, kRmsNorm };
// kSitu: Kimi-K3's soft-clamped GLU, 4 tanh(g / 4) sigmoid(g) x 25 tanh(u / 25), computed by
// eager fp32 PyTorch (PR14 situ_activation.py:117-161); always gated.
enum class ActivationKind { kGelu, kRelu, kSquaredRelu, kSilu, kSitu };

// Bytes per element of the intermediate width (one of the I gated outputs) that a GLU's activation
// keeps for its backward and moves in its forward. A fused GLU keeps the fc1 output (2 elements)
// and reads it and writes the product (3 elements). Situ's eager chain (situ_activation.py:
// 117-161) keeps six fp32 tensors (tanh and sigmoid of the gate, the clamped gate, tanh of the
// up half, the clamped up half, their product's left factor): 24 bytes; its eleven kernels (two
// fp32 casts, the gate's scale / tanh / scale / sigmoid / product, the up half's scale / tanh /
// scale, the product and the cast back) move 98 bytes per element in bf16.
double glu_saved_bytes_per_element(ActivationKind a, double act_bytes);
double glu_forward_bytes_per_element(ActivationKind a, double act_bytes);
enum class PositionEmbeddingKind { kRope, kLearnedAbsolute, kNone };
// kStandard covers MHA, GQA and MQA; kCompressed is DeepSeek-V4's hybrid attention
// (docs/deepseek-v4.md): one shared latent K = V, a sliding-window branch with sinks and, per
// layer, a compressed branch (CSA: top-k of a 4x pool chosen by the lightning indexer; HCA: the
// whole 128x pool), and a grouped low-rank output projection.
enum class AttentionKind { kStandard, kMla, kCompressed };

// DeepSeek-V4 attention settings (PR11 deepseek_v4_attention.py; AttentionKind::kCompressed).
// Reuses AttentionSpec::num_heads, head_dim (the shared K = V latent), q_lora_rank,
// qk_pos_emb_head_dim (the rotated tail) and sliding_window (the local branch).
struct CompressedAttentionSpec {
  int compress_ratio = 0;  // 0: local branch only; 4: CSA (overlapping windows); 128: HCA
  int index_topk = 0;      // CSA: pool entries each query attends
  int index_head_dim = 0;  // the lightning indexer's head dim (also its query rank)
  int index_n_heads = 0;
  int o_groups = 1;     // grouped low-rank output projection: groups
  int o_lora_rank = 0;  // its rank per group; 0: one flat projection heads x head_dim -> h
  bool attn_sink = false;
  bool csa() const { return compress_ratio == 4; }
  // Compressor windows overlap for CSA (coff 2: twice the channels), not for HCA.
  int overlap() const { return compress_ratio == 4 ? 2 : 1; }
  friend bool operator==(const CompressedAttentionSpec&, const CompressedAttentionSpec&) = default;
};

struct AttentionSpec {
  AttentionKind kind = AttentionKind::kStandard;
  int num_heads = 0;         // num_attention_heads
  int num_query_groups = 0;  // KV heads; == num_heads for MHA, 1 for MQA
  int head_dim = 0;          // kv_channels (q/k/v head dim for standard attention)
  // Multi-head latent attention (DeepSeek V2/V3). Unused for kStandard.
  int q_lora_rank = 0;  // 0: queries are not compressed (V2-Lite)
  int kv_lora_rank = 0;
  int qk_head_dim = 0;          // the "nope" part of the q/k head
  int qk_pos_emb_head_dim = 0;  // the rope part of the q/k head
  int v_head_dim = 0;
  bool qk_layernorm = false;
  bool add_qkv_bias = false;
  bool add_bias_linear = false;  // bias on the output projection
  int sliding_window = 0;        // 0: full (causal) attention
  // Chunked (block-local) attention: each query attends causally only within its chunk of this
  // many tokens (Llama 4's chunk_attn_window_size); 0: none.
  int chunk_window = 0;
  bool causal = true;
  // attention_output_gate (MG18 attention.py:1689-1691, 1635): linear_qkv also produces a gate of
  // heads x head_dim, and sigmoid(gate) scales the core output before linear_proj. On MLA
  // (Kimi-K3's mla_use_output_gate, docs/kimi-k3.md) the gate is its own GEMM h -> heads x
  // v_head_dim.
  bool output_gate = false;
  CompressedAttentionSpec compressed;  // kind == kCompressed only
};

struct MlpSpec {
  std::int64_t ffn_hidden_size = 0;
  ActivationKind activation = ActivationKind::kGelu;
  bool gated = false;  // SwiGLU / GeGLU: the first GEMM produces 2 x ffn_hidden_size
  bool add_bias = false;
};

struct MoeSpec {
  int num_experts = 0;
  int topk = 0;                                    // moe_router_topk
  std::int64_t expert_ffn_hidden_size = 0;         // moe_ffn_hidden_size
  std::int64_t shared_expert_ffn_hidden_size = 0;  // moe_shared_expert_intermediate_size (total)
  double capacity_factor = 0.0;                    // 0: dropless
  bool router_bias = false;                        // expert bias (aux-loss-free balancing)
  bool grouped_gemm = true;  // false: one GEMM per local expert (Megatron's SequentialMLP)
  // moe_latent_size: tokens are projected h -> latent before dispatch and back after combine
  // (replicated projections); the experts and the dispatch work in the latent width. 0: none.
  std::int64_t latent_size = 0;
  // Kimi-K3's stable latent MoE (latent_moe_use_norm): an RMSNorm over the latent width on the
  // combined sum, before the up-projection (docs/kimi-k3.md).
  bool latent_norm = false;
  bool shared_expert_gate = false;  // a sigmoid gate (1 x h weight) on the shared experts' output
  // Group-limited routing (DeepSeek's node-limited routing; Megatron moe_router_num_groups /
  // moe_router_group_topk): the experts form `router_num_groups` equal groups and each token's
  // top-k experts come from its best `router_group_topk` groups. 0: routing over all experts.
  int router_num_groups = 0;
  int router_group_topk = 0;
  // Hash routing (DeepSeek-V4's first num_hash_layers MoE layers, PR11 v4_hash_router.py): each
  // token's experts come from a fixed token-id table drawn uniformly, so the load is balanced by
  // construction; the router GEMM still runs (its scores weight the chosen experts).
  bool hash_routing = false;
};

// A Mamba-2 mixer (MG11 ssm/mamba_mixer.py): in_proj h -> [z, x, B, C, dt] = 2 d_inner +
// 2 groups x state + heads, a depthwise causal conv over [x, B, C], the selective-state-space scan
// (SSD, chunked), a gated RMSNorm over d_inner and out_proj d_inner -> h. Heads, groups and the
// inner width are sharded over TP.
struct MambaSpec {
  int num_heads = 0;     // nheads = d_inner / head_dim
  int head_dim = 64;     // mamba_head_dim
  int state_dim = 128;   // mamba_state_dim (d_state)
  int num_groups = 8;    // mamba_num_groups (B and C are shared per group)
  int conv_kernel = 4;   // d_conv
  int chunk_size = 128;  // SSD chunk length (MG11 mamba_mixer.py:194)
  std::int64_t d_inner() const { return static_cast<std::int64_t>(num_heads) * head_dim; }
  // in_proj output features: z, x, B, C, dt.
  std::int64_t in_proj_width() const {
    return 2 * d_inner() + 2 * static_cast<std::int64_t>(num_groups) * state_dim + num_heads;
  }
};

// A linear-attention mixer of the delta-rule family (docs/linear-attention.md): Gated DeltaNet
// (Megatron MG16 common.py, gdn.py; Primus PR8 gated_delta_net.py) or Kimi
// Delta Attention (Primus PR8 kimi_delta_attention.py). A fused in_proj h -> [q, k, v, z, extra],
// a depthwise causal conv (kernel conv_kernel, SiLU) over [q, k, v], the chunked (gated) delta
// rule over value heads (q / k repeated to the value heads), a gated RMSNorm over each value head
// and out_proj v_dim -> h. Heads are sharded over TP (column-parallel in_proj, row-parallel
// out_proj).
// LFM2's gated short convolution (Primus PR10 attention.py Lfm2ShortConv; docs/linear-attention.md)
// shares these layer kinds: in_proj h -> [B, C, x] (3 h), B * x, a depthwise causal conv of kernel
// conv_kernel (conv_L_cache) over the h channels, C * conv, out_proj h -> h; no norm, no heads, no
// chunked kernel. Its width is short_conv_width (= h); v_dim() and conv_dim() are that width.
enum class LinearAttentionKind : std::uint8_t { kGdn, kKda, kShortConv };
struct LinearAttentionSpec {
  LinearAttentionKind kind = LinearAttentionKind::kGdn;
  int num_key_heads = 16;    // linear_num_key_heads
  int num_value_heads = 32;  // linear_num_value_heads
  int key_head_dim = 128;    // linear_key_head_dim
  int value_head_dim = 128;  // linear_value_head_dim
  int conv_kernel = 4;       // linear_conv_kernel_dim; 0: no short conv (Primus use_short_conv)
  int chunk_size = 64;       // the FLA chunk length (MG16 gdn.py:73)
  bool gate_norm = false;    // KDA: a norm over h before the gate projections (TE spec only)
  // KDA: the output gate is one full-rank projection h -> v_dim (Kimi-K3's g_proj,
  // kda_use_full_rank_gate) instead of the g_a / g_b bottleneck pair (docs/kimi-k3.md).
  bool full_rank_gate = false;
  std::int64_t short_conv_width = 0;  // kShortConv: the channels (hidden size)
  bool conv_bias = false;  // kShortConv: conv_bias (biases of in_proj, the conv and out_proj)
  bool short_conv() const { return kind == LinearAttentionKind::kShortConv; }
  std::int64_t qk_dim() const {
    return short_conv() ? 0 : static_cast<std::int64_t>(num_key_heads) * key_head_dim;
  }
  std::int64_t v_dim() const {
    return short_conv() ? short_conv_width
                        : static_cast<std::int64_t>(num_value_heads) * value_head_dim;
  }
  std::int64_t conv_dim() const { return 2 * qk_dim() + v_dim(); }
  // in_proj output features. GDN: q, k, v, z (v_dim), beta and alpha (one per value head).
  // KDA: q, k, v, the low-rank bottlenecks of the decay (f_a) and of the output gate (g_a), each
  // value_head_dim wide, and beta.
  // Short conv: B, C, x.
  std::int64_t in_proj_width() const {
    if (short_conv()) return 3 * short_conv_width;
    if (kind == LinearAttentionKind::kGdn) return 2 * qk_dim() + 2 * v_dim() + 2 * num_value_heads;
    // KDA: q, k, v, the decay bottleneck f_a, the output gate (bottleneck g_a, or the full-rank
    // g_proj), beta.
    return conv_dim() + value_head_dim + (full_rank_gate ? v_dim() : value_head_dim) +
           num_value_heads;
  }
};

// What a decoder layer holds. A GPT layer is attention followed by an MLP or MoE block; hybrid
// stacks (Megatron's hybrid_layer_pattern symbols, Primus' HybridStack) build layers of one
// sublayer each: '*' attention, 'M' Mamba-2, '-' MLP, 'E' MoE (MG12 hybrid_layer_allocation.py).
// Linear attention (GDN / KDA) replaces attention in a GPT layer (Megatron's experimental
// attention variant) or is a sublayer of its own (Primus' gdn / kda hybrid stacks).
enum class LayerKind : std::uint8_t {
  kTransformer,        // norm + attention, norm + MLP / MoE
  kAttention,          // norm + attention only
  kMamba,              // norm + Mamba-2 mixer only
  kFfn,                // norm + MLP (or MoE when is_moe) only
  kLinearTransformer,  // norm + linear attention, norm + MLP / MoE
  kLinearAttention,    // norm + linear attention only
};
std::string_view to_string(LayerKind k);

// A Flux diffusion-transformer block (docs/diffusion.md; PR9 layer_spec.py): a transformer layer
// over the joint image + text sequence without affine norms, conditioned by adaLN modulation
// Linear(h -> adaln_chunks x h, bias) of the timestep / pooled-text vector. Double-stream (MMDiT)
// blocks hold two weight sets (image and text: attention, q/k norms, MLP, modulation), each applied
// to its own tokens, and attend jointly; single-stream blocks hold one (attention and MLP in
// parallel on one modulated norm).
struct DitBlockSpec {
  int streams = 0;       // 0: not a DiT block; 2: double-stream; 1: single-stream
  int adaln_chunks = 0;  // 6 (shift, scale, gate for attention and MLP) or 3
};

struct LayerSpec {
  LayerKind kind = LayerKind::kTransformer;
  DitBlockSpec dit;         // streams > 0: a Flux block (kind kTransformer)
  AttentionSpec attention;  // meaningful when has_attention()
  MlpSpec mlp;  // dense MLP, or the per-expert MLP shape (activation, gating) for MoE layers
  bool is_moe = false;
  MoeSpec moe;                 // meaningful only when is_moe
  MambaSpec mamba;             // meaningful only for kMamba
  LinearAttentionSpec linear;  // meaningful only when has_linear_attention()

  bool has_attention() const {
    return kind == LayerKind::kTransformer || kind == LayerKind::kAttention;
  }
  bool has_ffn() const {
    return kind == LayerKind::kTransformer || kind == LayerKind::kFfn ||
           kind == LayerKind::kLinearTransformer;
  }
  bool has_mamba() const { return kind == LayerKind::kMamba; }
  bool has_linear_attention() const {
    return kind == LayerKind::kLinearTransformer || kind == LayerKind::kLinearAttention;
  }
  // A recurrent mixer (Mamba-2 or linear attention): its chunked scan kernels are their own class.
  bool has_recurrent_mixer() const { return has_mamba() || has_linear_attention(); }
};

// Which kind of model a ModelSpec describes. Memory, workload and accounting are chosen per family
// (model/family.h); both are modelled end to end (the recommendation family by the TorchRec DLRM
// back-end's providers: model/accounting_recsys.cpp, memory/recsys.cpp, workload/recsys.cpp).
enum class ModelFamily : std::uint8_t { kDecoderLm, kRecommendation };
std::string_view to_string(ModelFamily f);

// A Flux rectified-flow diffusion transformer (docs/diffusion.md) on the decoder machinery: its
// layers are DiT blocks over image_tokens + text_tokens = the sequence; the "vocabulary" is the
// output projection width (proj_out h -> out_channels, the velocity of each packed latent patch;
// MSE loss) and the word embedding is img_in (out_channels -> h). The conditioning embedders
// below run once per sample. Latents and text embeddings are precomputed (no encoder runs).
struct DiffusionSpec {
  std::int64_t image_tokens = 0;    // 0: not a diffusion model
  std::int64_t text_tokens = 0;     // T5 tokens
  std::int64_t context_dim = 0;     // T5 width (txt_in: context_dim -> h)
  std::int64_t vec_in_dim = 0;      // pooled CLIP width (vector_in MLP)
  std::int64_t model_channels = 0;  // sinusoidal timestep width (time_in / guidance_in MLPs)
  bool guidance_embed = false;
  bool enabled() const { return image_tokens > 0; }
};

struct ModelSpec {
  ModelFamily family = ModelFamily::kDecoderLm;
  std::string name;
  std::int64_t hidden_size = 0;
  std::int64_t vocab_size = 0;  // the tokenizer's vocabulary; padded per padded_vocab_size()
  int make_vocab_size_divisible_by = 128;
  NormKind norm = NormKind::kRmsNorm;
  PositionEmbeddingKind position_embedding = PositionEmbeddingKind::kRope;
  std::int64_t max_position_embeddings = 0;
  bool tied_embeddings = false;   // share_embeddings_and_output_weights
  std::vector<LayerSpec> layers;  // decoder layers, in order; one entry per layer
  int mtp_num_layers = 0;  // multi-token-prediction depth; each MTP layer is layers.back()-shaped
  // Manifold-constrained hyper-connections (DeepSeek-V4, PR11 hyper_connection.py): the residual
  // stream is hc_mult copies of the hidden state; each sublayer reads a mix of them and writes
  // back through a Sinkhorn-normalised hc_mult x hc_mult matrix. 1: a plain residual stream.
  int hc_mult = 1;
  int hc_sinkhorn_iters = 0;
  // Attention residuals (Kimi-K3's attn_res_block_size; docs/kimi-k3.md): a checkpoint of the
  // residual stream is kept every this many layers, and before each sublayer a per-token softmax
  // over the checkpoints and the running stream mixes them into the sublayer's input. 0: none.
  int attn_res_block_size = 0;
  double attention_dropout = 0.0;
  double hidden_dropout = 0.0;
  RecommendationSpec recommendation;  // family == kRecommendation only
  DiffusionSpec diffusion;            // Flux only (diffusion.enabled())

  int num_layers() const { return static_cast<int>(layers.size()); }
};

// Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x TP.
std::int64_t padded_vocab_size(const ModelSpec& model, int tp);

// ------------------------------------------------------------------------------------- parallel

enum class FsdpKind { kNone, kFsdp2, kZero3 };  // kZero3 == Megatron custom FSDP optim_grads_params

// A switch that depends on the layout (a framework profile's default, job/profile.h): "with_tp"
// is on when TP > 1, and so on. A stated value is kAlways or kNever.
enum class WhenRule : std::uint8_t {
  kNever,
  kAlways,
  kWithTp,                    // TP > 1
  kWithDistributedOptimizer,  // the distributed optimizer (or FSDP) is on
  kWithSequenceParallel,      // sequence parallelism is on (implies TP > 1)
  kWithoutPp,                 // PP == 1 (torchtitan's default FSDP reshard policy)
  kWithVpp,                   // VPP > 1 (Megatron overlaps pipeline sends only interleaved)
};

// A named device-mesh axis (JAX Mesh, torch DeviceMesh) and what it shards. The neutral sizes of
// ParallelSpec are products of these; the mesh says in addition where each axis lies on a torus
// (TPU ICI) or across slices (DCN), which the collective model prices.
enum class MeshRole : std::uint8_t {
  kData,            // replicas: batch only
  kStage,           // pipeline stages
  kFsdp,            // batch + weight shards
  kFsdpTranspose,   // batch + weight shards (the MLP dimension)
  kContext,         // sequence shards (+ weight shards)
  kTensor,          // heads / MLP columns; residual stream sharded on the hidden dimension
  kTensorSequence,  // as kTensor, plus the sequence of norms and residuals
  kExpert,          // experts (+ batch and non-expert weight shards)
  kOther,           // axes the projection treats as replicas (diloco, autoregressive)
};
std::string_view to_string(MeshRole r);

struct MeshAxis {
  MeshRole role = MeshRole::kData;
  std::string name;  // the framework's name (ici_fsdp_parallelism -> "fsdp")
  int ici = 1;       // devices along this axis inside one slice
  int dcn = 1;       // slices along this axis
  // Where the ICI part lies on the slice's torus: for each physical axis it uses (index into
  // ClusterSpec::slice_shape; the device-core axis is index slice_shape.size()), how many devices
  // it spans there. Empty: not placed (the collective model falls back to its flat tiers).
  std::vector<int> torus_axes;
  std::vector<int> torus_extent;
  int size() const { return ici * dcn; }
};
enum class CpCommType { kP2p, kAllGather, kA2a, kA2aP2p };

// One virtual pipeline stage (model chunk): a contiguous range of decoder layers plus the
// embedding / output layer / MTP heads that live on it.
struct VirtualStage {
  int first_layer = 0;
  int num_layers = 0;
  bool has_embedding = false;
  bool has_output = false;  // final norm, output layer and loss
  int mtp_layers = 0;
};

struct ParallelSpec {
  int tp = 1;
  int pp = 1;
  int vpp = 1;  // virtual stages (model chunks) per pipeline rank
  int cp = 1;
  int ep = 1;
  int etp = 1;  // expert tensor parallel; Megatron's default is etp = tp
  // The data-parallel sizes are not stored: they follow from the world and these degrees
  // (job/spec.h JobSpec::dp, JobSpec::expert_dp), so no writer of a job can leave them
  // inconsistent.
  bool sequence_parallel = false;
  // pp * vpp entries; virtual stage z lives on pipeline rank z % pp as its chunk z / pp.
  std::vector<VirtualStage> stages;
  bool distributed_optimizer = false;
  // ZeRO-2 beside the distributed optimizer (Megatron-FSDP optim_grads): each rank keeps only its
  // DP shard of the main gradients; the weights stay whole. The same reduce-scatter and gather.
  bool grads_sharded = false;
  FsdpKind fsdp = FsdpKind::kNone;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool tp_comm_overlap = false;
  CpCommType cp_comm_type = CpCommType::kP2p;
  // a2a+p2p (Megatron hierarchical_context_parallel_sizes [a2a, p2p]): the all-to-all level's size,
  // CP ranks that are neighbours; the ring runs over the cp / cp_a2a_size groups. 0: no hierarchy.
  int cp_a2a_size = 0;
  // Pipeline sends run beside the compute (true) or hold the sender's compute stream until the
  // transfer is done (Megatron's batched, waited P2P: always without virtual stages, and with them
  // when overlap_p2p_comm is off). p2p_overlap_rule decides it again on a re-layout.
  bool p2p_overlap = true;
  // A stated bucket: Megatron's ddp_bucket_size counts parameters (DistributedDataParallelConfig
  // bucket_size, "maximum number of parameters in each bucket"); TorchRec's bucket_cap_mb and the
  // sweep's candidates are bytes of gradient. Bytes win when both are set; neither: the rule below.
  std::int64_t ddp_bucket_size_params = 0;
  std::int64_t ddp_bucket_size_bytes = 0;
  // The framework's bucket rule when none is stated: max(min, per-DP x DP) parameters of gradient
  // (the builder sets them from the profile; Megatron-Core's 40M / 1M for hand-built jobs); both
  // 0: one bucket per model chunk.
  std::int64_t ddp_bucket_min_params = 40'000'000;
  std::int64_t ddp_bucket_params_per_dp = 1'000'000;
  bool allow_tp_beyond_node = false;
  // How the builder checked the layer split, so that a re-layout of the built job is checked
  // alike (job/rules.h rule_facts): the framework gives the first L mod (PP x VPP) stages one more
  // layer instead of refusing (the validation mapper: a published run ran), and the stages came
  // from a stated layout or stage counts rather than the balanced split.
  bool uneven_layers_allowed = false;
  bool stages_stated = false;
  // Why the framework cannot split this model's sequence over CP ranks (torchtitan, per model);
  // empty: it can. The model's own layers may still forbid CP (job/rules.h).
  std::string cp_unsupported;
  // A KV-head count the tensor axis does not divide is padded: ceil(KV / TP) heads on every rank,
  // the KV projection replicated (XLA's GSPMD sharding, MaxText; PaLM's multi-query attention).
  // false: Megatron's rule, KV heads must divide over TP (job/rules.h kTpKvHeads).
  bool kv_heads_padded = false;
  // The rules that decided the layout-dependent switches (the profile's, or kAlways / kNever when
  // stated), so that a re-layout decides them again for its sizes (job/layout.h relayout).
  WhenRule sequence_parallel_rule = WhenRule::kWithTp;
  WhenRule overlap_param_gather_rule = WhenRule::kNever;
  WhenRule tp_comm_overlap_rule = WhenRule::kNever;
  WhenRule p2p_overlap_rule = WhenRule::kAlways;
  WhenRule reshard_after_forward_rule = WhenRule::kAlways;  // FSDP: reshard_after_forward
  // FSDP (kFsdp2) details. Hybrid sharding (HSDP): the DP x CP ranks form dp_replicate groups
  // that each shard the state over dp x cp / dp_replicate ranks (experts: expert_dp /
  // dp_replicate) and replicate across groups (gradients reduce-scatter inside a group, then
  // all-reduce across groups); torchtitan's replicate degree, MaxText's data axis. 1: one group.
  int dp_replicate = 1;
  // Gathered weights are freed after each forward and gathered again for the backward; false
  // keeps every gathered unit of the rank from its forward to its backward (PyTorch FSDP2's
  // reshard_after_forward=False, torchtitan's default with PP).
  bool reshard_after_forward = true;
  // The loss runs on vocabulary-sharded logits over TP (Megatron's vocab-parallel cross entropy,
  // torchtitan's loss parallel); false gathers the full logits on every TP rank first.
  bool vocab_parallel_loss = true;
  EmbeddingPlan embedding_plan;  // recommendation family: where each embedding table lives
  // FSDP gathers and reduce-scatters issued per layer inside the step and overlapped with the
  // neighbouring layer's compute (XLA's scheduling of a scanned layer stack, FSDP2 prefetch),
  // instead of per model chunk before its first forward / after its last backward.
  bool fsdp_per_layer = false;
  // The device mesh the sizes come from (MaxText ici_* / dcn_* axes); empty for frameworks whose
  // groups follow Megatron's rank order.
  std::vector<MeshAxis> mesh;

  int model_parallel_size() const { return tp * pp * cp; }
  // KV heads (query groups) on one TP rank: ceil(KV / TP), at least 1 (the padded or replicated
  // head; KV / TP exactly wherever the rules require KV heads to divide).
  int kv_heads_per_rank(int kv_heads) const { return std::max(1, (kv_heads + tp - 1) / tp); }
  // Whether `rule` turns a switch on for these sizes and this sharding.
  bool applies(WhenRule rule) const {
    switch (rule) {
      case WhenRule::kNever:
        return false;
      case WhenRule::kAlways:
        return true;
      case WhenRule::kWithTp:
        return tp > 1;
      case WhenRule::kWithDistributedOptimizer:
        return distributed_optimizer || fsdp != FsdpKind::kNone;
      case WhenRule::kWithSequenceParallel:
        return sequence_parallel && tp > 1;
      case WhenRule::kWithoutPp:
        return pp == 1;
      case WhenRule::kWithVpp:
        return vpp > 1;
    }
    return false;
  }
  const VirtualStage& stage(int pp_rank, int chunk) const { return stages[chunk * pp + pp_rank]; }
};

// -------------------------------------------------------------------------------------- runtime

// kOpPolicy: per-op selective checkpointing of whole blocks (PyTorch's selective activation
// checkpoint with torchtitan's policy): a block keeps its input and the outputs of the ops in the
// save list (attention, reduce-scatter and all-to-all outputs, every other dense matmul); the
// remaining ops (norms, the other matmuls, activations, expert grouped GEMMs, router) are
// recomputed in the backward.
// kTensors: a per-tensor policy over the saved-tensor vocabulary (model/saved_tensors.h): what it
// keeps on the device or on the host, everything else recomputed (MaxText's remat_policy).
enum class RecomputeGranularity { kNone, kFull, kSelective, kOpPolicy, kTensors };
enum class RecomputeMethod { kUniform, kBlock };

// Megatron's --recompute-modules, resolved once from their names by the adapters; every model reads
// the set, never the names.
enum class RecomputeModule : std::uint8_t {
  kCoreAttn,       // core_attn: the attention core (QK^T, softmax, AV)
  kMlp,            // mlp: the dense MLP (and, on MoE layers, the whole MoE block)
  kMoe,            // moe: the MoE block
  kMoeAct,         // moe_act: the experts' activation function
  kLayernorm,      // layernorm: input and pre-MLP norms
  kMlaUpProj,      // mla_up_proj: MLA up-projections
  kSharedExperts,  // shared_experts
  kCount
};
inline constexpr int kNumRecomputeModules = static_cast<int>(RecomputeModule::kCount);
std::string_view to_string(RecomputeModule m);
std::optional<RecomputeModule> parse_recompute_module(std::string_view name);

class RecomputeModules {
 public:
  constexpr RecomputeModules() = default;
  constexpr RecomputeModules(std::initializer_list<RecomputeModule> modules) {
    for (const RecomputeModule m : modules) add(m);
  }
  constexpr bool has(RecomputeModule m) const { return (bits_ >> static_cast<int>(m)) & 1U; }
  constexpr void add(RecomputeModule m) { bits_ |= 1U << static_cast<int>(m); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr void clear() { bits_ = 0; }
  // The names, in enum order (core_attn, mlp, ...).
  std::vector<std::string> names() const;
  friend constexpr bool operator==(RecomputeModules, RecomputeModules) = default;

 private:
  std::uint32_t bits_ = 0;
};

struct RecomputeSpec {
  RecomputeGranularity granularity = RecomputeGranularity::kNone;
  RecomputeMethod method = RecomputeMethod::kUniform;
  int num_layers = 0;          // full: layers per chunk (uniform) or per stage (block)
  RecomputeModules modules;    // selective: never empty (the framework's default set if unstated)
  std::vector<int> layer_ids;  // explicit decoder layers to recompute fully (Primus)
  // Megatron distribute_saved_activations: each full-recompute checkpoint's hidden states are
  // split over the TP group (1 / tp kept per rank) and all-gathered before the replay.
  bool distribute_saved = false;
  // kOpPolicy chosen by a compiler under a memory budget in [0, 1] (torch's activation memory
  // budget: 0 keeps only block inputs, 1 everything); < 0: the fixed per-op policy.
  double memory_budget = -1.0;
  TensorPolicy tensors;  // kTensors: per-tensor placement
};

// kRowwise: one fp32 scale per row (torchao rowwise); kRowwiseHpWgrad: rowwise with the weight
// gradient GEMM kept in high precision (torchao rowwise_with_gw_hp).
enum class Fp8Recipe {
  kNone,
  kDelayed,
  kTensorwise,
  kBlockwise,
  kMxfp8,
  kRowwise,
  kRowwiseHpWgrad
};
// 4-bit GEMMs (Megatron's --fp4-format e2m1 with fp4_recipe nvfp4; Primus' mxfp4): NVFP4 scales
// 16-element blocks with fp8 (e4m3) scales, MXFP4 32-element blocks with e8m0 scales.
enum class Fp4Recipe { kNone, kNvfp4, kMxfp4 };

struct PrecisionSpec {
  Dtype params_dtype = Dtype::kBf16;  // bf16 or fp16 model weights and activations
  // The dtype the weights are stored in when it differs from params_dtype (MaxText weight_dtype
  // float32: fp32 weights cast to bf16 for each GEMM); unset: params_dtype.
  std::optional<Dtype> weights_storage;
  Dtype stored_weights_dtype() const { return weights_storage.value_or(params_dtype); }
  Fp8Recipe fp8 = Fp8Recipe::kNone;
  Fp4Recipe fp4 = Fp4Recipe::kNone;  // wins over fp8 for the GEMMs it covers (all linear layers)
  bool fp8_param = false;            // --fp8-param-gather: weights kept in fp8
  // fp8_param describes the gathered weights only: FSDP all-gathers the GEMM weights in fp8 and
  // the GEMMs use them as gathered, while the shard stays in its own dtype (Primus'
  // use_fsdp2_fp8_all_gather, torchtitan's enable_fsdp_float8_all_gather).
  bool fp8_gather_only = false;
  // The fp8 cast of a weight keeps its transposed copy (for the backward GEMMs) beside it; false:
  // the transpose is re-made in each backward and not kept (ROCm Transformer Engine's
  // keep_fp8_weight_transpose_cache=False).
  bool fp8_transpose_cached = true;
  // Which GEMMs the fp8 recipe covers. Transformer Engine: every decoder and expert GEMM, never
  // the router or the output layer; torchao converters choose per module (filter_fqns,
  // grouped-GEMM fqns).
  bool fp8_dense = true;    // attention, dense MLP and shared-expert linears
  bool fp8_experts = true;  // routed-expert grouped GEMMs
  bool fp8_output = false;  // the output layer
  // false: the fp8 recipe keeps the weight-gradient GEMMs in high precision (Transformer Engine's
  // override_linear_precision wgrad), so each linear saves its input unquantised for them. The
  // adapter decides when a framework key applies (Megatron: delayed scaling only).
  bool fp8_wgrad = true;
  bool hp_wgrad() const { return fp8 != Fp8Recipe::kNone && fp4 == Fp4Recipe::kNone && !fp8_wgrad; }
  // The weight-gradient GEMMs run in params_dtype (the above, or torchao's rowwise_with_gw_hp).
  bool wgrad_in_params_dtype() const { return fp8 == Fp8Recipe::kRowwiseHpWgrad || hp_wgrad(); }
  Dtype gemm_dtype() const;  // params_dtype, kFp8, kMxfp8 or kFp4
  // The attention core in 8 bits (Transformer Engine's fp8_dpa: Megatron's
  // fp8_dot_product_attention under the delayed, tensorwise or mxfp8 recipe).
  bool fp8_attention = false;
  Dtype attention_dtype() const;  // kFp8 or kMxfp8 with fp8_attention, else params_dtype
  bool quantized_gemms() const { return fp8 != Fp8Recipe::kNone || fp4 != Fp4Recipe::kNone; }
  // Decoder layers kept out of the fp8 / fp4 recipe at the start and end of the model (Megatron
  // first_last_layers_bf16 with num_layers_at_start_in_bf16 / _end_in_bf16): their GEMMs, inputs
  // and weights stay in params_dtype. Counted over the global decoder-layer index.
  int bf16_layers_at_start = 0;
  int bf16_layers_at_end = 0;
  // Whether decoder layer `layer` of `num_layers` runs its GEMMs under the recipe.
  bool layer_quantized(int layer, int num_layers) const {
    return quantized_gemms() && layer >= bf16_layers_at_start &&
           layer < num_layers - bf16_layers_at_end;
  }
};

enum class OptimizerKind { kAdam, kSgd, kMuon };

// How routed tokens reach their experts.
enum class MoeDispatchKind : std::uint8_t {
  kPermute,        // sort / permute the tokens, one grouped GEMM over the experts (dropless or
                   // capacity-padded); Megatron's dispatchers, MaxText sparse_matmul
  kDenseCapacity,  // one-hot dispatch and combine einsums into per-expert capacity buffers per
                   // sequence (GShard; MaxText dense_matmul with capacity_factor > 0)
  kDenseAll,       // every expert computes every token, outputs weighted by the router (MaxText
                   // dense_matmul with capacity_factor <= 0)
};

// Which attention kernel the framework runs. kFused: the platform's best fused kernel as the
// accelerator calibration describes it (Transformer Engine / cuDNN, FlashAttention-3, AITER);
// kFa2: a FlashAttention-2-class kernel (the flash-attn package, PyTorch SDPA's flash backend).
enum class AttentionKernel : std::uint8_t { kFused, kFa2 };

// Saved activations moved to host memory during the forward and brought back for the backward.
// Layer level (Megatron's cpu_offloading: every saved tensor of the first `layers` decoder layers
// of a chunk) or module level (fine-grained activation offloading: the inputs of the listed
// modules in every layer, a `fraction` of them).
enum class OffloadModule : std::uint8_t {
  kAttnNorm,   // attn_norm: input of the input norm
  kQkvLinear,  // qkv_linear: input of the QKV projection
  kCoreAttn,   // core_attn: Q, K, V
  kAttnProj,   // attn_proj: input of the output projection
  kMlpNorm,    // mlp_norm: input of the pre-MLP norm
  kExpertFc1,  // expert_fc1: input of the routed experts' fc1
  kMoeAct,     // moe_act: input of the experts' activation
  kCount
};
std::string_view to_string(OffloadModule m);
std::optional<OffloadModule> parse_offload_module(std::string_view name);

struct OffloadSpec {
  int layers = 0;             // layer-level offloading: layers per chunk (0: off)
  std::uint16_t modules = 0;  // bit set of OffloadModule (module-level)
  double fraction = 1.0;      // module level: the share of eligible tensors offloaded
  bool has(OffloadModule m) const { return (modules >> static_cast<int>(m)) & 1U; }
  void add(OffloadModule m) { modules |= static_cast<std::uint16_t>(1U << static_cast<int>(m)); }
  bool any() const { return layers > 0 || modules != 0; }
};

// How routed tokens reach their experts and come back (Megatron's moe_token_dispatcher_type,
// MG8 token_dispatcher.py).
enum class MoeDispatcher : std::uint8_t {
  kAllToAll,   // all-to-all over EP, then all-gather over ETP; the mirror image to combine
  kAllGather,  // every token all-gathered over ETP x EP, the local experts' rows selected, and
               // the outputs reduce-scattered back over ETP x EP (Megatron's default)
  kFlex,       // one fused dispatch and one combine over ETP x EP, deduplicated per destination
               // (DeepEP, HybridEP, NCCL EP)
};
std::string_view to_string(MoeDispatcher d);

// The kernel that moves the tokens. kCollective: the framework's collective library (NCCL,
// RCCL); the others are dedicated dispatch kernels (their bandwidths: data/hardware).
enum class MoeDispatchKernel : std::uint8_t {
  kCollective,
  kDeepEp,
  kHybridEp,
  kNcclEp,
  kTurboDeepEp
};
std::string_view to_string(MoeDispatchKernel k);

// What hides the expert-parallel communication; several may apply.
enum class MoeOverlap : std::uint8_t {
  kSharedExperts,    // shared experts run on a side stream while tokens are dispatched / combined
  kOtherMicrobatch,  // F and B of two microbatches run as one overlapped unit (combined 1F1B):
                     // one's dispatch / combine hides behind the other's compute
  kDelayedWgrad,     // expert weight gradients are deferred, so they too can hide communication
  kCount
};
std::string_view to_string(MoeOverlap o);

class MoeOverlaps {
 public:
  constexpr bool has(MoeOverlap o) const { return (bits_ >> static_cast<int>(o)) & 1U; }
  constexpr void add(MoeOverlap o) {
    bits_ |= static_cast<std::uint8_t>(1U << static_cast<int>(o));
  }
  constexpr bool empty() const { return bits_ == 0; }
  std::vector<std::string> names() const;
  friend constexpr bool operator==(MoeOverlaps, MoeOverlaps) = default;

 private:
  std::uint8_t bits_ = 0;
};

// How evenly the router spreads tokens over the experts. kBalanced: uniform (synthetic or mock
// data, forced-balanced benchmark routing such as Megatron's moe_router_force_load_balancing);
// kLearned: a learned router whose expert loads vary by a measured spread (RuntimeSpec::
// moe_expert_load_cv, --moe-expert-load-cv). kForced: the configuration replaces the router's
// choice by a balanced one (Megatron moe_router_force_load_balancing, torchtitan
// debug.moe_force_load_balance, MaxText use_random_routing), so no skew is possible. kBalanced is
// the assumption when nothing says: a learned router projected as if balanced, which the
// performance projection brackets with a skewed one (PerfOptions::routing_skew_bracket).
enum class MoeRouting : std::uint8_t { kBalanced, kLearned, kForced };
std::string_view to_string(MoeRouting r);
// Which experts a token's top-k copies go to. kUniform: k distinct experts drawn uniformly (a
// router, or forced balance from random scores: Megatron's moe_router_force_load_balancing),
// limited to the picked groups where the model has group-limited routing. kConsecutive: token t of
// a rank's microbatch takes experts [k t, k t + k) mod E, so its copies sit on the fewest
// neighbouring experts (NeMo AutoModel's FakeBalancedGate, AM1 layers.py, its benchmark routing).
enum class MoePlacement : std::uint8_t { kUniform, kConsecutive };

// The parts of a decoder layer CUDA graphs capture (Megatron cuda_graph_modules / the deprecated
// cuda_graph_scope): a captured op replays without the host issuing it.
enum class CudaGraphModule : std::uint8_t {
  kLayer,  // the whole layer (empty module list; static shapes only)
  kAttn,
  kMlp,
  kMoe,
  kMoeRouter,
  kMoePreprocess,
  kMamba,
  kCount
};
std::string_view to_string(CudaGraphModule m);
std::optional<CudaGraphModule> parse_cuda_graph_module(std::string_view text);

// How the graphs are captured (Megatron cuda_graph_impl). The memory differs: TE's
// make_graphed_callables keeps a static input buffer per graphed layer and microbatch in flight
// and copies the previous layer's output into it on replay (docs/memory.md "CUDA graphs"); the
// local CudaGraphManager aliases that output instead.
enum class CudaGraphImpl : std::uint8_t { kLocal, kTransformerEngine };

struct CudaGraphs {
  bool full_iteration = false;                 // the whole step is one graph (sync-free MoE only)
  CudaGraphImpl impl = CudaGraphImpl::kLocal;  // of the per-layer graphs (`modules`)
  std::uint16_t modules = 0;                   // bit per CudaGraphModule
  bool has(CudaGraphModule m) const { return (modules >> static_cast<int>(m)) & 1U; }
  void add(CudaGraphModule m) { modules |= static_cast<std::uint16_t>(1U << static_cast<int>(m)); }
  bool any() const { return full_iteration || modules != 0; }
};

// Host (CPU) time an eager framework spends issuing work to the device (FrameworkProfile
// host_op_us / host_module_us / host_launch_us, from host-side microbenchmarks): one eager
// operator call (Python and dispatcher), one Transformer Engine module entry, one kernel issued
// from a C++ loop. All 0: the host is not modelled (compiled programs, jobs built in code).
// What the host issues for each op of a framework's MoE layer, counted in its source code (the
// profile's host_census; docs/host.md): eager operator calls, module entries, and per local
// expert a kernel launch from a C++ loop and / or a gradient hook. Ops the census does not name
// are counted generically (a GEMM is a module entry, a weight gradient a hook, others one call).
struct HostCensusOp {
  std::string name;  // the workload's op name ("moe.experts.fc1", "moe.router.dgrad", ...)
  double ops = 0.0;
  double modules = 0.0;
  bool launch_per_expert = false;
  bool hook_per_expert = false;
};
// Eager operator calls of one EP transfer, forward and backward.
struct HostTransferCalls {
  double forward = 0.0;
  double backward = 0.0;
};
struct HostCensus {
  std::vector<HostCensusOp> moe_ops;
  HostTransferCalls alltoall_dispatch, alltoall_combine;  // the all-to-all dispatcher
  HostTransferCalls flex_dispatch, flex_combine;          // the flex dispatcher (DeepEP, HybridEP)
  HostTransferCalls deepep_multihot;  // extra calls of DeepEP's indices-to-multihot conversion
  std::string source;
};

struct HostDispatch {
  double op_s = 0.0;
  double module_s = 0.0;
  double launch_s = 0.0;
  // The framework's census (its profile); null: every op is counted generically.
  std::shared_ptr<const HostCensus> census;
  bool modelled() const { return op_s > 0.0 || module_s > 0.0 || launch_s > 0.0; }
};

struct RuntimeSpec {
  int micro_batch_size = 1;
  int global_batch_size = 1;
  int seq_length = 0;
  PrecisionSpec precision;
  RecomputeSpec recompute;
  bool flash_attention = true;
  AttentionKernel attention_kernel = AttentionKernel::kFused;
  // The framework's compute-stream gap share (FrameworkProfile::kernel_gap_fraction): ops on the
  // compute stream take busy / (1 - gap); 0 = back-to-back kernels.
  double kernel_gap_fraction = 0.0;
  HostDispatch host_dispatch;  // perf/host.h: the host's issue time per op
  CudaGraphs cuda_graphs;      // ops captured in CUDA graphs cost the host nothing
  // The framework profile the job was built with (data/frameworks/<name>.yaml) and its back-end
  // adapter (megatron, torchtitan, maxtext, torchrec_dlrm); "" for a job assembled in code.
  std::string framework;
  std::string backend;
  bool cross_entropy_fusion = false;  // one fused kernel (TE's, Liger's, XLA, a compiled loss)
  // Megatron's fused loss (cross_entropy_fusion_impl native): the eager steps through
  // torch.compile (MG29); it keeps the eager loss's fp32 softmax (cross_entropy_fusion stays off).
  bool cross_entropy_compiled = false;
  // Megatron's vocab-parallel cross entropy writes its gradient into the saved fp32 softmax;
  // torch.nn.functional.cross_entropy (torchtitan, HF) keeps an fp32 log-softmax and allocates
  // a new fp32 gradient for it (memory: 4 more bytes per logit during the loss backward).
  bool loss_grad_in_place = true;
  // The loss computes the logits in this many tiles of the tokens (MaxText num_vocab_tiling,
  // utils/vocabulary_tiling.py): the forward keeps only the head's input, one tile's logits live
  // at a time, and the backward recomputes each tile's logits GEMM. 1: all logits at once.
  int vocab_tiles = 1;
  // The tiled loss computes the head's gradients inside its forward, tile by tile, and keeps the
  // input gradient and an fp32 weight gradient for the backward instead of replaying the tiles
  // (FLA's FusedLinearCrossEntropyLoss, Primus' MambaModel fused_ce_mode 1): the head's dgrad and
  // wgrad GEMMs run in the forward and nothing is recomputed. false: MaxText's replay.
  bool loss_grad_in_forward = false;
  // Megatron's defer_embedding_wgrad_compute (MG28): the last pipeline stage keeps the output
  // layer's input and logit gradient of its first `output_wgrad_deferral_limit` microbatches (0:
  // every one; Megatron's wgrad_deferral_limit) and computes their weight gradients after its
  // last backward, in the pipeline flush, before the gradient reduction. false: each backward
  // computes its own.
  bool defer_output_wgrad = false;
  int output_wgrad_deferral_limit = 0;
  bool deepep = false;
  // Token dispatch deduplicated per destination (DeepEP, HybridEP, Megatron's flex dispatcher): a
  // token crosses to each remote node (or, within one node, each GPU) once however many of its
  // chosen experts live there, instead of once per chosen expert.
  bool moe_dedup_dispatch = false;
  int sync_free_moe_stage = 0;  // Primus turbo_sync_free_moe_stage, 0-3 (as stated; reports)
  // The dropless dispatch keeps its token counts on the device: no host read per MoE layer
  // (docs/host.md). Set by the adapters from what the framework runs (Primus-Turbo's sync-free
  // MoE stages 2-3, frontend/primus_turbo.h); false: Megatron's dispatchers read them.
  bool moe_host_sync_free = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  MoeDispatchKernel moe_dispatch_kernel = MoeDispatchKernel::kCollective;
  MoeOverlaps moe_overlap;
  // DualPipeV's overlapped steps (the forward of one microbatch beside the backward of another)
  // run as one unit, each hiding the other's EP communication (DeepSeek's DualPipe design).
  // false: the two run one after the other (torchtitan with
  // parallelism.pipeline_parallel_expert_parallel_overlap off or not applicable: torch
  // pipelining runs an OVERLAP_F_B action's sub-actions in turn unless a custom function is
  // registered, torchtitan distributed/pipeline_parallel.py:216-219).
  bool schedule_overlapped_pairs = true;
  bool moe_probs_fp32 = false;  // router probabilities in fp32 (moe_router_dtype fp32)
  // Quantized wire format of the tokens the dispatcher moves (Megatron moe_dispatch_fwd_dtype /
  // moe_combine_bwd_dtype 'mxfp8'): the forward dispatch and the backward of the combine (the
  // output gradient going back to the experts) carry 1 byte per element plus one scale byte per
  // 32 elements; the combine and the dispatch's backward stay in the activation dtype.
  bool moe_dispatch_fwd_fp8 = false;
  bool moe_combine_bwd_fp8 = false;
  // Compute units (SMs / CUs) the dispatch / combine kernels occupy while they run (DeepEP
  // num_sms, Primus Turbo DeepEP num_cu): compute that overlaps them runs on the rest. 0: none.
  int moe_comm_compute_units = 0;
  // The router's probabilities are applied inside the experts by a weighted activation that saves
  // the permuted fp32 probabilities, so the combine does not keep the experts' output for their
  // gradient (Megatron-Core: experts.py weighted_bias_swiglu_impl, token_dispatcher.py
  // combine_postprocess unpermutes without probs). false: the output is scaled after the experts
  // and kept (torchtitan, older Megatron).
  bool moe_probs_in_experts = false;
  // Token permute / unpermute run as fused row-gather kernels (Megatron moe_permute_fusion: TE's
  // moe_permute with a row-id map; Primus Turbo's sync-free stages) instead of PyTorch's sort,
  // index_select and scatter (the legacy permute fraction).
  bool moe_permute_fusion = false;
  MoeRouting moe_routing = MoeRouting::kBalanced;
  MoePlacement moe_placement = MoePlacement::kUniform;
  // Coefficient of variation of the routed tokens per expert within one microbatch (0: balanced).
  // The busiest expert-parallel rank sets the pace of each dispatch, grouped GEMM and combine
  // (moe_rank_load_factor).
  double moe_expert_load_cv = 0.0;
  OffloadSpec offload;
  // Dropless expert-parallel dispatch in a program of static shapes (JAX: ragged_all_to_all,
  // DeepEP through the XLA FFI): each rank's receive buffer, and the expert-sorted layout built
  // from it, hold this many times the balanced routed rows (the worst case an expert-parallel
  // rank can receive: MaxText get_ragged_buffer_size min(EP, experts / top-k), DeepEP
  // num_worst_tokens = tokens x EP). The local sort / fan-out and the fan-in pass over the whole
  // buffer; the grouped GEMM computes only the routed rows. 0: buffers sized to the routed rows.
  double moe_static_recv_factor = 0.0;
  ScheduleKind schedule = ScheduleKind::kAuto;
  // Gradient accumulation outside the pipeline schedule (torchtitan): each iteration runs the
  // schedule this many times back to back, each round a flush of num_microbatches / rounds
  // microbatches with its own bubble, its own FSDP gathers and its own gradient reduction.
  int accumulation_rounds = 1;
  // The framework accumulates gradients outside the pipeline schedule (torchtitan): a re-layout
  // (job/layout.h relayout) runs each microbatch as its own round without PP and the whole
  // per-replica batch as one flush with PP; false: one round.
  bool accumulation_outside_schedule = false;
  // The framework's selective-recompute set (its profile's selective_recompute), for a re-layout
  // that turns selective recompute on (the sweep); Megatron's core_attn for hand-built jobs.
  RecomputeModules selective_default{RecomputeModule::kCoreAttn};
  // The per-tensor policies the framework names (MaxText's remat_policy), for a re-layout that
  // picks one by name (the sweep's remat:<name>, the memory remedies); empty for frameworks
  // without named policies. Views the adapter's static table.
  std::span<const NamedTensorPolicy> tensor_policies;
  // Norms, rotary embedding and the gated activation run as fused kernels (Transformer Engine,
  // Apex, torch.compile); false: PyTorch eager, each op of their decomposition its own kernel
  // reading and writing whole tensors (torchtitan without compile).
  bool fused_elementwise = true;
  OptimizerKind optimizer = OptimizerKind::kAdam;
  bool precision_aware_optimizer = false;
  // The gradient buffer (accumulation and data-parallel reduction): fp32 in Megatron unless
  // --grad-reduce-in-bf16, or a precision-aware optimizer's main_grads_dtype.
  Dtype main_grads_dtype = Dtype::kFp32;
  Dtype exp_avg_dtype = Dtype::kFp32;
  Dtype exp_avg_sq_dtype = Dtype::kFp32;
  RecsysRuntime recsys;  // recommendation family: optimizers, input pipeline, planner settings
  // The optimizer keeps an fp32 master copy of weights stored in a narrower dtype (Megatron,
  // torch AMP); false: it updates the stored weights directly (MaxText / optax).
  bool master_weights = true;
  // FSDP2 storage: true when the sharded parameter is the fp32 master, gathered in the params
  // dtype and its gradient reduced in main_grads_dtype (torch MixedPrecisionPolicy, torchtitan);
  // false when the module is cast to the params dtype before fully_shard (Megatron's
  // use_torch_fsdp2: Float16Module, no policy), so the shards and their gradients are in the
  // params dtype and the optimizer holds its own sharded fp32 master, copying the gradients to
  // fp32 at the step.
  bool fsdp_param_is_master = true;
  bool optimizer_host_offload = false;  // optimizer state lives in host memory (MaxText)
  MoeDispatchKind moe_dispatch = MoeDispatchKind::kPermute;
  // The whole step is one compiled program (JAX / XLA): buffers are assigned from the program's
  // liveness (a tensor is freed at its last use, e.g. the logits before the layers' backward),
  // weights are gathered one array at a time, the fused loss writes its gradient into its logits.
  bool whole_step_compiled = false;
  // The device allocator whose reservation decides the memory verdict (memory/allocator.h): XLA's
  // when the step is compiled whole, else PyTorch's caching allocator, with expandable segments
  // when PYTORCH_CUDA_ALLOC_CONF (or the framework's launcher) turns them on.
  DeviceAllocatorKind allocator = DeviceAllocatorKind::kCaching;
  // The TFLOP/s convention the framework's own logs use, reported next to projector's (perf.h
  // logged_tflops_per_gpu): kMaxText is calculate_tflops_training_per_device (maxtext_utils.py):
  // model FLOPs with causal-halved attention, the unembedding counted, recompute excluded, MTP
  // counted without its projection and logits.
  enum class LoggedFlops : std::uint8_t { kNone, kMaxText };
  LoggedFlops logged_flops = LoggedFlops::kNone;
};

// -------------------------------------------------------------------------------------- cluster

struct ClusterSpec {
  int nodes = 1;
  int gpus_per_node = 8;  // devices (ranks) per node; TPU7x: 2 per chip
  // Framework devices per chip (AcceleratorSpec::devices_per_chip); `accelerator` then holds the
  // per-device share of the chip (hardware/catalog.h device_share) and reports convert back.
  int devices_per_chip = 1;
  // TPU: the torus shape of one slice in chips (e.g. {4, 4, 8}) and the slices joined by DCN;
  // empty for GPUs.
  std::vector<int> slice_shape;
  int slices = 1;
  AcceleratorSpec accelerator;
  // Where the accelerator came from, for the top of every report: "--hardware", "environment
  // PRIMUS_GPU_ARCH", "<config>:<line> (<key>)", or "assumed: <reason>" when nothing named it.
  std::string accelerator_origin;
  NetworkSpec network;

  // 64-bit: nodes x GPUs per node is computed before any bound is checked.
  std::int64_t world_size() const { return static_cast<std::int64_t>(nodes) * gpus_per_node; }
};

std::string_view to_string(RecomputeGranularity g);
std::string_view to_string(MoeDispatchKind k);
std::string_view to_string(Fp8Recipe r);
std::string_view to_string(Fp4Recipe r);
std::string_view to_string(FsdpKind f);

}  // namespace projector
