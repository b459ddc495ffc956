// Megatron's vocabulary for a tokenizer, for model presets that name a tokenizer instead of a
// vocabulary size: the table data/frameworks/tokenizers/vocab_sizes.yaml (each row with its
// source).
#include <filesystem>
#include <string>

#include "projector/frontend/loader.h"
#include "projector/util/text.h"

namespace projector {
namespace {

std::optional<TokenizerVocab> row_of(const ConfigValue& row, const std::string& path) {
  const ConfigValue* n = row.find("vocab_size");
  if (n == nullptr || n->kind != ConfigValue::Kind::kInt || n->i <= 0) {
    throw InputError(row.where, "vocab_size", "tokenizer table row needs a positive vocab_size");
  }
  const ConfigValue* src = row.find("source");
  return TokenizerVocab{n->i, src != nullptr ? src->to_text() : path};
}

}  // namespace

std::optional<TokenizerVocab> tokenizer_vocab_size(const std::string& tokenizer_type,
                                                   const std::string& tokenizer_model,
                                                   const std::string& data_dir) {
  const std::string path =
      (std::filesystem::path(data_dir) / "frameworks" / "tokenizers" / "vocab_sizes.yaml").string();
  const ConfigValue table = parse_yaml_file(path, EnvLookup{});
  const std::string model = to_lower(tokenizer_model);
  if (const ConfigValue* models = table.find("models"); !model.empty() && models != nullptr) {
    for (const ConfigValue& row : models->items) {
      const ConfigValue* match = row.find("match");
      if (match != nullptr && model.find(to_lower(match->to_text())) != std::string::npos) {
        return row_of(row, path);
      }
    }
  }
  const std::string type = to_lower(tokenizer_type);
  if (const ConfigValue* types = table.find("types"); !type.empty() && types != nullptr) {
    for (const ConfigValue& row : types->items) {
      const ConfigValue* name = row.find("type");
      if (name != nullptr && to_lower(name->to_text()) == type) return row_of(row, path);
    }
  }
  return std::nullopt;
}

}  // namespace projector
