// What a framework's device allocator reserves for a sequence of allocations and frees: the
// PyTorch caching allocator (with or without expandable segments) and XLA's static buffer
// assignment. The memory projection replays a rank's allocation timeline through it
// (memory.h RankMemory::peak_reserved_bytes); docs/memory.md "Allocator" gives the rules and
// their source (TA1, docs/references.md: c10/cuda/CUDACachingAllocator.cpp).
//
// PyTorch's caching allocator, as modelled:
// * every request is rounded up to a multiple of 512 bytes (kMinBlockSize);
// * requests up to 1 MiB (kSmallSize) come from the small pool, packed into 2 MiB segments
//   (kSmallBuffer); larger ones from the large pool: 1-10 MiB requests get a 20 MiB segment
//   (kLargeBuffer), larger ones a segment of the request rounded up to 2 MiB (kRoundLarge);
// * a request takes the smallest free block of its pool and stream that fits (best fit); the rest
//   of the block is split off when it is at least 512 bytes (small pool) or more than 1 MiB
//   (large pool); a freed block merges with its free neighbours of the same segment;
// * a block freed on one stream is reused only by that stream's requests;
// * segments stay reserved once created; only when a new one would not fit in the device's
//   capacity are the wholly free segments returned (as PyTorch does before it raises OOM).
// With expandable segments each (stream, pool) has one growing virtual segment whose pages (2 MiB
// small, 20 MiB large) are mapped on demand: a request no free block fits extends the segment
// from its free tail, so only the pages actually touched are reserved.
// XLA assigns buffers at compile time: what it reserves is the peak of what is live.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "projector/util/allocator_kind.h"

namespace projector {

// The caching allocator's size rules (TA1).
namespace caching_allocator {
inline constexpr std::int64_t kMinBlockBytes = 512;
inline constexpr std::int64_t kSmallSizeBytes = 1 << 20;
inline constexpr std::int64_t kSmallBufferBytes = 2 << 20;
inline constexpr std::int64_t kMinLargeAllocBytes = 10 << 20;
inline constexpr std::int64_t kLargeBufferBytes = 20 << 20;
inline constexpr std::int64_t kRoundLargeBytes = 2 << 20;
// A request's size as the allocator books it.
std::int64_t round_size(std::int64_t bytes);
// The segment a request no cached block fits gets from the driver (not expandable).
std::int64_t segment_size(std::int64_t rounded_bytes);
bool is_small(std::int64_t rounded_bytes);
}  // namespace caching_allocator

class AllocatorModel {
 public:
  // `capacity_bytes`: what the allocator may reserve (device memory less what lives outside it);
  // 0 or less: unbounded.
  explicit AllocatorModel(DeviceAllocatorKind kind, double capacity_bytes = 0.0);

  // Returns a handle for free(). `stream`: the CUDA stream the request is made on.
  int allocate(double bytes, int stream = 0);
  void free(int handle);

  std::int64_t allocated_bytes() const { return allocated_; }
  std::int64_t reserved_bytes() const { return reserved_; }
  std::int64_t peak_allocated_bytes() const { return peak_allocated_; }
  std::int64_t peak_reserved_bytes() const { return peak_reserved_; }
  int segments_created() const { return segments_created_; }
  // Times the wholly free segments were returned to make room (PyTorch's retry before OOM).
  int cache_flushes() const { return cache_flushes_; }

 private:
  using FreeIndex = std::multimap<std::int64_t, int>;  // free blocks of one pool: size -> block
  struct Block {
    std::int64_t size = 0;
    int segment = -1;
    int prev = -1, next = -1;  // neighbours in the segment, by address
    int pool = 0;              // index into pools_: one per (stream, small / large)
    bool small = false;
    bool free = false;
    bool live = true;        // false: merged away or released (its index is reused)
    FreeIndex::iterator in;  // its entry in pools_[pool] while free
  };
  struct Segment {
    std::int64_t size = 0;      // mapped bytes (expandable: grows)
    int first = -1, last = -1;  // first and last block by address
    bool live = true;
  };
  int pool_of(int stream, bool small);
  int new_block(const Block& b);
  void retire(int block);
  int best_fit(int pool, std::int64_t size) const;
  int new_segment(int pool, bool small, std::int64_t seg_bytes);
  int extend_expandable(int pool, bool small, std::int64_t size);
  void reserve(std::int64_t bytes);
  void release_free_segments();
  int split(int block, std::int64_t size);
  void insert_free(int block);
  void erase_free(int block);
  int merge(int into, int other);

  DeviceAllocatorKind kind_;
  std::int64_t capacity_ = 0;
  std::vector<Block> blocks_;
  std::vector<int> dead_;  // indices of retired blocks, reused by new_block
  std::vector<Segment> segments_;
  std::vector<FreeIndex> pools_;
  std::vector<std::pair<int, bool>> pool_keys_;  // (stream, small) of each pool
  std::vector<int> expandable_;  // per pool: its one expandable segment, -1 before the first
  std::int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  int segments_created_ = 0;
  int cache_flushes_ = 0;
};

}  // namespace projector
