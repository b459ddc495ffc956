// The one named rule set every job obeys, whoever builds it: the front-end adapters, the validation
// mapper, the sweep, the memory remedies and the test builders all check their layouts here (the
// job builder, job/builder.h, for a stated job; the sweep for each enumerated candidate).
//
// check_layout() is cheap (a few integer divisions) so the sweep can run it 10^6 times; everything
// it needs from the model and the cluster is computed once into RuleFacts.
#pragma once

#include <cstdint>
#include <string_view>

#include "projector/model/job.h"

namespace projector {

// Checking order; a layout is reported under the first rule it breaks.
enum class LayoutRule : std::uint8_t {
  kLegal,
  kTpHeads,                  // attention heads % TP
  kTpKvHeads,                // KV heads (query groups) % TP
  kTpBeyondNode,             // TP > GPUs per node
  kWorldDense,               // world % (TP x PP x CP)
  kLayers,                   // layers % (PP x VPP) (balanced), or fewer layers than stages
  kNotMoe,                   // EP > 1 (search: or ETP != TP) on a model without experts
  kExpertsEp,                // experts % EP
  kWorldExpert,              // world % (ETP x EP x PP)
  kSeqCp,                    // CP > 1 and seq % (2 x CP)
  kGbs,                      // GBS % (MBS x DP)
  kScheduleNeedsPp,          // VPP > 1 (search: any schedule but 1f1b) with PP == 1
  kScheduleVpp,              // schedule and VPP do not match (interleaved >= 2, V-shape == 2)
  kInterleavedMicrobatches,  // interleaved: microbatches % PP != 0
  kDualPipeMicrobatches,     // dualpipev: microbatches < 2 x PP
  kSplitBackwardRecompute,   // zero-bubble / V-shape schedules split B and W: no full recompute
  kRecomputeBlock,           // search: block recompute of >= the layers of the smallest chunk
  // Rules only a stated job can break (an enumerated candidate is built to satisfy them).
  kSizes,       // a size, batch or length below 1 or above kMaxCount
  kWorldSize,   // nodes x GPUs per node above kMaxWorldSize
  kLayerSplit,  // a stated layout or first / last stage counts that do not place every layer
  kCount
};
inline constexpr int kNumLayoutRules = static_cast<int>(LayoutRule::kCount);
std::string_view to_string(LayoutRule r);    // short id, e.g. "tp_heads"
std::string_view explanation(LayoutRule r);  // one line for reports

// What the rules read from the model and the cluster.
struct RuleFacts {
  int layers = 0;
  int heads_gcd = 0;    // every layer's attention heads are a multiple of this
  int kv_gcd = 0;       // standard-attention KV heads (0: none)
  int experts_gcd = 0;  // routed experts (0: dense model)
  int seq = 0;
  int gbs = 0;
  int gpus_per_node = 8;
  std::int64_t world = 8;
  bool tp_beyond_node = false;
  // Balanced split: the first L mod (PP x VPP) stages take one more layer (else it must divide).
  bool uneven_layers = false;
  // The stages come from a stated layout or stage counts (checked by kLayerSplit instead).
  bool stated_stages = false;
  // The sweep: also reject layouts that only duplicate another one (ETP != TP on a dense model,
  // a pipeline schedule without pipeline parallelism, block recompute covering whole chunks).
  bool search = false;
};
RuleFacts rule_facts(const ModelSpec& model, int seq, int gbs, int gpus_per_node,
                     std::int64_t world);

// The choices the rules constrain.
struct LayoutChoice {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1;
  int mbs = 1;
  ScheduleKind schedule = ScheduleKind::k1F1B;  // resolved (kAuto breaks kScheduleVpp)
  bool full_recompute = false;
  int recompute_block_layers = 0;  // full recompute, block method: layers per chunk; 0: uniform
};
LayoutChoice layout_choice(const JobSpec& job);

LayoutRule check_layout(const RuleFacts& facts, const LayoutChoice& choice);

}  // namespace projector
