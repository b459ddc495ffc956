#include "projector/util/allocator_kind.h"

#include <algorithm>
#include <string>

#include "projector/util/text.h"

namespace projector {

namespace {

std::string_view strip(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view to_string(DeviceAllocatorKind k) {
  switch (k) {
    case DeviceAllocatorKind::kCaching:
      return "pytorch caching";
    case DeviceAllocatorKind::kCachingExpandable:
      return "pytorch caching, expandable segments";
    case DeviceAllocatorKind::kXla:
      return "xla";
  }
  return "?";
}

std::optional<bool> expandable_segments_of(std::string_view alloc_conf) {
  std::optional<bool> out;
  std::size_t start = 0;
  while (start <= alloc_conf.size()) {
    const std::size_t end = std::min(alloc_conf.find(',', start), alloc_conf.size());
    const std::string_view item = alloc_conf.substr(start, end - start);
    const std::size_t colon = item.find(':');
    if (colon != std::string_view::npos) {
      const std::string key = to_lower(strip(item.substr(0, colon)));
      const std::string value = to_lower(strip(item.substr(colon + 1)));
      if (key == "expandable_segments") out = value == "true" || value == "1";
    }
    start = end + 1;
  }
  return out;
}

}  // namespace projector
