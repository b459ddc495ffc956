// The data a validation run maps its entries with, read once (validate.h, MappingCatalogue).
#include <map>
#include <variant>

#include "projector/hardware/catalog.h"
#include "projector/validate/validate.h"

namespace projector {

struct MappingCatalogue::Cache {
  // The accelerator names, or the error reading them raised (re-raised for each entry).
  std::optional<std::variant<AcceleratorIndex, InputError>> index;
  std::map<std::string, AcceleratorSpec> accelerators;
  std::map<std::string, std::variant<NetworkSpec, InputError>> networks;
};

MappingCatalogue::MappingCatalogue(std::string data_dir, ProfileCatalog profiles)
    : data_dir_(std::move(data_dir)), profiles_(std::move(profiles)), cache_(new Cache) {}

MappingCatalogue::MappingCatalogue(const std::string& data_dir)
    : MappingCatalogue(data_dir, load_framework_profiles(data_dir)) {}

MappingCatalogue::~MappingCatalogue() = default;

std::optional<std::string> MappingCatalogue::match_accelerator(const std::string& text) {
  if (!cache_->index) {
    try {
      cache_->index.emplace(AcceleratorIndex(data_dir_));
    } catch (const InputError& e) {
      cache_->index.emplace(e);
    }
  }
  if (const InputError* e = std::get_if<InputError>(&*cache_->index)) throw *e;
  return std::get<AcceleratorIndex>(*cache_->index).match(text);
}

const AcceleratorSpec& MappingCatalogue::accelerator(const std::string& name) {
  auto it = cache_->accelerators.find(name);
  if (it == cache_->accelerators.end()) {
    match_accelerator(name);  // builds the index (or re-raises its error)
    it = cache_->accelerators.emplace(name, std::get<AcceleratorIndex>(*cache_->index).load(name))
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
