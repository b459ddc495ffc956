// The allocation timeline of a pipeline rank (memory_detail.h build_timeline, replay_allocator):
// the rank's actions of one flush, in the order of the schedule table the simulator runs, with
// what each allocates and frees.
//   F  (chunk c, microbatch k): allocates the saved blocks of c for k (layer by layer, then the
//      embedding / head), then its temporary (the chunk's largest) lives while it runs;
//   B  (split backward): the temporary lives, then the saved blocks are freed and the
//      weight-gradient inputs stay until W;
//   BW (combined backward): the temporary lives, then the saved blocks are freed;
//   W  frees the weight-gradient inputs.
// Static buffers (weights, gradients, optimizer state, fp8 copies, FSDP window, workspace) are
// allocated before the first action and held throughout. Counting the held activations this way
// is the in-flight accounting of schedule/in_flight.h, so the activation peak of the states and
// the timeline agree; the timeline adds which temporary is live when.
#include <algorithm>
#include <span>

#include "memory/memory_detail.h"
#include "projector/memory/allocator.h"
#include "projector/schedule/in_flight.h"

namespace projector::memory_detail {

namespace {

using schedule::Action;
using schedule::Phase;

void snapshot(const std::vector<int>& full, const std::vector<int>& w_only, InFlight& f) {
  f.per_chunk.assign(full.begin(), full.end());
  f.w_only_per_chunk.assign(w_only.begin(), w_only.end());
  f.w_only = 0.0;
  for (const int w : w_only) f.w_only += w;
}

}  // namespace

void build_timeline(const Context& cx, int r, const RankChunks& ch, double static_bytes,
                    RankMemory& rm) {
  std::vector<Action> scratch;
  const std::span<const Action> actions = schedule::memory_order(*cx.table, r, scratch);
  const std::size_t v = rm.activation_per_chunk_bytes.size();
  std::vector<int> full(v, 0), w_only(v, 0);
  const std::vector<double>& fsz = rm.activation_per_chunk_bytes;
  const std::vector<double>& wsz = rm.w_only_per_chunk_bytes;
  rm.timeline_bytes.assign(actions.size(), 0.0);
  rm.moment = PeakMoment{};
  snapshot(full, w_only, rm.in_flight);
  double held = 0.0;
  double best = static_bytes;
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const Action& a = actions[i];
    const auto c = static_cast<std::size_t>(a.chunk);
    if (a.phase == Phase::kF) {
      ++full[c];
      held += fsz[c];
    }
    const double during = std::max(0.0, held);
    const double temp = a.phase == Phase::kW ? 0.0 : ch.transient_per_chunk[c];
    const double at = static_bytes + during + temp;
    rm.timeline_bytes[i] = at;
    if (at > best || rm.moment.action < 0) {
      best = std::max(best, at);
      rm.moment = PeakMoment{static_cast<int>(i),
                             std::string(schedule::to_string(a.phase)),
                             a.chunk,
                             a.microbatch,
                             temp > 0.0 ? ch.transient_source_per_chunk[c] : "",
                             during,
                             temp};
      snapshot(full, w_only, rm.in_flight);
    }
    switch (a.phase) {
      case Phase::kF:
        break;
      case Phase::kB:
        --full[c];
        ++w_only[c];
        held += wsz[c] - fsz[c];
        break;
      case Phase::kBW:
        --full[c];
        held -= fsz[c];
        break;
      case Phase::kW:
        --w_only[c];
        held -= wsz[c];
        break;
    }
  }
}

