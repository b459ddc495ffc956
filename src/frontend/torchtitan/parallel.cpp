// torchtitan's device mesh, batches and pipeline (docs/torchtitan.md cites each rule):
//   dp_replicate x dp_shard x cp x tp x pp = world, dp_shard = -1 fills the rest
//   (distributed/parallel_dims.py:35-59); FSDP2 over dp_shard x cp, HSDP with a replicate degree,
//   DDP only as the sole parallelism (models/llama3/infra/parallelize.py:125-156); EP carved out
//   of dp_shard x cp x tp with ETP 1 or TP (parallel_dims.py:58-59, 136-158); TP always with
//   sequence-parallel norms and, unless disabled, loss parallel (parallelize.py:161-188);
//   local_batch_size per DP rank, gradient accumulation as separate steps (train.py:195-215,
//   547-600); PP microbatches of pipeline_parallel_microbatch_size, 2 stages per rank for
//   multi-stage schedules, embedding and norm + output weighted as layers, loop or V placement
//   (distributed/pipeline_parallel.py:43-155, 236-344, 446-470).
#include <fmt/format.h>

#include <cmath>

#include "frontend/torchtitan/adapter.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

int positive(TitanReader& r, const std::string& key) {
  const std::int64_t v = r.integer(key);
  if (v < 1 || v > kMaxCount) {
    r.fail(key, fmt::format("must be a positive integer up to {}, got {}", kMaxCount, v));
  }
  return static_cast<int>(v);
}

struct TorchSchedule {
  const char* name;  // torch.distributed.pipelining's name, lower case
  ScheduleKind kind;
  bool multi_stage;
  const char* approximation;  // non-null: projected as `kind`, with this caveat
};

// torch.distributed.pipelining.schedules.get_schedule_class names (case-insensitive).
constexpr TorchSchedule kSchedules[] = {
    {"1f1b", ScheduleKind::k1F1B, false, nullptr},
    {"gpipe", ScheduleKind::k1F1B, false,
     "GPipe runs every forward before any backward: projected with 1F1B's order (same bubble; "
     "GPipe keeps all local microbatches in flight, more than the memory projection shows)"},
    {"interleaved1f1b", ScheduleKind::kInterleaved, true, nullptr},
    {"loopedbfs", ScheduleKind::kInterleaved, true,
     "LoopedBFS (breadth-first over the local stages) is projected as interleaved 1F1B"},
    {"interleavedzerobubble", ScheduleKind::kInterleaved, true,
     "InterleavedZeroBubble is projected as interleaved 1F1B (its split W passes are not "
     "scheduled into the bubble)"},
    {"zbvzerobubble", ScheduleKind::kZbvFormatted, true, nullptr},
    {"dualpipev", ScheduleKind::kDualPipeV, true, nullptr},
};

const TorchSchedule& schedule_of(TitanReader& r, const std::string& key) {
  const std::string name = to_lower(r.text(key));
  for (const TorchSchedule& s : kSchedules) {
    if (name == s.name) return s;
  }
  r.fail(key, fmt::format("unknown pipeline schedule '{}' (1F1B, GPipe, Interleaved1F1B, "
                          "LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV)",
                          r.text(key)));
}

// module_fqns_per_model_part: one list of module names per stage.
std::vector<StatedStage> stated_model_parts(TitanReader& r, const std::string& key) {
  const ConfigValue* parts = r.stated(key);
  std::vector<StatedStage> out;
  if (!parts->is_list()) r.fail(key, "expected a list of lists of module names");
  for (const ConfigValue& part : parts->items) {
    if (!part.is_list()) r.fail(key, "expected a list of lists of module names");
    StatedStage s;
    for (const ConfigValue& m : part.items) {
      const std::string n = m.kind == ConfigValue::Kind::kString ? m.s : m.to_text();
      if (n == "tok_embeddings") s.embedding = true;
      if (n == "output" || n == "norm") s.loss = true;
      if (n.starts_with("layers.")) ++s.decoder_layers;
    }
    out.push_back(s);
  }
  return out;
}

