// The allocator model (allocator.h). Blocks live in one vector and are addressed by index (retired
// indices are reused); a segment's blocks form a list by address so that a freed block can merge
// with its neighbours; each pool (stream x small / large) indexes its free blocks by size.
#include "projector/memory/allocator.h"

#include <algorithm>
#include <cmath>

namespace projector {

namespace caching_allocator {

std::int64_t round_size(std::int64_t bytes) {
  if (bytes < kMinBlockBytes) return kMinBlockBytes;
  return kMinBlockBytes * ((bytes + kMinBlockBytes - 1) / kMinBlockBytes);
}

std::int64_t segment_size(std::int64_t rounded_bytes) {
  if (rounded_bytes <= kSmallSizeBytes) return kSmallBufferBytes;
  if (rounded_bytes < kMinLargeAllocBytes) return kLargeBufferBytes;
  return kRoundLargeBytes * ((rounded_bytes + kRoundLargeBytes - 1) / kRoundLargeBytes);
}

bool is_small(std::int64_t rounded_bytes) {
  return rounded_bytes <= kSmallSizeBytes;
}

}  // namespace caching_allocator

namespace {

namespace ca = caching_allocator;

std::int64_t page_of(bool small) {
  return small ? ca::kSmallBufferBytes : ca::kLargeBufferBytes;
}

std::int64_t round_up(std::int64_t v, std::int64_t to) {
  return to * ((v + to - 1) / to);
}

}  // namespace

AllocatorModel::AllocatorModel(DeviceAllocatorKind kind, double capacity_bytes)
    : kind_(kind), capacity_(capacity_bytes > 0.0 ? std::llround(capacity_bytes) : 0) {}

int AllocatorModel::pool_of(int stream, bool small) {
  for (std::size_t i = 0; i < pool_keys_.size(); ++i) {
    if (pool_keys_[i].first == stream && pool_keys_[i].second == small) return static_cast<int>(i);
  }
  pool_keys_.emplace_back(stream, small);
  pools_.emplace_back();
  expandable_.push_back(-1);
  return static_cast<int>(pools_.size()) - 1;
}

int AllocatorModel::new_block(const Block& b) {
  if (!dead_.empty()) {
    const int i = dead_.back();
    dead_.pop_back();
    blocks_[static_cast<std::size_t>(i)] = b;
    return i;
  }
  blocks_.push_back(b);
  return static_cast<int>(blocks_.size()) - 1;
}

void AllocatorModel::retire(int block) {
  blocks_[static_cast<std::size_t>(block)].live = false;
  dead_.push_back(block);
}

int AllocatorModel::allocate(double bytes, int stream) {
  const std::int64_t want = std::max<std::int64_t>(0, std::llround(bytes));
  if (kind_ == DeviceAllocatorKind::kXla) {
    // Static assignment: a buffer is exactly its size and the reservation is what is live.
    Block b;
    b.size = want;
    const int h = new_block(b);
    allocated_ += want;
    reserve(want);
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return h;
  }
  const std::int64_t size = ca::round_size(want);
  const bool small = ca::is_small(size);
  const int pool = pool_of(stream, small);
  int b = best_fit(pool, size);
  if (b < 0) {
    b = kind_ == DeviceAllocatorKind::kCachingExpandable
            ? extend_expandable(pool, small, size)
            : new_segment(pool, small, ca::segment_size(size));
  } else {
    erase_free(b);
  }
  b = split(b, size);
  blocks_[static_cast<std::size_t>(b)].free = false;
  allocated_ += blocks_[static_cast<std::size_t>(b)].size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return b;
}

void AllocatorModel::free(int handle) {
  Block& blk = blocks_[static_cast<std::size_t>(handle)];
  if (!blk.live || blk.free) return;
  allocated_ -= blk.size;
  if (kind_ == DeviceAllocatorKind::kXla) {
    reserved_ -= blk.size;
    retire(handle);
    return;
  }
  blk.free = true;
  int b = handle;
  const int prev = blk.prev;
  const int next = blk.next;
  if (next >= 0 && blocks_[static_cast<std::size_t>(next)].free) {
    erase_free(next);
    b = merge(b, next);
  }
  if (prev >= 0 && blocks_[static_cast<std::size_t>(prev)].free) {
    erase_free(prev);
    b = merge(prev, b);
  }
  insert_free(b);
}

int AllocatorModel::best_fit(int pool, std::int64_t size) const {
  const FreeIndex& idx = pools_[static_cast<std::size_t>(pool)];
  const auto it = idx.lower_bound(size);
  return it == idx.end() ? -1 : it->second;
}

void AllocatorModel::reserve(std::int64_t bytes) {
  if (capacity_ > 0 && reserved_ + bytes > capacity_) release_free_segments();
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

int AllocatorModel::new_segment(int pool, bool small, std::int64_t seg_bytes) {
  reserve(seg_bytes);
  ++segments_created_;
  const int seg = static_cast<int>(segments_.size());
  Block blk;
  blk.size = seg_bytes;
  blk.segment = seg;
  blk.pool = pool;
  blk.small = small;
  blk.free = true;
  const int b = new_block(blk);
  segments_.push_back(Segment{seg_bytes, b, b, true});
  return b;
}

int AllocatorModel::extend_expandable(int pool, bool small, std::int64_t size) {
  const int seg = expandable_[static_cast<std::size_t>(pool)];
  const std::int64_t page = page_of(small);
  if (seg < 0) {
    const int b = new_segment(pool, small, round_up(size, page));
    expandable_[static_cast<std::size_t>(pool)] = blocks_[static_cast<std::size_t>(b)].segment;
    return b;
  }
  // The growth the free tail needs; when it would pass the capacity, the free pages are unmapped
  // first (which may shrink or remove the tail), so the tail is read again after that.
  const auto growth = [&] {
    const int last = segments_[static_cast<std::size_t>(seg)].last;
    const bool free = last >= 0 && blocks_[static_cast<std::size_t>(last)].free;
    return round_up(size - (free ? blocks_[static_cast<std::size_t>(last)].size : 0), page);
  };
  std::int64_t grow = growth();
  if (capacity_ > 0 && reserved_ + grow > capacity_) {
    release_free_segments();
    grow = growth();
  }
  reserved_ += grow;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  segments_[static_cast<std::size_t>(seg)].size += grow;
  const int last = segments_[static_cast<std::size_t>(seg)].last;
  const bool tail_free = last >= 0 && blocks_[static_cast<std::size_t>(last)].free;
  if (tail_free) {
    erase_free(last);
    blocks_[static_cast<std::size_t>(last)].size += grow;
    return last;
  }
  Block blk;
  blk.size = grow;
  blk.segment = seg;
  blk.prev = last;
  blk.pool = pool;
  blk.small = small;
  blk.free = true;
  const int b = new_block(blk);
  if (last >= 0) blocks_[static_cast<std::size_t>(last)].next = b;
  Segment& sg = segments_[static_cast<std::size_t>(seg)];
  if (sg.first < 0) sg.first = b;
  sg.last = b;
  return b;
}

void AllocatorModel::release_free_segments() {
  ++cache_flushes_;
  for (Segment& sg : segments_) {
    if (!sg.live || sg.last < 0) continue;
    const int t = sg.last;
    Block& tail = blocks_[static_cast<std::size_t>(t)];
    if (!tail.free) continue;
    if (kind_ == DeviceAllocatorKind::kCachingExpandable) {
      // Unmap the whole free pages at the end of the segment.
      const std::int64_t unmap = tail.size / page_of(tail.small) * page_of(tail.small);
      if (unmap <= 0) continue;
      erase_free(t);
      tail.size -= unmap;
      sg.size -= unmap;
      reserved_ -= unmap;
      if (tail.size > 0) {
        insert_free(t);
        continue;
      }
      sg.last = tail.prev;
      if (sg.last >= 0) blocks_[static_cast<std::size_t>(sg.last)].next = -1;
      if (sg.first == t) sg.first = -1;
      retire(t);
      continue;
    }
    if (sg.first != sg.last) continue;  // split: some block of it is in use
    erase_free(t);
    retire(t);
    sg.live = false;
    reserved_ -= sg.size;
  }
}

int AllocatorModel::split(int block, std::int64_t size) {
  const Block blk = blocks_[static_cast<std::size_t>(block)];
  const std::int64_t rest = blk.size - size;
  // TA1 should_split: the small pool and expandable segments keep any remainder of 512 bytes or
  // more; the large pool only one of more than 1 MiB.
  const bool fine = blk.small || kind_ == DeviceAllocatorKind::kCachingExpandable;
  if (!(fine ? rest >= ca::kMinBlockBytes : rest > ca::kSmallSizeBytes)) return block;
  Block remainder = blk;
  remainder.size = rest;
  remainder.prev = block;
  remainder.free = true;
  const int r = new_block(remainder);
  Block& b = blocks_[static_cast<std::size_t>(block)];
  b.size = size;
  b.next = r;
  if (blk.next >= 0) {
    blocks_[static_cast<std::size_t>(blk.next)].prev = r;
  } else {
    segments_[static_cast<std::size_t>(blk.segment)].last = r;
  }
  insert_free(r);
  return block;
}

int AllocatorModel::merge(int into, int other) {
  Block& a = blocks_[static_cast<std::size_t>(into)];
  const Block& b = blocks_[static_cast<std::size_t>(other)];
  a.size += b.size;
  a.next = b.next;
  if (b.next >= 0) {
    blocks_[static_cast<std::size_t>(b.next)].prev = into;
  } else {
    segments_[static_cast<std::size_t>(a.segment)].last = into;
  }
  retire(other);
  return into;
}

void AllocatorModel::insert_free(int block) {
  Block& b = blocks_[static_cast<std::size_t>(block)];
  b.in = pools_[static_cast<std::size_t>(b.pool)].emplace(b.size, block);
}

void AllocatorModel::erase_free(int block) {
  Block& b = blocks_[static_cast<std::size_t>(block)];
  pools_[static_cast<std::size_t>(b.pool)].erase(b.in);
}

}  // namespace projector
