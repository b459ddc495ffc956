// Text and JSON of recommendation jobs (report/recsys_report.h): in the user's units, samples per
// second, per-rank GiB, the sharding plan.
#include "recsys_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "projector/job/recsys_plan.h"
#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"

namespace projector::report_detail {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double ms(double s) {
  return s * 1e3;
}
std::string gib(double b) {
  return fmt::format("{:.2f}", b / kGiB);
}

std::string sizes(const DenseStackSpec& s) {
  std::string out;
  for (std::size_t i = 0; i < s.layer_sizes.size(); ++i) {
    out += (i ? "," : "") + std::to_string(s.layer_sizes[i]);
  }
  return out.empty() ? "-" : out;
}

std::string interaction_text(const RecommendationSpec& m) {
  switch (m.interaction) {
    case FeatureInteraction::kDot:
      return "dot (pairwise products of the pooled rows and the dense vector)";
    case FeatureInteraction::kDcn:
      return fmt::format("DCN-v2, {} low-rank cross layers of rank {}", m.dcn_num_layers,
                         m.dcn_low_rank_dim);
    case FeatureInteraction::kProjection:
      return fmt::format("projection, branches {} and {}", sizes(m.interaction_branch1),
                         sizes(m.interaction_branch2));
    case FeatureInteraction::kConcat:
      return "concatenation";
  }
  return "?";
}

double table_bytes(const RecommendationSpec& m) {
  double b = 0.0;
  for (const EmbeddingTableSpec& t : m.tables) {
    b += static_cast<double>(t.num_embeddings) * t.embedding_dim * bytes_per_element(t.dtype);
  }
  return b;
}

// Every line of `text` behind `prefix`.
std::string indented(const std::string& text, const std::string& prefix) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    out += prefix + text.substr(start, nl - start) + "\n";
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

double lookups_per_sample(const RecommendationSpec& m) {
  double l = 0.0;
  for (const EmbeddingTableSpec& t : m.tables) l += t.pooling_factor;
  return l;
}

}  // namespace

std::string recsys_model_text(const JobSpec& job) {
  const RecommendationSpec& m = job.model.recommendation;
  const RecsysRuntime& rt = job.runtime.recsys;
  const RecsysParams p = recsys_params(m);
  std::string out;
  out += fmt::format(
      "  {} embedding tables, dim {}, {:.0f} rows ({} GiB of {}), {:.1f} lookups "
      "per sample\n",
      m.tables.size(), m.embedding_dim(),
      static_cast<double>(p.embedding) / std::max(1, m.embedding_dim()), gib(table_bytes(m)),
      m.tables.empty() ? "-" : std::string(to_string(m.tables.front().dtype)),
      lookups_per_sample(m));
  out += fmt::format("  dense features {}, bottom MLP {}, interaction {}, top MLP {}\n",
                     m.dense_features, sizes(m.bottom_mlp), interaction_text(m), sizes(m.top_mlp));
  if (m.hstu.num_layers > 0) {
    const HstuSpec& h = m.hstu;
    out += fmt::format(
        "  HSTU: {} blocks, D {}, {} heads, d_qk {}, d_v {}, sequence {} (fill {}, "
        "{} valid)\n",
        h.num_layers, h.hidden_size, h.num_heads, h.qk_dim, h.v_dim, h.max_seq_len, h.fill_factor,
        h.effective_seq_len());
  }
  out += fmt::format(
      "  parameters: {:.3f} B in tables, {:.3f} M dense; {:.2f} MFLOP per sample "
      "forward\n",
      p.embedding / 1e9, p.dense() / 1e6, recsys_forward_flops_per_sample(m) / 1e6);
  out += fmt::format(
      "  optimizers: {} fused into the embedding backward, {} for the dense part; "
      "dense GEMMs in {}; input pipelined {}\n",
      to_string(rt.embedding_optimizer), to_string(rt.dense_optimizer), to_string(rt.dense_dtype),
      rt.pipelined_input ? "on" : "off");
  out += "  embedding plan:\n";
  const std::string plan = describe_plan(job);
  out += indented(plan, "    ");
  return out;
}