void read_pipeline(TitanReader& r, const TitanModelFacts& facts, int pp, int layers, JobDraft& d) {
  const std::string sched_key = "parallelism.pipeline_parallel_schedule";
  if (pp == 1) {
    // No pipeline: the schedule keys have no effect; the split rule stays torchtitan's, for a
    // PP set later (PRIMUS_PP, --pp) with the stated or default weights.
    d.layer_split.kind = LayerSplit::Kind::kWeighted;
    for (const auto& [key, weight] :
         {std::pair{"parallelism.pipeline_parallel_first_stage_less_layers",
                    &d.layer_split.first_weight},
          std::pair{"parallelism.pipeline_parallel_last_stage_less_layers",
                    &d.layer_split.last_weight}}) {
      if (r.stated(key) != nullptr) *weight = static_cast<int>(r.integer(key));
    }
    return;
  }
  if (!facts.pipelining) {
    r.fail(
        "parallelism.pipeline_parallel_degree",
        fmt::format("torchtitan's {} model has no pipelining function (PP must be 1)", facts.name));
  }
  const TorchSchedule& s = schedule_of(r, sched_key);
  if (s.approximation != nullptr) d.warnings.push_back(s.approximation);
  if (!r.text("parallelism.pipeline_parallel_schedule_csv").empty()) {
    d.warnings.push_back(
        "parallelism.pipeline_parallel_schedule_csv: a custom schedule is not modelled; "
        "projected with the named schedule");
  }
  const int in_w =
      static_cast<int>(r.integer("parallelism.pipeline_parallel_first_stage_less_layers"));
  const int out_w =
      static_cast<int>(r.integer("parallelism.pipeline_parallel_last_stage_less_layers"));
  const std::string lps_key = "parallelism.pipeline_parallel_layers_per_stage";
  int per_rank = s.multi_stage ? 2 : 1;
  if (r.stated(lps_key) != nullptr) {
    const int lps = positive(r, lps_key);
    const int stages = (layers + in_w + out_w + lps - 1) / lps;
    if (stages % pp != 0) {
      r.fail(lps_key, fmt::format("{} virtual stages ((layers {} + {} + {}) / {}) are not "
                                  "divisible by PP {}",
                                  stages, layers, in_w, out_w, lps, pp));
    }
    per_rank = stages / pp;
    if (!s.multi_stage && per_rank != 1) {
      r.fail(lps_key,
             fmt::format("a single-stage schedule needs 1 stage per rank, got {}", per_rank));
    }
    if (s.multi_stage && per_rank < 2) {
      r.fail(lps_key, fmt::format("a multi-stage schedule needs at least 2 stages per rank, "
                                  "got {}",
                                  per_rank));
    }
  } else {
    r.note(lps_key, fmt::format("{} stage(s) per rank", per_rank),
           fmt::format("not stated: {} per rank for a {}-stage schedule "
                       "(pipeline_parallel.py:111-115)",
                       per_rank, s.multi_stage ? "multi" : "single"));
  }
  const std::string fqn_key = "parallelism.module_fqns_per_model_part";
  if (r.stated(fqn_key) != nullptr) {
    const std::vector<StatedStage> stages = stated_model_parts(r, fqn_key);
    if (stages.empty() || stages.size() % static_cast<std::size_t>(pp) != 0) {
      r.fail(fqn_key, fmt::format("{} model parts are not a multiple of PP {}", stages.size(), pp));
    }
    per_rank = static_cast<int>(stages.size()) / pp;
    d.set_origin(DraftField::kLayerSplit, fqn_key, r.where(fqn_key));
    d.layer_split.kind = LayerSplit::Kind::kStated;
    d.layer_split.stages = stages;
  } else {
    // generate_llm_fqn_per_model_part: the embedding and norm + output weigh as layers.
    d.layer_split.kind = LayerSplit::Kind::kWeighted;
    d.layer_split.first_weight = in_w;
    d.layer_split.last_weight = out_w;
  }
  if (is_v_shape(s.kind) && per_rank != 2) {
    r.fail(sched_key,
           fmt::format("V-shape schedules place exactly 2 stages per rank, got {}", per_rank));
  }
  d.vpp = per_rank;
  d.schedule = s.kind;
}

