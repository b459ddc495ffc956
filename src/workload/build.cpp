// Builds the per-microbatch op lists. Conventions (Megatron-Core):
// - Column-parallel GEMMs (QKV, FC1) shard their output features over TP, row-parallel GEMMs
//   (output projection, FC2) their input features. Every TP rank processes all b*s/cp tokens.
// - With sequence parallelism norms, dropout and residuals see b*s/(cp*tp) tokens, and the TP
//   collectives are all-gather (before column-parallel) and reduce-scatter (after row-parallel);
//   without it they are one all-reduce after each row-parallel GEMM (forward) and after each
//   column-parallel GEMM's input gradient (backward).
// - MoE (alltoall dispatcher): routed tokens are dispatched over EP, gathered over ETP, run through
//   the local experts as one grouped GEMM and combined back. Routing is assumed balanced.
// - Backward of a GEMM: the input gradient (B) has the same FLOPs as the forward, the weight
//   gradient (W) too. Attention backward is its own kernel. The backward of a memory-bound op
//   reads the saved input and the upstream gradient and writes one gradient: 1.5x the forward
//   bytes.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "projector/cost/moe_routing.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/family.h"
#include "projector/model/recompute_policy.h"
#include "projector/workload/workload.h"
#include "workload/build_detail.h"
#include "workload/layer_ops.h"
#include "workload/ops.h"