Json recsys_model_json(const JobSpec& job) {
  const RecommendationSpec& m = job.model.recommendation;
  const RecsysRuntime& rt = job.runtime.recsys;
  const RecsysParams p = recsys_params(m);
  const EmbeddingPlan& plan = job.parallel.embedding_plan;
  Json tables = Json::array();
  for (std::size_t i = 0; i < m.tables.size(); ++i) {
    const EmbeddingTableSpec& t = m.tables[i];
    Json jt = {{"name", t.name},
               {"rows", t.num_embeddings},
               {"dim", t.embedding_dim},
               {"pooling_factor", t.pooling_factor},
               {"dtype", std::string(to_string(t.dtype))},
               {"stated_sharding", std::string(to_string(t.sharding))}};
    if (i < plan.tables.size()) {
      const TablePlan& tp = plan.tables[i];
      Json shards = Json::array();
      for (const EmbeddingShard& s : tp.shards) {
        shards.push_back({{"rank", s.rank}, {"rows", s.rows}, {"cols", s.cols}});
      }
      jt["sharding"] = std::string(to_string(tp.sharding));
      jt["placement"] = std::string(to_string(tp.placement));
      jt["planner_cost_ms"] = tp.planner_cost_ms;
      jt["shards"] = std::move(shards);
    }
    tables.push_back(std::move(jt));
  }
  Json j;
  j["dense_features"] = m.dense_features;
  j["bottom_mlp"] = m.bottom_mlp.layer_sizes;
  j["interaction"] = std::string(to_string(m.interaction));
  j["dcn_num_layers"] = m.dcn_num_layers;
  j["dcn_low_rank_dim"] = m.dcn_low_rank_dim;
  j["interaction_branch1"] = m.interaction_branch1.layer_sizes;
  j["interaction_branch2"] = m.interaction_branch2.layer_sizes;
  j["top_mlp"] = m.top_mlp.layer_sizes;
  j["hstu"] = {{"num_layers", m.hstu.num_layers},
               {"hidden_size", m.hstu.hidden_size},
               {"num_heads", m.hstu.num_heads},
               {"qk_dim", m.hstu.qk_dim},
               {"v_dim", m.hstu.v_dim},
               {"max_seq_len", m.hstu.max_seq_len},
               {"fill_factor", m.hstu.fill_factor},
               {"effective_seq_len", m.hstu.effective_seq_len()}};
  j["params_embedding"] = p.embedding;
  j["params_dense"] = p.dense();
  j["forward_flops_per_sample"] = recsys_forward_flops_per_sample(m);
  j["embedding_optimizer"] = std::string(to_string(rt.embedding_optimizer));
  j["dense_optimizer"] = std::string(to_string(rt.dense_optimizer));
  j["dense_dtype"] = std::string(to_string(rt.dense_dtype));
  j["pipelined_input"] = rt.pipelined_input;
  j["plan"] = {{"planned", plan.planned},
               {"proposer", plan.proposer},
               {"proposals_evaluated", plan.proposals_evaluated},
               {"max_rank_cost_ms", plan.max_rank_cost_ms},
               {"rank_budget_bytes", plan.rank_budget_bytes},
               {"planner_hbm_cap_bytes", rt.planner.hbm_cap_bytes},
               {"planner_reservation", rt.planner.reservation_fraction}};
  j["tables"] = std::move(tables);
  return j;
}

