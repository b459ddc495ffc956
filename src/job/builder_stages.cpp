// Job builder steps (builder_detail.h): VPP, the virtual stages (balanced, weighted, stated,
// first / last stage counts) and the schedule.
#include <algorithm>
#include <numeric>

#include "job/builder_detail.h"
#include "projector/job/layout.h"

namespace projector::job_detail {

// VPP when the draft does not state it: from layers per virtual stage, a stated layout's stage
// count, or the schedule (V-shape: 2; interleaved: the smallest legal, recorded).
int Builder::derived_vpp() {
  const int pp = job_.parallel.pp;
  int layers = job_.model.num_layers();
  if (d_.layers_per_virtual_stage) {
    const std::int64_t per = static_cast<std::int64_t>(*d_.layers_per_virtual_stage) * pp;
    // MG1 arguments.py:953-974: the embedding / loss count as layers here too.
    layers += (d_.layer_split.embedding_in_split ? 1 : 0) + (d_.layer_split.loss_in_split ? 1 : 0);
    if (layers % per != 0) {
      fail(LayoutRule::kLayerSplit, DraftField::kVpp,
           fmt::format("{} layers are not divisible by {} layers per virtual stage x PP {}", layers,
                       *d_.layers_per_virtual_stage, pp));
    }
    return static_cast<int>(layers / per);
  }
  const LayerSplit& split = d_.layer_split;
  if (split.kind == LayerSplit::Kind::kStated) {
    const int count = static_cast<int>(split.stages.size());
    if (count % pp == 0 && count / pp > 1) {
      record(DraftField::kVpp, show(count / pp),
             fmt::format("{} layout stages / PP {}", count, pp));
      return count / pp;
    }
    return 1;
  }
  if (pp > 1 && is_v_shape(d_.schedule)) {
    record(DraftField::kVpp, "2",
           fmt::format("not stated; {} runs two chunks per rank", to_string(d_.schedule)));
    return 2;
  }
  if (pp > 1 && d_.schedule == ScheduleKind::kInterleaved) {
    for (int v = 2; static_cast<std::int64_t>(pp) * v <= layers; ++v) {
      if (split.allow_uneven || layers % (pp * v) == 0) {
        record(DraftField::kVpp, show(v),
               "not stated; the smallest VPP the interleaved schedule can split the layers into");
        return v;
      }
    }
  }
  return 1;
}

void Builder::virtual_stages() {
  ParallelSpec& p = job_.parallel;
  p.vpp = d_.vpp ? *d_.vpp : derived_vpp();
  if (static_cast<std::int64_t>(p.pp) * p.vpp > kMaxLayers) {
    fail(LayoutRule::kLayers, d_.vpp ? DraftField::kVpp : DraftField::kPp,
         fmt::format("PP x VPP = {} x {} virtual stages is more than the {} this tool models", p.pp,
                     p.vpp, kMaxLayers));
  }
  if (p.vpp > 1 && p.pp == 1) {
    fail(LayoutRule::kScheduleNeedsPp, flag_or(DraftField::kVpp, DraftField::kPp),
         fmt::format("virtual pipeline stages ({}) need PP > 1", p.vpp));
  }
  switch (d_.layer_split.kind) {
    case LayerSplit::Kind::kStated:
      stated_stages(d_.layer_split.stages);
      break;
    case LayerSplit::Kind::kFirstLast:
      first_last_stages();
      break;
    case LayerSplit::Kind::kBalanced:
      balanced_split();
      break;
    case LayerSplit::Kind::kWeighted:
      weighted_split();
      break;
  }
}

void Builder::weighted_split() {
  ParallelSpec& p = job_.parallel;
  const LayerSplit& s = d_.layer_split;
  const int layers = job_.model.num_layers();
  const int z = p.pp * p.vpp;
  const int effective = layers + s.first_weight + s.last_weight;
  const int per = z > 0 ? effective / z : 0;
  if (z > 1 && (z > effective || s.first_weight > per || s.last_weight > per)) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
         fmt::format("{} layers with embedding / output weights {} / {} cannot fill {} stages "
                     "(each needs at least the weights)",
                     layers, s.first_weight, s.last_weight, z));
  }
  p.stages.clear();
  int next = 0;
  for (int i = 0; i < z; ++i) {
    int take = z == 1 ? layers : per + (i < effective % z ? 1 : 0);
    if (z > 1 && i == 0) take -= s.first_weight;
    if (z > 1 && i == z - 1) take -= s.last_weight;
    take = std::clamp(take, 0, layers - next);
    if (i == z - 1) take = layers - next;
    p.stages.push_back(
        {next, take, i == 0, i == z - 1, i == z - 1 ? job_.model.mtp_num_layers : 0});
    next += take;
  }
}