namespace projector {

using workload_detail::act_gemm_op;
using workload_detail::add_attention;
using workload_detail::add_backward;
using workload_detail::add_ffn;
using workload_detail::add_linear_attention;
using workload_detail::add_mamba;
using workload_detail::add_short_conv;
using workload_detail::comm_op;
using workload_detail::Ctx;
using workload_detail::finish_block;
using workload_detail::layer_fully_recomputed;
using workload_detail::make_ctx;
using workload_detail::mem_op;
using workload_detail::norm_bytes;
using workload_detail::push_gemm;
using workload_detail::tp_enter;
using workload_detail::tp_exit;

CommGroup job_group(const JobSpec& job, GroupKind kind) {
  const ParallelSpec& p = job.parallel;
  if (!p.mesh.empty()) return workload_detail::mesh_group(job, kind);
  ParallelSizes sizes;
  sizes.tp = p.tp;
  sizes.cp = p.cp;
  sizes.dp = job.dp();
  sizes.pp = p.pp;
  sizes.ep = p.ep;
  sizes.etp = p.etp;
  sizes.dp_replicate = p.dp_replicate;
  return make_group(
      kind, sizes,
      collective_node_gpus(job.cluster.accelerator, job.cluster.network, job.cluster.gpus_per_node),
      job.cluster.network.pod_size);
}

namespace {
// Per-layer FSDP collectives of the weights a block of one stage holds (its VirtualStage).
void add_fsdp_ops(const JobSpec& job, const VirtualStage& part, LayerWork& lw) {
  if (!job.parallel.fsdp_per_layer || job.parallel.fsdp == FsdpKind::kNone) return;
  const StageParams sp = stage_params(job.model, job.parallel, part, false);
  for (Op& op : workload_detail::fsdp_layer_ops(job, sp.dense_params, sp.expert_params)) {
    lw.ops.push_back(std::move(op));
  }
}
}  // namespace

namespace {
// Per-sample GEMMs of a Flux model (docs/diffusion.md): one row per sample of the microbatch.
std::int64_t diffusion_rows(const Ctx& c) {
  return static_cast<std::int64_t>(c.job.runtime.micro_batch_size);
}
}  // namespace

// The attention-residual mixers of decoder layer i (ModelSpec::attn_res_block_size; Kimi-K3
// attention_residual.py, attn_res_kernels/_eager/reference.py:88-102): before the attention (from
// layer 1) and before the MLP, each a per-token softmax over the checkpoints and the running
// stream. Primus runs them eager in fp32: six [tokens, candidates, h] intermediates, five fp32,
// 16x the candidates' bf16 bytes (attn_res_kernels/__init__.py:25-34). Empty ops without them.
std::array<Op, 2> attn_res_mixers(const Ctx& c, int i) {
  std::array<Op, 2> out;
  const int block = c.job.model.attn_res_block_size;
  if (block <= 0) return out;
  const int nb_in = (i + block - 1) / block;
  const int nb_mlp = nb_in + (i % block == 0 ? 1 : 0);
  const double stream = static_cast<double>(c.tokens_sp) * c.job.model.hidden_size * c.act_b;
  out[0] = mem_op("attn_res.attn_mixer", 16.0 * (nb_in + 1) * stream);
  out[1] = mem_op("attn_res.mlp_mixer", 16.0 * (nb_mlp + 1) * stream);
  return out;
}

LayerWork build_layer_work(const JobSpec& job, int layer_index) {
  const Ctx c = workload_detail::make_layer_ctx(job, layer_index);
  const LayerSpec& layer = job.model.layers[static_cast<std::size_t>(layer_index)];
  std::vector<Op> fwd;
  if (layer.dit.streams > 0) {
    // adaLN modulation of each stream: Linear(h -> chunks x h) on the conditioning vector.
    const std::int64_t h = job.model.hidden_size;
    fwd.push_back(
        act_gemm_op(c, "dit.adaln_modulation", diffusion_rows(c),
                    static_cast<std::int64_t>(layer.dit.streams) * layer.dit.adaln_chunks * h, h));
  }
  if (layer.has_mamba()) add_mamba(c, fwd, layer.mamba);
  const std::array<Op, 2> mixers = attn_res_mixers(c, layer_index);
  if (layer_index > 0 && mixers[0].bytes > 0.0) fwd.push_back(mixers[0]);
  if (layer.has_linear_attention()) {
    if (layer.linear.short_conv()) {
      add_short_conv(c, fwd, layer.linear);
    } else {
      add_linear_attention(c, fwd, layer.linear);
    }
  }
  if (layer.has_attention()) add_attention(c, fwd, layer);
  if (mixers[1].bytes > 0.0) fwd.push_back(mixers[1]);
  if (layer.has_ffn()) add_ffn(c, fwd, layer);
  LayerWork lw;
  lw.layer = layer_index;
  switch (layer.kind) {
    case LayerKind::kTransformer:
      lw.label = layer.is_moe ? "moe_layer" : "dense_layer";
      break;
    case LayerKind::kAttention:
      lw.label = "attention_layer";
      break;
    case LayerKind::kMamba:
      lw.label = "mamba_layer";
      break;
    case LayerKind::kFfn:
      lw.label = layer.is_moe ? "moe_ffn_layer" : "mlp_layer";
      break;
    case LayerKind::kLinearTransformer:
      if (layer.linear.short_conv()) {
        lw.label = layer.is_moe ? "short_conv_moe_layer" : "short_conv_dense_layer";
      } else {
        lw.label = layer.is_moe ? "linear_moe_layer" : "linear_dense_layer";
      }
      break;
    case LayerKind::kLinearAttention:
      lw.label = "linear_attention_layer";
      break;
  }
  finish_block(job, fwd, layer_fully_recomputed(job, layer_index), lw, c.sp, &layer);
  for (Op& op : workload_detail::offload_ops(job, layer)) lw.ops.push_back(std::move(op));
  add_fsdp_ops(job, VirtualStage{layer_index, 1, false, false, 0}, lw);
  return lw;
}

namespace {

// Flux's input side beside img_in (the "embedding"; PR9 model.py:178-199, 480-507): txt_in on
// the text tokens and the per-sample time / vector / guidance MLPs (in -> h, h -> h).
void add_diffusion_embedders(const Ctx& c, std::vector<Op>& fwd) {
  const DiffusionSpec& d = c.job.model.diffusion;
  const std::int64_t h = c.job.model.hidden_size;
  const std::int64_t b = c.job.runtime.micro_batch_size;
  fwd.push_back(
      act_gemm_op(c, "diffusion.txt_in", b * d.text_tokens / c.job.parallel.cp, h, d.context_dim));
  const std::int64_t in =
      d.model_channels + d.vec_in_dim + (d.guidance_embed ? d.model_channels : 0);
  fwd.push_back(act_gemm_op(c, "diffusion.embedders_in", b, h, in));
  const std::int64_t mlps = d.guidance_embed ? 3 : 2;
  fwd.push_back(act_gemm_op(c, "diffusion.embedders_out", b, mlps * h, h));
}

LayerWork embedding_work(const Ctx& c) {
  const std::int64_t h = c.job.model.hidden_size;
  std::vector<Op> fwd;
  fwd.push_back(mem_op("embedding.lookup", 2.0 * static_cast<double>(c.tokens_sp) * h * c.act_b,
                       MemOpClass::kPermute));
  if (c.job.model.diffusion.enabled()) add_diffusion_embedders(c, fwd);
  LayerWork lw;
  lw.label = "embedding";
  lw.ops = fwd;
  // The weight gradient is a scatter-add of the output gradient into the (fp32) grad buffer.
  Op w = mem_op("embedding.wgrad", static_cast<double>(c.tokens_sp) * h * (c.act_b + 8.0),
                MemOpClass::kPermute);
  w.phase = WorkPhase::kW;
  lw.ops.push_back(w);
  add_fsdp_ops(c.job, VirtualStage{0, 0, true, false, 0}, lw);
  return lw;
}

void add_output_head(const Ctx& c, std::vector<Op>& fwd, const std::string& prefix) {
  const JobSpec& job = c.job;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t v_local = padded_vocab_size(job.model, c.tp) / c.tp;
  fwd.push_back(mem_op(prefix + ".final_norm", norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, fwd, prefix);
  // Flux: norm_out's modulation per sample, proj_out on the image tokens only.
  const DiffusionSpec& d = job.model.diffusion;
  const std::int64_t rows =
      d.enabled() ? job.runtime.micro_batch_size * d.image_tokens / job.parallel.cp : c.tokens;
  if (d.enabled()) {
    fwd.push_back(
        act_gemm_op(c, prefix + ".adaln_modulation", job.runtime.micro_batch_size, 2 * h, h));
  }
  if (c.gemm_output != c.act) {
    push_gemm(c, fwd, prefix + ".logits", rows, v_local, h);
  } else {
    fwd.push_back(act_gemm_op(c, prefix + ".logits", rows, v_local, h));
  }
  // Without a vocabulary-parallel loss the logits are gathered and every TP rank runs the loss on
  // the full vocabulary.
  const bool gathered = c.tp > 1 && !job.parallel.vocab_parallel_loss;
  if (gathered) {
    fwd.push_back(comm_op(prefix + ".logits_all_gather", GroupKind::kTp, CollectiveKind::kAllGather,
                          c.tp, static_cast<double>(c.tokens) * v_local * c.tp * c.act_b));
  }
  // Cross entropy over the vocabulary shard (cost/memory_ops.h: fused, or Megatron's eager or
  // compiled passes over an fp32 copy).
  const double logits = static_cast<double>(rows) * v_local * (gathered ? c.tp : 1);
  const CrossEntropyKernel kernel = job.runtime.cross_entropy_fusion ? CrossEntropyKernel::kFused
                                    : job.runtime.cross_entropy_compiled
                                        ? CrossEntropyKernel::kCompiled
                                        : CrossEntropyKernel::kEager;
  const CrossEntropyTraffic ce = cross_entropy_traffic(logits, c.act_b, kernel);
  Op loss = mem_op(prefix + ".cross_entropy", ce.fwd_bytes, MemOpClass::kLoss);
  loss.bwd_bytes = ce.bwd_bytes;
  fwd.push_back(std::move(loss));
  if (c.tp > 1 && !gathered) {
    fwd.push_back(comm_op(prefix + ".loss_all_reduce", GroupKind::kTp, CollectiveKind::kAllReduce,
                          c.tp, 3.0 * c.tokens * 4.0));
  }
}

// A vocab-tiled loss (RuntimeSpec::vocab_tiles; MaxText utils/vocabulary_tiling.py:197-277)
// replays each tile's logits GEMM and loss forward in its backward: the whole head's forward
// once more, placed before the head's backward ops (priced as one GEMM over all the tokens).
void add_vocab_tile_recompute(const JobSpec& job, const std::vector<Op>& fwd, LayerWork& lw) {
  if (job.runtime.vocab_tiles <= 1) return;
  std::vector<Op> replay;
  for (const Op& f : fwd) {
    if (f.name != "output.logits" && f.name != "output.cross_entropy") continue;
    Op r = f;
    r.phase = WorkPhase::kB;
    r.recompute = true;
    r.name = f.name + ".recompute";
    replay.push_back(r);
  }
  const auto first_b = std::find_if(lw.ops.begin(), lw.ops.end(),
                                    [](const Op& op) { return op.phase != WorkPhase::kF; });
  lw.ops.insert(first_b, replay.begin(), replay.end());
}

// A loss that computes its gradients in the forward (RuntimeSpec::loss_grad_in_forward; FLA's
// fused linear cross entropy): the head's input- and weight-gradient GEMMs and the loss gradient
// run tile by tile inside the forward; nothing is replayed.
void move_loss_grad_to_forward(LayerWork& lw) {
  for (Op& op : lw.ops) {
    const bool head =
        op.name.rfind("output.logits", 0) == 0 || op.name.rfind("output.cross_entropy", 0) == 0;
    if (head) op.phase = WorkPhase::kF;
  }
  std::stable_partition(lw.ops.begin(), lw.ops.end(),
                        [](const Op& op) { return op.phase == WorkPhase::kF; });
}

LayerWork output_work(const Ctx& c) {
  std::vector<Op> fwd;
  add_output_head(c, fwd, "output");
  LayerWork lw;
  lw.label = "output";
  finish_block(c.job, fwd, false, lw, c.sp);
  if (c.job.runtime.vocab_tiles > 1 && c.job.runtime.loss_grad_in_forward) {
    move_loss_grad_to_forward(lw);
  } else {
    add_vocab_tile_recompute(c.job, fwd, lw);
  }
  // The output layer (a tied one is the embedding, gathered again here).
  const int layers = c.job.model.num_layers();
  add_fsdp_ops(c.job, VirtualStage{layers, 0, false, true, 0}, lw);
  return lw;
}

LayerWork mtp_work(const Ctx& c, int depth) {
  const JobSpec& job = c.job;
  const std::int64_t h = job.model.hidden_size;
  std::vector<Op> fwd;
  fwd.push_back(mem_op("mtp.norms", 2.0 * norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, fwd, "mtp");
  push_gemm(c, fwd, "mtp.eh_proj", c.tokens, h / c.tp, 2 * h);
  tp_exit(c, fwd, "mtp");
  add_attention(c, fwd, job.model.layers.back());
  add_ffn(c, fwd, job.model.layers.back());
  add_output_head(c, fwd, "mtp.output");
  LayerWork lw;
  lw.label = "mtp_" + std::to_string(depth);
  finish_block(job, fwd, false, lw, c.sp);
  return lw;
}

// PyTorch FSDP2 (one unit per block, embedding, norm + output): gradients reduce-scatter in the
// shard group, then (HSDP) all-reduce across the replicate groups; weights all-gather in the
// shard group before the forward and, with reshard_after_forward, again before the backward.
// With fp8 all-gather the GEMM weights travel in one byte.
// The bytes a stage's weights all-gather with: fp8 weights (fp8_param_gather, torchtitan's float8
// all-gather) travel in one byte, except those of layers kept out of the recipe.
struct GatherBytes {
  double dense = 0.0;
  double expert = 0.0;
};
GatherBytes gather_bytes(const JobSpec& job, const Ctx& c, const StageParams& sp) {
  const PrecisionSpec& pr = job.runtime.precision;
  const double q_gemm = sp.dense_gemm_params - sp.bf16_gemm_params;
  const double q_expert = sp.expert_params - sp.bf16_expert_params;
  GatherBytes g;
  g.dense =
      pr.fp8_param ? q_gemm + (sp.dense_params - q_gemm) * c.act_b : sp.dense_params * c.act_b;
  g.expert = pr.fp8_param && pr.fp8_experts ? q_expert + sp.bf16_expert_params * c.act_b
                                            : sp.expert_params * c.act_b;
  return g;
}

// `overlap_gather` unset: FSDP2, which gathers before each use (overlapped; again before the
// backward with reshard_after_forward). Set: the distributed optimizer's instances, which gather
// once after the step, overlapped when overlap_param_gather is on.
void add_fsdp2_comm(const JobSpec& job, const Ctx& c, const StageParams& sp, int ch,
                    IterationWork& it, std::optional<bool> overlap_gather = std::nullopt) {
  const ParallelSpec& p = job.parallel;
  const double grad_b = bytes_per_element(job.runtime.main_grads_dtype);
  const int rep = std::max(1, p.dp_replicate);
  const bool hsdp = rep > 1;
  const Overlap grad_ov = p.overlap_grad_reduce ? Overlap::kWithCompute : Overlap::kExposed;
  struct Part {
    const char* name;
    GroupKind group;
    int shard;
    double params;
    double gather_bytes;
  };
  const GatherBytes gb = gather_bytes(job, c, sp);
  const double dense_gather = gb.dense;
  const double expert_gather = gb.expert;
  const Part parts[] = {{"dp", hsdp ? GroupKind::kDpCpShard : GroupKind::kDpCp,
                         job.fsdp_shard_size(), sp.dense_params, dense_gather},
                        {"edp", hsdp ? GroupKind::kEdpShard : GroupKind::kEdp,
                         std::max(1, job.expert_dp() / rep), sp.expert_params, expert_gather}};
  for (const Part& part : parts) {
    if (part.params <= 0.0) continue;
    const std::string n = part.name;
    if (part.shard > 1) {
      it.grad_sync.push_back(comm_op(n + ".grad_sync", part.group, CollectiveKind::kReduceScatter,
                                     part.shard, part.params * grad_b, grad_ov));
      it.grad_sync_chunk.push_back(ch);
    }
    if (hsdp) {
      it.grad_sync.push_back(comm_op(n + ".grad_sync_replicate", GroupKind::kDpCpReplicate,
                                     CollectiveKind::kAllReduce, rep,
                                     part.params * grad_b / part.shard, grad_ov));
      it.grad_sync_chunk.push_back(ch);
    }
    if (part.shard <= 1) continue;
    const bool fsdp = !overlap_gather.has_value();
    const Overlap gather_ov = fsdp || *overlap_gather ? Overlap::kWithCompute : Overlap::kExposed;
    for (int pass = 0; pass < (fsdp && p.reshard_after_forward ? 2 : 1); ++pass) {
      it.param_gather.push_back(comm_op(n + (pass == 0 ? ".param_gather" : ".param_gather_bwd"),
                                        part.group, CollectiveKind::kAllGather, part.shard,
                                        part.gather_bytes, gather_ov));
      it.param_gather_chunk.push_back(ch);
    }
  }
}

// The blocks of one virtual stage: embedding, its decoder layers (consecutive layers of the same
// shape and recompute policy do identical work: one block stands for all of them, so building and
// pricing scale with distinct layers only), MTP layers, output head.
ChunkWork chunk_work(const JobSpec& job, const Ctx& c, const VirtualStage& st, int r, int ch) {
  ChunkWork cw;
  cw.pp_rank = r;
  cw.chunk = ch;
  if (st.has_embedding) cw.blocks.push_back(embedding_work(c));
  for (int i = st.first_layer; i < st.first_layer + st.num_layers; ++i) {
    if (!cw.blocks.empty() && cw.blocks.back().layer >= 0) {
      LayerWork& prev = cw.blocks.back();
      const int last = prev.layer + prev.count - 1;
      if (last == i - 1 &&
          same_layer_shape(job.model.layers[static_cast<std::size_t>(last)],
                           job.model.layers[static_cast<std::size_t>(i)]) &&
          job.runtime.precision.layer_quantized(last, job.model.num_layers()) ==
              job.runtime.precision.layer_quantized(i, job.model.num_layers()) &&
          layer_fully_recomputed(job, last) == layer_fully_recomputed(job, i)) {
        ++prev.count;
        continue;
      }
    }
    cw.blocks.push_back(build_layer_work(job, i));
  }
  for (int d = 0; d < st.mtp_layers; ++d) cw.blocks.push_back(mtp_work(c, d));
  if (st.has_output) cw.blocks.push_back(output_work(c));
  return cw;
}

// Data-parallel traffic of one chunk (Megatron DDP / distributed optimizer / FSDP1): gradient
// synchronisation once its backward is done; parameter all-gathers after the optimizer
// (distributed optimizer) or before each use (FSDP: forward and backward, counted here once per
// pass).
void add_dp_comm(const JobSpec& job, const Ctx& c, const StageParams& sp, int ch,
                 IterationWork& it) {
  const ParallelSpec& p = job.parallel;
  const bool sharded = p.distributed_optimizer || p.fsdp != FsdpKind::kNone;
  if (sharded && p.dp_replicate > 1) {
    // Several distributed-optimizer instances (MG23) shard and reduce like HSDP.
    add_fsdp2_comm(job, c, sp, ch, it, p.overlap_param_gather);
    return;
  }
  const double grad_b = bytes_per_element(job.runtime.main_grads_dtype);
  const int dense_dp = job.dp() * p.cp;
  const CollectiveKind op = sharded ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  const Overlap grad_ov = p.overlap_grad_reduce ? Overlap::kWithCompute : Overlap::kExposed;
  if (dense_dp > 1) {
    it.grad_sync.push_back(
        comm_op("dp.grad_sync", GroupKind::kDpCp, op, dense_dp, sp.dense_params * grad_b, grad_ov));
    it.grad_sync_chunk.push_back(ch);
  }
  if (job.expert_dp() > 1 && sp.expert_params > 0) {
    it.grad_sync.push_back(comm_op("edp.grad_sync", GroupKind::kEdp, op, job.expert_dp(),
                                   sp.expert_params * grad_b, grad_ov));
    it.grad_sync_chunk.push_back(ch);
  }
  if (!sharded) return;
  const int passes = p.fsdp != FsdpKind::kNone ? 2 : 1;
  const Overlap ov = (p.overlap_param_gather || p.fsdp != FsdpKind::kNone) ? Overlap::kWithCompute
                                                                           : Overlap::kExposed;
  const GatherBytes gb = gather_bytes(job, c, sp);
  for (int pass = 0; pass < passes; ++pass) {
    if (dense_dp > 1) {
      it.param_gather.push_back(comm_op("dp.param_gather", GroupKind::kDpCp,
                                        CollectiveKind::kAllGather, dense_dp, gb.dense, ov));
      it.param_gather_chunk.push_back(ch);
    }
    if (job.expert_dp() > 1 && sp.expert_params > 0) {
      it.param_gather.push_back(comm_op("edp.param_gather", GroupKind::kEdp,
                                        CollectiveKind::kAllGather, job.expert_dp(), gb.expert,
                                        ov));
      it.param_gather_chunk.push_back(ch);
    }
  }
}

// Optimizer step over this rank's shard: the bytes it reads and writes per parameter follow the
// optimizer and its dtypes (accounting.h, shared with the memory projection).
Op optimizer_op(const JobSpec& job, double dense_total, double expert_total) {
  const ParallelSpec& p = job.parallel;
  const bool sharded = p.distributed_optimizer || p.fsdp != FsdpKind::kNone;
  const int replicate = std::max(1, p.dp_replicate);
  const double shard_params = sharded ? dense_total / std::max(1, job.dp() * p.cp / replicate) +
                                            expert_total / std::max(1, job.expert_dp() / replicate)
                                      : dense_total + expert_total;
  const double bytes_per_param = optimizer_bytes_per_param(job.runtime).step_traffic_bytes;
  return mem_op("optimizer.step", shard_params * bytes_per_param, MemOpClass::kOptimizer);
}

}  // namespace

Workload build_workload(const JobSpec& job) {
  require_modelled(job.model, ProjectionStage::kWorkload);
  if (job.model.family == ModelFamily::kRecommendation) {
    return workload_detail::build_recsys_workload(job);
  }
  const Ctx c = make_ctx(job);
  const ParallelSpec& p = job.parallel;
  Workload wl;
  wl.ranks.resize(static_cast<std::size_t>(p.pp));
  for (int r = 0; r < p.pp; ++r) {
    RankWork& rw = wl.ranks[static_cast<std::size_t>(r)];
    rw.pp_rank = r;
    // Hyper-connections send all K streams between stages ([S K, B, D], PR11 deepseek_v4_block.py).
    rw.p2p_bytes = static_cast<double>(c.tokens_sp) * job.model.hidden_size * c.act_b *
                   std::max(1, job.model.hc_mult);
    // Attention residuals send the stream and every checkpoint slot, zero-padded to the most a
    // stage can hold: 1 + ceil(layers / block) slabs (Kimi-K3 kimi_k3_pp_shape_patches.py:83-101).
    const int block = job.model.attn_res_block_size;
    if (block > 0) rw.p2p_bytes *= 1 + (job.model.num_layers() + block - 1) / block;
    double dense_total = 0.0;
    double expert_total = 0.0;
    bool holds_embedding = false;
    for (int ch = 0; ch < p.vpp; ++ch) {
      const VirtualStage& st = p.stage(r, ch);
      rw.chunks.push_back(chunk_work(job, c, st, r, ch));
      const StageParams sp =
          stage_params(job.model, p, st, holds_embedding, &job.runtime.precision);
      holds_embedding = holds_embedding || st.has_embedding;
      dense_total += sp.dense_params;
      expert_total += sp.expert_params;
      // Per-layer FSDP reduces and gathers inside the layers' blocks (add_fsdp_ops).
      if (p.fsdp_per_layer && p.fsdp != FsdpKind::kNone) continue;
      if (p.fsdp == FsdpKind::kFsdp2) {
        add_fsdp2_comm(job, c, sp, ch, rw.iteration);
      } else {
        add_dp_comm(job, c, sp, ch, rw.iteration);
      }
    }
    rw.iteration.local_params = static_cast<std::int64_t>(dense_total + expert_total);
    rw.iteration.optimizer = optimizer_op(job, dense_total, expert_total);
  }
  return wl;
}

std::string_view to_string(WorkPhase p) {
  switch (p) {
    case WorkPhase::kF:
      return "F";
    case WorkPhase::kB:
      return "B";
    case WorkPhase::kW:
      return "W";
  }
  return "?";
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kGroupedGemm:
      return "grouped_gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kMemoryBound:
      return "memory";
    case OpKind::kCollective:
      return "collective";
    case OpKind::kHostTransfer:
      return "host_transfer";
  }
  return "?";
}

namespace workload_detail {

void add_backward_ops(const std::vector<Op>& fwd, std::vector<Op>& out) {
  add_backward(fwd, out, false);
}

Op memory_op(std::string name, double bytes, MemOpClass cls) {
  return mem_op(std::move(name), bytes, cls);
}

Op collective_op(std::string name, GroupKind group, CollectiveKind kind, int size, double bytes) {
  return comm_op(std::move(name), group, kind, size, bytes);
}

}  // namespace workload_detail
}  // namespace projector
