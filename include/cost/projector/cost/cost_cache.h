// Memoising front-end to the cost models. A sweep prices the same few dozen shapes for thousands
// of configurations, so results are kept per (op, shape) in an open-addressing table: a warm
// lookup is a hash and a compare, no allocation. One cache per accelerator/network pair (the specs
// are not part of the key); not thread-safe — give each sweep worker its own.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "projector/cost/attention.h"
#include "projector/cost/collective.h"
#include "projector/cost/gemm.h"
#include "projector/cost/measured.h"
#include "projector/cost/memory_ops.h"

namespace projector {

class CostCache {
 public:
  // The cache keeps copies of the specs; all results are for these. With `measured`, every model
  // cost of a measured class is scaled by its ratio first (cost/measured.h).
  CostCache(AcceleratorSpec accelerator, NetworkSpec network, std::size_t initial_capacity = 1024,
            std::shared_ptr<const MeasuredScale> measured = nullptr);

  OpCost gemm(const GemmShape& s);
  OpCost grouped_gemm(std::int64_t groups, std::int64_t m_per_group, std::int64_t n, std::int64_t k,
                      Dtype dtype, Dtype out = Dtype::kBf16);
  OpCost attention_fwd(const AttentionShape& s);
  OpCost attention_bwd(const AttentionShape& s);
  OpCost memory_bound(double bytes, MemOpClass cls, int kernels = 1);
  OpCost collective(CollectiveKind kind, double bytes, const CommGroup& group);

  std::size_t size() const { return size_; }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }
  void clear();

  const AcceleratorSpec& accelerator() const { return acc_; }
  const NetworkSpec& network() const { return net_; }
  const MeasuredScale* measured() const { return measured_.get(); }

 private:
  // A key is the op tag plus up to 9 integer/bit-cast words.
  struct Key {
    std::uint64_t w[10];
    bool operator==(const Key& o) const;
  };
  struct Slot {
    Key key;
    OpCost value;
    bool used = false;
  };
  template <typename F>
  OpCost lookup(const Key& key, F&& compute);
  OpCost measure(CostClass cls, const OpCost& model) const;
  void grow();

  AcceleratorSpec acc_;
  NetworkSpec net_;
  std::shared_ptr<const MeasuredScale> measured_;
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
};

}  // namespace projector
