// Test helper: a small flat Megatron argument file (4 layers of a 1024-wide dense model) for the
// tests that project a run's own config.
#pragma once

namespace projector::testing {

inline constexpr const char* kFlatMegatronJob = R"(num_layers: 4
hidden_size: 1024
num_attention_heads: 16
ffn_hidden_size: 4096
seq_length: 2048
max_position_embeddings: 2048
padded_vocab_size: 32000
micro_batch_size: 1
global_batch_size: 64
bf16: true
)";

}  // namespace projector::testing
