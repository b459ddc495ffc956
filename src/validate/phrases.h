// Small, negation-aware readers of the free-text fields of a published run, each with a table of
// the phrasings it understands (tests/validate/phrases_test.cpp lists them with their readings).
// A word counts only where the text affirms it: "no flex backend" does not name flex, "does not
// reshard" does not switch FSDP off. Internal to validate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projector/model/job.h"

namespace projector::validate_detail {

// Lower-case words of `text` ('_' kept inside words, "n't" read as "not", '/' between letters
// splitting "q/k/v_proj" into q_proj, k_proj, v_proj).
std::vector<std::string> phrase_words(const std::string& text);

// Whether the words contain `phrase` (one or more words) with no negation in front of it ("no",
// "not", "non", "without", "never", within two words) or right after it ("off", "disabled").
bool affirms(const std::vector<std::string>& words, const std::string& phrase);
// Whether the phrase occurs at all (affirmed or not).
bool mentions(const std::vector<std::string>& words, const std::string& phrase);

// training.fsdp as a careful reader takes it (a bare number, the shard degree, is the caller's).
struct FsdpReading {
  std::optional<FsdpKind> kind;  // nullopt: the text says nothing about sharding
  // Sharding of optimizer state (and gradients) only: Megatron-FSDP optim / optim_grads.
  bool distributed_optimizer = false;
  bool grads_sharded = false;                 // optim_grads: the gradients too (ZeRO-2)
  std::optional<int> shard_group;             // "sharding group 8": ranks one group shards over
  std::optional<bool> reshard_after_forward;  // "does not reshard" -> false
  std::string how;                            // the reading, for the assumptions list
};
FsdpReading read_fsdp_text(const std::string& fsdp);

// training.recompute for Megatron-family runs: none, full, or selective with the modules named.
struct RecomputeReading {
  RecomputeGranularity granularity = RecomputeGranularity::kNone;
  std::vector<RecomputeModule> modules;  // selective: the modules named (empty: profile's set)
  bool recognised = true;                // false: nothing in the text could be read
  std::string how;
};
RecomputeReading read_recompute_text(const std::string& text);

// MaxText remat_policy=custom: where the text puts the per-tensor key `key` ("device",
// "offload" or "remat"), from the verb of the clause that names it ("decoder_layer_input
// offloaded", "q/k/v_proj rematerialized"); nullopt when the key is not named.
std::optional<std::string> stated_placement(const std::string& text, const std::string& key);

// A non-boolean training.flash_attention: true when it names a fused / flash attention kernel
// ("TE fused attention (CK backend)", "FlashAttention-3", "cuDNN SDPA", "splash attention"),
// false when it names unfused attention ("unfused", "eager", "math backend", "none"), nullopt
// when neither.
std::optional<bool> read_fused_attention(const std::string& text);

// The dispatcher a training.moe_dispatcher text affirms: "flex" (DeepEP / HybridEP back-ends),
// "allgather", "alltoall", or "" when none is affirmed ("alltoall (no flex backend)" is alltoall).
std::string read_dispatcher_kind(const std::string& text);

// Async tensor parallelism (torchtitan enable_async_tensor_parallel, Megatron tp-comm-overlap)
// affirmed in a features / overlap text.
bool states_async_tp(const std::string& text);

}  // namespace projector::validate_detail
