// The back-end adapter registry (frontend/adapter.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/maxtext/adapter.h"
#include "frontend/megatron/adapter.h"
#include "frontend/torchrec/adapter.h"
#include "frontend/torchtitan/adapter.h"
#include "projector/frontend/adapter.h"
#include "projector/util/error.h"
#include "projector/util/text.h"

namespace projector {

void AdapterRegistry::add(std::shared_ptr<const BackendAdapter> adapter) {
  if (!adapter) throw InputError({}, "framework", "no adapter given");
  std::vector<std::string> names = adapter->aliases();
  names.emplace_back(adapter->name());
  for (const std::string& n : names) {
    if (find(n) != nullptr) {
      throw InputError({}, "framework", fmt::format("back-end '{}' is already registered", n));
    }
  }
  adapters_.push_back(std::move(adapter));
}

const BackendAdapter* AdapterRegistry::find(std::string_view name) const {
  const std::string n = to_lower(name);
  for (const auto& a : adapters_) {
    if (to_lower(a->name()) == n) return a.get();
    for (const std::string& alias : a->aliases()) {
      if (to_lower(alias) == n) return a.get();
    }
  }
  return nullptr;
}

std::vector<std::string> AdapterRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& a : adapters_) out.emplace_back(a->name());
  return out;
}

void register_backend_adapter(AdapterRegistry& registry,
                              std::shared_ptr<const BackendAdapter> adapter) {
  registry.add(std::move(adapter));
}

const AdapterRegistry& builtin_adapters() {
  static const AdapterRegistry registry = [] {
    AdapterRegistry r;
    register_backend_adapter(r, std::make_shared<frontend_detail::MegatronAdapter>());
    register_backend_adapter(r, std::make_shared<frontend_detail::TorchrecAdapter>());
    register_backend_adapter(r, std::make_shared<frontend_detail::TorchtitanAdapter>());
    register_backend_adapter(r, std::make_shared<frontend_detail::MaxTextAdapter>());
    return r;
  }();
  return registry;
}

}  // namespace projector
