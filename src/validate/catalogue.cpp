// The data a validation run maps its entries with, read once (validate.h, MappingCatalogue).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <regex>
#include <variant>

#include "projector/hardware/catalog.h"
#include "projector/validate/validate.h"

namespace projector {

struct MappingCatalogue::Cache {
  // The accelerator names, or the error reading them raised (re-raised for each entry).
  std::optional<std::variant<AcceleratorIndex, InputError>> index;
  std::map<std::string, AcceleratorSpec> accelerators;
  std::map<std::string, std::variant<NetworkSpec, InputError>> networks;
  std::optional<std::vector<AcceleratorSpec>> all;  // every entry, loaded on first need
};

namespace {

// The memory size an accelerator text states ("H100 96GB", "192 GB HBM3"; not a "GB/s" rate).
std::optional<double> stated_capacity_gb(const std::string& text) {
  static const std::regex kSize(R"((?:^|[^\d.])(\d{2,4})\s?(?:GB|GiB|gb|gib)(?![/a-zA-Z]))");
  std::smatch m;
  if (!std::regex_search(text, m, kSize)) return std::nullopt;
  return std::stod(m[1].str());
}

// Sizes are written in GB for binary-sized stacks (96 GB = 96 GiB): either reading agrees.
bool capacity_agrees(const AcceleratorSpec& a, double gb) {
  const double gib = a.hbm_bytes / (1024.0 * 1024.0 * 1024.0);
  return std::abs(gib - gb) <= 0.03 * gb || std::abs(a.hbm_bytes / 1e9 - gb) <= 0.03 * gb;
}

std::vector<std::string> lower_words(const std::string& text) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.back().push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!out.back().empty()) {
      out.emplace_back();
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

// The longest run of consecutive words `text` shares with `phrase` that names a model (holds a
// word with a digit: "h100", not only "nvidia"); 0 when none.
std::size_t shared_model_run(const std::vector<std::string>& text, const std::string& phrase) {
  const std::vector<std::string> p = lower_words(phrase);
  std::size_t best = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (std::size_t j = 0; j < p.size(); ++j) {
      std::size_t n = 0;
      bool model = false;
      while (i + n < text.size() && j + n < p.size() && text[i + n] == p[j + n]) {
        model = model || std::any_of(p[j + n].begin(), p[j + n].end(), ::isdigit);
        ++n;
      }
      if (model) best = std::max(best, n);
    }
  }
  return best;
}

}  // namespace

MappingCatalogue::MappingCatalogue(std::string data_dir, ProfileCatalog profiles)
    : data_dir_(std::move(data_dir)), profiles_(std::move(profiles)), cache_(new Cache) {}

MappingCatalogue::MappingCatalogue(const std::string& data_dir)
    : MappingCatalogue(data_dir, load_framework_profiles(data_dir)) {}

MappingCatalogue::~MappingCatalogue() = default;

// The accelerator names, read once (or the error reading them raised, re-raised for each entry).
using IndexOrError = std::optional<std::variant<AcceleratorIndex, InputError>>;
const AcceleratorIndex& accelerator_index(IndexOrError& index, const std::string& data_dir) {
  if (!index) {
    try {
      index.emplace(AcceleratorIndex(data_dir));
    } catch (const InputError& e) {
      index.emplace(e);
    }
  }
  if (const InputError* e = std::get_if<InputError>(&*index)) throw *e;
  return std::get<AcceleratorIndex>(*index);
}

std::optional<std::string> MappingCatalogue::match_accelerator(const std::string& text) {
  const std::optional<std::string> name = accelerator_index(cache_->index, data_dir_).match(text);
  const std::optional<double> gb = stated_capacity_gb(text);
  if (!gb || (name && capacity_agrees(accelerator(*name), *gb))) return name;
  // The text states a memory size the matched part does not have ("H100 96GB" is not the 80 GB
  // H100): the entry of that size whose names share the longest model-naming run of words.
  if (!cache_->all) {
    try {
      cache_->all = load_accelerator_catalog(data_dir_);
    } catch (const InputError&) {
      cache_->all.emplace();
    }
  }
  const std::vector<std::string> words = lower_words(text);
  std::size_t best = 0, second = 0;
  std::string best_name;
  for (const AcceleratorSpec& a : *cache_->all) {
    if (!capacity_agrees(a, *gb)) continue;
    std::size_t score = shared_model_run(words, a.name);
    score = std::max(score, shared_model_run(words, a.display_name));
    for (const std::string& alias : a.aliases)
      score = std::max(score, shared_model_run(words, alias));
    if (score > best) {
      second = best;
      best = score;
      best_name = a.name;
    } else if (score > second) {
      second = score;
    }
  }
  return best > 0 && best > second ? std::optional<std::string>(best_name) : name;
}

const AcceleratorSpec& MappingCatalogue::accelerator(const std::string& name) {
  auto it = cache_->accelerators.find(name);
  if (it == cache_->accelerators.end()) {
    it = cache_->accelerators.emplace(name, accelerator_index(cache_->index, data_dir_).load(name))
             .first;
  }
  return it->second;
}

const NetworkSpec& MappingCatalogue::default_network(const AcceleratorSpec& accelerator) {
  auto it = cache_->networks.find(accelerator.name);
  if (it == cache_->networks.end()) {
    try {
      it = cache_->networks.emplace(accelerator.name, default_network_for(accelerator, data_dir_))
               .first;
    } catch (const InputError& e) {
      it = cache_->networks.emplace(accelerator.name, e).first;
    }
  }
  if (const InputError* e = std::get_if<InputError>(&it->second)) throw *e;
  return std::get<NetworkSpec>(it->second);
}

}  // namespace projector
