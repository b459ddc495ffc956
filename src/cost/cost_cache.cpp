#include "projector/cost/cost_cache.h"

#include <bit>
#include <cstring>
#include <utility>

namespace projector {

namespace {

enum class Op : std::uint64_t { kGemm = 1, kGrouped, kAttnFwd, kAttnBwd, kMemory, kCollective };

std::uint64_t bits(double d) {
  return std::bit_cast<std::uint64_t>(d);
}
std::uint64_t u(std::int64_t v) {
  return static_cast<std::uint64_t>(v);
}

std::uint64_t hash_key(const std::uint64_t* w, int n) {
  // splitmix-style mixing of each word; cheap and good enough for an open-addressing table.
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < n; ++i) {
    std::uint64_t x = w[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    h ^= x;
  }
  return h;
}

}  // namespace

bool CostCache::Key::operator==(const Key& o) const {
  return std::memcmp(w, o.w, sizeof(w)) == 0;
}

CostCache::CostCache(AcceleratorSpec accelerator, NetworkSpec network, std::size_t initial_capacity,
                     std::shared_ptr<const MeasuredScale> measured)
    : acc_(std::move(accelerator)), net_(std::move(network)), measured_(std::move(measured)) {
  std::size_t cap = 16;
  while (cap < initial_capacity * 2) cap <<= 1;
  slots_.resize(cap);
}

void CostCache::clear() {
  for (Slot& s : slots_) s.used = false;
  size_ = 0;
  hits_ = 0;
  misses_ = 0;
}

void CostCache::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (!s.used) continue;
    std::size_t i = hash_key(s.key.w, 10) & mask;
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

OpCost CostCache::measure(CostClass cls, const OpCost& model) const {
  return measured_ ? measured_->apply(cls, model) : model;
}

template <typename F>
OpCost CostCache::lookup(const Key& key, F&& compute) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash_key(key.w, 10) & mask;
  while (slots_[i].used) {
    if (slots_[i].key == key) {
      ++hits_;
      return slots_[i].value;
    }
    i = (i + 1) & mask;
  }
  ++misses_;
  const OpCost v = compute();
  if ((size_ + 1) * 4 > slots_.size() * 3) {  // keep the load factor under 3/4
    grow();
    const std::size_t m2 = slots_.size() - 1;
    i = hash_key(key.w, 10) & m2;
    while (slots_[i].used) i = (i + 1) & m2;
  }
  slots_[i] = Slot{key, v, true};
  ++size_;
  return v;
}

OpCost CostCache::gemm(const GemmShape& s) {
  const Key k{{static_cast<std::uint64_t>(Op::kGemm), u(s.m), u(s.n), u(s.k), u(s.batch),
               static_cast<std::uint64_t>(s.dtype), static_cast<std::uint64_t>(s.out),
               static_cast<std::uint64_t>(s.blockwise), 0, 0}};
  return lookup(k, [&] { return measure(CostClass::kGemm, gemm_time(acc_, s)); });
}

OpCost CostCache::grouped_gemm(std::int64_t groups, std::int64_t m_per_group, std::int64_t n,
                               std::int64_t k, Dtype dtype, Dtype out) {
  const Key key{{static_cast<std::uint64_t>(Op::kGrouped), u(groups), u(m_per_group), u(n), u(k),
                 static_cast<std::uint64_t>(dtype), static_cast<std::uint64_t>(out), 0, 0, 0}};
  return lookup(key, [&] {
    return measure(CostClass::kGroupedGemm,
                   grouped_gemm_time(acc_, groups, m_per_group, n, k, dtype, out));
  });
}

OpCost CostCache::attention_fwd(const AttentionShape& s) {
  const Key k{{static_cast<std::uint64_t>(Op::kAttnFwd), u(s.batch),
               (u(s.q_heads) << 32) | static_cast<std::uint32_t>(s.kv_heads), u(s.seq_q),
               u(s.seq_kv), (u(s.head_dim_qk) << 32) | static_cast<std::uint32_t>(s.head_dim_v),
               static_cast<std::uint64_t>(s.causal), u(s.window),
               static_cast<std::uint64_t>(s.dtype), static_cast<std::uint64_t>(s.kernel)}};
  return lookup(k, [&] { return measure(CostClass::kAttentionFwd, attention_fwd_time(acc_, s)); });
}

OpCost CostCache::attention_bwd(const AttentionShape& s) {
  const Key k{{static_cast<std::uint64_t>(Op::kAttnBwd), u(s.batch),
               (u(s.q_heads) << 32) | static_cast<std::uint32_t>(s.kv_heads), u(s.seq_q),
               u(s.seq_kv), (u(s.head_dim_qk) << 32) | static_cast<std::uint32_t>(s.head_dim_v),
               static_cast<std::uint64_t>(s.causal), u(s.window),
               static_cast<std::uint64_t>(s.dtype), static_cast<std::uint64_t>(s.kernel)}};
  return lookup(k, [&] { return measure(CostClass::kAttentionBwd, attention_bwd_time(acc_, s)); });
}

OpCost CostCache::memory_bound(double bytes, MemOpClass cls, int kernels) {
  const Key k{{static_cast<std::uint64_t>(Op::kMemory), bits(bytes),
               static_cast<std::uint64_t>(cls), u(kernels), 0, 0, 0, 0, 0, 0}};
  return lookup(
      k, [&] { return measure(cost_class(cls), memory_bound_time(acc_, bytes, cls, kernels)); });
}

namespace {
// A torus span in one key word: 12 bits of extent and a wrap and a core bit per axis.
std::uint64_t torus_word(const TorusSpan& t) {
  std::uint64_t w = static_cast<std::uint64_t>(t.axes);
  for (int i = 0; i < t.axes && i < TorusSpan::kMaxAxes; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const std::uint64_t e = static_cast<std::uint64_t>(t.extent[j]) & 0xfffU;
    w |= (e | (t.wrap[j] ? 0x1000U : 0U) | (t.core[j] ? 0x2000U : 0U)) << (4 + 14 * i);
  }
  return w;
}
}  // namespace

OpCost CostCache::collective(CollectiveKind kind, double bytes, const CommGroup& g) {
  const Key k{{static_cast<std::uint64_t>(Op::kCollective), static_cast<std::uint64_t>(kind),
               bits(bytes), u(g.size) | (u(g.ranks_per_node) << 32), u(g.nodes) | (u(g.pods) << 32),
               u(g.gpus_per_node) | (u(g.node_aggregated ? 1 : 0) << 32), torus_word(g.torus),
               u(g.torus.slices) | (u(g.torus.sharers) << 32), bits(g.node_forward_ratio)}};
  return lookup(k, [&] {
    const OpCost model = collective_time(net_, kind, bytes, g);
    return measured_ ? measured_->apply(kind, g, model) : model;
  });
}

}  // namespace projector
