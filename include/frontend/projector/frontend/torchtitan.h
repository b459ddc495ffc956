// What other modules may ask of the torchtitan back-end beyond its adapter (frontend/adapter.h):
// which of torchtitan's model flavors has a given architecture (the validation mapper reads a
// published run's model block this way before handing the run to the adapter).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace projector {

struct TorchtitanArchitecture {
  std::int64_t hidden_size = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // 0: not stated
  int num_experts = 0;   // 0: dense
};

struct TorchtitanFlavorMatch {
  std::string flavor;
  int num_layers = 0;           // the flavor's, for comparison with a stated count
  std::int64_t vocab_size = 0;  // the flavor's
};

// The first flavor of torchtitan model `model_name` (llama3, llama4, deepseek_v3, qwen3, gpt_oss)
// in the transcribed table whose hidden size, heads, KV heads and expert count match; nullopt
// when none does or the model is unknown.
std::optional<TorchtitanFlavorMatch> match_torchtitan_flavor(const std::string& data_dir,
                                                             const std::string& model_name,
                                                             const TorchtitanArchitecture& arch);

}  // namespace projector
