// The recompute choices of a re-layout: one vocabulary that every framework's activation
// checkpointing maps onto (Megatron's granularities and methods, torchtitan's AC modes, MaxText's
// named remat policies), and the one function that writes a choice into a built job. The sweep's
// recompute axis and the memory remedies use it, so a framework's recompute policy (its selective
// set, its named policies) reaches both from the job its adapter and profile built.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "projector/job/spec.h"
#include "projector/model/saved_tensors.h"

namespace projector {

enum class RecomputeKind : std::uint8_t {
  kNone,
  kSelective,     // selective: the framework's selective set (RuntimeSpec::selective_default)
  kFull,          // full, uniform, 1 layer per group: every layer keeps only its input
  kFullBlock,     // full, block: the first `num_layers` layers of every model chunk
  kOpPolicy,      // per-op selective checkpointing (RecomputeGranularity::kOpPolicy)
  kEveryN,        // every `num_layers`-th block fully checkpointed (torchtitan selective N)
  kTensorPolicy,  // a per-tensor policy: `tensors`, or the job's own when null
};

struct RecomputeChoice {
  RecomputeKind kind = RecomputeKind::kNone;
  int num_layers = 0;  // kFullBlock, kEveryN: the layers
  // kTensorPolicy: one of the framework's named policies (RuntimeSpec::tensor_policies, static
  // storage); null keeps the job's own policy.
  const NamedTensorPolicy* tensors = nullptr;
  friend bool operator==(const RecomputeChoice&, const RecomputeChoice&) = default;
};

// none, selective, full, block<N>, op, every<N>, remat:<name>, remat:base.
std::string to_string(const RecomputeChoice& c);

// Reads the text of to_string. "remat:<name>" is looked up in `named` (the job's framework's
// tensor policies); nullopt for anything unknown.
std::optional<RecomputeChoice> parse_recompute_choice(std::string_view text,
                                                      std::span<const NamedTensorPolicy> named);

// The policy of `named` called `name`; nullptr when there is none.
const NamedTensorPolicy* find_tensor_policy(std::span<const NamedTensorPolicy> named,
                                            std::string_view name);

// Whether the choice checkpoints whole layers (the rules' full-recompute facts, LayoutChoice).
bool checkpoints_whole_layers(const RecomputeChoice& c);

// Writes the choice into the job's recompute policy as its framework would: the selective set and
// the named policies are the ones the job carries from its profile and adapter.
void apply_recompute(JobSpec& job, const RecomputeChoice& c);

}  // namespace projector