void read_mesh(TitanReader& r, const TitanModelFacts& facts, JobDraft& d) {
  const int rep = positive(r, "parallelism.data_parallel_replicate_degree");
  const std::string shard_key = "parallelism.data_parallel_shard_degree";
  const std::int64_t shard = r.integer(shard_key);
  if (shard != -1 && (shard < 1 || shard > kMaxCount)) {
    r.fail(shard_key, fmt::format("must be -1 (fill) or a positive integer, got {}", shard));
  }
  const int tp = positive(r, "parallelism.tensor_parallel_degree");
  const int pp = positive(r, "parallelism.pipeline_parallel_degree");
  const int cp = positive(r, "parallelism.context_parallel_degree");
  int ep = positive(r, "parallelism.expert_parallel_degree");
  const int etp = positive(r, "parallelism.expert_tensor_parallel_degree");
  d.tp = tp;
  d.pp = pp;
  d.cp = cp;
  if (!facts.moe && ep > 1) {
    d.warnings.push_back("parallelism.expert_parallel_degree has no effect on a dense model");
    ep = 1;
  }
  d.ep = ep;
  if (ep > 1 && etp != 1 && etp != tp) {
    r.fail("parallelism.expert_tensor_parallel_degree",
           fmt::format("must be 1 or the TP degree {} with EP > 1, got {}", tp, etp));
  }
  d.etp = ep > 1 ? etp : tp;  // ETP has no effect with EP 1: experts are TP-sharded
  if (shard > 0) {
    d.dp = static_cast<int>(std::min<std::int64_t>(shard * rep, kMaxCount));
  }
  if (rep > 1 && shard == 1 && (cp > 1 || tp > 1 || pp > 1)) {
    r.fail("parallelism.data_parallel_replicate_degree",
           "DDP (replicate without shard) is only supported as the sole parallelism");
  }
  d.parallel.dp_replicate = rep;
  // FSDP2 over dp_shard x cp (HSDP with a replicate degree); with everything 1 its shard group
  // has one rank and the job is plain single-device mixed precision, which FSDP2 with one shard
  // models exactly (fp32 weights, gradients and state; params-dtype compute copies).
  d.fsdp = FsdpKind::kFsdp2;
  d.distributed_optimizer = false;
  d.parallel.vocab_parallel_loss = !r.boolean("parallelism.disable_loss_parallel");
  const std::string reshard = r.text("parallelism.fsdp_reshard_after_forward");
  // The rule, not only the value, so that a re-layout (the sweep, a remedy) decides it again.
  if (reshard == "default") {
    d.parallel.reshard_after_forward_rule = WhenRule::kWithoutPp;  // parallelize.py:319-328
  } else if (reshard == "always" || reshard == "never") {
    d.parallel.reshard_after_forward_rule =
        reshard == "always" ? WhenRule::kAlways : WhenRule::kNever;
  } else {
    r.fail("parallelism.fsdp_reshard_after_forward",
           fmt::format("expected default, always or never, got '{}'", reshard));
  }
  // What torchtitan can split over CP ranks for this model; the builder refuses CP > 1 by rule
  // (job/rules.h kCpUnsupported), whether the TOML, --cp or the sweep states it.
  if (facts.attn_type == "varlen" || facts.name == "gpt_oss") {
    d.parallel.cp_unsupported =
        fmt::format("torchtitan does not support context parallelism for this model (attention {})",
                    facts.attn_type);
  } else if (facts.attn_type != "sdpa" && facts.name != "llama3") {
    d.parallel.cp_unsupported = fmt::format(
        "torchtitan's {} supports context parallelism only with SDPA attention (this "
        "flavor uses {})",
        facts.name, facts.attn_type);
  }
}

// A key that belongs to another torchtitan version than the job's: the new key stated on an older
// version is refused (that torchtitan would reject it); the old key stated on a newer version is
// ignored with a warning that says which version would read it.
void check_version_keys(TitanReader& r, const TitanKeyVersion& v, const TitanChange& c,
                        bool predates, JobDraft& d) {
  if (predates && r.stated(c.key) != nullptr) {
    r.fail(c.key, fmt::format("not a key of torchtitan {} ({}): it came with {}; before it, {} "
                              "({})",
                              v.version.label, v.version.origin, c.source, c.old_key, c.before));
  }
  if (!predates && r.stated(c.old_key) != nullptr) {
    const SourceLocation w = r.where(c.old_key);
    d.warnings.push_back(fmt::format(
        "{}{}: not a key of torchtitan {} ({}); it was replaced by {} on {} ({}): ignored. "
        "--framework-version with an earlier version reads it",
        w.file.empty() ? "" : fmt::format("{}:{}: ", w.file, w.line), c.old_key, v.version.label,
        v.version.origin, c.key, c.since, c.source));
  }
}

const TitanChange& change_of(const TitanKeyVersion& v, std::string_view key) {
  for (const TitanChange& c : v.table.changes) {
    if (c.key == key) return c;
  }
  throw InputError({v.table.file, 0, 0}, std::string(key), "missing from the version table");
}

