// The allocator model on allocation sequences whose reservations follow by hand from the caching
// allocator's rules (allocator.h; TA1 in docs/references.md).
#include "projector/memory/allocator.h"

#include <gtest/gtest.h>

namespace projector {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(CachingAllocator, RoundingAndSegmentSizes) {
  namespace ca = caching_allocator;
  EXPECT_EQ(ca::round_size(1), 512);
  EXPECT_EQ(ca::round_size(512), 512);
  EXPECT_EQ(ca::round_size(513), 1024);
  EXPECT_TRUE(ca::is_small(1 << 20));
  EXPECT_FALSE(ca::is_small((1 << 20) + 512));
  EXPECT_EQ(ca::segment_size(1 << 20), 2 << 20);            // small pool: a 2 MiB buffer
  EXPECT_EQ(ca::segment_size((1 << 20) + 512), 20 << 20);   // 1-10 MiB: a 20 MiB block
  EXPECT_EQ(ca::segment_size(10 << 20), 10 << 20);          // from 10 MiB: rounded to 2 MiB
  EXPECT_EQ(ca::segment_size((10 << 20) + 512), 12 << 20);  // 10 MiB + 512 B -> 12 MiB
}

// a = 3 MiB: a new 20 MiB segment, split (17 MiB > 1 MiB stays free). b = 16 MiB takes the
// 17 MiB block whole (a 1 MiB rest is not split off). a freed; c = 4 MiB fits no free block (3 MiB)
// and gets a second 20 MiB segment. Both segments end wholly free; d = 30 MiB would take the
// reservation to 70 MiB, past a 60 MiB capacity, so the two free segments are returned first.
TEST(CachingAllocator, BestFitSplitAndReleaseBeforeOom) {
  AllocatorModel m(DeviceAllocatorKind::kCaching, 60 * kMiB);
  const int a = m.allocate(3 * kMiB);
  EXPECT_EQ(m.reserved_bytes(), 20 << 20);
  const int b = m.allocate(16 * kMiB);
  EXPECT_EQ(m.allocated_bytes(), 20 << 20);  // 3 + 17: the unsplit block counts whole
  EXPECT_EQ(m.reserved_bytes(), 20 << 20);
  m.free(a);
  const int c = m.allocate(4 * kMiB);
  EXPECT_EQ(m.reserved_bytes(), 40 << 20);
  EXPECT_EQ(m.segments_created(), 2);
  m.free(b);
  m.free(c);
  EXPECT_EQ(m.allocated_bytes(), 0);
  EXPECT_EQ(m.reserved_bytes(), 40 << 20);  // cached, not returned
  const int d = m.allocate(30 * kMiB);
  EXPECT_EQ(m.cache_flushes(), 1);
  EXPECT_EQ(m.reserved_bytes(), 30 << 20);
  EXPECT_EQ(m.peak_reserved_bytes(), 40 << 20);
  m.free(d);
  // Freed neighbours merge: a 20 MiB request is then served from the cached 30 MiB segment.
  m.allocate(20 * kMiB);
  EXPECT_EQ(m.reserved_bytes(), 30 << 20);
  EXPECT_EQ(m.segments_created(), 3);
}

// The same two requests with expandable segments: one segment grows in 20 MiB pages. a = 3 MiB
// maps one page (17 MiB free tail); b = 25 MiB extends the tail by round_up(25 - 17, 20) = 20 MiB:
// 40 MiB reserved, against 20 + 26 = 46 MiB with fixed segments.
TEST(CachingAllocator, ExpandableSegmentsGrowFromTheFreeTail) {
  AllocatorModel e(DeviceAllocatorKind::kCachingExpandable);
  e.allocate(3 * kMiB);
  EXPECT_EQ(e.reserved_bytes(), 20 << 20);
  e.allocate(25 * kMiB);
  EXPECT_EQ(e.reserved_bytes(), 40 << 20);
  EXPECT_EQ(e.allocated_bytes(), 28 << 20);
  AllocatorModel f(DeviceAllocatorKind::kCaching);
  f.allocate(3 * kMiB);
  f.allocate(25 * kMiB);
  EXPECT_EQ(f.reserved_bytes(), 46 << 20);
}

// A block freed on one stream is not reused by another stream's request.
TEST(CachingAllocator, FreedBlocksStayWithTheirStream) {
  AllocatorModel m(DeviceAllocatorKind::kCaching);
  m.free(m.allocate(12 * kMiB, 0));
  m.allocate(12 * kMiB, 1);
  EXPECT_EQ(m.reserved_bytes(), 24 << 20);
  m.allocate(12 * kMiB, 0);  // the stream-0 block is reused
  EXPECT_EQ(m.reserved_bytes(), 24 << 20);
}

// Four 12 MiB saved blocks and a 40 MiB transient, twice: the second pass finds its exact 12 MiB
// segments (best fit prefers them to the 40 MiB one), so the transient's segment stays whole and
// nothing new is reserved: 4 x 12 + 40 MiB.
TEST(CachingAllocator, ExactFitsKeepTheTransientSegmentWhole) {
  AllocatorModel m(DeviceAllocatorKind::kCaching);
  for (int pass = 0; pass < 2; ++pass) {
    int h[4];
    for (int& x : h) x = m.allocate(12 * kMiB);
    m.free(m.allocate(40 * kMiB));
    for (int x : h) m.free(x);
  }
  EXPECT_EQ(m.peak_reserved_bytes(), (4 * 12 + 40) << 20);
  EXPECT_EQ(m.segments_created(), 5);
}

// The classic fragmentation: a freed transient's segment is split by smaller blocks and cannot
// serve the transient again. Pass 2 asks for 14 MiB blocks, which the cached 12 MiB segments
// cannot hold: the first is carved from the 40 MiB segment (26 MiB left), the second from that
// rest (12 MiB left), the third gets a 14 MiB segment; the 40 MiB transient then needs a new
// segment: 88 + 14 + 40 = 142 MiB reserved for 42 + 40 MiB allocated.
TEST(CachingAllocator, ASplitTransientSegmentForcesANewOne) {
  AllocatorModel m(DeviceAllocatorKind::kCaching);
  int h[4];
  for (int& x : h) x = m.allocate(12 * kMiB);
  m.free(m.allocate(40 * kMiB));
  for (int x : h) m.free(x);
  const std::int64_t before = m.reserved_bytes();  // 88 MiB
  int g[3];
  for (int& x : g) x = m.allocate(14 * kMiB);
  EXPECT_EQ(m.segments_created(), 6);
  m.allocate(40 * kMiB);
  EXPECT_EQ(before, 88 << 20);
  EXPECT_EQ(m.reserved_bytes(), (88 + 14 + 40) << 20);
  EXPECT_EQ(m.allocated_bytes(), (3 * 14 + 40) << 20);
}

// PyTorch's eager cross entropy on upcast logits (memory_detail::EagerLossChain), bf16 logits L
// = 40 MiB and their fp32 copy 2L = 80 MiB: the forward allocates L, 2L, then the saved
// log-softmax 2L, and frees the copy and L (they merge into one 3L = 120 MiB hole below the saved
// log-softmax); the backward's nll_loss gradient 2L takes the hole's first 80 MiB and leaves 40
// MiB, too small for log_softmax's gradient 2L, which extends the segment. Reserved 2L + 2L + 3L =
// 280 MiB for 3 x 2L = 240 MiB allocated: exactly L beyond the allocated peak. Fixed segments: L,
// 2L and 2L get their own segments; the nll gradient reuses the copy's, the log-softmax gradient
// needs a fourth: again L beyond the allocated peak.
TEST(CachingAllocator, EagerLossLeavesTheLogitsHole) {
  for (const auto kind : {DeviceAllocatorKind::kCachingExpandable, DeviceAllocatorKind::kCaching}) {
    AllocatorModel m(kind);
    const int logits = m.allocate(40 * kMiB);
    const int upcast = m.allocate(80 * kMiB);
    m.allocate(80 * kMiB);  // the saved log-softmax
    m.free(upcast);
    m.free(logits);
    const int nll_grad = m.allocate(80 * kMiB);
    const int log_softmax_grad = m.allocate(80 * kMiB);
    EXPECT_EQ(m.peak_allocated_bytes(), 240 << 20);
    EXPECT_EQ(m.peak_reserved_bytes(), 280 << 20) << static_cast<int>(kind);
    m.free(nll_grad);
    m.free(log_softmax_grad);
  }
}

TEST(XlaAllocator, ReservesWhatIsLive) {
  AllocatorModel m(DeviceAllocatorKind::kXla);
  const int a = m.allocate(3 * kMiB);
  m.allocate(5 * kMiB);
  m.free(a);
  m.allocate(1000);
  EXPECT_EQ(m.peak_reserved_bytes(), 8 << 20);
  EXPECT_EQ(m.reserved_bytes(), m.allocated_bytes());
}

TEST(AllocConf, ExpandableSegmentsSetting) {
  EXPECT_EQ(expandable_segments_of("expandable_segments:True"), true);
  EXPECT_EQ(expandable_segments_of("max_split_size_mb:512, expandable_segments : false"), false);
  EXPECT_EQ(expandable_segments_of("max_split_size_mb:512"), std::nullopt);
  EXPECT_EQ(expandable_segments_of(""), std::nullopt);
}

// Expandable segments near the capacity (found by the fuzzer: the tail was unmapped by the
// pre-OOM release and then taken again). a = 3 MiB and b = 30 MiB map 40 MiB (one 20 MiB page,
// then 20 more for b's 27 MiB past the 17 MiB tail); both freed, the segment is one 40 MiB free
// block. c = 50 MiB would grow the tail by round_up(50 - 40, 20) = 20 MiB to 60 MiB, past a
// 50 MiB capacity: the two free pages are unmapped first, and c maps round_up(50, 20) = 60 MiB.
TEST(CachingAllocator, ExpandableTailReleasedBeforeGrowing) {
  AllocatorModel m(DeviceAllocatorKind::kCachingExpandable, 50 * kMiB);
  const int a = m.allocate(3 * kMiB);
  const int b = m.allocate(30 * kMiB);
  EXPECT_EQ(m.reserved_bytes(), 40 << 20);
  m.free(a);
  m.free(b);
  m.allocate(50 * kMiB);
  EXPECT_EQ(m.cache_flushes(), 1);
  EXPECT_EQ(m.reserved_bytes(), 60 << 20);
  EXPECT_EQ(m.allocated_bytes(), 50 << 20);
}

}  // namespace
}  // namespace projector
