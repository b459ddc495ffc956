// The workload of a recommendation (TorchRec DLRM) step on one rank: the embedding lookups its
// shards serve (one fused table-batched kernel per sharding group), the output distribution the
// plan implies (pooled-embedding all-to-all for table-/column-wise, reduce-scatter for row-wise,
// intra-node reduce-scatter + inter-node all-to-all for table-row-wise; conjugates in backward),
// the dense part over the local batch (bottom MLP, interaction, HSTU blocks, top MLP, loss) as
// GEMMs and elementwise passes, the embedding backward with its fused optimizer update, and per
// iteration the DDP all-reduce of the dense gradients and the dense optimizer step. The input
// all-to-all of the next batch (TorchRec's data-dist stream) is IterationWork::input_dist.
#include <fmt/format.h>

#include <algorithm>

#include "projector/job/recsys_ranks.h"
#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"
#include "workload/ops.h"

namespace projector::workload_detail {
namespace {

struct RecCtx {
  const JobSpec& job;
  Dtype gemm;    // dense GEMM input dtype (fp32, tf32, bf16)
  Dtype act;     // activation storage dtype
  double act_b;  // bytes per activation element
  std::int64_t batch;
  int world;
  int local;
};

RecCtx make_rec_ctx(const JobSpec& job) {
  const Dtype g = job.runtime.recsys.dense_dtype;
  const Dtype a = g == Dtype::kTf32 ? Dtype::kFp32 : g;
  const int world = static_cast<int>(std::max<std::int64_t>(1, job.cluster.world_size()));
  return RecCtx{job,
                g,
                a,
                bytes_per_element(a),
                job.runtime.micro_batch_size,
                world,
                std::min(std::max(1, job.cluster.gpus_per_node), world)};
}

Op dense_gemm(const RecCtx& c, const RecsysGemm& g) {
  Op op;
  op.name = g.name;
  op.kind = OpKind::kGemm;
  op.weightless = g.batched;
  op.gemm = g.batched ? GemmShape{g.m, g.n, g.k, c.batch, c.gemm, c.act}
                      : GemmShape{c.batch * g.m, g.n, g.k, 1, c.gemm, c.act};
  op.flops = op.gemm.flops();
  const double m = static_cast<double>(op.gemm.m) * op.gemm.batch;
  op.bytes = (m * g.k + static_cast<double>(g.k) * g.n * (g.batched ? c.batch : 1)) * c.act_b +
             m * g.n * c.act_b;
  return op;
}

Op mem(std::string name, double bytes) {
  return memory_op(std::move(name), bytes, MemOpClass::kElementwise);
}

// A communicator of `size` ranks at rank distance `stride` (the world: size W, stride 1).
Op coll(std::string name, CollectiveKind kind, double bytes, int size, int stride) {
  Op op = collective_op(std::move(name), GroupKind::kDp, kind, size, bytes);
  op.group_stride = stride;
  return op;
}

// The forward GEMMs of `block` with a ReLU pass after each MLP layer but the top MLP's last.
void add_dense_block(const RecCtx& c, const std::string& block, std::vector<Op>& f) {
  const std::vector<RecsysGemm> gemms = recsys_dense_gemms(c.job.model.recommendation);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const RecsysGemm& g = gemms[i];
    if (g.block != block) continue;
    f.push_back(dense_gemm(c, g));
    // ReLU after every MLP layer (DenseArch, projection branches, OverArch but its last layer);
    // DCN cross layers and HSTU projections have none.
    const bool mlp = block == "bottom_mlp" || block == "top_mlp" || g.name.rfind("branch", 0) == 0;
    const bool last_top = block == "top_mlp" && (i + 1 == gemms.size());
    if (mlp && !g.batched && !last_top) {
      f.push_back(mem(g.name + ".relu", 2.0 * c.batch * g.m * g.n * c.act_b));
    }
  }
}

void add_interaction(const RecCtx& c, std::vector<Op>& f) {
  const RecommendationSpec& m = c.job.model.recommendation;
  const double b = static_cast<double>(c.batch);
  const double fp1 = m.num_sparse_features() + 1.0;
  const double d = m.embedding_dim();
  // Concatenate the bottom-MLP output with the pooled rows (fp32 from the output dist).
  f.push_back(mem("interaction.concat", b * fp1 * d * (4.0 + c.act_b)));
  add_dense_block(c, "interaction", f);
  if (m.interaction == FeatureInteraction::kDot) {
    // Upper triangle of the (F+1)^2 products, concatenated with the dense vector.
    f.push_back(mem("interaction.triu", b * (fp1 * fp1 + recsys_interaction_width(m)) * c.act_b));
  } else if (m.interaction == FeatureInteraction::kDcn) {
    // x_{l+1} = x_0 * (W V x_l + b) + x_l: read x_0, W V x_l, x_l, write x_{l+1}.
    const double w = static_cast<double>(recsys_interaction_width(m));
    for (int l = 0; l < m.dcn_num_layers; ++l) {
      f.push_back(mem(fmt::format("dcn.{}.cross", l), 4.0 * b * w * c.act_b));
    }
  }
}

// One HSTU block (repeated num_layers times): UVQK projection, SiLU attention over the valid
// positions, output projection, and the gating / norm passes (PRD hstu.py).
LayerWork hstu_block(const RecCtx& c) {
  const HstuSpec& h = c.job.model.recommendation.hstu;
  std::vector<Op> f;
  add_dense_block(c, "hstu", f);
  Op attn;
  attn.name = "hstu.attention";
  attn.kind = OpKind::kAttention;
  const std::int64_t s = h.effective_seq_len();
  attn.attention =
      AttentionShape{c.batch, h.num_heads, h.num_heads, s, s, h.qk_dim, h.v_dim, true, 0, c.act};
  attn.flops = attention_fwd_flops(attn.attention);
  f.insert(f.begin() + 1, attn);
  const double tokens = static_cast<double>(c.batch) * s;
  const double uvqk = static_cast<double>(h.num_heads) * (2 * h.qk_dim + 2 * h.v_dim);
  f.push_back(mem("hstu.gating", 2.0 * tokens * (uvqk + h.hidden_size) * c.act_b));
  LayerWork lw;
  lw.label = "hstu";
  lw.count = h.num_layers;
  lw.ops = f;
  add_backward_ops(f, lw.ops);
  return lw;
}

// The embedding block of one rank: lookups, output distribution, and (mirrored in backward) the
// gradient distribution and the table update with the fused optimizer.
LayerWork embedding_block(const RecCtx& c, const RecsysRankLoad& r, double a2a_bytes) {
  const EmbeddingTraffic traffic = embedding_traffic(c.job, r);
  std::vector<Op> f;
  Op lookup = memory_op("embedding.lookup", traffic.fwd_bytes, MemOpClass::kEmbedding);
  lookup.bwd_bytes = traffic.bwd_bytes;
  if (r.lookups > 0.0) f.push_back(lookup);
  if (a2a_bytes > 0.0) {
    f.push_back(
        coll("embedding.pooled_all_to_all", CollectiveKind::kAllToAll, a2a_bytes, c.world, 1));
  }
  if (r.rs_bytes > 0.0) {
    f.push_back(coll("embedding.pooled_reduce_scatter", CollectiveKind::kReduceScatter, r.rs_bytes,
                     c.world, 1));
  }
  if (r.twrw_rs_bytes > 0.0) {
    f.push_back(coll("embedding.twrw_reduce_scatter", CollectiveKind::kReduceScatter,
                     r.twrw_rs_bytes, c.local, 1));
  }
  if (r.twrw_a2a_bytes > 0.0) {
    f.push_back(coll("embedding.twrw_all_to_all", CollectiveKind::kAllToAll, r.twrw_a2a_bytes,
                     c.world / c.local, c.local));
  }
  LayerWork lw;
  lw.label = "embedding";
  lw.ops = f;
  add_backward_ops(f, lw.ops);
  return lw;
}

LayerWork dense_block(const std::string& label, const std::vector<Op>& fwd) {
  LayerWork lw;
  lw.label = label;
  lw.ops = fwd;
  add_backward_ops(fwd, lw.ops);
  return lw;
}

// The rank whose embedding share is the heaviest (HBM bytes of lookups and updates, and the host
// bytes at the host link's share of it): the one the step waits for.
std::size_t critical_rank(const JobSpec& job, const std::vector<RecsysRankLoad>& loads) {
  const AcceleratorSpec& acc = job.cluster.accelerator;
  const double link = job.runtime.recsys.host_link_bw > 0.0 ? job.runtime.recsys.host_link_bw
                                                            : acc.hbm_bw_bytes_per_s;
  std::size_t best = 0;
  double best_t = -1.0;
  for (std::size_t i = 0; i < loads.size(); ++i) {
    const RecsysRankLoad& r = loads[i];
    const EmbeddingTraffic traffic = embedding_traffic(job, r);
    const double t = memory_bound_time(acc, traffic.fwd_bytes + traffic.bwd_bytes,
                                       MemOpClass::kEmbedding, r.tbe_groups)
                         .time_s +
                     r.host_gather_bytes * 3.0 / link;
    if (t > best_t) {
      best_t = t;
      best = i;
    }
  }
  return best;
}

}  // namespace

