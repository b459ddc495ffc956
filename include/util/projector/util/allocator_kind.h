// Which device allocator a job's framework runs (memory/allocator.h models each): PyTorch's
// caching allocator with or without expandable segments, or XLA's static buffer assignment. In
// util so that the job model (RuntimeSpec) and the memory model share it.
#pragma once

#include <optional>
#include <string_view>

namespace projector {

enum class DeviceAllocatorKind { kCaching, kCachingExpandable, kXla };
std::string_view to_string(DeviceAllocatorKind k);

// Reads a PYTORCH_CUDA_ALLOC_CONF / PYTORCH_HIP_ALLOC_CONF value ("expandable_segments:True,
// max_split_size_mb:512"): whether it turns expandable segments on (true) or off (false); nullopt
// when it does not say. Other options are left to the caller to refuse or warn about.
std::optional<bool> expandable_segments_of(std::string_view alloc_conf);

}  // namespace projector