void Builder::stated_stages(const std::vector<StatedStage>& stages) {
  ParallelSpec& p = job_.parallel;
  const ModelSpec& model = job_.model;
  const int count = static_cast<int>(stages.size());
  if (count != p.pp * p.vpp) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
         fmt::format("layout has {} stages but PP x VPP = {} x {} = {}", count, p.pp, p.vpp,
                     p.pp * p.vpp));
  }
  p.stages.clear();
  int total = 0;
  int mtp = 0;
  for (const StatedStage& s : stages) {
    p.stages.push_back({total, s.decoder_layers, s.embedding, s.loss, s.mtp_layers});
    total += s.decoder_layers;
    mtp += s.mtp_layers;
  }
  if (total != model.num_layers()) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
         fmt::format("layout places {} decoder layers but the model has {}", total,
                     model.num_layers()));
  }
  if (mtp != 0 && mtp != model.mtp_num_layers) {
    fail(
        LayoutRule::kLayerSplit, DraftField::kLayerSplit,
        fmt::format("layout places {} MTP layers but the model has {}", mtp, model.mtp_num_layers));
  }
  if (mtp == 0 && model.mtp_num_layers > 0) {
    // Megatron puts MTP layers with the loss when the layout does not place them.
    for (VirtualStage& v : p.stages) {
      if (v.has_output) v.mtp_layers = model.mtp_num_layers;
    }
  }
}

// Per-rank layer counts -> virtual stages. Megatron gives each pipeline rank's layers evenly to
// its VPP model chunks and numbers the virtual stages chunk-major (z = chunk x PP + rank): MG7
// transformer_block.py:161-186 get_num_layers_to_build, :218 get_transformer_layer_offset.
// `less_first` / `less_last`: the first / last virtual stage builds one layer fewer (the embedding
// / loss counted as a layer, MG7 transformer_block.py:188-200).
void Builder::stages_from_ranks(const std::vector<int>& per_rank, int less_first, int less_last) {
  ParallelSpec& p = job_.parallel;
  const int z_count = p.pp * p.vpp;
  p.stages.clear();
  int first_layer = 0;
  for (int z = 0; z < z_count; ++z) {
    int n = per_rank[static_cast<std::size_t>(z % p.pp)] / p.vpp;
    if (z == 0) n -= less_first;
    if (z == z_count - 1) n -= less_last;
    p.stages.push_back({first_layer, n, z == 0, z == z_count - 1,
                        z == z_count - 1 ? job_.model.mtp_num_layers : 0});
    first_layer += n;
  }
}

// decoder_first / last_pipeline_num_layers: the first (last) pipeline RANK holds that many layers
// over all its virtual stages; the middle ranks share the rest evenly; every rank's count must
// divide by VPP (MG2 transformer_config.py:2295-2368; MG7 transformer_block.py:103-146).
void Builder::first_last_stages() {
  ParallelSpec& p = job_.parallel;
  const LayerSplit& s = d_.layer_split;
  const int layers = job_.model.num_layers();
  const bool has_first = s.first_stage_layers.has_value();
  const bool has_last = s.last_stage_layers.has_value() && p.pp > 1;
  const int first = s.first_stage_layers.value_or(0);
  const int last = has_last ? *s.last_stage_layers : 0;
  auto bad = [&](const std::string& why) {
    fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit, why);
  };
  if ((has_first && first <= 0) || (has_last && last <= 0)) {
    bad("the first / last pipeline stage must hold at least one layer");
  }
  const int middle_ranks = p.pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
  const int rest = layers - first - last;
  if (rest < 0 || (rest > 0) != (middle_ranks > 0)) {
    bad(
        fmt::format("first {} + last {} layers leave {} layers for {} middle pipeline ranks of {} "
                    "layers",
                    first, last, rest, std::max(0, middle_ranks), layers));
  }
  if (middle_ranks > 0 && rest % middle_ranks != 0) {
    bad(fmt::format("the {} middle layers do not divide over {} middle pipeline ranks", rest,
                    middle_ranks));
  }
  std::vector<int> per_rank(static_cast<std::size_t>(p.pp),
                            middle_ranks > 0 ? rest / middle_ranks : 0);
  if (has_first) per_rank.front() = first;
  if (has_last) per_rank.back() = last;
  if (p.pp == 1) per_rank.front() = layers;
  for (int r = 0; r < p.pp; ++r) {
    if (per_rank[static_cast<std::size_t>(r)] % p.vpp != 0) {
      bad(fmt::format("pipeline rank {} holds {} layers, not divisible by VPP {}", r,
                      per_rank[static_cast<std::size_t>(r)], p.vpp));
    }
  }
  stages_from_ranks(per_rank, 0, 0);
}