double recsys_pooled_a2a_bytes(const std::vector<RecsysRankLoad>& loads) {
  double bytes = 0.0;
  for (const RecsysRankLoad& r : loads) {
    bytes = std::max({bytes, r.a2a_send_bytes, r.a2a_recv_bytes});
  }
  return bytes;
}

Workload build_recsys_workload(const JobSpec& job) {
  const RecCtx c = make_rec_ctx(job);
  const RecommendationSpec& m = job.model.recommendation;
  const std::vector<RecsysRankLoad> loads = recsys_rank_loads(job);
  const std::size_t crit = critical_rank(job, loads);
  const RecsysRankLoad& r = loads[crit];
  Workload wl;
  wl.ranks.resize(1);
  RankWork& rw = wl.ranks[0];
  rw.pp_rank = 0;
  ChunkWork cw;
  cw.blocks.push_back(embedding_block(c, r, recsys_pooled_a2a_bytes(loads)));
  cw.blocks.back().layer = -1;
  std::vector<Op> bottom;
  add_dense_block(c, "bottom_mlp", bottom);
  if (!bottom.empty()) cw.blocks.push_back(dense_block("bottom_mlp", bottom));
  if (m.hstu.num_layers > 0) cw.blocks.push_back(hstu_block(c));
  std::vector<Op> inter;
  add_interaction(c, inter);
  cw.blocks.push_back(dense_block("interaction", inter));
  std::vector<Op> top;
  add_dense_block(c, "top_mlp", top);
  top.push_back(mem("loss.bce", 4.0 * c.batch * 4.0));
  cw.blocks.push_back(dense_block("top_mlp", top));
  rw.chunks.push_back(std::move(cw));
  // Per iteration: the dense gradients' DDP all-reduce (overlapped with the backward, buckets of
  // ddp_bucket_size_bytes), the dense optimizer, and the next batch's input all-to-all.
  IterationWork& it = rw.iteration;
  const double dp_params = r.dp_table_bytes / 4.0;
  it.local_params = recsys_params(m).dense() + static_cast<std::int64_t>(dp_params);
  const double grad_bytes = static_cast<double>(it.local_params) * bytes_per_element(c.act);
  if (c.world > 1 && grad_bytes > 0.0) {
    Op ar = coll("dense.grad_all_reduce", CollectiveKind::kAllReduce, grad_bytes, c.world, 1);
    ar.overlap = Overlap::kWithCompute;
    it.grad_sync.push_back(ar);
    it.grad_sync_chunk.push_back(0);
  }
  const RecsysRuntime& rt = job.runtime.recsys;
  const double state = optimizer_state_bytes_per_row(rt.dense_optimizer, 1);
  // Read weight and gradient, read and write the state, write the weight (and an fp32 master).
  const double per_param = 2.0 * bytes_per_element(c.act) + 2.0 * state + bytes_per_element(c.act) +
                           (c.act_b < 4.0 ? 8.0 : 0.0);
  it.optimizer = memory_op("dense.optimizer", static_cast<double>(it.local_params) * per_param,
                           MemOpClass::kOptimizer);
  double input = 0.0;
  for (const RecsysRankLoad& l : loads) input = std::max(input, l.input_send_bytes);
  if (c.world > 1 && input > 0.0) {
    it.input_dist = coll("input.kjt_all_to_all", CollectiveKind::kAllToAll, input, c.world, 1);
  }
  rw.p2p_bytes = 0.0;
  return wl;
}

}  // namespace projector::workload_detail