// The per-rank batch: training.local_batch_size, or before torchtitan #1238 training.batch_size
// (no global batch, no gradient accumulation).
int local_batch(TitanReader& r, const TitanKeyVersion& v, JobDraft& d) {
  const TitanChange& c = change_of(v, "training.local_batch_size");
  const bool old = v.predating(c.key) != nullptr;
  check_version_keys(r, v, c, old, d);
  if (!old) return positive(r, c.key);
  if (r.stated("training.global_batch_size") != nullptr) {
    r.fail("training.global_batch_size",
           fmt::format("not a key of torchtitan {}: gradient accumulation came with {}",
                       v.version.label, c.source));
  }
  if (r.stated(c.old_key) != nullptr) return positive(r, c.old_key);
  if (!c.old_default) r.fail(c.old_key, "required before " + c.since);
  r.note(c.old_key, std::to_string(*c.old_default),
         "torchtitan's default before " + c.since + " (" + c.source + ")");
  return static_cast<int>(*c.old_default);
}

void read_batches(TitanReader& r, int pp, int tp, int cp, const TitanKeyVersion& v, JobDraft& d) {
  const int local = local_batch(r, v, d);
  const bool old_batches = v.predating("training.local_batch_size") != nullptr;
  const std::int64_t gbs = old_batches ? -1 : r.integer("training.global_batch_size");
  const int seq = positive(r, "training.seq_len");
  d.seq_length = seq;
  if (seq % (tp * 2 * cp) != 0 && (tp > 1 || cp > 1)) {
    r.fail("training.seq_len",
           fmt::format("must be divisible by TP x 2 x CP = {} (parallel_dims.py:365-372)",
                       tp * 2 * cp));
  }
  // The builder splits the flush batch: the whole local batch without PP, microbatches of
  // pipeline_parallel_microbatch_size with PP (also when PP comes from PRIMUS_PP / --pp). Before
  // torchtitan #1073 a count of microbatches instead (pipeline_microbatches_before_1073).
  const std::string key = "parallelism.pipeline_parallel_microbatch_size";
  if (v.predating(key) == nullptr && (pp > 1 || r.stated(key) != nullptr)) {
    d.pipeline_micro_batch_size = positive(r, key);
    if (pp > 1) {
      d.set_origin(DraftField::kMicroBatchSize, key,
                   r.stated(key) != nullptr ? r.where(key) : SourceLocation{});
    }
  }
  d.flush_batch_size = local;
  d.runtime.accumulation_outside_schedule =
      true;  // train.py: accumulation steps around the schedule
  if (gbs > 0) {
    d.global_batch_size = static_cast<int>(std::min<std::int64_t>(gbs, kMaxCount));
  } else if (gbs == -1) {
    d.replica_batch_size = local;  // train.py:197-200: one accumulation step
  } else {
    r.fail("training.global_batch_size", fmt::format("must be -1 or positive, got {}", gbs));
  }
}

// Before torchtitan #1073 the pipeline split the local batch into a number of microbatches,
// parallelism.pipeline_parallel_microbatches, by default the total number of stages (PP x stages
// per rank); the builder divides, on the final layout (also a PP set by --pp or PRIMUS_PP).
void pipeline_microbatches_before_1073(TitanReader& r, const TitanKeyVersion& v, JobDraft& d) {
  const TitanChange& c = change_of(v, "parallelism.pipeline_parallel_microbatch_size");
  const bool old = v.predating(c.key) != nullptr;
  check_version_keys(r, v, c, old, d);
  if (!old) return;
  d.pipeline_micro_batch_size.reset();
  if (r.stated(c.old_key) != nullptr) {
    d.pipeline_microbatch_count = positive(r, c.old_key);
    d.set_origin(DraftField::kMicroBatchSize, c.old_key, r.where(c.old_key));
    return;
  }
  d.pipeline_microbatch_count = 0;
  r.note(
      c.old_key, "the total number of stages",
      fmt::format("torchtitan's default before {}: PP x stages per rank ({})", c.since, c.source));
}

}  // namespace

void read_torchtitan_parallel(TitanReader& r, const TitanModelFacts& facts,
                              const TitanKeyVersion& version, JobDraft& d) {
  read_mesh(r, facts, d);
  read_batches(r, *d.pp, *d.tp, *d.cp, version, d);
  read_pipeline(r, facts, *d.pp, d.model.num_layers(), d);
  pipeline_microbatches_before_1073(r, version, d);
}

}  // namespace projector::frontend_detail
