// Reference facts of model families (data/models/_families.yaml) for published runs that name a
// family but not its vocabulary, normalisation, positions, output-layer tying or dropout.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "projector/model/job.h"

namespace projector::validate_detail {

template <typename T>
struct FamilyFact {
  T value{};
  std::string source;  // the row's source, for the recorded assumption
};

// The table is read on the first question (most runs state everything), once per FamilyFacts.
// A malformed table is an InputError naming the file, line and key.
class FamilyFacts {
 public:
  FamilyFacts(std::string data_dir, std::string family);
  ~FamilyFacts();
  FamilyFacts(const FamilyFacts&) = delete;
  FamilyFacts& operator=(const FamilyFacts&) = delete;

  // The vocabulary of the family's tokenizer (tokenizer_type through the tokenizer table).
  std::optional<FamilyFact<std::int64_t>> vocab_size();
  std::optional<FamilyFact<NormKind>> norm();
  std::optional<FamilyFact<PositionEmbeddingKind>> position_embedding();
  std::optional<FamilyFact<bool>> tied_embeddings();
  std::optional<FamilyFact<double>> dropout();
  // The table's path, for messages.
  std::string path() const;

 private:
  struct Table;
  const Table& table();
  std::string data_dir_;
  std::string family_;  // lower case
  std::unique_ptr<Table> table_;
};

}  // namespace projector::validate_detail
