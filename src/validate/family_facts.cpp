// Family reference facts (family_facts.h): the first row of data/models/_families.yaml whose
// `match` names occur in the family and that states the fact.
#include "validate/family_facts.h"

#include <filesystem>

#include "projector/frontend/config_value.h"
#include "projector/frontend/loader.h"
#include "projector/util/error.h"
#include "projector/util/text.h"

namespace projector::validate_detail {

struct FamilyFacts::Table {
  ConfigValue doc;
  std::vector<const ConfigValue*> rows;  // the rows whose match names occur in the family
};

namespace {

bool row_matches(const ConfigValue& row, const std::string& family_lower) {
  const ConfigValue* match = row.find("match");
  if (match == nullptr || !match->is_list() || match->items.empty()) {
    throw InputError(row.where, "match", "a family row needs a non-empty list of names");
  }
  for (const ConfigValue& name : match->items) {
    const std::string n = to_lower(name.to_text());
    if (!n.empty() && family_lower.find(n) != std::string::npos) return true;
  }
  return false;
}

std::string row_source(const ConfigValue& row) {
  const ConfigValue* src = row.find("source");
  if (src == nullptr || src->to_text().empty()) {
    throw InputError(row.where, "source", "every family row names its source");
  }
  return src->to_text();
}

}  // namespace

FamilyFacts::FamilyFacts(std::string data_dir, std::string family)
    : data_dir_(std::move(data_dir)), family_(to_lower(family)) {}
FamilyFacts::~FamilyFacts() = default;

std::string FamilyFacts::path() const {
  return (std::filesystem::path(data_dir_) / "models" / "_families.yaml").string();
}

const FamilyFacts::Table& FamilyFacts::table() {
  if (table_) return *table_;
  auto t = std::make_unique<Table>();
  t->doc = parse_yaml_file(path(), EnvLookup{});
  const ConfigValue* rows = t->doc.find("families");
  if (rows == nullptr || !rows->is_list()) {
    throw InputError(t->doc.where, "families", "expected a list of family rows");
  }
  if (!family_.empty()) {
    for (const ConfigValue& row : rows->items) {
      if (row_matches(row, family_)) t->rows.push_back(&row);
    }
  }
  table_ = std::move(t);
  return *table_;
}

namespace {

// The first matching row stating `key`, with the row's source.
const ConfigValue* first_with(const std::vector<const ConfigValue*>& rows, const char* key,
                              std::string& source) {
  for (const ConfigValue* row : rows) {
    if (const ConfigValue* v = row->find(key)) {
      source = row_source(*row);
      return v;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<FamilyFact<std::int64_t>> FamilyFacts::vocab_size() {
  std::string source;
  const ConfigValue* v = first_with(table().rows, "tokenizer_type", source);
  if (v == nullptr) return std::nullopt;
  const std::optional<TokenizerVocab> vocab = tokenizer_vocab_size(v->to_text(), "", data_dir_);
  if (!vocab) {
    throw InputError(v->where, "tokenizer_type",
                     "'" + v->to_text() + "' is not a type of the tokenizer table");
  }
  return FamilyFact<std::int64_t>{vocab->vocab_size, source + "; " + vocab->source};
}

std::optional<FamilyFact<NormKind>> FamilyFacts::norm() {
  std::string source;
  const ConfigValue* v = first_with(table().rows, "norm", source);
  if (v == nullptr) return std::nullopt;
  const std::string t = to_lower(v->to_text());
  if (t == "layernorm") return FamilyFact<NormKind>{NormKind::kLayerNorm, source};
  if (t == "rmsnorm") return FamilyFact<NormKind>{NormKind::kRmsNorm, source};
  throw InputError(v->where, "norm", "expected layernorm or rmsnorm, got '" + v->to_text() + "'");
}

std::optional<FamilyFact<PositionEmbeddingKind>> FamilyFacts::position_embedding() {
  std::string source;
  const ConfigValue* v = first_with(table().rows, "position_embedding", source);
  if (v == nullptr) return std::nullopt;
  const std::string t = to_lower(v->to_text());
  if (t == "learned_absolute") {
    return FamilyFact<PositionEmbeddingKind>{PositionEmbeddingKind::kLearnedAbsolute, source};
  }
  if (t == "rope") return FamilyFact<PositionEmbeddingKind>{PositionEmbeddingKind::kRope, source};
  if (t == "none") return FamilyFact<PositionEmbeddingKind>{PositionEmbeddingKind::kNone, source};
  throw InputError(v->where, "position_embedding",
                   "expected learned_absolute, rope or none, got '" + v->to_text() + "'");
}

std::optional<FamilyFact<bool>> FamilyFacts::tied_embeddings() {
  std::string source;
  const ConfigValue* v = first_with(table().rows, "tied_embeddings", source);
  if (v == nullptr) return std::nullopt;
  if (v->kind != ConfigValue::Kind::kBool) {
    throw InputError(v->where, "tied_embeddings", "expected true or false");
  }
  return FamilyFact<bool>{v->b, source};
}

std::optional<FamilyFact<double>> FamilyFacts::dropout() {
  std::string source;
  const ConfigValue* v = first_with(table().rows, "dropout", source);
  if (v == nullptr) return std::nullopt;
  const double d = v->kind == ConfigValue::Kind::kInt     ? static_cast<double>(v->i)
                   : v->kind == ConfigValue::Kind::kFloat ? v->f
                                                          : -1.0;
  if (!(d >= 0.0 && d < 1.0)) {
    throw InputError(v->where, "dropout", "expected a probability in [0, 1), got " + v->to_text());
  }
  return FamilyFact<double>{d, source};
}

}  // namespace projector::validate_detail