namespace {

// What to state when the layers do not divide: the framework's keys and, for a first-stage count,
// the one closest to an even share that leaves the other ranks balanced (each rank's layers
// divisible by VPP).
std::string uneven_split_advice(const LayerSplit& s, int layers, int pp, int vpp) {
  if (s.first_stage_key.empty()) {
    return "state the layout, the first / last stage layer counts or count the embedding / loss "
           "as layers";
  }
  int best = 0;
  for (int first = vpp; pp > 1 && first < layers; first += vpp) {
    const int rest = layers - first;
    if (rest % (pp - 1) != 0 || (rest / (pp - 1)) % vpp != 0) continue;
    if (best == 0 || std::abs(first * pp - layers) < std::abs(best * pp - layers)) best = first;
  }
  const std::string layout = s.layout_key.empty() ? "" : " or " + s.layout_key;
  if (best == 0) return fmt::format("set {}{}", s.first_stage_key, layout);
  return fmt::format("set {}: {} (then {} x {} layers){}", s.first_stage_key, best, pp - 1,
                     (layers - best) / (pp - 1), layout);
}

}  // namespace

void Builder::balanced_split() {
  ParallelSpec& p = job_.parallel;
  const LayerSplit& s = d_.layer_split;
  const int layers = job_.model.num_layers();
  const int z = p.pp * p.vpp;
  if (s.embedding_in_split || s.loss_in_split) {
    // MG2 transformer_config.py:2370-2400, MG1 arguments.py:985-997: the embedding and / or loss
    // count as layers, the total must divide by PP and each rank's share by VPP.
    const int total = layers + (s.embedding_in_split ? 1 : 0) + (s.loss_in_split ? 1 : 0);
    if (total % z != 0) {
      fail(LayoutRule::kLayerSplit, DraftField::kLayerSplit,
           fmt::format("{} layers + embedding / loss = {} are not divisible by PP x VPP = {} x {}",
                       layers, total, p.pp, p.vpp));
    }
    // A virtual stage may hold no decoder layer beside the embedding (MG7 :194-196 asserts >= 0).
    stages_from_ranks(std::vector<int>(static_cast<std::size_t>(p.pp), total / p.pp),
                      s.embedding_in_split ? 1 : 0, s.loss_in_split ? 1 : 0);
    return;
  }
  if (z > layers && job_.model.family == ModelFamily::kDecoderLm) {
    fail(LayoutRule::kLayers,
         flag_or(p.vpp > 1 ? DraftField::kVpp : DraftField::kPp, DraftField::kLayerSplit),
         fmt::format("{} layers cannot fill PP x VPP = {} x {} = {} stages", layers, p.pp, p.vpp,
                     z));
  }
  if (z > 1 && layers % z != 0) {
    if (!s.allow_uneven) {
      fail(LayoutRule::kLayers, DraftField::kLayerSplit,
           fmt::format("{} layers are not divisible by PP x VPP = {} x {} = {} (Megatron "
                       "asserts it); {}",
                       layers, p.pp, p.vpp, z, uneven_split_advice(s, layers, p.pp, p.vpp)));
    }
    record(DraftField::kLayerSplit, "uneven",
           fmt::format("{} layers over {} virtual stages: the first {} take one more", layers, z,
                       layers % z));
  }
  balanced_stages_into(p.stages, layers, p.pp, p.vpp, job_.model.mtp_num_layers);
}

void Builder::schedule_choice() {
  RuntimeSpec& rt = job_.runtime;
  const ParallelSpec& p = job_.parallel;
  rt.schedule = d_.schedule;
  if (rt.schedule != ScheduleKind::kAuto) return;
  if (p.pp == 1) {
    rt.schedule = ScheduleKind::k1F1B;  // no pipeline: the schedule is moot
    return;
  }
  const bool full_recompute = rt.recompute.granularity == RecomputeGranularity::kFull;
  if (d_.prefer_zero_bubble && !full_recompute && p.vpp <= 2) {
    rt.schedule = p.vpp == 1 ? ScheduleKind::kZeroBubble : ScheduleKind::kZbvFormatted;
    record(DraftField::kSchedule, std::string(to_string(rt.schedule)),
           fmt::format("auto with zero bubble requested and VPP {}", p.vpp));
    return;
  }
  const schedule::ScheduleSelection sel = auto_schedule(p.pp, p.vpp);
  rt.schedule = sel.algorithm;
  record(DraftField::kSchedule, std::string(to_string(rt.schedule)), sel.reason);
}

}  // namespace projector::job_detail