Replay replay_allocator(const Context& cx, int r, const RankChunks& ch, const RankMemory& rm,
                        const ComponentBytes& s, double capacity_bytes) {
  AllocatorModel model(cx.job.runtime.allocator, capacity_bytes);
  constexpr int kComputeStream = 0;
  constexpr int kGatherStream = 1;  // FSDP's all-gather outputs live in their own stream's pool
  for (int i = 0; i < kNumMemoryComponents; ++i) {
    const auto comp = static_cast<MemoryComponent>(i);
    const double bytes = s[static_cast<std::size_t>(i)];
    if (bytes <= 0.0 || !in_caching_allocator(comp)) continue;
    model.allocate(bytes, comp == MemoryComponent::kFsdpUnsharded ? kGatherStream : kComputeStream);
  }
  const schedule::ScheduleTable& table = *cx.replay_table;
  std::vector<Action> scratch;
  const std::span<const Action> actions = schedule::memory_order(table, r, scratch);
  const std::size_t v = ch.blocks.size();
  const auto m = static_cast<std::size_t>(std::max(1, table.microbatches));
  // Handles of the saved blocks of (chunk, microbatch), flat: chunk c starts at base[c].
  std::vector<std::size_t> base(v + 1, 0);
  for (std::size_t c = 0; c < v; ++c) base[c + 1] = base[c] + m * ch.blocks[c].size();
  std::vector<int> handles(base[v], -1);
  std::vector<int> w_handle(v * m, -1);
  // A chunk's temporary; with the eager loss (EagerLossChain) only the largest besides it, the
  // loss's own tensors being replayed where the chain allocates them.
  const auto temporary = [&](std::size_t c) {
    const EagerLossChain& loss = ch.loss_per_chunk[c];
    const double bytes = loss.present() ? loss.other_transient : ch.transient_per_chunk[c];
    if (bytes > 0.0) model.free(model.allocate(bytes, kComputeStream));
  };
  const auto loss_backward = [&](std::size_t c) {
    const EagerLossChain& loss = ch.loss_per_chunk[c];
    if (!loss.present()) return;
    const int nll_grad = model.allocate(loss.upcast_bytes, kComputeStream);
    const int log_softmax_grad = model.allocate(loss.upcast_bytes, kComputeStream);
    model.free(nll_grad);
    model.free(log_softmax_grad);
  };
  const auto release = [&](std::size_t c, std::size_t k) {
    const std::size_t n = ch.blocks[c].size();
    for (std::size_t j = n; j-- > 0;) {
      int& h = handles[base[c] + k * n + j];
      if (h >= 0) model.free(h);
      h = -1;
    }
  };
  // Two flushes: the second starts from what the first left cached.
  for (int pass = 0; pass < 2; ++pass) {
    for (const Action& a : actions) {
      const auto c = static_cast<std::size_t>(a.chunk);
      const auto k = static_cast<std::size_t>(a.microbatch) % m;
      const std::size_t n = ch.blocks[c].size();
      switch (a.phase) {
        case Phase::kF: {
          // The loss chain: logits and their fp32 copy before the saved log-softmax (the last
          // block), both freed after it.
          const EagerLossChain& loss = ch.loss_per_chunk[c];
          int logits = -1, upcast = -1;
          for (std::size_t j = 0; j < n; ++j) {
            if (loss.present() && j + 1 == n) {
              logits = model.allocate(loss.logits_bytes, kComputeStream);
              upcast = model.allocate(loss.upcast_bytes, kComputeStream);
            }
            const double b = ch.blocks[c][j];
            handles[base[c] + k * n + j] = b > 0.0 ? model.allocate(b, kComputeStream) : -1;
          }
          if (upcast >= 0) model.free(upcast);
          if (logits >= 0) model.free(logits);
          temporary(c);
          break;
        }
        case Phase::kB: {
          loss_backward(c);
          temporary(c);
          release(c, k);
          const double w = rm.w_only_per_chunk_bytes[c];
          w_handle[c * m + k] = w > 0.0 ? model.allocate(w, kComputeStream) : -1;
          break;
        }
        case Phase::kBW:
          loss_backward(c);
          temporary(c);
          release(c, k);
          break;
        case Phase::kW:
          if (w_handle[c * m + k] >= 0) model.free(w_handle[c * m + k]);
          w_handle[c * m + k] = -1;
          break;
      }
    }
  }
  return Replay{static_cast<double>(model.peak_reserved_bytes()),
                static_cast<double>(model.peak_allocated_bytes()), model.segments_created()};
}

}  // namespace projector::memory_detail