std::string recsys_perf_text(const JobSpec& job, const PerfReport& rep) {
  const RecsysStep& s = rep.recsys;
  std::string out;
  out += "==================== Performance projection ====================\n";
  out += fmt::format("Model        {} (recommendation: {} tables, interaction {})\n",
                     job.model.name, job.model.recommendation.tables.size(),
                     to_string(job.model.recommendation.interaction));
  out += fmt::format("Cluster      {} node(s) x {} {} = {} GPUs\n", job.cluster.nodes,
                     job.cluster.gpus_per_node, job.cluster.accelerator.name, rep.world_size);
  out += fmt::format("Batch        {} per GPU, {} global\n", job.runtime.micro_batch_size,
                     job.runtime.global_batch_size);
  const std::string plan = indented(describe_plan(job), "             ");
  out += fmt::format("Embedding    {}", plan.substr(13));
  out += "\n-- Step (the critical rank; ms) --\n";
  out += fmt::format("  step                     {:>10.3f}   ({} bound)\n", ms(s.step_s), s.bound);
  out += fmt::format("  device                   {:>10.3f}   rank {}\n", ms(s.device_s),
                     s.critical_rank);
  out += fmt::format("    embedding              {:>10.3f}   lookups, backward, fused {} update\n",
                     ms(s.embedding_s), to_string(job.runtime.recsys.embedding_optimizer));
  if (s.embedding_host_s > 0.0) {
    out += fmt::format("    embedding (UVM)        {:>10.3f}   rows over the host link\n",
                       ms(s.embedding_host_s));
  }
  out += fmt::format("    comm                   {:>10.3f}   pooled-embedding dist, fwd + bwd\n",
                     ms(s.comm_s));
  out += fmt::format("    dense                  {:>10.3f}   GEMMs ({}) and elementwise\n",
                     ms(s.dense_s), to_string(job.runtime.recsys.dense_dtype));
  out += fmt::format("    all-reduce exposed     {:>10.3f}   of {:.3f} overlapped with backward\n",
                     ms(s.dp_exposed_s), ms(s.dp_allreduce_s));
  out += fmt::format("    optimizer              {:>10.3f}   dense {}\n", ms(s.optimizer_s),
                     to_string(job.runtime.recsys.dense_optimizer));
  out +=
      fmt::format("  host                     {:>10.3f}   framework work per step\n", ms(s.host_s));
  out += fmt::format(
      "  input pipeline           {:>10.3f}   next batch: copy {:.3f}, all-to-all "
      "{:.3f}{}\n",
      ms(std::max(s.input_dist_s, s.h2d_s)), ms(s.h2d_s), ms(s.input_dist_s),
      s.pipelined_input ? " (overlapped)" : " (serial)");
  out += fmt::format("  exposed beyond device    {:>10.3f}\n", ms(s.exposed_s));
  out += "\n-- Throughput --\n";
  out += fmt::format("  Samples/s                {:>14.0f}\n", s.samples_per_s);
  out += fmt::format("  Samples/s/GPU            {:>14.0f}\n", s.samples_per_s_per_gpu);
  out += fmt::format("  Model TFLOP/s/GPU        {:>14.2f} ({:.1f} % of the {} peak)\n",
                     rep.model_tflops_per_gpu, 100.0 * rep.mfu, to_string(rep.mfu_dtype));
  if (rep.has_memory) {
    out += fmt::format("  Peak memory              {:>14} GiB of {} GiB: {}\n",
                       gib(rep.memory.peak_point_bytes), gib(rep.memory.capacity_bytes),
                       to_string(rep.memory.verdict));
  }
  return out;
}

