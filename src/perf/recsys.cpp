// The step of TorchRec's train pipeline (TrainPipelineSparseDist, TR4) for a recommendation job:
// the simulated device step of the critical rank (its chunk: embedding lookups and output
// distribution, dense forward and backward, the fused embedding update; the DDP all-reduce of the
// dense gradients overlapped with the backward; the dense optimizer), plus the embedding rows read
// over the host link (UVM), overlapped with the host's work for the step and with the next
// batch's host-to-device copy and input all-to-all, each on its own stream.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "perf/pricing.h"
#include "projector/job/recsys_ranks.h"
#include "projector/job/spec.h"

namespace projector::perf_detail {
namespace {

bool is_embedding_block(const LayerWork& lw) {
  return lw.label == "embedding";
}

// Per-phase totals of the critical rank's chunk, by what the step spends them on.
void breakdown(const JobSpec& job, CostCache& cache, const ChunkWork& chunk, RecsysStep& s) {
  for (const LayerWork& lw : chunk.blocks) {
    for (const Op& op : lw.ops) {
      const double t = price_op(job, cache, op).time_s * lw.count;
      if (op.kind == OpKind::kCollective) {
        s.comm_s += t;
      } else if (is_embedding_block(lw)) {
        s.embedding_s += t;
      } else {
        s.dense_s += t;
      }
    }
  }
}

// Embedding lookups and backward of every rank, priced like the critical rank's.
std::vector<double> rank_embedding_times(const JobSpec& job, CostCache& cache,
                                         const std::vector<RecsysRankLoad>& loads) {
  std::vector<double> out;
  for (const RecsysRankLoad& r : loads) {
    const EmbeddingTraffic t = embedding_traffic(job, r);
    out.push_back(r.lookups > 0.0
                      ? cache.memory_bound(t.fwd_bytes, MemOpClass::kEmbedding).time_s +
                            cache.memory_bound(t.bwd_bytes, MemOpClass::kEmbedding).time_s
                      : 0.0);
  }
  return out;
}

// The next batch's input all-to-all: split sizes, lengths and ids, three collectives.
double input_dist_time(const JobSpec& job, CostCache& cache, const Op& values) {
  if (values.group_size <= 1 || values.bytes <= 0.0) return 0.0;
  const RecommendationSpec& m = job.model.recommendation;
  Op lengths = values;
  lengths.bytes = static_cast<double>(job.runtime.micro_batch_size) * m.num_sparse_features() * 4.0;
  Op splits = values;
  splits.bytes = static_cast<double>(values.group_size) * 8.0;
  return price_op(job, cache, splits).time_s + price_op(job, cache, lengths).time_s +
         price_op(job, cache, values).time_s;
}

// DDP reduces the dense gradients in buckets as the backward produces them (gradients of the top
// MLP first), on its own stream. The last bucket is ready when the dense backward ends; what is
// left of the backward then is the output dist's and the embedding update's. Exposed: the
// all-reduce beyond the backward it overlaps, or the last bucket beyond that tail; plus the
// compute the overlapped all-reduce slows (comm_compute_interference).
double dp_exposed(const JobSpec& job, CostCache& cache, const RankWork& rw, double allreduce_s) {
  if (allreduce_s <= 0.0) return 0.0;
  double dense_bwd = 0.0, tail = 0.0;
  for (const LayerWork& lw : rw.chunks.front().blocks) {
    for (const Op& op : lw.ops) {
      if (op.phase == WorkPhase::kF) continue;
      const double t = price_op(job, cache, op).time_s * lw.count;
      (is_embedding_block(lw) ? tail : dense_bwd) += t;
    }
  }
  const double bucket =
      static_cast<double>(std::max<std::int64_t>(1, job.parallel.ddp_bucket_size_bytes));
  const double grad = rw.iteration.grad_sync.empty() ? 0.0 : rw.iteration.grad_sync.front().bytes;
  const double buckets = std::max(1.0, std::ceil(grad / bucket));
  const double exposed =
      std::max({0.0, allreduce_s - (dense_bwd + tail), allreduce_s / buckets - tail});
  const double interference = job.cluster.accelerator.calibration.comm_compute_interference.value;
  return exposed + interference * (allreduce_s - exposed);
}

void set_throughput(const JobSpec& job, PerfReport& rep) {
  const RecsysStep& s = rep.recsys;
  rep.iteration_s = s.step_s;
  rep.tokens_per_s = s.samples_per_s;
  rep.tokens_per_s_per_gpu = s.samples_per_s_per_gpu;
  rep.model_tflops_per_gpu = rep.flops.model_flops / s.step_s / rep.world_size / 1e12;
  rep.hardware_tflops_per_gpu = rep.flops.hardware_flops / s.step_s / rep.world_size / 1e12;
  rep.mfu_dtype = job.runtime.recsys.dense_dtype;
  const double peak = job.cluster.accelerator.peak_flops(rep.mfu_dtype);
  rep.mfu = peak > 0.0 ? rep.model_tflops_per_gpu * 1e12 / peak : 0.0;
}

}  // namespace

void finish_recsys_step(const JobSpec& job, CostCache& cache, PerfReport& rep) {
  RecsysStep& s = rep.recsys;
  rep.has_recsys = true;
  const RecsysRuntime& rt = job.runtime.recsys;
  const std::vector<RecsysRankLoad> loads = recsys_rank_loads(job);
  const std::vector<double> ranks = rank_embedding_times(job, cache, loads);
  s.critical_rank = static_cast<int>(std::max_element(ranks.begin(), ranks.end()) - ranks.begin());
  if (static_cast<int>(ranks.size()) <= 64) s.rank_embedding_s = ranks;
  const RankWork& rw = rep.workload.ranks.front();
  breakdown(job, cache, rw.chunks.front(), s);
  // UVM: the rows the host link serves, read in forward and read + written in backward.
  double host_bytes = 0.0;
  for (const RecsysRankLoad& r : loads) host_bytes = std::max(host_bytes, r.host_gather_bytes);
  s.embedding_host_s = rt.host_link_bw > 0.0 ? 3.0 * host_bytes / rt.host_link_bw : 0.0;
  s.optimizer_s = rep.optimizer_s;
  for (const Op& op : rw.iteration.grad_sync) s.dp_allreduce_s += price_op(job, cache, op).time_s;
  s.dp_exposed_s = dp_exposed(job, cache, rw, s.dp_allreduce_s);
  s.device_s =
      s.embedding_s + s.comm_s + s.dense_s + s.dp_exposed_s + s.optimizer_s + s.embedding_host_s;
  const double batch = job.runtime.micro_batch_size;
  s.host_s = rt.host_step_s + rt.host_per_sample_s * batch;
  s.input_dist_s = input_dist_time(job, cache, rw.iteration.input_dist);
  s.input_bytes = rw.iteration.input_dist.bytes;
  s.pooled_a2a_bytes = 0.0;
  for (const LayerWork& lw : rw.chunks.front().blocks) {
    for (const Op& op : lw.ops) {
      if (op.name == "embedding.pooled_all_to_all") s.pooled_a2a_bytes = op.bytes;
    }
  }
  s.h2d_s = rt.host_link_bw > 0.0 ? recsys_input_batch_bytes(job) / rt.host_link_bw : 0.0;
  s.pipelined_input = rt.pipelined_input;
  const double input_s = std::max(s.input_dist_s, s.h2d_s);
  if (rt.pipelined_input) {
    s.step_s = std::max({s.device_s, s.host_s, input_s});
    s.bound =
        s.step_s == s.device_s ? "device" : (s.step_s == s.host_s ? "host" : "input pipeline");
  } else {
    s.step_s = std::max(s.host_s, s.device_s + s.input_dist_s + s.h2d_s);
    s.bound = s.step_s == s.host_s ? "host" : "device";
  }
  s.exposed_s = s.step_s - s.device_s;
  const double global = static_cast<double>(job.runtime.global_batch_size);
  s.samples_per_s = global / s.step_s;
  s.samples_per_s_per_gpu = s.samples_per_s / std::max(1, rep.world_size);
  set_throughput(job, rep);
  rep.exposed.ep_s = 0.0;
  rep.exposed.dp_s = s.dp_exposed_s;
  rep.notes.push_back(fmt::format(
      "recommendation step: {} bound; device {:.3f} ms (embedding {:.3f}, output dist {:.3f}, "
      "dense {:.3f}, exposed all-reduce {:.3f}, optimizer {:.3f}, UVM {:.3f}), host {:.3f} ms, "
      "input pipeline {:.3f} ms",
      s.bound, s.device_s * 1e3, s.embedding_s * 1e3, s.comm_s * 1e3, s.dense_s * 1e3,
      s.dp_exposed_s * 1e3, s.optimizer_s * 1e3, s.embedding_host_s * 1e3, s.host_s * 1e3,
      input_s * 1e3));
}

}  // namespace projector::perf_detail
