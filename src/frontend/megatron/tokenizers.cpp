// Megatron's vocabulary for a tokenizer, for model presets that name a tokenizer instead of a
// vocabulary size.
#include <string>

#include "projector/frontend/loader.h"
#include "projector/util/text.h"

namespace projector {

std::optional<std::int64_t> tokenizer_vocab_size(const std::string& tokenizer_type,
                                                 const std::string& tokenizer_model) {
  const std::string model = to_lower(tokenizer_model);
  // Embedding rows of the published checkpoints (HF config.json `vocab_size`).
  struct Entry {
    const char* needle;
    std::int64_t vocab;
  };
  static const Entry kByModel[] = {
      {"llama-3", 128256},    {"llama3", 128256},       {"llama-2", 32000},
      {"llama2", 32000},      {"mixtral-8x22b", 32768}, {"mixtral", 32000},
      {"mistral-7b", 32000},  {"deepseek-v3", 129280},  {"deepseek-v2", 102400},
      {"qwen3", 151936},      {"qwen2.5-0.5b", 151936}, {"qwen2.5-1.5b", 151936},
      {"qwen2.5-3b", 151936}, {"qwen2.5", 152064},      {"gpt-oss", 201088},
      {"grok-1", 131072},     {"gpt2", 50257},
  };
  if (!model.empty()) {
    for (const Entry& e : kByModel) {
      if (model.find(e.needle) != std::string::npos) return e.vocab;
    }
  }
  static const Entry kByType[] = {
      {"llama3tokenizer", 128256},     {"llama2tokenizer", 32000},      {"gpt2bpetokenizer", 50257},
      {"deepseekv3tokenizer", 129280}, {"deepseekv2tokenizer", 102400}, {"mixtraltokenizer", 32000},
  };
  const std::string type = to_lower(tokenizer_type);
  for (const Entry& e : kByType) {
    if (type == e.needle) return e.vocab;
  }
  return std::nullopt;
}

}  // namespace projector