Json recsys_perf_json(const JobSpec& job, const PerfReport& rep) {
  const RecsysStep& s = rep.recsys;
  return {{"samples_per_s", s.samples_per_s},
          {"samples_per_s_per_gpu", s.samples_per_s_per_gpu},
          {"step_ms", ms(s.step_s)},
          {"bound", s.bound},
          {"device_ms", ms(s.device_s)},
          {"host_ms", ms(s.host_s)},
          {"input_dist_ms", ms(s.input_dist_s)},
          {"h2d_ms", ms(s.h2d_s)},
          {"pipelined_input", s.pipelined_input},
          {"breakdown_ms",
           {{"embedding", ms(s.embedding_s)},
            {"embedding_uvm", ms(s.embedding_host_s)},
            {"comm", ms(s.comm_s)},
            {"dense", ms(s.dense_s)},
            {"allreduce_exposed", ms(s.dp_exposed_s)},
            {"optimizer", ms(s.optimizer_s)},
            {"exposed", ms(s.exposed_s)}}},
          {"allreduce_ms", ms(s.dp_allreduce_s)},
          {"critical_rank", s.critical_rank},
          {"rank_embedding_ms",
           [&] {
             Json a = Json::array();
             for (double t : s.rank_embedding_s) a.push_back(ms(t));
             return a;
           }()},
          {"pooled_all_to_all_bytes", s.pooled_a2a_bytes},
          {"input_all_to_all_bytes", s.input_bytes},
          {"plan", describe_plan(job)}};
}

std::string recsys_memory_text(const JobSpec& job, const MemoryReport& rep) {
  const RecsysMemory& r = rep.recsys;
  std::string out;
  out += fmt::format("Memory projection: {} ({})\n", job.model.name, job.source);
  out += fmt::format("  {} ranks, batch {} per GPU; embedding plan:\n", r.world,
                     job.runtime.micro_batch_size);
  const std::string& plan = r.plan;
  out += indented(plan, "    ");
  out += "  all values GiB (2^30 bytes); per GPU, heaviest rank first\n\n";
  out += fmt::format("{:>6} {:>7} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}\n", "rank",
                     "shards", "tables", "opt state", "dense", "activations", "buffers", "total",
                     "host");
  for (const RecsysRankMemory& m : r.ranks) {
    out += fmt::format("{:>6} {:>7} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}\n", m.rank,
                       m.shards, gib(m.table_bytes), gib(m.table_state_bytes + m.cache_aux_bytes),
                       gib(m.dense_bytes), gib(m.activation_bytes), gib(m.buffer_bytes),
                       gib(m.total_bytes), gib(m.host_bytes));
  }
  out += fmt::format("\nPeak: rank {}, point {} GiB, upper {} GiB; transient: {}\n",
                     rep.ranks.empty() ? 0 : rep.ranks.front().pp_rank, gib(rep.peak_point_bytes),
                     gib(rep.peak_upper_bytes),
                     rep.ranks.empty() ? "" : rep.ranks.front().transient_source);
  out +=
      fmt::format("HBM capacity: {} GiB -> {}\n", gib(rep.capacity_bytes), to_string(rep.verdict));
  if (r.planner_budget_bytes > 0.0) {
    out += fmt::format("Planner budget for tables: {} GiB per rank{}\n",
                       gib(r.planner_budget_bytes), r.planned ? "" : " (no plan fits it)");
  } else {
    out += "Planner budget for tables: none (the dense part and the inputs reserve more)\n";
  }
  for (const std::string& n : rep.notes) out += fmt::format("  note: {}\n", n);
  return out;
}

Json recsys_memory_json(const MemoryReport& rep) {
  const RecsysMemory& r = rep.recsys;
  Json ranks = Json::array();
  for (const RecsysRankMemory& m : r.ranks) {
    ranks.push_back({{"rank", m.rank},
                     {"shards", m.shards},
                     {"table_bytes", m.table_bytes},
                     {"table_state_bytes", m.table_state_bytes},
                     {"cache_aux_bytes", m.cache_aux_bytes},
                     {"dense_bytes", m.dense_bytes},
                     {"activation_bytes", m.activation_bytes},
                     {"buffer_bytes", m.buffer_bytes},
                     {"host_bytes", m.host_bytes},
                     {"total_bytes", m.total_bytes}});
  }
  return {{"world_size", r.world},
          {"planned", r.planned},
          {"planner_budget_bytes", r.planner_budget_bytes},
          {"host_bytes_max", r.host_bytes_max},
          {"plan", r.plan},
          {"ranks", std::move(ranks)}};
}

}  // namespace projector::report_detail
